"""The collector's real AWS calls, evaluated (iam/iam_eval.py) against its synthesized role policy and
the permissions boundary every role carries: DynamoDB on the cost table, which is encrypted with our
customer-managed key, so each call also makes the KMS requests DynamoDB makes on the caller's behalf
(docs.aws.amazon.com/amazondynamodb/latest/developerguide/encryption.usagenotes.html)."""

from __future__ import annotations

import json

import pytest

from gpu_finops.facts.config import load_config
from gpu_finops.facts.names import TAG_CLUSTER, TAG_PROJECT
from iam.ci_boundary import boundary_policy
from iam.iam_eval import Request, decide

C = load_config()
ACCOUNT = "123456789012"
TABLE = f"arn:aws:dynamodb:{C.region}:{ACCOUNT}:table/{C.cost_table}"
KEY = f"arn:aws:kms:{C.region}:{ACCOUNT}:key/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
OTHER_KEY = f"arn:aws:kms:{C.region}:{ACCOUNT}:key/11111111-2222-3333-4444-555555555555"
TOKENS = {"${aws_dynamodb_table.cost-table.arn}": TABLE, "${aws_kms_key.kms.arn}": KEY}
VIA_DYNAMODB = {"kms:ViaService": f"dynamodb.{C.region}.amazonaws.com"}
# The key carries the provider's default tags (our project tag among them: checked below), which the boundary's
# KMS statement requires, so each request on it names them as the real request context would.
KEY_TAGS = {f"aws:ResourceTag/{TAG_PROJECT}": C.project, f"aws:ResourceTag/{TAG_CLUSTER}": C.cluster_name}

# What the collector calls (gpu_finops/cost/store.py: batch_writer -> BatchWriteItem, scan; the CLI's reads) and
# the KMS requests DynamoDB makes for it with the table's key.
CALLS = {
    "PutItem": ("dynamodb:PutItem", ("kms:GenerateDataKey", "kms:Decrypt")),
    "BatchWriteItem": ("dynamodb:BatchWriteItem", ("kms:GenerateDataKey", "kms:Decrypt")),
    "Query": ("dynamodb:Query", ("kms:Decrypt",)),
    "Scan": ("dynamodb:Scan", ("kms:Decrypt",)),
    "DescribeTable": ("dynamodb:DescribeTable", ("kms:DescribeKey",)),
}


def resolved(policy: str) -> dict:
    for token, value in TOKENS.items():
        policy = policy.replace(token, value)
    return json.loads(policy)


@pytest.fixture(scope="module")
def collector_policies(synthesized) -> list[dict]:
    cluster = synthesized.stack("cluster")
    policy = cluster["resource"]["aws_iam_role_policy"]["collector-policy"]
    assert policy["role"] == "${aws_iam_role.collector-role.name}"
    return [resolved(policy["policy"])]


def requests_of(call: str) -> list[Request]:
    action, kms = CALLS[call]
    region = {"aws:RequestedRegion": C.region}
    return [Request(action, TABLE, region)] + [Request(a, KEY, region | VIA_DYNAMODB | KEY_TAGS) for a in kms]


def test_the_key_carries_our_project_tag(synthesized):
    cluster = synthesized.stack("cluster")
    assert "kms" in cluster["resource"]["aws_kms_key"]
    (provider,) = cluster["provider"]["aws"]
    assert provider["default_tags"][0]["tags"][TAG_PROJECT] == C.project
    assert provider["default_tags"][0]["tags"][TAG_CLUSTER] == C.cluster_name  # the boundary asks for both


def refused(policies: list[dict], reqs: list[Request]) -> list[str]:
    """Each request that the role's policies or the boundary refuse, with the reason."""
    boundary = boundary_policy(C, ACCOUNT)
    out = []
    for r in reqs:
        for name, policy in (("role policy", policies), ("boundary", [boundary])):
            if not (d := decide(policy, r)).allowed:
                out.append(f"{r.action} on {r.resource} ({name}): {d.reason}")
    return out


@pytest.mark.parametrize("call", CALLS)
def test_each_collector_call_on_the_encrypted_table_is_allowed(collector_policies, call):
    assert refused(collector_policies, requests_of(call)) == []


def test_the_key_policy_delegates_to_iam_so_the_role_policy_decides(synthesized):
    """The key policy names no role: its Account statement lets IAM policies grant use of the key."""
    policy = synthesized.stack("cluster")["resource"]["aws_kms_key"]["kms"]["policy"]
    account = '{"Sid" = "Account", "Effect" = "Allow", "Principal" = {"AWS" = "arn:aws:iam::'
    assert account in policy and ':root"}, "Action" = "kms:*", "Resource" = "*"}' in policy
    assert "collector" not in policy


def test_the_key_is_usable_only_through_dynamodb(collector_policies):
    direct = Request("kms:Decrypt", KEY, {"aws:RequestedRegion": C.region} | KEY_TAGS)
    assert not decide(collector_policies, direct).allowed
    via_s3 = Request(
        "kms:Decrypt",
        KEY,
        {"aws:RequestedRegion": C.region, "kms:ViaService": f"s3.{C.region}.amazonaws.com"},
    )
    assert not decide(collector_policies, via_s3).allowed


def test_no_other_key_is_usable(collector_policies):
    other = Request("kms:Decrypt", OTHER_KEY, {"aws:RequestedRegion": C.region} | VIA_DYNAMODB | KEY_TAGS)
    out = decide(collector_policies, other)
    assert not out.allowed and "implicit deny" in out.reason


def test_no_key_admin_or_grant_is_allowed(collector_policies):
    for action in ("kms:CreateGrant", "kms:ScheduleKeyDeletion", "kms:PutKeyPolicy", "kms:ReEncryptFrom"):
        assert not decide(
            collector_policies, Request(action, KEY, {"aws:RequestedRegion": C.region} | VIA_DYNAMODB)
        ).allowed
