"""Bad input to `gpu-finops ledger`: kube-state-metrics going away is said by name, a window with no data
is an error (exit 1), a partly observed one reports its gap as unobserved GPU-hours, an unreachable
Prometheus exits 3 naming its URL, bad arguments exit 2. Against a real Prometheus (outage.py)."""

from __future__ import annotations

import json
import socket
from decimal import Decimal

import pytest

from gpu_finops.cli import main
from gpu_finops.ledger import cli_ledger
from gpu_finops.ledger.conventions import DCGM_INPUTS, DCGM_UNPLACED, KSM_INPUTS, OFF_INSTALLED, UNSHARED


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["ledger", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def day(url: str, start: str, end: str, *more: str) -> list[str]:
    return ["--from", start, "--to", end, "--prometheus-url", url, "--step", "1h", *more]


def test_kube_state_metrics_down_for_half_a_day_is_unobserved_and_named(outage_prometheus, capsys):
    code, out, err = run_cli(
        capsys, "month", *day(outage_prometheus, "2026-08-01T00:00Z", "2026-08-02T00:00Z", "--json")
    )
    assert code == 0, err
    report = json.loads(out)
    lines = {line["line"]: line for line in report["lines"]}
    # 12 observed hours of 100 GPUs; the 12 unobserved ones estimated at that mean, never called free
    assert report["installed_gpu_hours"] == "2400"
    assert (lines["unobserved"]["gpu_hours"], lines["unobserved"]["share_percent"]) == ("1200", "50.0")
    assert (lines["free_placeable"]["gpu_hours"], lines["free_placeable"]["share_percent"]) == ("240", "10.0")
    assert lines["allocated_training_stepping"]["gpu_hours"] == "960"
    assert lines["unattributed"]["gpu_hours"] == "0"
    text = " ".join(err.split())
    assert "12 of 24 evaluations have no data: 1200 GPU-hours are reported as unobserved" in text
    for name in KSM_INPUTS:
        assert f"{name}: no series at some evaluations in the window (kube-state-metrics)" in text, name
    for name in DCGM_INPUTS:
        assert f"{name}: " not in text, f"{name} was present throughout, yet named"
    # 3 GPU_UTIL series named no node for three hours: said, with what it costs; the others were placed
    assert (
        "DCGM_FI_DEV_GPU_UTIL without hostname or Hostname: up to 3 series in the window name no node "
        "(dcgm-exporter): their GPUs are not counted as busy or live" in text
    )
    for name in DCGM_UNPLACED:
        if not name.startswith("DCGM_FI_DEV_GPU_UTIL "):
            assert name not in text, f"{name} counted 0 throughout, yet named"


def test_a_window_with_kube_state_metrics_down_throughout_is_an_error_naming_each_input(
    outage_prometheus, capsys
):
    code, out, err = run_cli(
        capsys, "month", *day(outage_prometheus, "2026-08-02T00:00Z", "2026-08-03T00:00Z")
    )
    assert code == 1
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert 'fleet:ledger_rung_gpus:sum{rung="installed"} has no samples' in err
    for name in KSM_INPUTS:
        assert f"{name}: no series in the window (kube-state-metrics)" in err, name
    assert (
        "kube_node_status_capacity: no series in the window (kube-state-metrics): installed GPUs are unknown"
        in err
    )
    for name in DCGM_INPUTS:
        assert name not in err


def test_the_ladder_names_the_missing_input_and_refuses_a_window_without_data(outage_prometheus, capsys):
    code, out, err = run_cli(
        capsys, "ladder", "--at", "2026-08-01T18:00Z", "--window", "18h", "--json",
        "--prometheus-url", outage_prometheus, "--step", "1h",
    )  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert {r["rung"]: r["now"] for r in report["rungs"]}["installed"] is None  # no sample in the last step
    assert any(
        w.startswith("kube_node_status_capacity: no series at some evaluations") for w in report["warnings"]
    )
    code, out, err = run_cli(
        capsys, "ladder", "--at", "2026-08-03T00:00Z", "--window", "1d",
        "--prometheus-url", outage_prometheus, "--step", "1h",
    )  # fmt: skip
    assert code == 1 and out == ""
    assert "kube_pod_info: no series in the window (kube-state-metrics)" in err


def test_an_unreachable_prometheus_exits_3_naming_its_url(capsys, monkeypatch):
    monkeypatch.setattr(cli_ledger, "RETRY_FOR", 0.3)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"  # bound, not listening: connection refused
        code, out, err = run_cli(
            capsys, "month", "--month", "2026-07", "--prometheus-url", url, "--step", "1h"
        )
    assert code == 3
    assert out == ""
    assert err.startswith(f"gpu-finops ledger: Prometheus at {url} did not answer"), err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["month", "--from", "2026-07-01T00:00Z"], "--from needs --to"),
        (
            ["month", "--from", "2026-07-01T00:00Z", "--to", "2026-07-01T00:30Z", "--step", "1h"],
            "whole number",
        ),
        (["month", "--month", "2026-13", "--step", "1h"], "2026-13"),
        (["ladder", "--window", "1.5h"], "not a whole-second Prometheus duration"),
    ],
)
def test_bad_arguments_exit_2_saying_what_is_wrong(capsys, argv, said):
    code, out, err = run_cli(capsys, *argv, "--prometheus-url", "http://127.0.0.1:9")
    assert code == 2
    assert out == ""
    assert said in " ".join(err.split())


class _Inputs:
    """The two instant queries `missing_inputs` makes, answered with the given maxima and minima."""

    def __init__(self, most: dict[str, int], least: dict[str, int]):
        self.most, self.least = most, least

    def query_exact(self, promql: str, at: object) -> list[tuple[dict[str, str], Decimal]]:
        values = self.most if promql.startswith("max by") else self.least
        return [({"input": k}, Decimal(v)) for k, v in values.items()]


@pytest.mark.parametrize(
    ("inputs", "count", "opening", "consequence"),
    [
        pytest.param(
            UNSHARED, 2,
            "GPU nodes with devices of no known share of a card: up to 2 nodes in the window: their devices' worth "
            "in cards is read only by the collector",
            "their GPUs are not counted installed, schedulable or allocated",
            id="nodes-with-devices-of-no-known-share",
        ),
        pytest.param(
            OFF_INSTALLED, 3,
            "Running GPU pods on nodes with no installed GPUs: up to 3 pods in the window held GPUs on a node with "
            "no installed GPUs at the same evaluation",
            "so their GPUs are not counted allocated",
            id="gpu-pods-on-nodes-with-no-installed-gpus",
        ),
    ],
)  # fmt: skip
def test_a_window_with_what_the_rungs_cannot_count_names_it_with_what_it_costs(
    inputs, count, opening, consequence
):
    from datetime import UTC, datetime

    from gpu_finops.ledger.source import Window, missing_inputs

    (name,) = inputs
    present = {n: 1 for n in (*KSM_INPUTS, *DCGM_INPUTS)}
    window = Window(datetime(2026, 8, 1, tzinfo=UTC), datetime(2026, 8, 2, tzinfo=UTC))
    assert missing_inputs(_Inputs({**present, name: 0}, {**present, name: 0}), window) == []
    (message,) = missing_inputs(_Inputs({**present, name: count}, {**present, name: 0}), window)
    assert message.startswith(opening)
    assert consequence in message
