"""The nightly workflow keeps its promises (OIDC, one run at a time, guarded up and acts, teardown on every
path), each adjacent way to break them is caught, and every command it calls exists."""

from __future__ import annotations

import copy
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from assertions.nightly import Scenario, check_nightly_workflow, evaluate, simulate
from infra.ci_role import MAX_SESSION_SECONDS

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "nightly.yml"


def load() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def job(wf: dict) -> dict:
    return next(iter(wf["jobs"].values()))


def step(wf: dict, pattern: str) -> dict:
    (found,) = [s for s in job(wf)["steps"] if re.search(pattern, str(s.get("run", s.get("uses", ""))))]
    return found


def guard_minutes(wf: dict) -> float:
    return float(wf["env"]["GPU_FINOPS_MAX_HOURS"].split("'")[-2]) * 60


def test_the_workflow_keeps_its_promises():
    wf = load()
    v = check_nightly_workflow(wf, job_timeout_floor_minutes=guard_minutes(wf))
    assert v.holds, v.render()
    assert len(v.evidence["paths"]) > 20  # every step before teardown failing or cancelled, destroy too


def index(wf: dict, pattern: str) -> int:
    return job(wf)["steps"].index(step(wf, pattern))


@pytest.mark.parametrize("teardown_step", [r"make destroy", r"make resume", r"teardown verify", r"upload"])
def test_a_cancel_during_each_teardown_step_is_simulated_and_the_rest_of_teardown_runs(teardown_step):
    wf = load()
    steps = job(wf)["steps"]
    at = index(wf, teardown_step)
    fails = frozenset({index(wf, "make destroy")}) if teardown_step == r"make resume" else frozenset()
    run = simulate(steps, Scenario("cancel", fails, cancel_at=at))
    assert at in run.ran and run.outcome[at] == "cancelled"
    after = [i for i in range(at + 1, len(steps))]
    if teardown_step == r"make destroy":  # resume is the step that finishes what the cancel cut short
        assert index(wf, "make resume") in run.ran
    assert all(i in run.ran for i in after if i != index(wf, "make resume")), run.ran
    v = check_nightly_workflow(wf, job_timeout_floor_minutes=guard_minutes(wf))
    assert f"cancelled during step {at} ({steps[at]['name'][:60]})" in v.evidence["paths"]


def test_cancelled_destroy_runs_resume_under_the_new_condition_not_the_old():
    wf = load()
    steps = job(wf)["steps"]
    cancel_destroy = Scenario("cancelled during destroy", frozenset(), cancel_at=index(wf, "make destroy"))
    assert index(wf, "make resume") in simulate(steps, cancel_destroy).ran
    old = mutate(put("if", "always() && steps.destroy.outcome == 'failure'", r"make resume"))
    assert index(old, "make resume") not in simulate(job(old)["steps"], cancel_destroy).ran


def mutate(change) -> dict:
    wf = copy.deepcopy(load())
    change(wf)
    return wf


def drop(key: str, pattern: str):
    return lambda wf: step(wf, pattern).pop(key)


def put(key: str, value, pattern: str):
    return lambda wf: step(wf, pattern).__setitem__(key, value)


BROKEN = {
    "destroy only on success": (drop("if", r"make destroy"), "make up ran but destroy does not run"),
    "destroy only on failure": (
        put("if", "failure()", r"make destroy"),
        "everything succeeds, make up ran but destroy",
    ),
    "verify only on success": (put("if", "success()", r"teardown verify"), "verify does not run"),
    "resume always": (put("if", "always()", r"make resume"), "resume runs although destroy succeeded"),
    "resume on failure()": (
        put("if", "failure()", r"make resume"),
        "then destroy fails, destroy ended failure but resume does not run",
    ),
    # The condition this workflow had: a run cancelled during `make destroy` has outcome `cancelled`.
    "resume only when destroy's outcome is failure": (
        put("if", "always() && steps.destroy.outcome == 'failure'", r"make resume"),
        "(make destroy), destroy ended cancelled but resume does not run",
    ),
    # The conclusion is after continue-on-error: a failed destroy concludes `success`.
    "resume on destroy's conclusion": (
        put("if", "always() && steps.destroy.conclusion != 'success'", r"make resume"),
        "then destroy fails, destroy ended failure but resume does not run",
    ),
    "resume on failure() or cancelled()": (
        put("if", "failure() || cancelled()", r"make resume"),
        "resume runs although destroy succeeded",
    ),
    "upload only on success": (drop("if", r"upload-artifact"), "the reports are not uploaded"),
    "verify forgiven": (put("continue-on-error", True, r"teardown verify"), "verify has continue-on-error"),
    "up outside the guard": (
        put("run", "make up", r"make up"),
        "up step does not run under `gpu-finops guard run`",
    ),
    "up not exec'd": (
        put("run", ".venv/bin/gpu-finops guard run -- make up", r"make up"),
        "the up step does not `exec` the guard",
    ),
    "acts guarded, then more in the same shell": (
        put("run", "exec .venv/bin/gpu-finops guard run -- make acts TARGET=aws; echo done", r"make acts"),
        "the acts step does not `exec` the guard",
    ),
    "static keys": (
        lambda wf: step(wf, r"configure-aws-credentials")["with"].update(
            {"aws-access-key-id": "${{ secrets.KEY }}", "aws-secret-access-key": "${{ secrets.SECRET }}"}
        ),
        "static AWS keys are referenced",
    ),
    "no role": (lambda wf: step(wf, r"configure-aws-credentials")["with"].pop("role-to-assume"), "not OIDC"),
    "no id-token": (lambda wf: job(wf)["permissions"].pop("id-token"), "permissions id-token is None"),
    # job-level permissions replace the workflow's: id-token granted only at the top no longer reaches the job
    "id-token only at the workflow level": (
        lambda wf: (
            wf.__setitem__("permissions", {"id-token": "write"})
            or job(wf).__setitem__("permissions", {"contents": "read"})
        ),
        "permissions id-token is None",
    ),
    "no concurrency": (lambda wf: wf.pop("concurrency"), "no concurrency group"),
    "cancelling concurrency": (
        lambda wf: wf["concurrency"].__setitem__("cancel-in-progress", True),
        "could cancel a teardown",
    ),
    "no schedule": (lambda wf: wf[True].pop("schedule"), "not triggered by schedule"),
    "condition it cannot read": (
        put("if", "always() && contains(github.ref, 'main')", r"make destroy"),
        "step condition not understood",
    ),
    "teardown before acts": (
        lambda wf: job(wf)["steps"].insert(
            3, job(wf)["steps"].pop(job(wf)["steps"].index(step(wf, "make destroy")))
        ),
        "steps out of order",
    ),
    "timeout shorter than the guard": (
        lambda wf: job(wf).__setitem__("timeout-minutes", 120),
        "shorter than the cost guard's wall time",
    ),
}


@pytest.mark.parametrize("case", BROKEN)
def test_each_broken_promise_is_caught(case):
    change, why = BROKEN[case]
    wf = mutate(change)
    v = check_nightly_workflow(wf, job_timeout_floor_minutes=guard_minutes(load()))
    assert not v.holds, f"{case}: the check passed a broken workflow"
    assert why in v.observed, f"{case}: expected {why!r} in {v.observed!r}"


@pytest.mark.parametrize(
    ("expr", "failed", "cancelled", "steps", "want"),
    [
        ("always()", True, True, {}, True),
        ("success()", True, False, {}, False),
        ("failure()", True, False, {}, True),
        ("failure()", True, True, {}, False),
        (
            "steps.d.outcome == 'failure'",
            False,
            False,
            {"d": {"outcome": "failure"}},
            True,
        ),  # implicit success()
        ("steps.d.outcome == 'failure'", True, False, {"d": {"outcome": "failure"}}, False),
        ("${{ always() && steps.d.outcome == 'failure' }}", True, False, {"d": {"outcome": "failure"}}, True),
        ("!cancelled() && (failure() || success())", False, False, {}, True),
        ("!cancelled()", False, True, {}, False),
        # resume's condition: destroy cancelled, failed (outcome before continue-on-error), succeeded
        ("always() && steps.d.outcome != 'success'", False, True, {"d": {"outcome": "cancelled"}}, True),
        (
            "always() && steps.d.outcome != 'success'",
            False,
            False,
            {"d": {"outcome": "failure", "conclusion": "success"}},
            True,
        ),
        ("always() && steps.d.outcome != 'success'", True, False, {"d": {"outcome": "success"}}, False),
        ("always() && steps.d.outcome == 'failure'", False, True, {"d": {"outcome": "cancelled"}}, False),
    ],
)
def test_step_conditions_follow_githubs_status_rules(expr, failed, cancelled, steps, want):
    assert evaluate(expr, failed_before=failed, cancelled=cancelled, steps=steps) is want


def test_job_timeout_guard_limit_and_credentials_lifetime_agree():
    wf = load()
    timeout = job(wf)["timeout-minutes"]
    assert int(wf["env"]["GPU_FINOPS_JOB_TIMEOUT_MINUTES"]) == timeout
    assert guard_minutes(wf) < timeout
    duration = step(wf, "configure-aws-credentials")["with"]["role-duration-seconds"]
    assert timeout * 60 <= duration <= MAX_SESSION_SECONDS, (
        "credentials must outlive the job, within the role's max"
    )


def commands(wf: dict) -> list[list[str]]:
    out = []
    for s in job(wf)["steps"]:
        for line in str(s.get("run", "")).splitlines():
            if "gpu-finops " in line or line.strip().startswith("make "):
                out.append(shlex.split(line))
    return out


def test_every_gpu_finops_command_it_runs_parses():
    """A renamed option or subcommand would only show at 3 a.m.; parse each invocation now."""
    import argparse
    import importlib

    from gpu_finops.cli import SUBCOMMANDS

    seen = 0
    for argv in commands(load()):
        while "gpu-finops" in " ".join(argv):
            i = next(i for i, a in enumerate(argv) if a.endswith("gpu-finops"))
            rest = argv[i + 1 :]
            cut = rest.index("--") if "--" in rest else len(rest)
            sub, options = rest[0], rest[1:cut]
            parser = argparse.ArgumentParser(prog=f"gpu-finops {sub}")
            importlib.import_module(SUBCOMMANDS[sub][0]).add_arguments(parser)
            parser.parse_args(options + (["--", "true"] if "--" in rest else []))
            seen += 1
            argv = rest[cut + 1 :]
    assert seen >= 4


def test_every_make_target_it_runs_exists():
    targets = set(re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), re.M))
    called = {a[a.index("make") + 1] for a in commands(load()) if "make" in a}
    assert called and called <= targets, f"missing make targets: {called - targets}"


def test_actionlint_passes():
    binary = Path(subprocess.run(
        ["make", "-s", "-f", str(ROOT / "Makefile"), "print-actionlint"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip())  # fmt: skip
    if not binary.is_file():
        pytest.fail(f"actionlint is not built at {binary}: `make test` builds it (from the Go module proxy)")
    result = subprocess.run([str(binary), "-no-color"], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_go_builds_of_chart_validation_run_before_the_guards_clock_starts():
    """The chart validation's build inside the budget: `make up` validated the releases first, building kube-apiserver and etcd from
    source on a cacheless runner inside the guard's budget. The nightly validates before the estimate that
    writes the deadline, and `make up` then finds the binaries built."""
    wf = load()
    assert index(wf, r"^make validate-charts$") < index(wf, r"guard estimate") < index(wf, r"-- make up")
