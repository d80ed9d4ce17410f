"""IAM: instance profiles, roles (their policies detached first) and customer-managed policies as rows;
the EC2 spot service-linked role as code (only when our own record says we created it)."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from gpu_finops.facts.names import SPOT_SLR, spot_slr_record_name
from teardown.listing import owned, unless_gone
from teardown.model import Context, Resource, gone_ok, is_gone
from teardown.registry import ResourceType, register, register_row
from teardown.row import Call, Row, provenance_details


def empty_instance_profile(ctx: Context, r: Resource) -> None:
    """A profile is emptied of its roles (read again: Karpenter may have changed them) first."""
    iam = ctx.client("iam")
    for role in iam.get_instance_profile(InstanceProfileName=r.id)["InstanceProfile"].get("Roles", []):
        iam.remove_role_from_instance_profile(InstanceProfileName=r.id, RoleName=role["RoleName"])


# Ours by tag (our stacks' default tags; Karpenter's cluster tags on the profiles it creates).
# ListInstanceProfiles returns no tags: each is read with GetInstanceProfile.
register_row(Row(
    "iam_instance_profile", "iam", "list_instance_profiles", "InstanceProfiles", "InstanceProfileName",
    "delete_instance_profile", "InstanceProfileName", prepare=empty_instance_profile,
    describe=Call("get_instance_profile", "InstanceProfileName", "InstanceProfileName", "InstanceProfile"),
    name_field="InstanceProfileName", created="CreateDate",
    details={"roles": lambda p: [r["RoleName"] for r in p.get("Roles", [])], "unique_id": "InstanceProfileId"},
    depends_on=("ec2_instance",),
    why_left="Karpenter creates instance profiles per EC2NodeClass; they block node-role deletion",
))  # fmt: skip


def release_role(ctx: Context, r: Resource) -> None:
    """A role is detached from its managed policies, stripped of its inline ones and taken out of its
    instance profiles first."""
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


# Ours by tag. ListRoles returns no tags: each is read with ListRoleTags.
register_row(Row(
    "iam_role", "iam", "list_roles", "Roles", "RoleName",
    "delete_role", "RoleName", prepare=release_role,
    tags=Call("list_role_tags", "RoleName", "RoleName", "Tags"), name_field="RoleName", created="CreateDate",
    details={"unique_id": "RoleId"},  # provenance: a role made again under our name has another
    skip=lambda role: role.get("Path", "/").startswith("/aws-service-role/"),  # see spot_slr
    depends_on=("iam_instance_profile", "eks_cluster", "eks_nodegroup", "fis_template"),
    why_left="an instance profile still holds it (Karpenter's, not in Terraform state)",
))  # fmt: skip


def drop_policy_versions(ctx: Context, r: Resource) -> None:
    """A policy's versions other than the default are deleted first."""
    iam = ctx.client("iam")
    for version in iam.list_policy_versions(PolicyArn=r.id)["Versions"]:
        if not version["IsDefaultVersion"]:
            iam.delete_policy_version(PolicyArn=r.id, VersionId=version["VersionId"])


# Customer-managed policies, ours by tag (ListPolicies returns no tags: read with ListPolicyTags).
register_row(Row(
    "iam_policy", "iam", "list_policies", "Policies", "Arn",
    "delete_policy", "PolicyArn",
    list_kwargs={"Scope": "Local"}, tags=Call("list_policy_tags", "PolicyArn", "Arn", "Tags"),
    name_field="PolicyName", created="CreateDate", prepare=drop_policy_versions, depends_on=("iam_role",),
    details={"unique_id": "PolicyId"},
))  # fmt: skip


def list_spot_slr(ctx: Context) -> list[Resource]:
    """The spot SLR is account-wide and AWS names it: listed as ours only when our record (an SSM parameter
    tagged as ours) says we created it. That record is writable by anyone with ssm:PutParameter, so it only
    nominates the role: `teardown.provenance.prove` then needs the role created after our run began (its
    CreateDate against our run record) or an earlier plan of ours for the same role (its RoleId), like any
    other resource. A role someone else made before our run stays, whatever the record says."""
    record = spot_slr_record_name(ctx.config.cluster_name)
    ssm = ctx.client("ssm")
    value = unless_gone(lambda: ssm.get_parameter(Name=record)["Parameter"])
    if value is None or value["Value"] != "true":
        return []
    tags = unless_gone(
        lambda: ssm.list_tags_for_resource(ResourceType="Parameter", ResourceId=record).get("TagList")
    )
    role = unless_gone(lambda: ctx.client("iam").get_role(RoleName=SPOT_SLR)["Role"])
    state = "present" if role else "record-only"
    # The role's creation decides; with the role gone, the record's own (only the record is then deleted).
    created = role["CreateDate"] if role else value.get("LastModifiedDate")
    details: dict[str, Any] = {"record": record, **provenance_details(created, {}, None)}
    if role:
        details["unique_id"] = role.get("RoleId")
    r = owned(ctx, "spot_slr", SPOT_SLR, tags or [], state, name=SPOT_SLR, **details)
    if r is None:  # the record is ours by name: say so rather than hide it
        why = f"record {record} says we created it, but the record has none of our tags"
        r = Resource("spot_slr", SPOT_SLR, state, SPOT_SLR, "", details, lookalike=why)
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
        irregular="account-wide and AWS-named: nominated by our SSM record of creating it (tagged ours), "
        "proven only by its CreateDate after our run began or an earlier plan of ours with its RoleId; "
        "deleting it deletes the record too",
    )
)
