"""The types the configuration's fields use, each saying its rule (pydantic checks them: strict integers
and booleans, ranges, CIDRs, ARNs, regions botocore knows), so a new key of gpu_finops/facts/config.py is one line."""

from __future__ import annotations

import difflib
import ipaddress
import re
from typing import Annotated

from pydantic import AfterValidator, ConfigDict, Field, StrictBool, StrictInt

from gpu_finops.facts.arguments import CLUSTER_NAME
from gpu_finops.facts.errors import shown
from gpu_finops.facts.regions import known_regions

# Every key is checked; values are never coerced (a quoted "4" is not an integer, `yes` is not a name).
RULES = ConfigDict(extra="forbid", revalidate_instances="always")
# CloudWatch Logs accepts only these retention periods (PutRetentionPolicy); 0 would mean "never expire".
LOG_RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557)
LOG_RETENTION_DAYS += (2922, 3288, 3653)


def _matches(pattern: str, what: str):
    def check(value: str) -> str:
        if not re.fullmatch(pattern, value):
            raise ValueError(f"{shown(value)} is not {what}")
        return value

    return AfterValidator(check)


def _region(value: str) -> str:
    if value not in known_regions():
        import botocore

        close = difflib.get_close_matches(value, known_regions(), n=1)
        raise ValueError(
            f"{shown(value)} is not an AWS region botocore {botocore.__version__} knows"
            + (f"; did you mean {close[0]!r}?" if close else "")
            + " (a region newer than botocore: upgrade boto3)"
        )
    return value


def _cidr(value: str) -> str:
    try:
        net = ipaddress.ip_network(value, strict=True)
    except ValueError as exc:
        why = "" if "does not appear" in str(exc) else f": {exc}"
        raise ValueError(f"{shown(value)} is not a CIDR block like 10.0.0.0/16{why}") from None
    if net.version != 4:
        raise ValueError(f"{shown(value)}: only IPv4 CIDR blocks are supported")
    return value


def _retention(value: int) -> int:
    if value not in LOG_RETENTION_DAYS:
        raise ValueError(
            f"{value} is not a retention period CloudWatch Logs accepts: one of {list(LOG_RETENTION_DAYS)}"
        )
    return value


# The types the fields use (each says its rule, so a new key is one line).
MAX_COUNT = 1_000_000  # no count, size or quota of a sandbox fleet comes near it: past it is a typo
Count = Annotated[StrictInt, Field(ge=0, le=MAX_COUNT)]  # an integer from 0 to MAX_COUNT
Positive = Annotated[StrictInt, Field(ge=1, le=MAX_COUNT)]  # an integer from 1 to MAX_COUNT
Flag = StrictBool
Name = Annotated[str, Field(min_length=1), _matches(r"\S(.*\S)?", "a non-empty name without edge spaces")]
Region = Annotated[str, AfterValidator(_region)]
Cidr = Annotated[str, AfterValidator(_cidr)]
AccountId = Annotated[str, _matches(r"[0-9]{12}", "a 12-digit account id")]
ClusterName = Annotated[
    str, _matches(CLUSTER_NAME.pattern, "a cluster name: lowercase letters, digits and '-', 2-39 chars")
]
KubeName = Annotated[str, _matches(r"[a-z][a-z0-9-]{0,40}", "a valid Kubernetes name")]
InstanceType = Annotated[str, _matches(r"[a-z][a-z0-9-]*\.[a-z0-9]+", "an EC2 instance type like g6e.xlarge")]
PrincipalArn = Annotated[
    str, _matches(r"arn:aws[a-z-]*:(iam|sts)::[0-9]{12}:[A-Za-z0-9_+=,.@/-]+", "an IAM principal ARN")
]
Version = Annotated[str, _matches(r"v?[0-9]+(\.[0-9]+)*([.+-][A-Za-z0-9_.+-]+)?", "a version like 1.2.3")]
RetentionDays = Annotated[StrictInt, AfterValidator(_retention)]
KubeMinor = Annotated[str, _matches(r"1\.[0-9]+", "a Kubernetes minor like 1.36 (quote it in YAML)")]
AmiAlias = Annotated[
    str, _matches(r"al2023@v[0-9]{8}", "an AL2023 AMI alias pinned to a release, like al2023@v20261003")
]
AddonVersion = Annotated[
    str,
    _matches(
        r"(v[0-9]+(\.[0-9]+)*-eksbuild\.[0-9]+)?",
        "an EKS add-on version like v1.36.0-eksbuild.14, or empty for EKS's default",
    ),
]
GithubRepository = Annotated[str, _matches(r"([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)?", "owner/name")]
GithubEnvironment = Annotated[str, _matches(r"[A-Za-z0-9_.-]{1,255}", "a GitHub environment name")]
Email = Annotated[str, _matches(r"[^@\s]+@[^@\s]+\.[^@\s]+", "an e-mail address")]
# a MIG GPU instance profile as the device plugin names it under the mixed strategy (nvidia.com/mig-<profile>)
MigProfileName = Annotated[str, _matches(r"[1-7]g\.[0-9]{1,4}gb(\.me)?", "a MIG profile like 1g.10gb")]
Dollars = Annotated[StrictInt, Field(ge=1, le=1_000_000)]  # whole US dollars
