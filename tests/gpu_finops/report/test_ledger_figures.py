"""The Ledger section's figures read as numbers a person can use: a five-minute local window's GPU-hours
show with three significant digits (not the apportioned whole hours, which are all 0 there), a month of a
fleet shows the apportioned whole hours that sum to the total, and no figure prints 28 digits or -0."""

from __future__ import annotations

import html as html_module
import json
import re
from pathlib import Path

import pytest

from gpu_finops.report import section_ops

DEMO_MONTH = {  # shape and figures from a `make demo` run's reports/ledger-month.json (2026-12-02)
    "start": "2026-12-02T08:21:50+00:00", "end": "2026-12-02T08:26:35+00:00",
    "installed_gpu_hours": "0.1626515151515151515151515151", "installed_gpu_hours_shown": 0,
    "lines": [
        {"line": "free_placeable", "label": "free, placeable", "owner": "capacity",
         "gpu_hours": "0.09270833333333333333333333333", "gpu_hours_shown": 0, "share_percent": "57.0"},
        {"line": "unobserved", "label": "unobserved (no data)", "owner": "finops",
         "gpu_hours": "0.005706", "gpu_hours_shown": 0, "share_percent": "3.5"},
        {"line": "unschedulable_other", "label": "unschedulable: other", "owner": "platform-hw",
         "gpu_hours": "-0.00000000001", "gpu_hours_shown": 0, "share_percent": "0.0"},
    ],
}  # fmt: skip
FLEET_MONTH = {
    "start": "2026-11-01T00:00:00+00:00", "end": "2026-12-01T00:00:00+00:00",
    "installed_gpu_hours": "7200000.4", "installed_gpu_hours_shown": 7_200_000,
    "lines": [
        {"line": "free_placeable", "label": "free, placeable", "owner": "capacity",
         "gpu_hours": "3600000.6", "gpu_hours_shown": 3_600_001, "share_percent": "50.0"},
        {"line": "allocated_unclassified", "label": "allocated: unclassified", "owner": "finops",
         "gpu_hours": "3599999.8", "gpu_hours_shown": 3_599_999, "share_percent": "50.0"},
    ],
}  # fmt: skip
LADDER = {"start": "a", "end": "b", "largest_placeable": 1, "rungs": [
    {"rung": "installed", "now": "3", "mean_gpus": "2.0545454545454547", "gpu_hours": "0.1569444444444444444444444444"},
    {"rung": "allocated", "now": "0", "mean_gpus": "0.8409090909090912", "gpu_hours": "0.06423611111111111111111111111"},
    {"rung": "useful_training", "now": "0", "mean_gpus": "-0.0000001", "gpu_hours": "0"},
]}  # fmt: skip


def cells(html: str) -> list[str]:
    return [html_module.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", html)]


def test_a_short_window_shows_three_significant_digits_not_the_whole_hours():
    html = section_ops.month_part(DEMO_MONTH)
    row = cells(html)
    assert row[:2] == ["installed GPU-hours", "0.163"], row
    assert "0.093" in row and "0.006" in row, row
    assert "-0.000" not in html and "0.000" in row, row  # a rounding residue prints 0.000, never -0.000


def test_a_fleet_month_shows_the_apportioned_whole_hours_that_sum():
    row = cells(section_ops.month_part(FLEET_MONTH))
    assert row[1] == "7,200,000" and "3,600,001" in row and "3,599,999" in row, row


def test_the_ladder_rounds_to_the_installed_rungs_precision():
    html = section_ops.ladder_part(LADDER)
    row = cells(html)
    assert row[:4] == ["installed", "3", "2.05", "0.157"], row
    assert row[5:8] == ["0", "0.84", "0.064"], row
    assert row[10:12] == ["0.00", "0.000"], row
    assert "5454545" not in html and "-0.00" not in html


@pytest.mark.parametrize("total, places", [(None, 3), (0, 3), (0.16, 3), (2.05, 2), (42.0, 1), (99.9, 1),
                                           (512.0, 0)])  # fmt: skip
def test_decimals_give_three_significant_digits(total, places):
    assert section_ops.decimals_for(total) == places


def test_an_absent_figure_is_a_question_mark_not_zero(tmp_path: Path):
    month = json.loads(json.dumps(DEMO_MONTH))
    del month["lines"][0]["gpu_hours"]
    assert "?" in cells(section_ops.month_part(month))
