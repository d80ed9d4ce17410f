"""Teardown against moto's server: a demo-shaped account plus foreign resources."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gpu_finops.cli import main
from teardown.engine import GuardViolation, destroy, guard_plan, inventory
from teardown.journal import Journal
from teardown.model import Context, TeardownConfig
from teardown.registry import REGISTRY, deletion_order
from teardown.types import load
from tests.teardown.account import CLUSTER, build, foreign_still_there

ACCOUNT = "123456789012"  # moto's default
CONFIG = TeardownConfig(region="us-east-1", cluster_name=CLUSTER, allowed_accounts=(ACCOUNT,))


def args(action: str, tmp_path: Path, *extra: str) -> list[str]:
    return [
        "teardown",
        action,
        "--region",
        "us-east-1",
        "--cluster",
        CLUSTER,
        "--allow-account",
        ACCOUNT,
        "--journal",
        str(tmp_path / "journal.jsonl"),
        "--report",
        str(tmp_path / "report.json"),
        "--wait",
        "5",
        *(["--yes"] if action in ("destroy", "resume") else []),
        *extra,
    ]


def test_plan_lists_exactly_ours_in_dependency_order(boto_session):
    acct = build(boto_session)
    plan = inventory(Context(CONFIG, boto_session))
    found: dict[str, set[str]] = {}
    for r in plan:
        found.setdefault(r.type, set()).add(r.id)
    assert found == {t: set(ids) for t, ids in acct.ours.items()}
    position = {r.key: i for i, r in enumerate(plan)}
    for r in plan:  # everything a resource's type depends on comes before it
        for dep in REGISTRY[r.type].depends_on:
            for other in (x for x in plan if x.type == dep):
                assert position[other.key] < position[r.key], f"{other.key} must be deleted before {r.key}"


def test_destroy_then_verify_leaves_foreign_untouched_and_ours_gone(boto_session, tmp_path, capsys):
    acct = build(boto_session)
    assert main(args("destroy", tmp_path)) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "verified empty" in out
    assert foreign_still_there(boto_session, acct) == {}
    assert main(args("verify", tmp_path)) == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["left"] == [] and report["api_calls"] > 0


def test_verify_on_non_empty_account_exits_1_and_names_each_leftover(boto_session, tmp_path, capsys):
    acct = build(boto_session)
    assert main(args("verify", tmp_path)) == 1
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "report.json").read_text())
    left = {(r["type"], r["id"]) for r in report["left"]}
    for rtype, ids in acct.ours.items():
        for rid in ids:
            assert (rtype, rid) in left
    assert "NOT EMPTY" in out and "VPC-CNI ENI" in out


def test_plan_deletes_nothing(boto_session, tmp_path):
    build(boto_session)
    before = len(inventory(Context(CONFIG, boto_session)))
    assert main(args("plan", tmp_path)) == 0
    assert len(inventory(Context(CONFIG, boto_session))) == before


def test_account_not_on_allowlist_is_refused(boto_session, tmp_path, capsys):
    build(boto_session)
    argv = args("destroy", tmp_path)
    argv[argv.index(ACCOUNT)] = "999999999999"
    assert main(argv) == 2
    assert "not on the allowlist" in capsys.readouterr().err
    assert inventory(Context(CONFIG, boto_session))  # nothing deleted


def test_guard_refuses_more_than_the_reviewed_plan_before_deleting_anything(boto_session, tmp_path):
    build(boto_session)
    ctx = Context(CONFIG, boto_session)
    plan = inventory(ctx)
    reviewed = {r.key for r in plan[1:]}
    guard_plan({r.key for r in plan}, plan)  # holds: the plan is the reviewed one
    journal = Journal(tmp_path / "journal.jsonl")
    with pytest.raises(
        GuardViolation,
        match=re.escape(f"1 resource(s) found now are not in the reviewed plan: ['{plan[0].key}']"),
    ):
        destroy(ctx, plan, journal, reviewed=reviewed, wait_for=5, poll=0.2)
    assert inventory(ctx) == plan and not journal.path.exists()  # nothing deleted, nothing journaled


def test_injected_failure_then_resume_ends_empty(boto_session, tmp_path, monkeypatch):
    acct = build(boto_session)
    ctx = Context(CONFIG, boto_session)
    plan = inventory(ctx)
    real = REGISTRY["subnet"].delete
    calls = {"n": 0}

    def flaky(c, r):  # the second subnet deletion fails hard, as a dying API would
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("injected failure deleting a subnet")
        real(c, r)

    monkeypatch.setitem(
        REGISTRY, "subnet", REGISTRY["subnet"].__class__(**{**REGISTRY["subnet"].__dict__, "delete": flaky})
    )
    journal = Journal(tmp_path / "journal.jsonl")
    outcome = destroy(ctx, plan, journal, wait_for=5, poll=0.2)
    assert not outcome.ok
    failed = {r.type for r, _ in outcome.failed}
    assert "subnet" in failed and "vpc" in failed  # the VPC was not attempted: it depends on the subnet
    assert any("not attempted" in e for r, e in outcome.failed if r.type == "vpc")
    monkeypatch.setitem(
        REGISTRY, "subnet", REGISTRY["subnet"].__class__(**{**REGISTRY["subnet"].__dict__, "delete": real})
    )
    assert main(args("resume", tmp_path)) == 0
    assert inventory(Context(CONFIG, boto_session)) == []
    assert foreign_still_there(boto_session, acct) == {}


def test_killed_destroy_then_resume_ends_empty(boto_session, aws_env, tmp_path):
    acct = build(boto_session)
    # A destroy process that is SIGKILLed right after its fifth deletion: no cleanup, no journal end.
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        import teardown.engine as engine
        real, count = engine.delete_one, [0]
        def dying(*a, **k):
            real(*a, **k)
            count[0] += 1
            if count[0] == 5:
                os.kill(os.getpid(), signal.SIGKILL)
        engine.delete_one = dying
        from gpu_finops.cli import main
        sys.exit(main({args("destroy", tmp_path)!r}))
    """)
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=os.environ.copy()
    )
    assert proc.returncode == -9, proc.stdout + proc.stderr
    journal = Journal(tmp_path / "journal.jsonl")
    assert not journal.finished() and len(journal.deleted()) == 4  # the 5th died before its journal line
    left = inventory(Context(CONFIG, boto_session))
    assert left, "the kill should have left work for resume"
    assert main(args("resume", tmp_path)) == 0
    assert inventory(Context(CONFIG, boto_session)) == []
    assert foreign_still_there(boto_session, acct) == {}
    assert Journal(tmp_path / "journal.jsonl").finished()


def test_deletion_order_comes_from_the_graph():
    load()
    order = deletion_order()
    pos = {name: i for i, name in enumerate(order)}
    # What moto forgives (it lets a VPC go while dependents remain), the plan's order must not.
    for before, after in [
        ("subnet", "vpc"),
        ("nat_gateway", "eip"),
        ("eip", "internet_gateway"),
        ("network_interface", "subnet"),
        ("network_interface", "security_group"),
        ("ec2_instance", "iam_instance_profile"),
        ("iam_instance_profile", "iam_role"),
        ("eks_nodegroup", "eks_cluster"),
        ("ec2_instance", "launch_template"),
        ("eventbridge_rule", "sqs_queue"),
        ("iam_role", "iam_policy"),
    ]:
        assert pos[before] < pos[after], f"{before} must come before {after}: {order}"


def test_a_cycle_in_the_graph_is_refused(monkeypatch):
    load()
    from graphlib import CycleError

    vpc = REGISTRY["vpc"]
    monkeypatch.setitem(
        REGISTRY,
        "subnet",
        REGISTRY["subnet"].__class__(
            **{**REGISTRY["subnet"].__dict__, "depends_on": (*REGISTRY["subnet"].depends_on, "vpc")}
        ),
    )
    assert vpc
    with pytest.raises(CycleError):
        deletion_order()


def test_verify_help_documents_exit_codes(capsys):
    with pytest.raises(SystemExit):
        main(["teardown", "verify", "--help"])
    out = capsys.readouterr().out
    assert "exit codes" in out and "0" in out and "1  something of ours is left" in out
