"""The leak check holds its promises: on a schedule of its own, it runs `teardown verify` and nothing that
creates or deletes; it shares the nightly's concurrency group without cancelling (so it never looks while a
nightly is mid-run), assumes the sandbox role through OIDC only, and asks for no more permissions than that.
Each promise is shown to fail on the near miss it exists for."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_finops.facts.config import Config, load_config
from tests.docs.doc_commands import gpu_finops_problem

ROOT = Path(__file__).resolve().parents[2]
LEAK_CHECK = ROOT / ".github" / "workflows" / "leak-check.yml"
NIGHTLY = ROOT / ".github" / "workflows" / "nightly.yml"
CHANGES = re.compile(
    r"\b(make (up|destroy|resume|acts)|teardown (destroy|resume|begin)|infra (up|destroy)|--yes)\b"
)


def load(text: str) -> dict[str, Any]:
    doc = yaml.safe_load(text)
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as true
    return doc


def problems(doc: dict[str, Any], nightly: dict[str, Any]) -> list[str]:
    out = []
    if not (doc.get("on") or {}).get("schedule"):
        out.append("no schedule: a leak is found only when someone remembers to look")
    if doc.get("permissions") != {}:
        out.append(f"workflow-level permissions {doc.get('permissions')!r}, expected {{}}")
    if doc.get("concurrency") != nightly.get("concurrency"):
        out.append(
            f"concurrency {doc.get('concurrency')!r} is not the nightly's {nightly.get('concurrency')!r}"
        )
    (job,) = doc["jobs"].values()
    if job.get("permissions") != {"id-token": "write", "contents": "read"}:
        out.append(f"job permissions {job.get('permissions')!r}, expected id-token: write, contents: read")
    runs = [s.get("run", "") for s in job["steps"]]
    for run in runs:
        if CHANGES.search(run):
            out.append(f"runs {CHANGES.search(run)[0]!r}: the leak check deletes and creates nothing")
    verifies = [r for r in runs if "gpu-finops teardown verify" in r]
    if len(verifies) != 1:
        out.append(f"{len(verifies)} `teardown verify` steps, expected one")
    else:
        argv = verifies[0].split()
        why = gpu_finops_problem(argv[argv.index(next(a for a in argv if a.endswith("gpu-finops"))) + 1 :])
        if why:
            out.append(f"the verify step does not parse: {why}")
    if not any("configure-aws-credentials" in str(s.get("uses", "")) for s in job["steps"]):
        out.append("no OIDC role assumption")
    out += evidence_problems(doc)
    return out


def written_config(doc: dict[str, Any], tmp: Path) -> Config:
    """The config the workflow's "Write the run's config" step writes, with its variables set as on a runner."""
    (step,) = [s for s in _job(doc)["steps"] if "EOF_CONFIG" in s.get("run", "")]
    body = step["run"].split("<<EOF_CONFIG\n", 1)[1].rsplit("EOF_CONFIG", 1)[0]
    for var, value in (("AWS_REGION", "us-east-1"), ("GPU_FINOPS_ALLOWED_ACCOUNTS", "123456789012")):
        body = body.replace("${" + var + "}", value)
    path = tmp / "config.yaml"
    path.write_text(body)
    return load_config(path)


def evidence_problems(doc: dict[str, Any]) -> list[str]:
    """State, run record and journal in the state bucket, read back by a runner that has none of them."""
    with tempfile.TemporaryDirectory() as tmp:
        c = written_config(doc, Path(tmp))
    if c.state_backend != "s3":
        return [f"state_backend {c.state_backend}: state and evidence die with the runner, expected s3"]
    return []


def test_the_nightly_keeps_state_and_evidence_off_the_runner():
    assert evidence_problems(load(NIGHTLY.read_text())) == []
    doc = load(NIGHTLY.read_text())
    (step,) = [s for s in _job(doc)["steps"] if "EOF_CONFIG" in s.get("run", "")]
    step["run"] = step["run"].replace("state_backend: s3\n", "")
    assert evidence_problems(doc) == [
        "state_backend local: state and evidence die with the runner, expected s3"
    ]


def test_the_leak_check_keeps_its_promises():
    assert problems(load(LEAK_CHECK.read_text()), load(NIGHTLY.read_text())) == []


@pytest.mark.parametrize(
    "edit, why",
    [
        (lambda d: d["on"].pop("schedule"), "no schedule"),
        (lambda d: d.__setitem__("permissions", {"contents": "read"}), "workflow-level permissions"),
        (lambda d: d["concurrency"].__setitem__("cancel-in-progress", True), "is not the nightly's"),
        (lambda d: d["concurrency"].__setitem__("group", "leak-check"), "is not the nightly's"),
        (lambda d: _job(d)["permissions"].__setitem__("contents", "write"), "job permissions"),
        (lambda d: _job(d)["steps"].append({"run": "make resume TEARDOWN_ARGS=--yes"}), "runs 'make resume'"),
        (
            lambda d: _job(d)["steps"].append({"run": ".venv/bin/gpu-finops teardown destroy"}),
            "runs 'teardown destroy'",
        ),
        (
            lambda d: _verify(d).__setitem__("run", ".venv/bin/gpu-finops teardown verify --bogus"),
            "does not parse",
        ),
        (lambda d: _job(d)["steps"].remove(_verify(d)), "0 `teardown verify` steps"),
        (
            lambda d: _config_step(d).__setitem__(
                "run", _config_step(d)["run"].replace("state_backend: s3", "")
            ),
            "state_backend local: state and evidence die with the runner",
        ),
    ],
)
def test_each_broken_promise_is_caught(edit, why):
    doc = load(LEAK_CHECK.read_text())
    edit(doc)
    found = problems(doc, load(NIGHTLY.read_text()))
    assert any(why in p for p in found), found


def _job(doc: dict[str, Any]) -> dict[str, Any]:
    (job,) = doc["jobs"].values()
    return job


def _config_step(doc: dict[str, Any]) -> dict[str, Any]:
    return next(s for s in _job(doc)["steps"] if "EOF_CONFIG" in s.get("run", ""))


def _verify(doc: dict[str, Any]) -> dict[str, Any]:
    return next(s for s in _job(doc)["steps"] if "teardown verify" in s.get("run", ""))
