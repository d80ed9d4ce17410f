"""Decide one request against identity policies as IAM does (explicit Deny wins, then any Allow, else the
implicit deny), with the condition operators our policies use. Offline and exact for what it knows: an
operator it does not know raises, it never guesses.

A request is an action, one resource ARN and the request context (`aws:RequestedRegion`,
`aws:ResourceTag/<k>`, `aws:RequestTag/<k>`, `aws:TagKeys`, `iam:PermissionsBoundary`, ...). Keys are
matched case-insensitively, values case-sensitively, as IAM does. A key missing from the context makes a
positive operator false, a negated one true, `...IfExists` true, `ForAllValues` true and `ForAnyValue`
false, negated or not (IAM's rules). A policy holding a policy variable (`${aws:username}`) is refused: IAM
substitutes it per request and this evaluator does not, so it cannot vouch for such a statement.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Context = Mapping[str, str | list[str] | tuple[str, ...]]


class UnsupportedCondition(ValueError):
    """An operator this evaluator does not implement: it cannot vouch for the statement."""


class UnsupportedPolicyVariable(ValueError):
    """A `${...}` policy variable: IAM substitutes it per request, this evaluator does not model it."""


def _refuse_policy_variables(stmt: Mapping[str, Any]) -> None:
    for element in ("Action", "NotAction", "Resource", "NotResource", "Condition"):
        text = repr(stmt.get(element, ""))
        if "${" in text:
            raise UnsupportedPolicyVariable(
                f"statement {stmt.get('Sid', '(no Sid)')!r} holds a policy variable in its {element} "
                f"({text[text.index('${') :][:60]}...): IAM substitutes it per request and this evaluator "
                "does not; write the value, or decide this statement another way"
            )


@dataclass(frozen=True)
class Request:
    action: str
    resource: str = "*"
    context: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _glob(pattern: str, value: str, *, case: bool = True) -> bool:
    """IAM wildcards: `*` any run, `?` one character; nothing else is special."""
    regex = "".join(".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in pattern)
    return re.fullmatch(regex, value, 0 if case else re.IGNORECASE) is not None


def action_matches(patterns: Any, action: str) -> bool:
    return any(_glob(p, action, case=False) for p in as_list(patterns))


def resource_matches(patterns: Any, resource: str) -> bool:
    return any(_glob(p, resource) for p in as_list(patterns))


def _lookup(context: Mapping[str, Any], key: str) -> list[str] | None:
    for k, v in context.items():
        if k.lower() == key.lower():
            return [str(x) for x in as_list(v)]
    return None


_BASE = {
    "StringEquals": lambda want, got: got == want,
    "StringLike": lambda want, got: _glob(want, got),
    "StringEqualsIgnoreCase": lambda want, got: got.lower() == want.lower(),
    "ArnEquals": lambda want, got: got == want,
    "ArnLike": lambda want, got: _glob(want, got),
    "Bool": lambda want, got: got.lower() == str(want).lower(),
}
_NEGATED = {"StringNotEquals": "StringEquals", "StringNotLike": "StringLike", "ArnNotEquals": "ArnEquals",
            "ArnNotLike": "ArnLike"}  # fmt: skip


def _operator(op: str, key: str, wanted: Any, context: Mapping[str, Any]) -> bool:
    got = _lookup(context, key)
    wants = [str(w) if not isinstance(w, bool) else str(w).lower() for w in as_list(wanted)]
    if op == "Null":
        absent = got is None
        return all((w.lower() == "true") == absent for w in wants)
    qualifier, _, base = op.rpartition(":")
    if_exists = base.endswith("IfExists")
    base = base.removesuffix("IfExists")
    negated = base in _NEGATED
    compare = _BASE.get(_NEGATED.get(base, base))
    if compare is None or qualifier not in ("", "ForAllValues", "ForAnyValue"):
        raise UnsupportedCondition(f"condition operator {op!r} (key {key!r}) is not implemented here")
    if got is None:
        # ForAnyValue on an absent key is false, negated or not (no value to match); ForAllValues true
        if qualifier:
            return qualifier == "ForAllValues"
        return if_exists or negated

    def one(value: str) -> bool:
        hit = any(compare(w, value) for w in wants)
        return not hit if negated else hit

    if qualifier == "ForAllValues":
        return all(one(v) for v in got)
    if qualifier == "ForAnyValue":
        return any(one(v) for v in got)
    if len(got) != 1:
        raise UnsupportedCondition(f"{op} on multivalued key {key!r}: use ForAllValues or ForAnyValue")
    return one(got[0])


def conditions_hold(condition: Mapping[str, Mapping[str, Any]] | None, context: Mapping[str, Any]) -> bool:
    """Every operator block, and every key in each, must hold (AND); values within a key are OR."""
    return all(
        _operator(op, key, wanted, context)
        for op, block in (condition or {}).items()
        for key, wanted in block.items()
    )


def statements(policies: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    found = [s for p in policies for s in as_list(p["Statement"])]
    for s in found:
        _refuse_policy_variables(s)
    return found


def applies(stmt: Mapping[str, Any], req: Request) -> bool:
    if "NotAction" in stmt:
        if action_matches(stmt["NotAction"], req.action):
            return False
    elif not action_matches(stmt.get("Action", []), req.action):
        return False
    if "NotResource" in stmt:
        if resource_matches(stmt["NotResource"], req.resource):
            return False
    elif "Resource" in stmt and not resource_matches(stmt["Resource"], req.resource):
        return False  # a trust policy's statements name no Resource: the role itself
    return conditions_hold(stmt.get("Condition"), req.context)


def decide(policies: Iterable[Mapping[str, Any]], req: Request) -> Decision:
    stmts = statements(policies)
    for s in stmts:
        if s["Effect"] == "Deny" and applies(s, req):
            return Decision(False, f"denied by {s.get('Sid', '(no Sid)')}")
    for s in stmts:
        if s["Effect"] == "Allow" and applies(s, req):
            return Decision(True, f"allowed by {s.get('Sid', '(no Sid)')}")
    named = [s.get("Sid", "(no Sid)") for s in stmts if s["Effect"] == "Allow"
             and action_matches(s.get("Action", []), req.action)]  # fmt: skip
    why = (
        f"statements {named} name it but their resource or condition does not match"
        if named
        else ("no statement allows it")
    )
    return Decision(False, f"{req.action} on {req.resource}: implicit deny ({why})")


def names_action(stmt: Mapping[str, Any], action: str) -> bool:
    return "Action" in stmt and action_matches(stmt["Action"], action)


def coverage(policies: Iterable[Mapping[str, Any]], action: str) -> bool:
    """Whether some Allow names `action` and no Deny removes it everywhere (a Deny on "*" without a
    condition). Resource- or condition-scoped Denies are for `decide`, with a real request."""
    stmts = statements(policies)
    blanket = [s for s in stmts if s["Effect"] == "Deny" and names_action(s, action)
               and "*" in as_list(s.get("Resource", [])) and not s.get("Condition")]  # fmt: skip
    return not blanket and any(s["Effect"] == "Allow" and names_action(s, action) for s in stmts)
