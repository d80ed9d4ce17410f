"""`gpu-finops twin generate` and `erlang-trace` write traces the reader accepts (no cluster needed)."""

from __future__ import annotations

from pathlib import Path

from gpu_finops.cli import main
from twin import fleet as fleet_mod
from twin.trace import load

FLEET = Path(fleet_mod.__file__).with_name("examples") / "fleet-small.yaml"


def test_generate_writes_a_trace_for_the_fleets_tenants(tmp_path: Path, capsys) -> None:
    out = tmp_path / "day.jsonl"
    assert (
        main(["twin", "generate", "--fleet", str(FLEET), "--out", str(out), "--hours", "6", "--seed", "3"])
        == 0
    )
    trace = load(out)
    assert trace.tenants == ("team-a", "team-b", "team-c") and trace.seed == 3 and trace.horizon_s == 6 * 3600
    assert trace.jobs and all(j.submit_s < 6 * 3600 for j in trace.jobs)
    assert f"{len(trace.jobs)} jobs over 6.0 trace hours (360 wall s)" in capsys.readouterr().out


def test_erlang_trace_writes_the_known_case(tmp_path: Path) -> None:
    out = tmp_path / "mmc.jsonl"
    assert (
        main(["twin", "erlang-trace", "--out", str(out), "--jobs", "50", "--servers", "4", "--load", "0.5"])
        == 0
    )
    trace = load(out)
    assert len(trace.jobs) == 50 and {j.gpus for j in trace.jobs} == {1} and "M/M/4, rho=0.5" in trace.note
