"""Checks before any apply: credentials, the account allowlist, terraform or tofu, the G/VT spot vCPU
quota against the NodePool limit, the AWS CLI (kubeconfig tokens), the nightly's permissions boundary (every
role the stacks create carries it), spot offerings of each GPU instance type in each zone of our subnets, and
the EC2 spot service-linked role. Every check runs and reports;
`make up` stops before applying anything if one failed.

`collector_image` is checked later, by `make up` itself between the cluster and addons stacks: the cluster
stack creates the ECR repository, so before it there is nothing to look in."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from gpu_finops.facts.config import Config
from gpu_finops.facts.names import SPOT_SLR, state_prefix
from iam.ci_policies import boundary_arn

# The Terraform runtimes `make up` runs, first found first: OpenTofu is the one every stack is validated, planned
# and applied with before it lands (local/build/terraform.py) and the one the nightly installs.
TERRAFORM_TOOLS = ("tofu", "terraform")
GVT_SPOT_QUOTA_CODE = "L-3819A6DF"  # EC2: All G and VT Spot Instance Requests (vCPUs)


def collector_registry(c: Config, account: str) -> str:
    return f"{account}.dkr.ecr.{c.region}.amazonaws.com"


def collector_image_ref(c: Config, account: str) -> str:
    """The image the addons stack's collector release pulls (infra/addons.py)."""
    return f"{collector_registry(c, account)}/{c.collector_repository}:{c.versions.collector_image_tag}"


def push_commands(c: Config, account: str) -> list[str]:
    """How to build and push the collector image by hand, from the repository root (the Dockerfile)."""
    registry, ref = collector_registry(c, account), collector_image_ref(c, account)
    return [
        f"aws ecr get-login-password --region {c.region} | docker login --username AWS --password-stdin {registry}",
        f"docker build -t {ref} .",
        f"docker push {ref}",
    ]


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


@dataclass
class Preflight:
    config: Config
    session: boto3.Session
    which: Callable[[str], str | None] = shutil.which

    def credentials(self) -> tuple[Check, str | None]:
        try:
            ident = self.session.client("sts").get_caller_identity()
        except (NoCredentialsError, ClientError, BotoCoreError) as exc:
            return Check(
                "credentials",
                False,
                f"no usable AWS credentials ({type(exc).__name__}: {exc}); "
                "set AWS_PROFILE or keys for the sandbox account, or assume its role",
            ), None
        return Check("credentials", True, f"{ident['Arn']}"), ident["Account"]

    def account(self, account: str | None) -> Check:
        allowed = self.config.allowed_accounts
        if account is None:
            return Check("account allowlist", False, "unknown account (no credentials)")
        if not allowed:
            return Check(
                "account allowlist",
                False,
                "allowed_accounts is empty in gpu_finops/facts/config.yaml: add the "
                f"sandbox account id ({account} is the one your credentials reach) to apply anything",
            )
        if account not in allowed:
            return Check(
                "account allowlist", False, f"account {account} is not in allowed_accounts {list(allowed)}"
            )
        return Check("account allowlist", True, account)

    def terraform(self) -> Check:
        for tool in TERRAFORM_TOOLS:
            path = self.which(tool)
            if path:
                return Check("terraform", True, path)
        return Check(
            "terraform",
            False,
            "neither tofu nor terraform is on PATH: install OpenTofu (docs/runbook.md, prerequisites)",
        )

    def aws_cli(self) -> Check:
        """The kubeconfig `make up` writes authenticates through `aws eks get-token`."""
        path = self.which("aws")
        if path:
            return Check("aws CLI", True, path)
        return Check(
            "aws CLI",
            False,
            "aws (AWS CLI v2) is not on PATH: the kubeconfig the acts use gets its tokens from "
            "`aws eks get-token`; install it",
        )

    def quota(self) -> Check:
        need = self.config.for_aws().gpu_vcpus_needed  # the pools AWS runs
        try:
            quota = self.session.client("service-quotas", region_name=self.config.region).get_service_quota(
                ServiceCode="ec2", QuotaCode=GVT_SPOT_QUOTA_CODE
            )["Quota"]["Value"]
        except (ClientError, BotoCoreError) as exc:
            return Check("G/VT spot vCPU quota", False, f"could not read quota {GVT_SPOT_QUOTA_CODE}: {exc}")
        if quota < need:
            return Check(
                "G/VT spot vCPU quota",
                False,
                f"{GVT_SPOT_QUOTA_CODE} is {quota:g} vCPUs, the GPU NodePools' "
                f"limits need {need}: request an increase (new accounts start at 0)",
            )
        return Check("G/VT spot vCPU quota", True, f"{quota:g} >= NodePool limit {need}")

    def boundary(self, account: str) -> Check:
        """The permissions boundary the ci-role stack creates; the cluster stack puts it on every role it
        creates, so without it the first CreateRole fails half-way through the apply."""
        arn, name = boundary_arn(self.config, account), "permissions boundary"
        try:
            self.session.client("iam").get_policy(PolicyArn=arn)
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "NoSuchEntity":
                return Check(
                    name,
                    False,
                    f"{arn} does not exist: every role the cluster stack creates carries it; apply the ci-role "
                    "stack first (docs/runbook.md, section 2: `make synth`, then terraform init and apply in "
                    "cdktf.out/stacks/ci-role)",
                )
            return Check(name, False, f"cannot read {arn}: {exc}")
        except BotoCoreError as exc:
            return Check(name, False, f"cannot read {arn}: {exc}")
        return Check(name, True, f"{arn} exists")

    def state_bucket(self, account: str) -> Check:
        """With state_backend s3, the bootstrap stack's bucket: there, in this account, versioned (a lost or
        overwritten state is recoverable). Without it `terraform init` would fail, and teardown could not
        keep its evidence off this machine."""
        c, name = self.config, "state bucket"
        if c.state_backend == "local":
            return Check(
                name,
                True,
                f"state_backend local: state, run record and journal are on this machine only ({c.state_dir}, "
                "reports/); a lost machine takes them with it (docs/teardown.md)",
            )
        bucket = c.state_bucket(account)
        s3 = self.session.client("s3")
        try:
            status = s3.get_bucket_versioning(Bucket=bucket, ExpectedBucketOwner=account).get("Status")
        except ClientError as exc:
            if exc.response["Error"]["Code"] in ("NoSuchBucket", "404"):
                return Check(
                    name,
                    False,
                    f"{bucket} does not exist in account {account}: apply the ci-role stack first, which creates "
                    "it (docs/runbook.md, section 2), or set state_backend: local",
                )
            return Check(name, False, f"cannot read {bucket}: {exc}")
        except BotoCoreError as exc:
            return Check(name, False, f"cannot read {bucket}: {exc}")
        if status != "Enabled":
            return Check(
                name,
                False,
                f"{bucket} has versioning {status or 'never enabled'}, expected Enabled: an overwritten state would "
                "be lost; apply the ci-role stack again",
            )
        return Check(name, True, f"s3://{bucket}/{state_prefix(c.region, c.cluster_name)} (versioned)")

    def spot_offerings(self) -> Check:
        """Each GPU instance type we ask for is offered, and has a spot price, in each zone of our subnets.
        Offerings say the type exists in the zone; the spot price history says spot capacity is sold there."""
        c, name = self.config, "spot offerings"
        types, zones = list(c.gpu_instance_types), list(c.availability_zones)
        want = {(t, z) for t in types for z in zones}
        ec2 = self.session.client("ec2", region_name=c.region)
        try:
            offered: set[tuple[str, str]] = set()
            for page in ec2.get_paginator("describe_instance_type_offerings").paginate(
                LocationType="availability-zone",
                Filters=[{"Name": "instance-type", "Values": types}, {"Name": "location", "Values": zones}],
            ):
                offered |= {(o["InstanceType"], o["Location"]) for o in page["InstanceTypeOfferings"]}
            priced: set[tuple[str, str]] = set()
            for page in ec2.get_paginator("describe_spot_price_history").paginate(
                InstanceTypes=types, ProductDescriptions=["Linux/UNIX"], StartTime=datetime.now(UTC)
            ):
                priced |= {(p["InstanceType"], p["AvailabilityZone"]) for p in page["SpotPriceHistory"]}
        except (ClientError, BotoCoreError) as exc:
            return Check(name, False, f"could not read EC2 offerings or spot prices in {c.region}: {exc}")
        missing = [f"{t} in {z}: not offered" for t, z in sorted(want - offered)]
        missing += [f"{t} in {z}: no spot price" for t, z in sorted((want & offered) - priced)]
        if missing:
            return Check(
                name,
                False,
                "; ".join(missing)
                + ": choose availability_zones or gpu_instance_types in gpu_finops/facts/config.yaml "
                "where every type is sold as spot (`aws ec2 describe-instance-type-offerings --location-type "
                "availability-zone`, `aws ec2 describe-spot-price-history`)",
            )
        return Check(name, True, f"{', '.join(types)} spot in {', '.join(zones)}")

    def spot_role(self, *, create: bool) -> Check:
        iam, ssm = self.session.client("iam"), self.session.client("ssm", region_name=self.config.region)
        try:
            iam.get_role(RoleName=SPOT_SLR)
            return Check("spot service-linked role", True, f"{SPOT_SLR} exists (not ours: never deleted)")
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "NoSuchEntity":
                return Check("spot service-linked role", False, f"cannot read {SPOT_SLR}: {exc}")
        if not create:
            return Check(
                "spot service-linked role",
                False,
                f"{SPOT_SLR} is missing; `make up` creates it (without "
                "it spot launches fail and a NodePool that allows on-demand silently falls back)",
            )
        try:
            iam.create_service_linked_role(AWSServiceName="spot.amazonaws.com")
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "InvalidInput" or "already exists" in str(exc):
                return Check("spot service-linked role", True, f"{SPOT_SLR} appeared meanwhile (not ours)")
            return Check("spot service-linked role", False, f"could not create {SPOT_SLR}: {exc}")
        ssm.put_parameter(
            Name=self.config.spot_slr_record,
            Value="true",
            Type="String",
            Tags=[{"Key": k, "Value": v} for k, v in self.config.tags.items()],
        )
        return Check("spot service-linked role", True, f"created {SPOT_SLR}; recorded as ours for teardown")

    def collector_image(self, account: str) -> Check:
        """The collector's image tag is in its ECR repository (the repository is immutable-tagged)."""
        c, name = self.config, "collector image"
        repo, tag = c.collector_repository, c.versions.collector_image_tag
        how = "build and push it from the repository root: " + " ; ".join(push_commands(c, account))
        try:
            self.session.client("ecr", region_name=c.region).describe_images(
                repositoryName=repo, imageIds=[{"imageTag": tag}]
            )
        except ClientError as exc:
            code = exc.response["Error"]["Code"]
            if code == "ImageNotFoundException":
                return Check(
                    name,
                    False,
                    f"{repo}:{tag} is not in ECR (the collector's release would wait and roll back, taking "
                    f"the NodePools and queues with it); {how}",
                )
            if code == "RepositoryNotFoundException":
                return Check(
                    name,
                    False,
                    f"ECR repository {repo} does not exist: the cluster stack creates it (`make up` applies "
                    f"network and cluster first); then {how}",
                )
            return Check(name, False, f"cannot read {repo}:{tag} in ECR: {exc}")
        except BotoCoreError as exc:
            return Check(name, False, f"cannot read {repo}:{tag} in ECR: {exc}")
        return Check(name, True, f"{repo}:{tag} is in ECR")

    def run(self, *, create_spot_role: bool = False) -> list[Check]:
        cred, account = self.credentials()
        checks = [cred, self.account(account), self.terraform(), self.aws_cli()]
        if cred.ok:
            checks += [self.quota(), self.spot_offerings()]
        if cred.ok and checks[1].ok:
            checks.append(self.boundary(account))  # type: ignore[arg-type]
            checks.append(self.state_bucket(account))  # type: ignore[arg-type]
        if cred.ok and checks[1].ok:
            checks.append(self.spot_role(create=create_spot_role and all(c.ok for c in checks)))
        return checks


def report(checks: list[Check], echo: Callable[[str], Any] = print) -> bool:
    for c in checks:
        echo(f"  [{'ok' if c.ok else 'MISSING'}] {c.name}: {c.detail}")
    return all(c.ok for c in checks)
