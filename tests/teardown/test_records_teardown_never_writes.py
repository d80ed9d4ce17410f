"""A journal plan line or a run record that is valid JSON of the right shape but holds what teardown never
writes ends resume and verify with exit 2 and one line naming the file, not exit 4 "a bug". These are the nightly's
recovery path (`make resume`) and its whole cleanup."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from gpu_finops.cli import main


@pytest.fixture
def aws(monkeypatch):
    for key, value in {
        "AWS_ACCESS_KEY_ID": "x",
        "AWS_SECRET_ACCESS_KEY": "x",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        yield boto3.client("sts").get_caller_identity()["Account"]


def argv(action: str, account: str, tmp: Path, journal: Path, run: Path) -> list[str]:
    (tmp / "state").mkdir(exist_ok=True)
    return ["teardown", action, *(["--yes"] if action == "resume" else []), "--region", "us-east-1",
            "--allow-account", account, "--state-dir", str(tmp / "state"), "--run-record", str(run),
            "--journal", str(journal), "--report", str(tmp / "r.json")]  # fmt: skip


@pytest.mark.parametrize("line", ['{"event": "plan"}', '{"event": "plan", "resources": [{"id": "x"}]}',
                                  '{"event": "plan", "resources": 5}'])  # fmt: skip
def test_a_plan_entry_teardown_never_writes_stops_resume_with_exit_2_naming_it(aws, tmp_path, capsys, line):
    journal = tmp_path / "j.jsonl"
    journal.write_text(line + "\n")
    journal.chmod(0o600)
    code = main(argv("resume", aws, tmp_path, journal, tmp_path / "run.json"))
    err = capsys.readouterr().err
    assert code == 2, err
    assert (
        f"journal {journal}: plan entry (line 1) has no list of resources each with a type and an id" in err
    )


@pytest.mark.parametrize(
    "started", ["yesterday", 1764633600, None, "2026-11-31T00:00:00Z", "2026-11-30T00:00:00"]
)
def test_a_run_record_whose_start_is_no_time_is_exit_2_naming_it(aws, tmp_path, capsys, started):
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"format": "gpu-finops-teardown-run/1", "account": aws, "region": "us-east-1",
                               "cluster": "gpu-finops", "started_at": started}))  # fmt: skip
    run.chmod(0o600)
    code = main(argv("verify", aws, tmp_path, tmp_path / "j.jsonl", run))
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"run record {run}: " in err and "expected an ISO 8601 UTC time" in err, err


def test_a_run_record_teardown_begin_writes_is_still_read(aws, tmp_path, capsys):
    run = tmp_path / "run.json"
    assert main(argv("begin", aws, tmp_path, tmp_path / "j.jsonl", run)) == 0, capsys.readouterr().err
    code = main(argv("verify", aws, tmp_path, tmp_path / "j.jsonl", run))
    assert code == 0, capsys.readouterr().err
