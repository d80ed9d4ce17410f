"""The guard: `teardown plan --out` writes the reviewed plan, `destroy --plan` holds to it (and to its
account, region and cluster) before deleting anything, and destroy asks for the account id unless --yes."""

from __future__ import annotations

import io
import json
import re
import shlex
from pathlib import Path

import pytest
import yaml

from gpu_finops.cli import main
from teardown.engine import inventory
from teardown.model import Context, TeardownConfig
from tests.teardown.account import build

ACCOUNT = "123456789012"
CONFIG = TeardownConfig(region="us-east-1", allowed_accounts=(ACCOUNT,))
ROOT = Path(__file__).resolve().parents[2]


def cli(action: str, tmp_path: Path, *extra: str) -> list[str]:
    return [
        "teardown", action, "--allow-account", ACCOUNT, "--region", "us-east-1", "--cluster", "gpu-finops",
        "--journal", str(tmp_path / "j.jsonl"), "--report", str(tmp_path / f"{action}.json"), "--wait", "5", *extra,
    ]  # fmt: skip


@pytest.fixture
def reviewed(boto_session, tmp_path, capsys) -> Path:
    build(boto_session, storage=False)
    path = tmp_path / "plan.json"
    assert main(cli("plan", tmp_path, "--out", str(path))) == 0
    capsys.readouterr()
    return path


def keys(session) -> set[str]:
    return {r.key for r in inventory(Context(CONFIG, session))}


def test_plan_out_writes_account_region_cluster_and_every_resource(boto_session, reviewed):
    doc = json.loads(reviewed.read_text())
    assert (doc["format"], doc["account"], doc["region"], doc["cluster"]) == (
        "gpu-finops-teardown-plan/1", ACCOUNT, "us-east-1", "gpu-finops",
    )  # fmt: skip
    assert {f"{r['type']}/{r['id']}" for r in doc["resources"]} == keys(boto_session)


def test_destroy_holding_to_the_reviewed_plan_deletes_it(boto_session, reviewed, tmp_path, capsys):
    assert main(cli("destroy", tmp_path, "--yes", "--plan", str(reviewed))) == 0
    out = capsys.readouterr().out
    assert f"every resource above is in the reviewed plan {reviewed}" in out and "verified empty" in out
    assert keys(boto_session) == set()


def test_a_resource_that_appeared_after_review_refuses_the_whole_destroy(
    boto_session, reviewed, tmp_path, capsys
):
    before = keys(boto_session)
    ec2 = boto_session.client("ec2")
    subnet = next(s["SubnetId"] for s in ec2.describe_subnets()["Subnets"] if s.get("Tags"))
    new = ec2.run_instances(  # Karpenter launched one more node after the review
        ImageId="ami-12c6146b", MinCount=1, MaxCount=1, SubnetId=subnet,
        TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": "karpenter.sh/managed-by", "Value": "gpu-finops"}]}],
    )["Instances"][0]["InstanceId"]  # fmt: skip
    assert main(cli("destroy", tmp_path, "--yes", "--plan", str(reviewed))) == 2
    err = capsys.readouterr().err
    assert (
        f"refused: refusing: 1 resource(s) found now are not in the reviewed plan {reviewed}: "
        f"['ec2_instance/{new}']; nothing deleted."
    ) in err
    assert keys(boto_session) == before | {f"ec2_instance/{new}"}  # nothing deleted
    assert not (tmp_path / "j.jsonl").exists()


def test_a_resource_gone_since_review_is_fine(boto_session, reviewed, tmp_path):
    doc = json.loads(reviewed.read_text())
    doc["resources"].append({"type": "sqs_queue", "id": "http://gone/queue"})  # reviewed, gone since
    reviewed.write_text(json.dumps(doc))
    assert main(cli("destroy", tmp_path, "--yes", "--plan", str(reviewed))) == 0
    assert keys(boto_session) == set()


@pytest.mark.parametrize(
    ("field", "value", "flag_now"),
    [
        ("account", "999999999999", ACCOUNT),
        ("region", "eu-west-1", "us-east-1"),
        ("cluster", "demo", "gpu-finops"),
    ],
)
def test_a_plan_for_another_target_is_refused(
    boto_session, reviewed, tmp_path, capsys, field, value, flag_now
):
    doc = json.loads(reviewed.read_text())
    doc[field] = value
    reviewed.write_text(json.dumps(doc))
    before = keys(boto_session)
    assert main(cli("destroy", tmp_path, "--yes", "--plan", str(reviewed))) == 2
    assert (
        f"refusing: the reviewed plan {reviewed} is for {field} {value}, but this run is for {field} {flag_now}; "
        "nothing deleted"
    ) in capsys.readouterr().err
    assert keys(boto_session) == before


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file; write one with `gpu-finops teardown plan --out"),
        ("{not json", "not a readable JSON plan"),
        ('{"account": "1"}', "expected format 'gpu-finops-teardown-plan/1', found None"),
        (
            '{"format": "gpu-finops-teardown-plan/1", "account": "1"}',
            "missing ['region', 'cluster', 'resources']",
        ),
        (
            '{"format": "gpu-finops-teardown-plan/1", "account": "1", "region": "r", "cluster": "c", "resources": [{}]}',
            "a resource entry lacks type or id",
        ),
    ],
)
def test_an_unreadable_plan_file_is_refused(boto_session, tmp_path, capsys, content, message):
    build(boto_session, storage=False)
    path = tmp_path / "plan.json"
    if content is not None:
        path.write_text(content)
    before = keys(boto_session)
    assert main(cli("destroy", tmp_path, "--yes", "--plan", str(path))) == 2
    assert message in capsys.readouterr().err
    assert keys(boto_session) == before


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_without_yes_and_without_a_terminal_destroy_refuses(boto_session, tmp_path, capsys, monkeypatch):
    build(boto_session, storage=False)
    before = keys(boto_session)
    monkeypatch.setattr("sys.stdin", io.StringIO(ACCOUNT + "\n"))  # piped input never confirms
    for action in ("destroy", "resume"):
        assert main(cli(action, tmp_path)) == 2
        err = capsys.readouterr().err
        assert "destroy asks for the account id, and stdin is not a terminal: pass --yes" in err
        assert "or run interactively" in err
    assert keys(boto_session) == before


@pytest.mark.parametrize(("typed", "code"), [(ACCOUNT, 0), ("12345678901", 2), ("", 2), (f" {ACCOUNT} ", 0)])
def test_destroy_asks_for_the_account_id(boto_session, tmp_path, capsys, monkeypatch, typed, code):
    build(boto_session, storage=False)
    before = keys(boto_session)
    monkeypatch.setattr("sys.stdin", Tty(typed + "\n"))
    assert main(cli("destroy", tmp_path)) == code
    out, err = capsys.readouterr()
    assert f"Type the account id ({ACCOUNT}) to delete these {len(before)} resource(s): " in out
    if code:
        assert f"typed {typed.strip()!r}, not the account id {ACCOUNT}: nothing deleted" in err
        assert keys(boto_session) == before
    else:
        assert "verified empty" in out and keys(boto_session) == set()


def test_nothing_to_delete_asks_nothing(boto_session, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(cli("destroy", tmp_path)) == 0
    assert "verified empty" in capsys.readouterr().out


def test_the_nightly_passes_yes_to_destroy_and_resume():
    """The nightly is not interactive: its destroy and resume must reach teardown with --yes."""
    import argparse

    from teardown.cli_teardown import add_arguments

    steps = next(iter(yaml.safe_load((ROOT / ".github/workflows/nightly.yml").read_text())["jobs"].values()))[
        "steps"
    ]
    makefile = (ROOT / "Makefile").read_text()
    for action in ("destroy", "resume"):
        (line,) = [s["run"] for s in steps if re.search(rf"\bmake {action}\b", str(s.get("run", "")))]
        argv = shlex.split(line)
        make_vars = dict(a.split("=", 1) for a in argv if "=" in a)
        recipe = re.search(rf"^{action}:.*\n((?:\t.*\n)+)", makefile, re.M).group(1)
        (call,) = [c for c in recipe.splitlines() if f"teardown {action}" in c]
        expanded = call.split(f"teardown {action}", 1)[1].replace(
            "$(TEARDOWN_ARGS)", make_vars.get("TEARDOWN_ARGS", "")
        )
        parser = argparse.ArgumentParser()
        add_arguments(parser)
        assert parser.parse_args([action, *shlex.split(expanded)]).yes, (
            f"`{line}` runs teardown {action} without --yes"
        )
