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


def test_one_tenant_can_be_given_its_own_load_and_the_durations_their_scale(tmp_path: Path) -> None:
    out = tmp_path / "busy.jsonl"
    argv = ["twin", "generate", "--fleet", str(FLEET), "--out", str(out), "--hours", "24", "--seed", "5",
            "--tenant-load", "team-a=2.0", "--tenant-load", "team-c=0.2", "--training-median-h", "0.5",
            "--serving-mean-h", "1"]  # fmt: skip
    assert main(argv) == 0
    trace = load(out)
    per = {t: [j for j in trace.jobs if j.tenant == t] for t in trace.tenants}
    # arrivals scale with load (2.0 : 0.8 : 0.2) at equal quotas: team-a about 10x team-c
    assert len(per["team-a"]) > 5 * len(per["team-c"]) and len(per["team-a"]) > len(per["team-b"])
    serving = [j.duration_s for j in trace.jobs if j.kind == "serving"]
    assert 0.5 * 3600 < sum(serving) / len(serving) < 1.5 * 3600  # exponential, mean 1 h
    assert "team-a at 2.0" in trace.note


def test_a_load_for_a_tenant_the_fleet_lacks_is_a_usage_error(tmp_path: Path, capsys) -> None:
    argv = ["twin", "generate", "--fleet", str(FLEET), "--out", str(tmp_path / "t.jsonl"),
            "--tenant-load", "team-z=1"]  # fmt: skip
    assert main(argv) == 2
    assert "--tenant-load team-z: not a tenant of" in capsys.readouterr().err
    assert not (tmp_path / "t.jsonl").exists()
