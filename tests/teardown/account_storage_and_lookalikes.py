"""The rest of the demo-shaped account: the types teardown gained with tag ownership (EBS volumes, the
KMS key, the ECR repository, the FOCUS export bucket), and resources that *look like ours* (our kind of
name, another project's tag or none) which teardown must report and never touch."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import boto3

from gpu_finops.facts.config import Config

if TYPE_CHECKING:
    from tests.teardown.account import Account

PROJECT_TAG = "gpu-finops.io/project"


def add_storage(session: boto3.Session, acct: Account, cluster: str) -> None:
    """Ours: a PV volume as the EBS CSI driver tags it, the KMS key, the collector repository (with an
    image) and the export bucket (versioned, with versions and a delete marker)."""
    ec2, kms, ecr, s3 = (session.client(s) for s in ("ec2", "kms", "ecr", "s3"))
    ours = [{"Key": PROJECT_TAG, "Value": "gpu-finops"}, {"Key": "gpu-finops.io/cluster", "Value": cluster}]
    csi = [
        {"Key": f"kubernetes.io/cluster/{cluster}", "Value": "owned"},
        {"Key": "ebs.csi.aws.com/cluster", "Value": "true"},
        {"Key": "CSIVolumeName", "Value": "pvc-0b1c"},
        {"Key": "kubernetes.io/created-for/pvc/name", "Value": "checkpoints"},
    ]
    # with our tags too, as the driver's extraVolumeTags must give them: the nightly's role deletes no
    # volume by the driver's tags alone (anyone may set them)
    vol = ec2.create_volume(
        AvailabilityZone="us-east-1a", Size=10,
        TagSpecifications=[{"ResourceType": "volume", "Tags": [*csi, *ours]}],
    )  # fmt: skip
    acct.add(acct.ours, "ebs_volume", vol["VolumeId"])
    key = kms.create_key(
        Description=f"{cluster}: EKS secrets, logs, queue and cost table",
        Tags=[{"TagKey": t["Key"], "TagValue": t["Value"]} for t in ours],
    )["KeyMetadata"]["KeyId"]
    acct.add(acct.ours, "kms_key", key)
    repo = f"{cluster}/collector"
    ecr.create_repository(repositoryName=repo, tags=ours)
    ecr.put_image(
        repositoryName=repo,
        imageManifest=json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                "config": {},
                "layers": [],
            }
        ),
        imageTag="0.1.0",
    )
    acct.add(acct.ours, "ecr_repository", repo)
    bucket = Config(cluster_name=cluster).export_bucket(
        session.client("sts").get_caller_identity()["Account"]
    )
    s3.create_bucket(Bucket=bucket)
    s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": ours})
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    for body in (b"v1", b"v2"):
        s3.put_object(Bucket=bucket, Key="focus/2026-11.csv", Body=body)
    s3.delete_object(Bucket=bucket, Key="focus/2026-11.csv")  # a delete marker over two versions
    s3.put_object(Bucket=bucket, Key="focus/2026-12.csv", Body=b"x")
    acct.add(acct.ours, "s3_bucket", bucket)


def add_lookalikes_and_foreign(session: boto3.Session, acct: Account, cluster: str, trust: str) -> None:
    """Named like ours, tagged for another project or untagged (reported, left alone); and foreign
    resources of the new types."""
    ec2, kms, ecr, s3, iam = (session.client(s) for s in ("ec2", "kms", "ecr", "s3", "iam"))
    other = [{"Key": PROJECT_TAG, "Value": "other-project"}]
    look = acct.lookalikes
    # The foreign-role case: a role named the way our stacks name theirs, tagged for another project.
    acct.add(
        look,
        "iam_role",
        iam.create_role(RoleName=f"{cluster}-reporting", AssumeRolePolicyDocument=trust, Tags=other)["Role"][
            "RoleName"
        ],
    )
    acct.add(
        look,
        "iam_policy",
        iam.create_policy(
            PolicyName=f"{cluster}-readonly",
            PolicyDocument=json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [{"Effect": "Allow", "Action": "s3:List*", "Resource": "*"}],
                }
            ),
        )["Policy"]["Arn"],
    )
    acct.add(
        look,
        "iam_instance_profile",
        iam.create_instance_profile(InstanceProfileName=f"{cluster}-bastion", Tags=other)["InstanceProfile"][
            "InstanceProfileName"
        ],
    )
    acct.add(
        look,
        "ecr_repository",
        ecr.create_repository(repositoryName=f"{cluster}/other")["repository"]["repositoryName"],
    )
    s3.create_bucket(Bucket=f"{cluster}-notes")  # untagged
    acct.add(look, "s3_bucket", f"{cluster}-notes")
    acct.add(
        look,
        "ebs_volume",
        ec2.create_volume(
            AvailabilityZone="us-east-1a",
            Size=1,
            TagSpecifications=[
                {"ResourceType": "volume", "Tags": [{"Key": "Name", "Value": f"{cluster}-scratch"}, *other]}
            ],
        )["VolumeId"],
    )
    # Foreign and not named like ours: not even reported.
    acct.add(
        acct.foreign, "kms_key", kms.create_key(Description="someone else's key")["KeyMetadata"]["KeyId"]
    )
    acct.add(acct.foreign, "ebs_volume", ec2.create_volume(AvailabilityZone="us-east-1a", Size=1)["VolumeId"])
    s3.create_bucket(Bucket="other-team-data")
    s3.put_object(Bucket="other-team-data", Key="k", Body=b"keep")
    acct.add(acct.foreign, "s3_bucket", "other-team-data")
    acct.add(
        acct.foreign,
        "ecr_repository",
        ecr.create_repository(repositoryName="other/app")["repository"]["repositoryName"],
    )


def live(session: boto3.Session) -> dict[str, set[str]]:
    """Every id that exists now, per teardown type (terminated, deleted and pending deletion excluded)."""
    ec2, iam = session.client("ec2"), session.client("iam")
    keys = set()
    kms = session.client("kms")
    for k in kms.list_keys()["Keys"]:
        if kms.describe_key(KeyId=k["KeyId"])["KeyMetadata"]["KeyState"] != "PendingDeletion":
            keys.add(k["KeyId"])
    return {
        "vpc": {v["VpcId"] for v in ec2.describe_vpcs()["Vpcs"]},
        "subnet": {s["SubnetId"] for s in ec2.describe_subnets()["Subnets"]},
        "ec2_instance": {
            i["InstanceId"]
            for r in ec2.describe_instances()["Reservations"]
            for i in r["Instances"]
            if i["State"]["Name"] != "terminated"
        },
        "network_interface": {
            n["NetworkInterfaceId"] for n in ec2.describe_network_interfaces()["NetworkInterfaces"]
        },
        "ebs_volume": {v["VolumeId"] for v in ec2.describe_volumes()["Volumes"]},
        "sqs_queue": set(session.client("sqs").list_queues().get("QueueUrls", [])),
        "iam_role": {r["RoleName"] for r in iam.list_roles()["Roles"]},
        "iam_policy": {p["Arn"] for p in iam.list_policies(Scope="Local")["Policies"]},
        "iam_instance_profile": {
            p["InstanceProfileName"] for p in iam.list_instance_profiles()["InstanceProfiles"]
        },
        "log_group": {g["logGroupName"] for g in session.client("logs").describe_log_groups()["logGroups"]},
        "eks_cluster": set(session.client("eks").list_clusters()["clusters"]),
        "kms_key": keys,
        "ecr_repository": {
            r["repositoryName"] for r in session.client("ecr").describe_repositories()["repositories"]
        },
        "s3_bucket": {b["Name"] for b in session.client("s3").list_buckets()["Buckets"]},
    }
