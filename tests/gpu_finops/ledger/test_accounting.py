"""The reconciliation arithmetic: exact GPU-hours, every line owned, printed lines summing to the
printed total and to 100.0 %, gaps on their own lines."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gpu_finops.ledger.accounting import LINES, apportion, load_owners, reconcile
from gpu_finops.ledger.conventions import BUCKETS

OWNERS = {line: "o" for line in LINES}


@pytest.mark.parametrize(
    ("values", "units", "expected"),
    [
        ([Decimal(1), Decimal(1), Decimal(1)], 1000, [334, 333, 333]),  # a tie goes to the earlier line
        ([Decimal(2), Decimal(1)], 1000, [667, 333]),
        ([Decimal("0.5"), Decimal("0.5"), Decimal(0)], 1, [1, 0, 0]),
        ([Decimal(148800), Decimal(7291200)], 1000, [20, 980]),
        ([Decimal(0), Decimal(5)], 1000, [0, 1000]),
    ],
)
def test_apportion_sums_exactly(values, units, expected):
    assert apportion(values, units) == expected
    assert sum(apportion(values, units)) == units


def test_apportion_refuses_negative_or_empty():
    with pytest.raises(ValueError):
        apportion([Decimal(-1), Decimal(2)], 10)
    with pytest.raises(ValueError):
        apportion([Decimal(0)], 10)


def ledger(buckets: dict[str, int], installed: int, observed: int = 60, expected: int = 60, step: int = 60):
    return reconcile(
        start="s",
        end="e",
        step_seconds=step,
        installed_sum=Decimal(installed * observed),
        bucket_sums={b: Decimal(v * observed) for b, v in buckets.items()},
        observed_samples=observed,
        expected_samples=expected,
        owners=OWNERS,
    )


def test_a_full_partition_leaves_nothing_unattributed():
    third = {"free_placeable": 1, "allocated_serving_traffic": 1, "allocated_training_stepping": 1}
    result = ledger(third, 3)
    assert result.installed_gpu_hours == 3
    assert [line.share_percent for line in result.lines if line.gpu_hours] == ["33.4", "33.3", "33.3"]
    assert result.line("unattributed").gpu_hours == 0
    assert sum(line.share_tenths for line in result.lines) == 1000
    assert result.warnings == []


def test_what_no_bucket_claims_is_unattributed_never_spread():
    result = ledger({"free_placeable": 6}, 8)
    assert result.line("free_placeable").share_percent == "75.0"
    assert result.line("unattributed").gpu_hours == 2
    assert result.line("unattributed").share_percent == "25.0"


def test_gaps_are_unobserved_estimated_at_the_observed_mean():
    result = ledger({"free_placeable": 8}, 8, observed=45, expected=60)
    # 45 one-minute samples of 8 GPUs = 6 GPU-hours observed; 15 missing at 8 GPUs = 2 GPU-hours
    assert result.line("free_placeable").gpu_hours == 6
    assert result.line("unobserved").gpu_hours == 2
    assert result.installed_gpu_hours == 8
    assert result.line("unobserved").share_percent == "25.0"
    assert any("15 of 60 evaluations have no data" in w for w in result.warnings)


def test_double_counting_is_warned_not_hidden():
    result = ledger({"free_placeable": 5, "allocated_serving_traffic": 5}, 8)
    assert result.line("unattributed").gpu_hours == -2
    assert any("buckets exceed installed" in w for w in result.warnings)


def test_fractional_gpu_hours_print_as_whole_hours_summing_to_the_total():
    # 1 sample of 1 GPU at 1 minute = 1/60 GPU-hour on each of three lines
    result = reconcile(
        start="s",
        end="e",
        step_seconds=60,
        installed_sum=Decimal(300),
        bucket_sums={
            "free_placeable": Decimal(100),
            "free_stranded": Decimal(100),
            "allocated_unclassified": Decimal(100),
        },
        observed_samples=1,
        expected_samples=1,
        owners=OWNERS,
    )
    assert result.installed_gpu_hours == 5
    assert sum(line.gpu_hours_shown for line in result.lines) == result.installed_shown == 5


def test_no_installed_gpus_is_an_error():
    with pytest.raises(ValueError, match="no installed GPUs"):
        ledger({}, 0)


def test_default_owners_follow_the_seed_and_cover_every_line(tmp_path):
    owners = load_owners()
    assert set(owners) == set(LINES) and set(BUCKETS) < set(owners)
    assert owners["unschedulable_repair_queue"] == "platform-hw"
    assert owners["allocated_training_restart"] == "platform-rel"
    partial = tmp_path / "owners.yaml"
    partial.write_text("free_placeable: capacity\n")
    with pytest.raises(ValueError, match="no owner for: unschedulable_repair_queue"):
        load_owners(partial)


def test_a_short_windows_unobserved_hours_are_said_with_decimals_not_as_0():
    # a demo's five minutes: 3 GPUs, 55 of 57 evaluations at 5 s: 0.008 GPU-hours unobserved, said so
    result = ledger({"free_placeable": 3}, installed=3, observed=55, expected=57, step=5)
    assert "2 of 57 evaluations have no data: 0.008 GPU-hours are reported as unobserved" in result.warnings
