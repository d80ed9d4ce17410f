"""The offline IAM decision follows IAM's documented rules for the operators our policies use, and refuses
to guess about the ones it does not implement."""

from __future__ import annotations

import pytest

from iam.iam_eval import (
    Request,
    UnsupportedCondition,
    UnsupportedPolicyVariable,
    conditions_hold,
    coverage,
    decide,
)


@pytest.mark.parametrize(
    "condition, context, want",
    [
        ({"StringEquals": {"k": "a"}}, {"k": "a"}, True),
        ({"StringEquals": {"k": "a"}}, {"K": "a"}, True),  # keys are case-insensitive
        ({"StringEquals": {"k": "a"}}, {"k": "A"}, False),  # values are not
        ({"StringEquals": {"k": "a"}}, {}, False),  # a missing key fails a positive operator
        ({"StringEquals": {"k": ["a", "b"]}}, {"k": "b"}, True),  # values within a key: OR
        ({"StringEquals": {"k": "a", "j": "b"}}, {"k": "a"}, False),  # keys within a block: AND
        ({"StringNotEquals": {"k": "a"}}, {}, True),  # a missing key passes a negated one
        ({"StringEqualsIfExists": {"k": "a"}}, {}, True),
        ({"StringEqualsIfExists": {"k": "a"}}, {"k": "b"}, False),
        ({"StringLike": {"k": "arn:*:x?"}}, {"k": "arn:aws:xy"}, True),
        ({"StringLike": {"k": "arn:*:x?"}}, {"k": "arn:aws:xyz"}, False),
        ({"ForAllValues:StringEquals": {"k": ["a", "b"]}}, {"k": ["a"]}, True),
        ({"ForAllValues:StringEquals": {"k": ["a", "b"]}}, {"k": ["a", "c"]}, False),
        ({"ForAllValues:StringEquals": {"k": ["a"]}}, {}, True),  # IAM's rule: vacuously true
        ({"ForAnyValue:StringEquals": {"k": ["a"]}}, {"k": ["b", "a"]}, True),
        ({"ForAnyValue:StringEquals": {"k": ["a"]}}, {}, False),
        # an absent key has no value for ForAnyValue to find, negated or not
        ({"ForAnyValue:StringNotEquals": {"k": ["x"]}}, {}, False),
        ({"ForAnyValue:StringNotLike": {"k": ["x*"]}}, {}, False),
        ({"ForAnyValue:ArnNotEquals": {"k": ["arn:aws:s3:::b"]}}, {}, False),
        ({"ForAnyValue:StringNotEquals": {"k": ["x"]}}, {"k": ["x", "y"]}, True),
        ({"ForAnyValue:StringNotEquals": {"k": ["x"]}}, {"k": ["x"]}, False),
        ({"ForAllValues:StringNotEquals": {"k": ["x"]}}, {}, True),
        ({"Null": {"k": "true"}}, {}, True),
        ({"Null": {"k": "true"}}, {"k": "x"}, False),
        ({"Null": {"k": "false"}}, {"k": "x"}, True),
        ({"ArnEquals": {"k": "arn:aws:iam::aws:policy/A"}}, {"k": "arn:aws:iam::aws:policy/A"}, True),
        ({"Bool": {"k": "true"}}, {"k": "True"}, True),
    ],
)
def test_condition_operators(condition, context, want):
    assert conditions_hold(condition, context) is want


@pytest.mark.parametrize(
    "op", ["NumericLessThan", "DateGreaterThan", "IpAddress", "ForAllValues:NumericEquals"]
)
def test_an_operator_it_does_not_implement_raises_naming_it(op):
    with pytest.raises(UnsupportedCondition, match=op.split(":")[-1]):
        conditions_hold({op: {"k": "1"}}, {"k": "1"})


def test_multivalued_key_under_a_single_value_operator_raises():
    with pytest.raises(UnsupportedCondition, match="ForAllValues or ForAnyValue"):
        conditions_hold({"StringEquals": {"k": "a"}}, {"k": ["a", "b"]})


POLICY = {
    "Statement": [
        {"Sid": "A", "Effect": "Allow", "Action": "ec2:Delete*", "Resource": "arn:aws:ec2:*:1:vpc/*"},
        {"Sid": "D", "Effect": "Deny", "Action": "ec2:DeleteVpc", "Resource": "arn:aws:ec2:*:1:vpc/vpc-keep"},
    ]
}


def test_explicit_deny_wins_then_allow_then_implicit_deny():
    assert (
        decide([POLICY], Request("ec2:DeleteVpc", "arn:aws:ec2:us-east-1:1:vpc/vpc-1")).reason
        == "allowed by A"
    )
    assert (
        decide([POLICY], Request("ec2:DeleteVpc", "arn:aws:ec2:us-east-1:1:vpc/vpc-keep")).reason
        == "denied by D"
    )
    out = decide([POLICY], Request("ec2:DeleteVpc", "arn:aws:ec2:us-east-1:2:vpc/vpc-1"))
    assert not out.allowed and "implicit deny (statements ['A'] name it but" in out.reason
    out = decide([POLICY], Request("s3:DeleteBucket", "arn:aws:s3:::b"))
    assert out.reason == "s3:DeleteBucket on arn:aws:s3:::b: implicit deny (no statement allows it)"


def test_actions_match_case_insensitively():
    assert decide([POLICY], Request("EC2:deletevpc", "arn:aws:ec2:us-east-1:1:vpc/vpc-1")).allowed


def test_coverage_ignores_scoped_denies_but_not_blanket_ones():
    assert coverage([POLICY], "ec2:DeleteVpc")
    blanket = {"Statement": [{"Effect": "Deny", "Action": "ec2:*", "Resource": "*"}]}
    assert not coverage([POLICY, blanket], "ec2:DeleteVpc")
    conditional = {
        "Statement": [
            {"Effect": "Deny", "Action": "ec2:*", "Resource": "*", "Condition": {"Bool": {"x": "true"}}}
        ]
    }
    assert coverage([POLICY, conditional], "ec2:DeleteVpc")
    assert not coverage([POLICY], "ec2:CreateVpc")


def test_a_negated_for_any_value_on_an_absent_key_allows_nothing():
    stmt = {"Sid": "T", "Effect": "Allow", "Action": "ec2:CreateTags", "Resource": "*",
            "Condition": {"ForAnyValue:StringNotEquals": {"aws:TagKeys": ["x"]}}}  # fmt: skip
    decision = decide([{"Statement": [stmt]}], Request("ec2:CreateTags", "*", {}))
    assert not decision.allowed and "implicit deny" in decision.reason


@pytest.mark.parametrize(
    "element, value",
    [
        ("Resource", "arn:aws:iam::123456789012:role/${aws:PrincipalTag/team}-*"),
        ("Condition", {"StringEquals": {"aws:ResourceTag/team": "${aws:PrincipalTag/team}"}}),
        ("Action", "${aws:username}:*"),
    ],
)
def test_a_policy_variable_is_refused_not_read_as_text(element, value):
    stmt = {"Sid": "Vars", "Effect": "Allow", "Action": "iam:GetRole", "Resource": "*", element: value}
    with pytest.raises(UnsupportedPolicyVariable, match=rf"'Vars' holds a policy variable in its {element}"):
        decide([{"Statement": [stmt]}], Request("iam:GetRole", "*", {}))
