"""A kill at any point during destroy, then `teardown resume`: ours gone, foreign and lookalikes untouched,
verify honest. The kill is raised (a BaseException nothing in teardown catches, as SIGKILL would end it)
after each deletion call in turn, and before chosen API calls that sit in the middle of one deletion
(a bucket emptied but not deleted, a role detached but not deleted, ...). test_teardown.py kills a real
process with SIGKILL."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import botocore.client
import pytest

from gpu_finops.cli import main
from teardown.journal import Journal
from teardown.registry import REGISTRY
from teardown.types import load
from tests.teardown.account import build, foreign_still_there, ours_left

ACCOUNT = "123456789012"
STEPS = 26  # resources of ours in the demo-shaped account: one kill point after each deletion


class Killed(BaseException):
    """The process dies here: no except clause in teardown sees it."""


def cli(action: str, tmp_path: Path) -> list[str]:
    return [
        "teardown", action, "--allow-account", ACCOUNT, "--region", "us-east-1", "--cluster", "gpu-finops",
        "--journal", str(tmp_path / "j.jsonl"), "--report", str(tmp_path / f"{action}.json"), "--wait", "5", "--yes",
    ]  # fmt: skip


def resume_and_check(boto_session, acct, tmp_path: Path, capsys, *, last: bool = False) -> None:
    journal = Journal(tmp_path / "j.jsonl")
    assert not journal.finished(), "the kill should leave an unfinished journal"
    # killed after the last deletion call, nothing of ours may be left, but the run did not finish
    assert bool(ours_left(boto_session, acct)) is not last, ours_left(boto_session, acct)
    capsys.readouterr()
    assert main(cli("resume", tmp_path)) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "verified empty" in out
    assert ours_left(boto_session, acct) == {}
    assert foreign_still_there(boto_session, acct) == {}
    assert Journal(tmp_path / "j.jsonl").finished()
    report = json.loads((tmp_path / "resume.json").read_text())
    assert report["left"] == []
    assert [r["type"] for r in report["counts_as_gone"]] == ["kms_key"]  # pending deletion, said so
    assert f"counts as gone: kms_key/{acct.ours['kms_key'][0]} is PendingDeletion" in out
    assert {(r["type"], r["id"]) for r in report["looks_like_ours"]} == {
        (t, i) for t, ids in acct.lookalikes.items() for i in ids
    }


@pytest.mark.parametrize("step", range(STEPS))
def test_killed_after_each_deletion_call_then_resume(step, boto_session, tmp_path, capsys, monkeypatch):
    acct = build(boto_session)
    assert sum(len(ids) for ids in acct.ours.values()) == STEPS
    load()
    calls = []

    def dying(real):
        def delete(ctx, r):
            real(ctx, r)
            calls.append(r.key)
            if len(calls) == step + 1:
                raise Killed(f"killed after deleting {r.key}")

        return delete

    real = dict(REGISTRY)
    for name, rtype in real.items():
        monkeypatch.setitem(REGISTRY, name, dataclasses.replace(rtype, delete=dying(rtype.delete)))
    with pytest.raises(Killed):
        main(cli("destroy", tmp_path))
    assert len(calls) == step + 1
    for name, rtype in real.items():  # the next process runs the real deletions
        monkeypatch.setitem(REGISTRY, name, rtype)
    resume_and_check(boto_session, acct, tmp_path, capsys, last=step == STEPS - 1)


MID_STEP = [  # (API call, which one): each sits between two calls of one deletion
    ("DeleteBucket", 1),  # every version and delete marker gone, the bucket not
    ("DeleteObjects", 1),  # the bucket not yet emptied
    ("DeleteRole", 1),  # policies detached and deleted, the role not
    ("DeleteInstanceProfile", 1),  # the role removed from the profile, the profile not
    ("DeleteInternetGateway", 1),  # detached, not deleted
    ("DeleteRouteTable", 1),  # disassociated, not deleted
    ("DeleteRule", 1),  # targets removed, the rule not
    ("ScheduleKeyDeletion", 1),  # everything it encrypted gone, the key not
    ("TerminateInstances", 2),  # one node gone, the other not
]


@pytest.mark.parametrize(("operation", "nth"), MID_STEP)
def test_killed_in_the_middle_of_a_deletion_then_resume(
    operation, nth, boto_session, tmp_path, capsys, monkeypatch
):
    acct = build(boto_session)
    real = botocore.client.BaseClient._make_api_call
    seen = []

    def dying(self, name, params):
        if name == operation:
            seen.append(name)
            if len(seen) == nth:
                raise Killed(f"killed before {operation} #{nth}")
        return real(self, name, params)

    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", dying)
    with pytest.raises(Killed):
        main(cli("destroy", tmp_path))
    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", real)
    resume_and_check(boto_session, acct, tmp_path, capsys)
