"""Build a demo-shaped account in moto: ours (tagged as the stacks, Karpenter and our VPC CNI tag) and
foreign resources that teardown must never touch."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import boto3

from teardown.provenance import TERRAFORM_TYPES
from tests.teardown.account_storage_and_lookalikes import add_lookalikes_and_foreign, add_storage, live

CLUSTER = "gpu-finops"
# The stacks' default tags (project and cluster) and a Name.
OURS = [
    {"Key": "gpu-finops.io/project", "Value": "gpu-finops"},
    {"Key": "gpu-finops.io/cluster", "Value": "gpu-finops"},
    {"Key": "Name", "Value": "gpu-finops"},
]
NODECLASS = OURS[
    :2
]  # the EC2NodeClass's tags (infra/objects/karpenter.py): Karpenter puts them on what it launches
# The VPC CNI's own tags on an interface it creates (CLUSTER_NAME set); ours come from ADDITIONAL_ENI_TAGS.
VPC_CNI = [
    {"Key": "cluster.k8s.amazonaws.com/name", "Value": CLUSTER},
    {"Key": "eks:eni:owner", "Value": "amazon-vpc-cni"},
    {"Key": "node.k8s.amazonaws.com/instance_id", "Value": "i-0123456789abcdef0"},
]
TRUST = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ],
    }
)


ROOT = Path(__file__).resolve().parents[2]
# What our stacks create and AWS gives no creation time for: Terraform's state is their provenance.
IN_STATE = ("vpc", "subnet", "internet_gateway", "eip", "nat_gateway", "route_table", "security_group",
            "sqs_queue", "eventbridge_rule")  # fmt: skip


def in_state(rtype: str, *ids: str, mode: str = "managed", **attrs: str) -> None:
    """Add managed resources of teardown type `rtype` (as the Terraform type teardown maps it to) to a
    state file under `.state/`, as `infra up` leaves them (the working directory is the test's own:
    tests/conftest.py's teardown_run). `attrs` go into every instance (a role's unique_id)."""
    if Path.cwd().resolve() == ROOT:
        raise RuntimeError(
            "in_state writes .state/ here: run from a temporary directory (fixture teardown_run)"
        )
    path = Path(".state") / "terraform.cluster.tfstate"
    doc = json.loads(path.read_text()) if path.exists() else {"version": 4, "resources": []}
    (tf, *_) = TERRAFORM_TYPES[rtype]
    doc["resources"].append(
        {
            "mode": mode,
            "type": tf,
            "name": "t",
            "instances": [{"attributes": {"id": i, **attrs}} for i in ids],
        }
    )
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(doc))


def spec(rtype: str, tags=OURS) -> list[dict]:
    return [{"ResourceType": rtype, "Tags": tags}]


@dataclass
class Account:
    ours: dict[str, list[str]] = field(default_factory=dict)
    foreign: dict[str, list[str]] = field(default_factory=dict)
    lookalikes: dict[str, list[str]] = field(default_factory=dict)  # named like ours, not tagged as ours

    def add(self, bucket: dict[str, list[str]], rtype: str, rid: str) -> str:
        bucket.setdefault(rtype, []).append(rid)
        return rid


def build(session: boto3.Session, *, instances: int = 2, storage: bool = True) -> Account:
    acct = Account()
    ec2, iam = session.client("ec2"), session.client("iam")
    ours, foreign = acct.ours, acct.foreign

    vpc = acct.add(
        ours, "vpc", ec2.create_vpc(CidrBlock="10.42.0.0/16", TagSpecifications=spec("vpc"))["Vpc"]["VpcId"]
    )
    subnets = [
        acct.add(
            ours,
            "subnet",
            ec2.create_subnet(
                VpcId=vpc,
                CidrBlock=f"10.42.{i}.0/24",
                AvailabilityZone=f"us-east-1{'ab'[i]}",
                TagSpecifications=spec("subnet"),
            )["Subnet"]["SubnetId"],
        )
        for i in range(2)
    ]
    igw = acct.add(
        ours,
        "internet_gateway",
        ec2.create_internet_gateway(TagSpecifications=spec("internet-gateway"))["InternetGateway"][
            "InternetGatewayId"
        ],
    )
    ec2.attach_internet_gateway(InternetGatewayId=igw, VpcId=vpc)
    eip = acct.add(
        ours, "eip", ec2.allocate_address(Domain="vpc", TagSpecifications=spec("elastic-ip"))["AllocationId"]
    )
    nat = acct.add(
        ours,
        "nat_gateway",
        ec2.create_nat_gateway(SubnetId=subnets[0], AllocationId=eip, TagSpecifications=spec("natgateway"))[
            "NatGateway"
        ]["NatGatewayId"],
    )
    rt = acct.add(
        ours,
        "route_table",
        ec2.create_route_table(VpcId=vpc, TagSpecifications=spec("route-table"))["RouteTable"][
            "RouteTableId"
        ],
    )
    ec2.create_route(RouteTableId=rt, DestinationCidrBlock="0.0.0.0/0", NatGatewayId=nat)
    ec2.associate_route_table(RouteTableId=rt, SubnetId=subnets[1])
    sg = acct.add(
        ours,
        "security_group",
        ec2.create_security_group(
            GroupName="gpu-finops-nodes",
            Description="nodes",
            VpcId=vpc,
            TagSpecifications=spec("security-group"),
        )["GroupId"],
    )

    # Instances as Karpenter launches them: tagged by cluster and NodePool, and with the EC2NodeClass's tags.
    karpenter_tags = [
        *NODECLASS,
        {"Key": f"kubernetes.io/cluster/{CLUSTER}", "Value": "owned"},
        {"Key": "karpenter.sh/nodepool", "Value": "gpu-spot"},
        {"Key": "eks:eks-cluster-name", "Value": CLUSTER},
    ]
    for _ in range(instances):
        inst = ec2.run_instances(
            ImageId="ami-12c6146b",
            MinCount=1,
            MaxCount=1,
            InstanceType="g6e.xlarge",
            SubnetId=subnets[1],
            SecurityGroupIds=[sg],
            TagSpecifications=spec("instance", karpenter_tags),
        )["Instances"][0]
        acct.add(ours, "ec2_instance", inst["InstanceId"])
    # A VPC-CNI ENI left 'available' after its node died, tagged as our CNI tags (iam/vpc_cni.py).
    eni = ec2.create_network_interface(
        SubnetId=subnets[1],
        Groups=[sg],
        Description="aws-K8S-i-0123456789abcdef0",
        TagSpecifications=spec("network-interface", [*VPC_CNI, *NODECLASS]),
    )
    acct.add(ours, "network_interface", eni["NetworkInterface"]["NetworkInterfaceId"])
    lt = ec2.create_launch_template(
        LaunchTemplateName=f"karpenter.k8s.aws/{CLUSTER}/gpu",
        LaunchTemplateData={},
        TagSpecifications=spec(
            "launch-template", [{"Key": "karpenter.k8s.aws/cluster", "Value": CLUSTER}, *NODECLASS]
        ),
    )
    acct.add(ours, "launch_template", lt["LaunchTemplate"]["LaunchTemplateId"])

    role = acct.add(
        ours,
        "iam_role",
        iam.create_role(RoleName=f"{CLUSTER}-karpenter-node", AssumeRolePolicyDocument=TRUST, Tags=OURS)[
            "Role"
        ]["RoleName"],
    )
    policy = iam.create_policy(
        PolicyName=f"{CLUSTER}-karpenter-controller",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": "ec2:Describe*", "Resource": "*"}],
            }
        ),
        Tags=OURS[:2],
    )["Policy"]["Arn"]
    acct.add(ours, "iam_policy", policy)
    iam.attach_role_policy(RoleName=role, PolicyArn=policy)
    iam.put_role_policy(
        RoleName=role,
        PolicyName="inline",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": "s3:List*", "Resource": "*"}],
            }
        ),
    )
    profile = acct.add(
        ours,
        "iam_instance_profile",
        iam.create_instance_profile(  # as Karpenter creates one per EC2NodeClass: tagged by cluster
            InstanceProfileName=f"{CLUSTER}_1234567890",
            Tags=[{"Key": f"kubernetes.io/cluster/{CLUSTER}", "Value": "owned"}],
        )["InstanceProfile"]["InstanceProfileName"],
    )
    iam.add_role_to_instance_profile(InstanceProfileName=profile, RoleName=role)

    sqs = session.client("sqs")
    queue = acct.add(
        ours,
        "sqs_queue",
        sqs.create_queue(QueueName=f"{CLUSTER}-interruption", tags={"gpu-finops.io/project": "gpu-finops"})[
            "QueueUrl"
        ],
    )
    events = session.client("events")
    rule_arn = events.put_rule(
        Name=f"{CLUSTER}-spot-interruption",
        EventPattern=json.dumps(
            {"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]}
        ),
        Tags=OURS[:2],
    )["RuleArn"]
    events.put_targets(
        Rule=f"{CLUSTER}-spot-interruption",
        Targets=[
            {
                "Id": "q",
                "Arn": queue.replace("http://", "arn:aws:sqs:us-east-1:123456789012:").rsplit("/", 1)[0],
            }
        ],
    )
    acct.add(ours, "eventbridge_rule", f"{CLUSTER}-spot-interruption")
    assert rule_arn
    fis = session.client("fis")
    template = fis.create_experiment_template(
        clientToken="t1",
        description="spot interruption",
        roleArn=f"arn:aws:iam::123456789012:role/{role}",
        stopConditions=[{"source": "none"}],
        targets={
            "spot": {
                "resourceType": "aws:ec2:spot-instance",
                "selectionMode": "ALL",
                "resourceTags": {"karpenter.sh/nodepool": "gpu-spot"},
            }
        },
        actions={
            "interrupt": {
                "actionId": "aws:ec2:send-spot-instance-interruptions",
                "parameters": {"durationBeforeInterruption": "PT2M"},
                "targets": {"SpotInstances": "spot"},
            }
        },
        tags={"gpu-finops.io/project": "gpu-finops"},
    )["experimentTemplate"]["id"]
    acct.add(ours, "fis_template", template)
    logs = session.client("logs")
    logs.create_log_group(
        logGroupName=f"/aws/eks/{CLUSTER}/cluster", tags={"gpu-finops.io/project": "gpu-finops"}
    )
    acct.add(ours, "log_group", f"/aws/eks/{CLUSTER}/cluster")
    ddb = session.client("dynamodb")
    ddb.create_table(
        TableName=f"{CLUSTER}-cost",
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "ResourceId", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "ResourceId", "AttributeType": "S"}],
        Tags=OURS[:2],
    )
    acct.add(ours, "dynamodb_table", f"{CLUSTER}-cost")
    eks = session.client("eks")
    role_arn = iam.get_role(RoleName=role)["Role"]["Arn"]
    eks.create_cluster(
        name=CLUSTER,
        roleArn=role_arn,
        resourcesVpcConfig={"subnetIds": subnets},
        tags={"gpu-finops.io/project": "gpu-finops"},
    )
    eks.create_nodegroup(
        clusterName=CLUSTER,
        nodegroupName="system",
        nodeRole=role_arn,
        subnets=subnets,
        tags={"gpu-finops.io/project": "gpu-finops"},
    )
    acct.add(ours, "eks_cluster", CLUSTER)
    acct.add(ours, "eks_nodegroup", f"{CLUSTER}:system")

    # Foreign: same account, no project tags, other names. Teardown must leave every one of them.
    fvpc = acct.add(foreign, "vpc", ec2.create_vpc(CidrBlock="10.99.0.0/16")["Vpc"]["VpcId"])
    fsub = acct.add(
        foreign, "subnet", ec2.create_subnet(VpcId=fvpc, CidrBlock="10.99.1.0/24")["Subnet"]["SubnetId"]
    )
    acct.add(
        foreign,
        "ec2_instance",
        ec2.run_instances(
            ImageId="ami-12c6146b",
            MinCount=1,
            MaxCount=1,
            SubnetId=fsub,
            TagSpecifications=spec("instance", [{"Key": "team", "Value": "other"}]),
        )["Instances"][0]["InstanceId"],
    )
    acct.add(foreign, "sqs_queue", sqs.create_queue(QueueName="other-team-queue")["QueueUrl"])
    acct.add(
        foreign,
        "iam_role",
        iam.create_role(RoleName="other-team-role", AssumeRolePolicyDocument=TRUST)["Role"]["RoleName"],
    )
    logs.create_log_group(logGroupName="/aws/eks/other/cluster")
    acct.add(foreign, "log_group", "/aws/eks/other/cluster")
    eks.create_cluster(
        name="other",
        roleArn=role_arn.replace(role, "other-team-role"),
        resourcesVpcConfig={"subnetIds": [fsub]},
    )
    acct.add(foreign, "eks_cluster", "other")
    if storage:
        add_storage(session, acct, CLUSTER)
        add_lookalikes_and_foreign(session, acct, CLUSTER, TRUST)
    for t in IN_STATE:
        in_state(t, *ours.get(t, []))
    return acct


def foreign_still_there(session: boto3.Session, acct: Account) -> dict[str, list[str]]:
    """Which foreign or looks-like-ours resources are missing (should be empty)."""
    now = live(session)
    missing: dict[str, list[str]] = {}
    for bucket in (acct.foreign, acct.lookalikes):
        for rtype, ids in bucket.items():
            gone = [i for i in ids if i not in now[rtype]]
            if gone:
                missing.setdefault(rtype, []).extend(gone)
    return missing


def ours_left(session: boto3.Session, acct: Account) -> dict[str, list[str]]:
    """Which of our resources still exist, read from the account directly (not through teardown)."""
    now = live(session)
    left = {t: [i for i in ids if i in now.get(t, set())] for t, ids in acct.ours.items() if t in now}
    return {t: ids for t, ids in left.items() if ids}
