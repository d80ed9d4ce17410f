"""A time-sliced card's figures under dcgm-exporter's KUBERNETES_VIRTUAL_GPUS shape (docs/infra.md,
"Time-sliced attribution"): the card's own FB_USED row (no holder) beside each sharer's share, and every
other field copied onto each sharer's row. The card reads as the card, each holder as its share."""

from __future__ import annotations

import pytest

from gpu_finops.diagnose import activity as act
from gpu_finops.diagnose.model import GpuStats

CARD_USED, FREE = 41400.0, 4600.0  # 90 % of the card resident, three sharers holding a third each


def shared_rows() -> list[GpuStats]:
    card = GpuStats("n", "0", "GPU-s", None, fb_used_mib=CARD_USED)
    sharers = [
        GpuStats(
            "n",
            "0",
            "GPU-s",
            f"ml/srv-{r}",
            sm_active=0.05,
            fb_used_mib=CARD_USED / 3,
            fb_free_mib=FREE,
            power_w=90.0,
        )
        for r in range(3)
    ]
    return [card, *sharers]


def test_the_card_reads_its_own_series_not_the_mean_with_the_shares():
    a = act.card_activity(shared_rows())
    assert a is not None
    assert a.fb_used_mib == CARD_USED and a.fb_ratio == pytest.approx(0.9)
    assert a.sm_active == pytest.approx(0.05) and a.power_w == 90.0 and a.gpus == ("n/GPU-s",)
    assert a.fb_ratio >= act.FB_RESIDENT  # resident: the memory check can say so


def test_near_miss_the_plain_mean_halves_the_card_and_hides_its_residency():
    """What the diagnosis read before: the card row averaged with the shares."""
    a = act.activity(shared_rows())
    assert a is not None and a.fb_used_mib == pytest.approx(CARD_USED / 2)
    assert a.fb_ratio < act.FB_RESIDENT


@pytest.mark.parametrize(
    "rows",
    [
        [GpuStats("n", "0", "GPU-u", None, sm_active=0.0, fb_used_mib=0.0, fb_free_mib=46000.0)],  # unheld
        [
            GpuStats("n", "0", "GPU-w", "ml/t", sm_active=0.4, fb_used_mib=20000.0, fb_free_mib=26000.0)
        ],  # flag off
    ],
)
def test_a_card_with_only_one_kind_of_row_reads_as_before(rows):
    assert act.card_activity(rows) == act.activity(rows)


def test_a_sharer_of_a_resident_card_is_resident_not_data_starved():
    """Each server holds a third of a card whose VRAM is 90 % used, with SM 0.05 and no PCIe traffic: a
    model held warm on a full card (act 7's shared card). Its own share row alone reads 75 % loaded."""
    rows = shared_rows()
    cards = {"n": {"GPU-s": act.card_activity(rows)}}
    sharer = [r for r in rows if r.holder == "ml/srv-0"]
    a = act.holder_activity(sharer, cards)
    assert a is not None and a.fb_ratio == pytest.approx(0.9) and act.classify(a) == act.RESIDENT
    assert a.fb_used_mib == pytest.approx(CARD_USED / 3)  # its own share stays its figure
    # near miss: the share row alone, as before
    alone = act.activity(sharer)
    assert alone is not None and alone.fb_ratio == pytest.approx(0.75) and act.classify(alone) != act.RESIDENT
