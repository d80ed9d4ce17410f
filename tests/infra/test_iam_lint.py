"""parliament (an IAM policy linter, pinned in the test extra) over every policy document the stacks
synthesize: the nightly role's policies, its boundary and trust, and the cluster stack's role, inline and
queue policies. A finding fails the test unless iam/parliament-accepted.yaml lists it (document and
issue) with a reason; an accepted entry that no longer matches anything fails too, so the list never rots."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ACCEPTED = yaml.safe_load((ROOT / "iam" / "parliament-accepted.yaml").read_text())
ACCOUNT = "123456789012"
# Terraform references in the synthesized JSON, resolved to ARNs of the shape they will have.
TOKENS = {
    r"\$\{data\.aws_caller_identity\.[\w-]+\.account_id\}": ACCOUNT,
    r"\$\{aws_iam_openid_connect_provider\.[\w-]+\.arn\}": (
        f"arn:aws:iam::{ACCOUNT}:oidc-provider/token.actions.githubusercontent.com"
    ),
    r"\$\{aws_iam_role\.[\w-]+\.arn\}": f"arn:aws:iam::{ACCOUNT}:role/gpu-finops-karpenter-node",
    r"\$\{aws_sqs_queue\.[\w-]+\.arn\}": f"arn:aws:sqs:us-east-1:{ACCOUNT}:gpu-finops-interruption",
    r"\$\{aws_dynamodb_table\.[\w-]+\.arn\}": f"arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/gpu-finops-cost",
    r"\$\{aws_kms_key\.[\w-]+\.arn\}": f"arn:aws:kms:us-east-1:{ACCOUNT}:key/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
    r"\$\{aws_s3_bucket\.[\w-]+\.arn\}": f"arn:aws:s3:::nightly-gpu-finops-tf-{ACCOUNT}",
}
# Documents Terraform builds with an HCL function: not JSON until apply. Listed so a new one shows up.
NOT_JSON = {"cluster/aws_kms_key.kms.policy"}


def resolve(text: str) -> str:
    for pattern, value in TOKENS.items():
        text = re.sub(pattern, value, text)
    left = re.findall(r"\$\{[^}]*\}", text)
    if left:
        raise AssertionError(f"unresolved Terraform references {left}: add their shape to TOKENS")
    return text


def documents(synth) -> dict[str, str]:
    docs, skipped = {}, set()
    for stack in ("ci-role", "cluster", "addons", "network"):
        for rtype, items in synth.stack(stack).get("resource", {}).items():
            for rid, res in items.items():
                for attr in ("policy", "assume_role_policy"):
                    if attr not in res:
                        continue
                    where = f"{stack}/{rtype}.{rid}.{attr}"
                    if res[attr].startswith("${jsonencode("):
                        skipped.add(where)
                    else:
                        docs[where] = resolve(res[attr])
    assert skipped == NOT_JSON, f"policy documents built with an HCL function: {sorted(skipped)}"
    return docs


def _knows_array_of_arn() -> None:
    """parliament 1.6.4's own table types events:TargetArn `ArrayOfARN`, which its type translation does not
    know (it raises "Unknown data format"); an array of ARNs is checked as ARNs, as it does for ArrayOfString.
    A small shim rather than a fork: remove it once parliament knows the type."""
    from parliament import statement

    translate = statement.translate_documentation_types
    if getattr(translate, "knows_array_of_arn", False):
        return

    def translated(kind: str) -> str:
        return translate("ARN" if kind == "ArrayOfARN" else kind)

    translated.knows_array_of_arn = True  # type: ignore[attr-defined]
    statement.translate_documentation_types = translated


def findings(docs: dict[str, str]) -> list[tuple[str, str, str]]:
    from parliament import analyze_policy_string

    _knows_array_of_arn()

    out = []
    for where, text in docs.items():
        json.loads(text)  # a document that is not JSON is a finding of ours, not parliament's
        for f in analyze_policy_string(text, include_community_auditors=True).findings:
            out.append((where, f.issue, str(f.detail)[:200]))
    return out


def accepted(where: str, issue: str) -> bool:
    return any(re.fullmatch(a["document"], where) and a["issue"] == issue for a in ACCEPTED)


def test_every_accepted_finding_has_a_reason():
    assert ACCEPTED and all(len(a.get("reason", "")) > 40 for a in ACCEPTED), ACCEPTED


@pytest.fixture(scope="module")
def linted(synthesized_with_ci):
    docs = documents(synthesized_with_ci)
    return docs, findings(docs)


def test_parliament_reads_every_policy_the_stacks_synthesize(linted):
    docs, _ = linted
    kinds = {w.split(".")[0] for w in docs}
    assert {"ci-role/aws_iam_policy", "ci-role/aws_iam_role", "cluster/aws_iam_role_policy",
            "cluster/aws_iam_role", "cluster/aws_sqs_queue"} <= kinds, kinds  # fmt: skip
    assert "ci-role/aws_iam_policy.boundary.policy" in docs
    assert len(docs) >= 15


def test_parliament_finds_nothing_new(linted):
    _, found = linted
    new = [f for f in found if not accepted(f[0], f[1])]
    assert not new, "parliament findings not in iam/parliament-accepted.yaml:\n" + "\n".join(map(str, new))


def test_no_accepted_finding_is_stale(linted):
    _, found = linted
    stale = [
        a
        for a in ACCEPTED
        if not any(re.fullmatch(a["document"], w) and a["issue"] == i for w, i, _ in found)
    ]
    assert not stale, f"accepted findings parliament no longer reports (remove them): {stale}"


@pytest.mark.parametrize(
    "statement, issue",
    [
        ({"Effect": "Allow", "Action": "ec2:TerminateInstances", "Resource": "*"}, "RESOURCE_STAR"),
        ({"Effect": "Allow", "Action": "ec2:TerminateInstancez", "Resource": "*"}, "UNKNOWN_ACTION"),
        ({"Effect": "Allow", "Action": "iam:PassRole", "Resource": "*"}, "RESOURCE_STAR"),
        ({"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*",
          "Condition": {"StringEquals": {"ec2:CreateAction": "RunInstances"}}}, "UNKNOWN_CONDITION_FOR_ACTION"),
        ({"Effect": "Allow", "Action": "iam:CreatePolicyVersion", "Resource": "*"}, "PRIVILEGE_ESCALATION"),
    ],
)  # fmt: skip
def test_parliament_flags_the_shapes_this_project_removed(statement, issue):
    """The linter is live: each shape the nightly role used to have (or a typo) is reported."""
    text = json.dumps({"Version": "2012-10-17", "Statement": [statement]})
    assert issue in {i for _, i, _ in findings({"probe": text})}
