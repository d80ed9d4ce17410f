"""The cost guard: the ceiling's arithmetic and price sources, budget refusal, and the deadline that
stops up and the acts (their whole process group) so teardown keeps its time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber

from gpu_finops.cli import main
from gpu_finops.facts.config import Config, Tenant, Versions
from nightly.eks_support import (
    EKS_SUPPORT,
    EXTENDED_USD_H,
    STANDARD_USD_H,
    WARN_DAYS,
    control_plane_price,
)
from nightly.guard import EXIT_DEADLINE, Deadline, GuardError, estimate, render, run_until
from tests.gpu_finops.cost.aws_shapes import price_list_item

OFFLINE = {"g6e.xlarge": 1.861, "g6e.12xlarge": 10.493, "m7i.large": 0.1008}
# The ceilings below are for a run on 2026-11-30 (EKS 1.36, in standard support); the EKS tests
# further down move the date across each boundary.
NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)
START = ("--start", NOW.isoformat())


def test_ceiling_counts_every_node_the_pools_may_launch_at_on_demand_plus_fixed_services():
    c = Config(tenants=(Tenant("team-a", 1), Tenant("team-b", 1)), gvt_spot_vcpu_quota=8)  # 2 whole cards
    e = estimate(c, OFFLINE.__getitem__, max_hours=3, start=NOW)
    by_unit = {i.what.split(":")[0]: i for i in e.items}
    assert by_unit["GPU nodes"].quantity == 6 and by_unit["GPU nodes"].usd_per_unit == 1.861
    assert by_unit["system nodes"].quantity == 6 and by_unit["system nodes"].usd_per_unit == 0.1008
    expected = 6 * 1.861 + 6 * 0.1008 + 3 * 0.10 + 3 * 0.045 + 3 * 0.005 + 5 * 0.10
    assert e.usd == pytest.approx(expected) and round(e.usd, 2) == 12.72
    assert (
        e.within_budget
        and not estimate(c, OFFLINE.__getitem__, max_hours=3, budget_usd=12.0, start=NOW).within_budget
    )


def test_the_most_expensive_allowed_gpu_type_sets_the_ceiling():
    c = Config(gpu_instance_types=("g6e.xlarge", "g6e.12xlarge"), gvt_spot_vcpu_quota=8)
    e = estimate(c, OFFLINE.__getitem__, max_hours=1)
    assert "g6e.12xlarge" in e.items[0].what and e.items[0].usd_per_unit == 10.493


def pricing_stub(responses: list[dict | Exception]) -> tuple[object, Stubber]:
    client = boto3.client(
        "pricing", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stub = Stubber(client)
    for r in responses:
        if isinstance(r, Exception):
            stub.add_client_error("get_products", "ThrottlingException", "Rate exceeded")
        else:
            stub.add_response("get_products", r)
    return client, stub


def test_prices_come_from_the_pricing_api_when_asked(monkeypatch):
    from gpu_finops.cost.rates import OnDemandPrices

    client, stub = pricing_stub(
        [
            {
                "PriceList": [price_list_item("g6e.xlarge", "us-east-1", "1.8610000000")],
                "FormatVersion": "aws_v1",
            },
            {
                "PriceList": [price_list_item("m7i.large", "us-east-1", "0.1008000000")],
                "FormatVersion": "aws_v1",
            },
        ]
    )
    prices = OnDemandPrices(client)
    with stub:
        e = estimate(Config(), lambda t: prices.get(t, "us-east-1").usd_per_hour, max_hours=2)
    assert e.items[0].usd_per_unit == pytest.approx(1.861) and e.items[1].usd_per_unit == pytest.approx(
        0.1008
    )
    assert prices.api_calls == 2


def test_a_missing_price_refuses_to_bound_the_run():
    from gpu_finops.cost.rates import OnDemandPrices

    client, stub = pricing_stub([RuntimeError()])
    prices = OnDemandPrices(client)
    with stub, pytest.raises(GuardError) as refused:
        estimate(Config(), lambda t: prices.get(t, "us-east-1").usd_per_hour, max_hours=2)
    message = str(refused.value)
    assert message.startswith("no on-demand price for g6e.xlarge in us-east-1: ")
    assert message.count("no on-demand price") == 1, message  # the reader's error is not prefixed again
    assert message.endswith("the cost guard will not start a run it cannot bound (check pricing:GetProducts "
                            "access, or use --rates catalog)")  # fmt: skip


def test_a_price_reader_failing_its_own_way_is_named_with_the_instance_type():
    with pytest.raises(GuardError) as refused:
        estimate(Config(), lambda t: (_ for _ in ()).throw(OSError("disk gone")), max_hours=1)
    assert str(refused.value).startswith("no on-demand price for g6e.xlarge in us-east-1: disk gone; ")


def test_zero_price_is_an_error_not_a_free_run():
    with pytest.raises(GuardError, match="expected a positive"):
        estimate(Config(), lambda t: 0.0, max_hours=1)


def guard(*argv: str) -> list[str]:
    return ["guard", *argv]


def test_over_budget_is_refused_before_anything_starts(tmp_path, capsys):
    deadline = tmp_path / "deadline.json"
    code = main(
        guard("estimate", "--rates", "catalog", "--budget-usd", "5", "--deadline-file", str(deadline), *START)
    )
    out, err = capsys.readouterr()
    assert code == 1, (
        out
    )  # the check "within budget" is false (gpu_finops/facts/errors.py), not "unreachable"
    assert (
        "gpu-finops guard: cost guard: refusing to start: the ceiling $18.30 is over the budget $5.00" in err
    )
    assert not deadline.exists()


def test_within_budget_prints_the_ceiling_and_starts_the_clock(tmp_path, capsys):
    deadline, report = tmp_path / "deadline.json", tmp_path / "estimate.json"
    before = time.time()
    code = main(
        guard(
            "estimate", "--rates", "catalog", "--budget-usd", "25", "--max-hours", "3",
            "--deadline-file", str(deadline), "--json", str(report), *START,
        )
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert "total ceiling" in out and "$   18.30" in out and "within budget" in out
    d = Deadline.read(deadline)
    assert before + 3 * 3600 - 45 * 60 <= d.at <= time.time() + 3 * 3600 - 45 * 60
    assert json.loads(report.read_text())["ceiling_usd"] == 18.3


def test_a_run_longer_than_the_job_timeout_is_refused(capsys):
    code = main(guard("estimate", "--rates", "catalog", "--max-hours", "4", "--job-timeout-minutes", "210"))
    assert code == 2
    assert "longer than the job's timeout of 210 min" in capsys.readouterr().err


def test_teardown_reserve_larger_than_the_run_is_refused():
    with pytest.raises(GuardError, match="leaves nothing"):
        Deadline.start(0.5, 45)


def test_run_returns_the_commands_own_exit_code(tmp_path):
    d = Deadline.start(1, 1)
    assert run_until(d, [sys.executable, "-c", "raise SystemExit(7)"]) == 7
    assert run_until(d, ["true"]) == 0


def test_run_stops_the_whole_process_group_at_the_deadline(tmp_path):
    """make spawns terraform which spawns providers: the guard must stop the grandchildren too."""
    pidfile = tmp_path / "grandchild.pid"
    script = f"sleep 60 & echo $! > {pidfile}; wait"
    d = Deadline(at=time.time() + 1.5, started=time.time(), max_hours=1, teardown_reserve_minutes=1)
    said: list[str] = []
    t0 = time.monotonic()
    code = run_until(d, ["bash", "-c", script], grace_seconds=2, echo=said.append)
    assert code == EXIT_DEADLINE and time.monotonic() - t0 < 10
    assert "still running at the deadline" in said[0] and "so teardown can run" in said[0]
    grandchild = int(pidfile.read_text())
    time.sleep(0.2)
    assert (
        not Path(f"/proc/{grandchild}").exists()
        or "Z" in Path(f"/proc/{grandchild}/stat").read_text().split()[2]
    )


def test_a_command_ignoring_sigterm_is_killed_after_the_grace(tmp_path):
    d = Deadline(at=time.time() + 1, started=time.time(), max_hours=1, teardown_reserve_minutes=1)
    t0 = time.monotonic()
    code = run_until(
        d, ["bash", "-c", "trap '' TERM; sleep 60 & wait; sleep 60"], grace_seconds=0.5, echo=lambda s: None
    )
    assert code == EXIT_DEADLINE and time.monotonic() - t0 < 10


def test_past_the_deadline_nothing_starts(tmp_path):
    marker = tmp_path / "started"
    d = Deadline(at=time.time() - 5, started=time.time() - 100, max_hours=1, teardown_reserve_minutes=1)
    said: list[str] = []
    assert run_until(d, ["touch", str(marker)], echo=said.append) == EXIT_DEADLINE
    assert not marker.exists() and "not starting" in said[0]


def test_run_without_a_deadline_file_says_how_to_make_one(tmp_path, capsys):
    code = main(guard("run", "--deadline-file", str(tmp_path / "none.json"), "--", "true"))
    assert code == 2
    assert "run `gpu-finops guard estimate --deadline-file" in capsys.readouterr().err


def test_guard_run_cli_end_to_end(tmp_path):
    """Through the real entry point, as the workflow calls it."""
    deadline = tmp_path / "deadline.json"
    Deadline(at=time.time() + 1, started=time.time(), max_hours=1, teardown_reserve_minutes=1).write(deadline)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    result = subprocess.run(
        [sys.executable, "-m", "gpu_finops.cli", "guard", "run", "--deadline-file", str(deadline),
         "--grace-seconds", "1", "--", "sleep", "30"],
        capture_output=True, text=True, timeout=30, env=env,
    )  # fmt: skip
    assert result.returncode == EXIT_DEADLINE, result.stdout + result.stderr
    assert "stopping it so teardown can run" in result.stdout


# --- the EKS control plane: standard vs extended support, by date ------------------------------------
def at(day: date, hour: int = 0) -> datetime:
    return datetime(day.year, day.month, day.day, hour, tzinfo=UTC)


@pytest.mark.parametrize("version", sorted(EKS_SUPPORT))
def test_each_version_is_standard_the_hour_before_and_extended_from_its_date(version):
    window = EKS_SUPPORT[version]
    before = control_plane_price(version, at(window.standard_end) - timedelta(hours=1), 1)
    after = control_plane_price(version, at(window.standard_end), 1)
    assert (before.support, before.usd_per_hour) == ("standard", STANDARD_USD_H)
    assert (after.support, after.usd_per_hour) == ("extended", EXTENDED_USD_H)
    assert "left standard support" in (after.note or "")


@pytest.mark.parametrize("version", sorted(EKS_SUPPORT))
def test_each_version_is_refused_past_its_extended_support(version):
    window = EKS_SUPPORT[version]
    assert control_plane_price(version, at(window.extended_end) - timedelta(hours=1), 1).support == "extended"
    with pytest.raises(ValueError, match=f"EKS {version} leaves extended support on {window.extended_end}"):
        control_plane_price(version, at(window.extended_end), 1)


def test_eks_134_standard_support_ends_on_2026_12_02():
    assert EKS_SUPPORT["1.34"].standard_end == date(2026, 12, 2) and EKS_SUPPORT["1.34"].confirmed


def test_a_run_that_crosses_the_end_of_standard_support_is_priced_extended():
    end = at(date(2026, 12, 2))
    inside = control_plane_price("1.34", end - timedelta(hours=3), 3)  # ends exactly at midnight
    crossing = control_plane_price("1.34", end - timedelta(hours=2), 3)
    assert inside.usd_per_hour == STANDARD_USD_H and crossing.usd_per_hour == EXTENDED_USD_H
    assert "leaves standard support on 2026-12-02" in (crossing.note or "")


def test_a_warning_comes_before_extended_support_and_not_earlier_than_the_window():
    last_quiet = at(date(2026, 12, 2) - timedelta(days=WARN_DAYS + 1), 12)
    first_warned = last_quiet + timedelta(days=1)
    assert control_plane_price("1.34", last_quiet, 3).note is None
    assert f"in {WARN_DAYS} day(s)" in (control_plane_price("1.34", first_warned, 3).note or "")
    near = control_plane_price("1.34", NOW, 3)
    assert near.usd_per_hour == STANDARD_USD_H
    assert near.note and "leaves standard support on 2026-12-02, in 2 day(s)" in near.note


def test_an_unknown_version_refuses_to_bound_the_run():
    c = Config(versions=Versions(kubernetes="1.29"))
    with pytest.raises(GuardError, match=r"EKS 1.29 is not in the support table"):
        estimate(c, OFFLINE.__getitem__, max_hours=1, start=NOW)


def test_the_ceiling_uses_the_extended_price_once_134_is_past_standard_support():
    c = Config(versions=Versions(kubernetes="1.34"), gvt_spot_vcpu_quota=8)
    before = estimate(c, OFFLINE.__getitem__, max_hours=3, start=NOW)
    after = estimate(c, OFFLINE.__getitem__, max_hours=3, start=at(date(2026, 12, 2), 9))
    plane = {e: next(i for i in e.items if i.what.startswith("EKS")) for e in (before, after)}
    assert plane[before].usd_per_unit == 0.10 and plane[after].usd_per_unit == 0.60
    assert plane[after].what == "EKS control plane (1.34, extended support)"
    assert after.usd == pytest.approx(before.usd + 3 * 0.50)
    assert "warning: EKS 1.34 left standard support on 2026-12-02" in render(after)
    assert "warning: EKS 1.34 leaves standard support on 2026-12-02" in render(before)


def test_the_cli_prints_the_extended_price_and_the_warning(capsys, tmp_path, monkeypatch):
    old = tmp_path / "config.yaml"
    old.write_text("versions: {kubernetes: '1.34'}\n")  # a stack still on 1.34
    monkeypatch.setenv("GPU_FINOPS_CONFIG", str(old))
    code = main(
        guard("estimate", "--rates", "catalog", "--max-hours", "3", "--start", "2026-12-02T09:00:00Z")
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "EKS control plane (1.34, extended support)" in out and "x $0.6000" in out
    assert "warning: EKS 1.34 left standard support on 2026-12-02" in out
