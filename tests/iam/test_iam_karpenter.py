"""Every AWS call Karpenter v1.15.0 makes on the first run, with the action, ARN and tags its source sends,
decided with iam/iam_eval.py against the controller policy the cluster stack attaches AND the permissions
boundary its role carries: all allowed for our cluster; each resource-scoped one denied for a sibling cluster
(`<cluster>-b`: its tags, its profile path, its queue). Sources: `pkg/...` in
github.com/aws/karpenter-provider-aws@v1.14.3 (`file:line` at that tag), re-read at v1.15.0: the set of SDK calls
in pkg/ differs only by ec2:RebootInstances, which needs alpha gates we leave off, and the instance-profile
naming code is unchanged (docs/infra.md, Karpenter 1.15); `file:line` is where the
call or the tags it sends are built. Reads that take no resource (Describe*, pricing) have no foreign case.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from gpu_finops.facts.config import Config
from gpu_finops.facts.names import TAG_CLUSTER, TAG_PROJECT
from iam.ci_boundary import boundary_policy
from iam.iam_eval import Request, decide
from iam.iam_policies import karpenter_controller, karpenter_profile_path

ACCOUNT = "123456789012"
C = Config(allowed_accounts=(ACCOUNT,))
NODECLASS = "gpu"  # infra/objects/karpenter.py names the EC2NodeClass so
UID = "0b6f2d7e-9d1c-4a55-8f0e-2b9c1f3e4d5a"  # the EC2NodeClass's metadata.uid, any value
PROFILE_NAME = f"{C.cluster_name}_4012345678901234567"  # ec2nodeclass.go:616, `<cluster>_<hash>`


def controller(cluster: str = C.cluster_name) -> dict[str, Any]:
    node_role = f"arn:aws:iam::{ACCOUNT}:role/{C.karpenter_node_role}"
    queue = f"arn:aws:sqs:{C.region}:{ACCOUNT}:{C.interruption_queue}"
    return json.loads(karpenter_controller(C.cluster_name, C.region, ACCOUNT, node_role, queue))


@dataclass(frozen=True)
class Target:
    """One cluster's names and the tags Karpenter puts on what it makes for it."""

    cluster: str

    @property
    def ec2_tags(self) -> dict[str, str]:
        # pkg/utils/utils.go:116-122 (GetTags: the static tags over spec.tags, which are our c.tags)
        return {**C.tags, f"kubernetes.io/cluster/{self.cluster}": "owned", "karpenter.sh/nodepool": C.nodepool_name,
                "eks:eks-cluster-name": self.cluster, "karpenter.k8s.aws/ec2nodeclass": NODECLASS}  # fmt: skip

    @property
    def profile_tags(self) -> dict[str, str]:
        # pkg/apis/v1/ec2nodeclass.go:624-631 (InstanceProfileTags)
        return {**C.tags, f"kubernetes.io/cluster/{self.cluster}": "owned", "eks:eks-cluster-name": self.cluster,
                "karpenter.k8s.aws/ec2nodeclass": NODECLASS, "topology.kubernetes.io/region": C.region}  # fmt: skip

    @property
    def profile(self) -> str:
        # pkg/controllers/nodeclass/instanceprofile.go:91: FormatPath("karpenter", region, cluster, uid)
        path = f"/karpenter/{C.region}/{self.cluster}/{UID}/"
        return f"arn:aws:iam::{ACCOUNT}:instance-profile{path}{PROFILE_NAME.replace(C.cluster_name, self.cluster)}"

    @property
    def queue(self) -> str:
        return f"arn:aws:sqs:{C.region}:{ACCOUNT}:{self.cluster}-interruption"


OURS, FOREIGN = Target(C.cluster_name), Target(f"{C.cluster_name}-b")
EC2 = f"arn:aws:ec2:{C.region}:{ACCOUNT}"


def request_tags(tags: dict[str, str]) -> dict[str, Any]:
    return {**{f"aws:RequestTag/{k}": v for k, v in tags.items()}, "aws:TagKeys": sorted(tags)}


def resource_tags(tags: dict[str, str]) -> dict[str, Any]:
    return {f"aws:ResourceTag/{k}": v for k, v in tags.items()}


@dataclass(frozen=True)
class Call:
    source: str
    action: str
    resource: str
    context: dict[str, Any] = field(default_factory=dict)
    scoped: bool = True  # False: a read on `*`, the same for any cluster


def calls(t: Target) -> list[Call]:
    """The first run's calls against target `t`'s resources."""
    made = request_tags(t.ec2_tags)
    tagged = resource_tags(t.ec2_tags)
    lt, instance = f"{EC2}:launch-template/lt-0abc", f"{EC2}:instance/i-0abc"

    def per_cluster(arn: str, ctx: dict) -> bool:  # Amazon's images are the same for every cluster
        return bool(ctx) and "::image/" not in arn

    launch_resources = [  # what CreateFleet / RunInstances authorize besides what they create
        # the target cluster's subnets carry its network stack's default tags (the boundary asks for both)
        (f"{EC2}:subnet/subnet-0abc", resource_tags({TAG_PROJECT: C.project, TAG_CLUSTER: t.cluster})),
        (f"{EC2}:security-group/sg-0abc", {}),
        # the EKS-optimized AMI the alias resolves to: Amazon's (AWS sends ec2:Owner "amazon")
        (f"arn:aws:ec2:{C.region}::image/ami-0abc", {"ec2:Owner": "amazon"}),
        (lt, tagged),
    ]
    out = [
        Call("pkg/providers/launchtemplate/launchtemplate.go:291 (tags: types.go:144-147)",
             "ec2:CreateLaunchTemplate", f"{EC2}:launch-template/*", made),
        Call("pkg/providers/launchtemplate/types.go:144 (tag on create)", "ec2:CreateTags",
             f"{EC2}:launch-template/*", {**made, "ec2:CreateAction": "CreateLaunchTemplate"}),
        *(Call("pkg/batcher/createfleet.go:61 (tags: pkg/providers/instance/types.go:171-179)",
               "ec2:CreateFleet", f"{EC2}:{kind}/*", made)
          for kind in ("fleet", "instance", "volume", "network-interface", "spot-instances-request")),
        *(Call("pkg/providers/instance/types.go:178 (tag on create)", "ec2:CreateTags", f"{EC2}:{kind}/*",
               {**made, "ec2:CreateAction": "CreateFleet"}) for kind in ("fleet", "instance", "volume")),
        *(Call("pkg/batcher/createfleet.go:61", "ec2:CreateFleet", arn, ctx, scoped=per_cluster(arn, ctx))
          for arn, ctx in launch_resources),
        *(Call("pkg/controllers/nodeclass/validation.go:309 (dry run)", "ec2:RunInstances", arn, ctx,
               scoped=per_cluster(arn, ctx)) for arn, ctx in [*launch_resources, (f"{EC2}:instance/*", made)]),
        Call("pkg/controllers/nodeclass/validation.go:278 (dry run)", "ec2:CreateFleet", lt, tagged),
        Call("pkg/controllers/nodeclaim/tagging/controller.go:105-125 -> pkg/providers/instance/instance.go:308",
             "ec2:CreateTags", instance,
             {**tagged, **request_tags({"Name": "ip-10-42-0-1.ec2.internal", "karpenter.sh/nodeclaim": "gpu-spot-x",
                                        "eks:eks-cluster-name": t.cluster})}),
        Call("pkg/batcher/terminateinstances.go:71 (pkg/providers/instance/instance.go:283)",
             "ec2:TerminateInstances", instance, tagged),
        Call("pkg/providers/launchtemplate/launchtemplate.go:482", "ec2:DeleteLaunchTemplate", lt, tagged),
        Call("pkg/providers/instanceprofile/instanceprofile.go:122 (path: nodeclass/instanceprofile.go:91)",
             "iam:CreateInstanceProfile", t.profile, request_tags(t.profile_tags)),
        Call("pkg/providers/instanceprofile/instanceprofile.go:117 (Tags on create: IAM also authorizes "
             "iam:TagInstanceProfile)", "iam:TagInstanceProfile", t.profile,
             {**request_tags(t.profile_tags), **resource_tags(t.profile_tags)}),
        Call("pkg/providers/instanceprofile/instanceprofile.go:85", "iam:GetInstanceProfile", t.profile,
             scoped=False),
        Call("pkg/providers/instanceprofile/instanceprofile.go:171", "iam:AddRoleToInstanceProfile", t.profile,
             resource_tags(t.profile_tags)),
        Call("pkg/providers/instanceprofile/instanceprofile.go:199", "iam:RemoveRoleFromInstanceProfile",
             t.profile, resource_tags(t.profile_tags)),
        Call("pkg/providers/instanceprofile/instanceprofile.go:206", "iam:DeleteInstanceProfile", t.profile,
             resource_tags(t.profile_tags)),
        Call("pkg/providers/instanceprofile/instanceprofile.go:221 (garbagecollection/controller.go:115)",
             "iam:ListInstanceProfiles", "*", scoped=False),
        Call("pkg/providers/sqs/sqs.go:108", "sqs:GetQueueUrl", t.queue),
        Call("pkg/providers/sqs/sqs.go:71", "sqs:ReceiveMessage", t.queue),
        Call("pkg/providers/sqs/sqs.go:101", "sqs:DeleteMessage", t.queue),
        Call("pkg/operator/operator.go:306", "eks:DescribeCluster",
             f"arn:aws:eks:{C.region}:{ACCOUNT}:cluster/{t.cluster}"),
        Call("pkg/providers/ssm/provider.go:53 (path: pkg/providers/amifamily/al2023.go:79)", "ssm:GetParameter",
             f"arn:aws:ssm:{C.region}::parameter/aws/service/eks/optimized-ami/{C.versions.kubernetes}/"
             f"amazon-linux-2023/x86_64/nvidia/amazon-eks-node-al2023-x86_64-nvidia-{C.versions.kubernetes}-"
             f"{C.versions.node_ami_alias.split('@')[1]}/image_id", scoped=False),
        Call("pkg/providers/pricing/pricing.go:293", "pricing:GetProducts", "*",
             {"aws:RequestedRegion": "us-east-1"}, scoped=False),
    ]  # fmt: skip
    reads = {
        "ec2:DescribeSubnets": "pkg/providers/subnet/subnet.go:97",
        "ec2:DescribeSecurityGroups": "pkg/providers/securitygroup/securitygroup.go:83",
        "ec2:DescribeImages": "pkg/providers/amifamily/ami.go:186",
        "ec2:DescribeInstanceTypes": "pkg/providers/instancetype/instancetype.go:268",
        "ec2:DescribeInstanceTypeOfferings": "pkg/providers/instancetype/instancetype.go:314",
        "ec2:DescribeSpotPriceHistory": "pkg/providers/pricing/pricing.go:405",
        "ec2:DescribeLaunchTemplates": "pkg/providers/launchtemplate/launchtemplate.go:254",
        "ec2:DescribeInstances": "pkg/batcher/describeinstances.go:72",
        "ec2:DescribeInstanceStatus": "pkg/providers/instancestatus/instancestatus.go:99",
        "ec2:DescribePlacementGroups": "pkg/providers/placementgroup/provider.go:80",
        "ec2:DescribeCapacityReservations": "pkg/providers/capacityreservation/provider.go:81",
    }
    out += [Call(src, action, "*", scoped=False) for action, src in reads.items()]
    out.append(
        Call(
            "pkg/providers/launchtemplate/types.go:113 (the profile in the template; RunInstances passes its role)",
            "iam:PassRole",
            f"arn:aws:iam::{ACCOUNT}:role/{C.karpenter_node_role}",
            {"iam:PassedToService": "ec2.amazonaws.com"},
            scoped=False,
        )
    )
    return out


def request(call: Call) -> Request:
    return Request(call.action, call.resource, {"aws:RequestedRegion": C.region, **call.context})


def both(call: Call) -> tuple[bool, str]:
    """Allowed only when the controller policy and the boundary both allow it (the boundary is a ceiling)."""
    mine, ceiling = (
        decide([controller()], request(call)),
        decide([boundary_policy(C, ACCOUNT)], request(call)),
    )
    return mine.allowed and ceiling.allowed, f"policy: {mine.reason}; boundary: {ceiling.reason}"


@pytest.mark.parametrize("call", calls(OURS), ids=lambda c: f"{c.action} {c.resource.rsplit(':', 1)[-1]}")
def test_each_first_run_call_is_allowed_for_our_cluster(call):
    allowed, why = both(call)
    assert allowed, f"{call.source}: {call.action} on {call.resource} refused ({why})"


@pytest.mark.parametrize(
    "call",
    [c for c in calls(FOREIGN) if c.scoped],
    ids=lambda c: f"{c.action} {c.resource.rsplit(':', 1)[-1]}",
)
def test_the_same_call_on_a_sibling_clusters_resources_is_denied(call):
    allowed, why = both(call)
    assert not allowed, (
        f"{call.source}: {call.action} on {call.resource} of {FOREIGN.cluster} allowed ({why})"
    )


def test_profile_grants_follow_karpenters_path_not_the_legacy_name():
    """v1.14 puts every profile under /karpenter/<region>/<cluster>/<uid>/; a grant on the root name
    `instance-profile/<cluster>_*` (what the boundary had) matches none of them."""
    assert OURS.profile.startswith(
        f"arn:aws:iam::{ACCOUNT}:instance-profile{karpenter_profile_path(C.cluster_name, C.region)}"
    )
    add = Call("", "iam:AddRoleToInstanceProfile", OURS.profile, resource_tags(OURS.profile_tags))
    # the tags Karpenter sends on create are not sent again when it adds the role: a RequestTag condition fails
    assert not any(k.startswith("aws:RequestTag/") for k in add.context)
    assert both(add)[0]


def test_the_controller_policy_names_upstreams_statements():
    sids = {s["Sid"] for s in controller()["Statement"]}
    assert {"AllowScopedResourceTagging", "AllowScopedInstanceProfileCreationActions",
            "AllowScopedInstanceProfileTagActions", "AllowScopedInstanceProfileActions",
            "AllowUnscopedInstanceProfileListAction", "AllowInstanceProfileReadActions"} <= sids  # fmt: skip
    (unscoped,) = [
        s for s in controller()["Statement"] if s["Sid"] == "AllowUnscopedInstanceProfileListAction"
    ]
    assert unscoped["Resource"] == "*" and unscoped["Action"] == "iam:ListInstanceProfiles"
