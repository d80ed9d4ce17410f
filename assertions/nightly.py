"""The nightly workflow's promises, checked from the parsed YAML: it assumes its role through GitHub OIDC
with no static keys, runs one at a time, runs up and the acts under the cost guard's deadline, and tears
down on every path.

"Every path" is decided by simulating the runner, not by looking for the word `always()`: for each way
the run can go (every step before teardown failing, the run cancelled during any step, teardown steps
included, destroy failing too), the step `if:` expressions are evaluated with GitHub's rules (no `if:`
means `success()`; a failed step with `continue-on-error` does not count as a failure;
`steps.<id>.outcome` is before continue-on-error, and a cancelled step's outcome is `cancelled`), and the
run must reach destroy and verify whenever `make up` started, resume whenever destroy did not succeed
(it failed or was cancelled), and the report upload always. An expression the simulator does not
understand fails the check: it cannot vouch for what it cannot evaluate. The guarded steps must `exec`
the guard, so that a cancel's SIGINT (sent to the step's process alone) reaches it; what the guard then
does is tested with real processes in tests/ci/test_nightly_cancel.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from assertions.decide import decide
from assertions.verdict import Verdict

CLAIM = (
    "the nightly workflow assumes its AWS role through OIDC only, runs one at a time, stops up and the acts "
    "at the cost guard's deadline, and runs destroy, resume when destroy did not succeed, verify and the "
    "upload on every path"
)

ROLES = {
    "credentials": lambda s: str(s.get("uses", "")).startswith("aws-actions/configure-aws-credentials@"),
    "guard": lambda s: "guard estimate" in str(s.get("run", "")),
    "up": lambda s: re.search(r"\bmake up\b", str(s.get("run", ""))) is not None,
    "acts": lambda s: re.search(r"\bmake acts\b", str(s.get("run", ""))) is not None,
    "destroy": lambda s: re.search(r"\bmake destroy\b", str(s.get("run", ""))) is not None,
    "resume": lambda s: re.search(r"\bmake resume\b", str(s.get("run", ""))) is not None,
    "verify": lambda s: "teardown verify" in str(s.get("run", "")),
    "upload": lambda s: str(s.get("uses", "")).startswith("actions/upload-artifact@"),
}
# The step's whole script is the guard, exec'd: the runner signals the step's entry process only
# (docs.github.com, workflow cancellation reference), so the guard must be that process.
GUARD_EXECED = re.compile(r"\s*exec\s+\S*gpu-finops\s+guard\s+run\b[^\n;&|]*\s*\Z")
STATIC_KEY_PATTERN = re.compile(
    r"aws-access-key-id|aws-secret-access-key|AWS_SECRET_ACCESS_KEY|AKIA[0-9A-Z]{16}"
)


class UnsupportedExpression(ValueError):
    pass


_TOKEN = re.compile(
    r"\s*(?:(?P<fn>always|success|failure|cancelled)\(\)"
    r"|(?P<step>steps\.[A-Za-z_][\w-]*\.(?:outcome|conclusion))"
    r"|(?P<str>'[^']*')|(?P<op>==|!=|&&|\|\||!|\(|\)))"
)


def evaluate(
    expr: str, *, failed_before: bool, cancelled: bool, steps: Mapping[str, Mapping[str, str]]
) -> bool:
    """A step `if:` under GitHub's status-function rules. Only the forms the workflow needs are known."""
    expr = expr.strip()
    if expr.startswith("${{") and expr.endswith("}}"):
        expr = expr[3:-2].strip()
    out: list[str] = []
    pos = 0
    has_status_fn = False
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            raise UnsupportedExpression(f"cannot evaluate {expr!r} at {expr[pos:]!r}")
        pos = m.end()
        if m["fn"]:
            has_status_fn = True
            value = {
                "always": True,
                "success": not failed_before and not cancelled,
                "failure": failed_before and not cancelled,
                "cancelled": cancelled,
            }[m["fn"]]
            out.append(repr(value))
        elif m["step"]:
            _, sid, field = m["step"].split(".")
            out.append(repr(steps.get(sid, {}).get(field, "")))
        elif m["str"]:
            out.append(repr(m["str"][1:-1]))
        else:
            out.append({"&&": " and ", "||": " or ", "!": " not "}.get(m["op"], m["op"]))
    text = "".join(out)
    if not has_status_fn:  # GitHub adds success() && (...) when no status function is used
        text = f"({not failed_before and not cancelled}) and ({text})"
    return bool(eval(text, {"__builtins__": {}}, {}))  # only literals and operators reach here


@dataclass(frozen=True)
class Scenario:
    name: str
    fails: frozenset[int]  # step indexes whose outcome is failure when they run
    cancel_at: int | None = None  # the run is cancelled while this step runs


@dataclass(frozen=True)
class Run:
    """What a simulated run did: the steps that started, in order, and each one's outcome."""

    ran: list[int]
    outcome: dict[int, str]  # step index -> success | failure | cancelled (before continue-on-error)


def simulate(steps: list[Mapping[str, Any]], s: Scenario) -> Run:
    """The steps that start, in order, with their outcomes."""
    ran: list[int] = []
    by_index: dict[int, str] = {}
    failed_before = False
    cancelled = False
    outcomes: dict[str, dict[str, str]] = {}
    for i, step in enumerate(steps):
        cond = str(step.get("if", "success()"))
        runs = evaluate(cond, failed_before=failed_before, cancelled=cancelled, steps=outcomes)
        sid = step.get("id")
        if not runs:
            if sid:
                outcomes[sid] = {"outcome": "skipped", "conclusion": "skipped"}
            continue
        ran.append(i)
        if s.cancel_at == i:
            cancelled = True
            outcome = "cancelled"
        else:
            outcome = "failure" if i in s.fails else "success"
        # continue-on-error turns only a failure into success; a cancelled step stays cancelled.
        conclusion = "success" if outcome == "failure" and step.get("continue-on-error") is True else outcome
        by_index[i] = outcome
        if sid:
            outcomes[sid] = {"outcome": outcome, "conclusion": conclusion}
        if conclusion == "failure":
            failed_before = True
    return Run(ran, by_index)


def check_nightly_workflow(
    wf: Mapping[str, Any], *, job_timeout_floor_minutes: float | None = None
) -> Verdict:
    """`wf` is the workflow as yaml.safe_load returns it (the `on` key may arrive as True)."""
    f: list[str] = []
    triggers = wf.get("on", wf.get(True)) or {}
    triggers = {triggers: None} if isinstance(triggers, str) else triggers
    for t in ("schedule", "workflow_dispatch"):
        if t not in triggers:
            f.append(f"not triggered by {t} (found {sorted(map(str, triggers))})")
    jobs = wf.get("jobs") or {}
    if len(jobs) != 1:
        f.append(f"expected one job that does up, acts and teardown in order, found {sorted(jobs)}")
        return decide(CLAIM, "one job", f, "")
    job_name, job = next(iter(jobs.items()))
    # A job's `permissions` replace the workflow's (GitHub does not merge them).
    perms = job.get("permissions") if "permissions" in job else wf.get("permissions")
    perms = perms if isinstance(perms, dict) else {}
    if perms.get("id-token") != "write":
        f.append(f"permissions id-token is {perms.get('id-token')!r}, expected 'write' (OIDC needs it)")
    concurrency = job.get("concurrency") or wf.get("concurrency")
    if not concurrency or not (concurrency.get("group") if isinstance(concurrency, dict) else concurrency):
        f.append("no concurrency group: two nightly runs could share one sandbox account")
    elif isinstance(concurrency, dict) and concurrency.get("cancel-in-progress") not in (False, None):
        f.append("concurrency cancels in-progress runs: a new run could cancel a teardown midway")
    steps: list[Mapping[str, Any]] = job.get("steps") or []
    where: dict[str, list[int]] = {
        r: [i for i, s in enumerate(steps) if pred(s)] for r, pred in ROLES.items()
    }
    for role, found in where.items():
        if len(found) != 1:
            f.append(f"expected exactly one {role} step, found {len(found)}")
    if f:
        return decide(CLAIM, "a complete nightly job", f, "", job=job_name)
    at = {r: found[0] for r, found in where.items()}

    cred = steps[at["credentials"]].get("with") or {}
    if not cred.get("role-to-assume"):
        f.append("configure-aws-credentials has no role-to-assume: that is not OIDC")
    text = repr(wf)
    if STATIC_KEY_PATTERN.search(text):
        f.append(f"static AWS keys are referenced ({STATIC_KEY_PATTERN.search(text).group(0)})")
    order = ["credentials", "guard", "up", "acts", "destroy", "resume", "verify", "upload"]
    positions = [at[r] for r in order]
    if positions != sorted(positions):
        f.append(
            f"steps out of order: expected {' -> '.join(order)}, found positions {dict(zip(order, positions, strict=True))}"
        )
    for role in ("up", "acts"):
        run = str(steps[at[role]].get("run", ""))
        if "guard run" not in run:
            f.append(
                f"the {role} step does not run under `gpu-finops guard run`: the deadline cannot stop it"
            )
        elif not GUARD_EXECED.match(run):
            f.append(
                f"the {role} step does not `exec` the guard: a cancel's SIGINT reaches only the step's "
                "shell, which passes it to no one and dies on the SIGTERM, leaving the command running "
                "beside teardown"
            )
    if steps[at["verify"]].get("continue-on-error"):
        f.append("verify has continue-on-error: a non-empty account would not fail the run")
    timeout = job.get("timeout-minutes")
    if not isinstance(timeout, int | float):
        f.append("the job has no timeout-minutes")
    elif job_timeout_floor_minutes is not None and timeout < job_timeout_floor_minutes:
        f.append(
            f"job timeout {timeout} min is shorter than the cost guard's wall time "
            f"({job_timeout_floor_minutes:g} min): the runner would cut teardown short"
        )

    scenarios = [Scenario("everything succeeds", frozenset())]
    before_teardown = range(at["destroy"])
    scenarios += [Scenario(f"step {i} ({_name(steps[i])}) fails", frozenset({i})) for i in before_teardown]
    # A cancel can land during any step, teardown steps included (a cancel during destroy is the case a
    # resume on `failure` alone misses).
    scenarios += [
        Scenario(f"cancelled during step {i} ({_name(steps[i])})", frozenset(), cancel_at=i)
        for i in range(len(steps))
    ]
    scenarios += [
        Scenario(f"{sc.name}, then destroy fails", sc.fails | {at["destroy"]}, sc.cancel_at)
        for sc in list(scenarios)
    ]
    paths: dict[str, list[str]] = {}
    try:
        for sc in scenarios:
            run = simulate(steps, sc)
            ran = run.ran
            paths[sc.name] = [_name(steps[i]) for i in ran]
            if at["up"] in ran:
                for role in ("destroy", "verify"):
                    if at[role] not in ran:
                        f.append(f"when {sc.name}, make up ran but {role} does not run")
            destroy = run.outcome.get(at["destroy"])
            if destroy in ("failure", "cancelled") and at["resume"] not in ran:
                f.append(f"when {sc.name}, destroy ended {destroy} but resume does not run")
            if destroy == "success" and at["resume"] in ran:
                f.append(f"when {sc.name}, resume runs although destroy succeeded")
            if at["upload"] not in ran:
                f.append(f"when {sc.name}, the reports are not uploaded")
    except UnsupportedExpression as exc:
        f.append(f"step condition not understood, so teardown on every path cannot be shown: {exc}")
    return decide(
        CLAIM,
        "OIDC role, a concurrency group that never cancels, guarded up and acts, teardown on all "
        f"{len(scenarios)} simulated paths",
        f,
        f"teardown, verify and upload ran on all {len(scenarios)} simulated paths",
        paths=paths,
    )


def _name(step: Mapping[str, Any]) -> str:
    return str(step.get("name") or step.get("id") or step.get("uses") or step.get("run", ""))[:60]
