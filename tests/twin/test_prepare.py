"""The twin's precondition: a clean slate in the tenants' namespaces, or a failure naming what is left."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpu_finops.facts.config import Tenant
from twin import prepare
from twin.fleet import Fleet


def _fleet() -> Fleet:
    return Fleet("g6e.48xlarge", 4, 0, 0, 0, (Tenant("team-a", 16), Tenant("team-b", 16)), {}, "us-east-1a")


def _kube(workloads: dict[str, list[dict[str, Any]]]) -> Any:
    def listed(group: str, version: str, ns: str, plural: str) -> dict[str, Any]:
        assert plural == "workloads"
        return {"items": workloads.get(ns, [])}

    return SimpleNamespace(custom=SimpleNamespace(list_namespaced_custom_object=listed))


def _wl(name: str, *conditions: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "status": {"conditions": [{"type": c, "status": "True"} for c in conditions]},
    }


def test_finished_workloads_are_a_clean_slate() -> None:
    prepare.expect_clean_slate(_kube({"team-a": [_wl("old", "QuotaReserved", "Finished")]}), _fleet())


@pytest.mark.parametrize(
    ("workloads", "named"),
    [
        ({"team-a": [_wl("held", "QuotaReserved", "Admitted")]}, "team-a/held (holding quota)"),
        ({"team-b": [_wl("queued")]}, "team-b/queued (waiting)"),
    ],
    ids=["holding-quota", "waiting"],
)
def test_an_unfinished_workload_fails_the_run_naming_it(monkeypatch, workloads, named) -> None:
    monkeypatch.setattr(prepare, "LEFTOVERS_GONE", 0.2)
    with pytest.raises(prepare.TwinError) as failed:
        prepare.expect_clean_slate(_kube(workloads), _fleet())
    text = str(failed.value)
    assert "not a clean slate" in text and named in text and "delete their Jobs" in text, text


def test_a_workload_outside_the_tenants_namespaces_is_not_the_twins_business() -> None:
    prepare.expect_clean_slate(_kube({"act-2-x": [_wl("other", "QuotaReserved")]}), _fleet())


def test_a_run_that_cannot_go_on_is_exit_1_not_a_bug(tmp_path, capsys, monkeypatch) -> None:
    """Seen in a live compare: a run past its deadline ended as exit 4, "unexpected error ... a bug"."""
    from gpu_finops.cli import main
    from twin import cli_twin

    def stuck(args, policies):
        raise prepare.TwinError("twin run twin-x: 402 of 508 jobs unfinished past the expected end")

    monkeypatch.setattr(cli_twin, "_run_policies", stuck)
    fleet = str(Path(prepare.__file__).with_name("examples") / "fleet-small.yaml")
    trace = tmp_path / "t.jsonl"
    assert main(["twin", "generate", "--fleet", fleet, "--out", str(trace), "--hours", "1"]) == 0
    argv = [
        "twin",
        "run",
        "--fleet",
        fleet,
        "--trace",
        str(trace),
        "--out",
        str(tmp_path / "r.json"),
        "--policy",
        "strict",
    ]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "402 of 508 jobs unfinished" in err and "unexpected error" not in err, err
