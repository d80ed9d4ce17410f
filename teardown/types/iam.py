"""IAM registrations: instance profiles, roles (with their policies), customer-managed policies, and the
EC2 spot service-linked role (only when our own record says we created it)."""

from __future__ import annotations

from botocore.exceptions import ClientError

from facts.names import SPOT_SLR, spot_slr_record_name
from teardown.listing import owned, pages, unless_gone
from teardown.model import Context, Resource, gone_ok, is_gone
from teardown.registry import ResourceType, register


def list_instance_profiles(ctx: Context) -> list[Resource]:
    """Ours by tag (our stacks' default tags; Karpenter's cluster tags on the profiles it creates).
    ListInstanceProfiles returns no tags: each is read with GetInstanceProfile."""
    out = []
    iam = ctx.client("iam")
    for ip in pages(ctx, "iam", "list_instance_profiles", "InstanceProfiles"):
        name = ip["InstanceProfileName"]
        full = unless_gone(lambda name=name: iam.get_instance_profile(InstanceProfileName=name))
        if full is None:
            continue
        profile = full["InstanceProfile"]
        roles = [r["RoleName"] for r in profile.get("Roles", [])]
        r = owned(ctx, "iam_instance_profile", name, profile.get("Tags"), name=name, roles=roles)
        if r:
            out.append(r)
    return out


@gone_ok
def delete_instance_profile(ctx: Context, r: Resource) -> None:
    iam = ctx.client("iam")
    for role in iam.get_instance_profile(InstanceProfileName=r.id)["InstanceProfile"].get("Roles", []):
        iam.remove_role_from_instance_profile(InstanceProfileName=r.id, RoleName=role["RoleName"])
    iam.delete_instance_profile(InstanceProfileName=r.id)


register(
    ResourceType(
        "iam_instance_profile",
        list_instance_profiles,
        delete_instance_profile,
        depends_on=("ec2_instance",),
        why_left="Karpenter creates instance profiles per EC2NodeClass; they block node-role deletion",
    )
)


def list_roles(ctx: Context) -> list[Resource]:
    """Ours by tag. ListRoles returns no tags: each is read with ListRoleTags."""
    out = []
    iam = ctx.client("iam")
    for role in pages(ctx, "iam", "list_roles", "Roles"):
        name = role["RoleName"]
        if role.get("Path", "/").startswith("/aws-service-role/"):
            continue  # service-linked roles: see spot_slr
        tags = unless_gone(lambda name=name: iam.list_role_tags(RoleName=name).get("Tags"))
        r = None if tags is None else owned(ctx, "iam_role", name, tags, name=name)
        if r:
            out.append(r)
    return out


@gone_ok
def delete_role(ctx: Context, r: Resource) -> None:
    iam = ctx.client("iam")
    for page in iam.get_paginator("list_attached_role_policies").paginate(RoleName=r.id):
        for p in page["AttachedPolicies"]:
            iam.detach_role_policy(RoleName=r.id, PolicyArn=p["PolicyArn"])
    for page in iam.get_paginator("list_role_policies").paginate(RoleName=r.id):
        for name in page["PolicyNames"]:
            iam.delete_role_policy(RoleName=r.id, PolicyName=name)
    for page in iam.get_paginator("list_instance_profiles_for_role").paginate(RoleName=r.id):
        for ip in page["InstanceProfiles"]:
            iam.remove_role_from_instance_profile(
                InstanceProfileName=ip["InstanceProfileName"], RoleName=r.id
            )
    iam.delete_role(RoleName=r.id)


register(
    ResourceType(
        "iam_role",
        list_roles,
        delete_role,
        depends_on=("iam_instance_profile", "eks_cluster", "eks_nodegroup", "fis_template"),
        why_left="an instance profile still holds it (Karpenter's, not in Terraform state)",
    )
)


def list_policies(ctx: Context) -> list[Resource]:
    """Customer-managed policies, ours by tag (ListPolicies returns no tags: read with ListPolicyTags)."""
    out = []
    iam = ctx.client("iam")
    for p in pages(ctx, "iam", "list_policies", "Policies", Scope="Local"):
        arn = p["Arn"]
        tags = unless_gone(lambda arn=arn: iam.list_policy_tags(PolicyArn=arn).get("Tags"))
        r = None if tags is None else owned(ctx, "iam_policy", arn, tags, name=p["PolicyName"])
        if r:
            out.append(r)
    return out


@gone_ok
def delete_policy(ctx: Context, r: Resource) -> None:
    iam = ctx.client("iam")
    for version in iam.list_policy_versions(PolicyArn=r.id)["Versions"]:
        if not version["IsDefaultVersion"]:
            iam.delete_policy_version(PolicyArn=r.id, VersionId=version["VersionId"])
    iam.delete_policy(PolicyArn=r.id)


register(ResourceType("iam_policy", list_policies, delete_policy, depends_on=("iam_role",)))


def list_spot_slr(ctx: Context) -> list[Resource]:
    """The spot SLR is account-wide: listed as ours only when our record says we created it, and the
    record (an SSM parameter) is itself tagged as ours."""
    record = spot_slr_record_name(ctx.config.cluster_name)
    ssm = ctx.client("ssm")
    value = unless_gone(lambda: ssm.get_parameter(Name=record)["Parameter"])
    if value is None or value["Value"] != "true":
        return []
    tags = unless_gone(
        lambda: ssm.list_tags_for_resource(ResourceType="Parameter", ResourceId=record).get("TagList")
    )
    role = unless_gone(lambda: ctx.client("iam").get_role(RoleName=SPOT_SLR))
    state = "present" if role else "record-only"
    r = owned(ctx, "spot_slr", SPOT_SLR, tags or [], state, name=SPOT_SLR, record=record)
    if r is None:  # the record is ours by name: say so rather than hide it
        why = f"record {record} says we created it, but the record has none of our tags"
        r = Resource("spot_slr", SPOT_SLR, state, SPOT_SLR, "", {"record": record}, lookalike=why)
    return [r]


@gone_ok
def delete_spot_slr(ctx: Context, r: Resource) -> None:
    if r.state == "present":
        try:
            ctx.client("iam").delete_service_linked_role(RoleName=r.id)
        except ClientError as exc:
            if not is_gone(exc):
                raise
    ctx.client("ssm").delete_parameter(Name=spot_slr_record_name(ctx.config.cluster_name))


register(
    ResourceType(
        "spot_slr",
        list_spot_slr,
        delete_spot_slr,
        depends_on=("ec2_instance",),
        why_left="we created it, and AWS refuses while spot instances remain",
    )
)
