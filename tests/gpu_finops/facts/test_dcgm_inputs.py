"""The exporter spelling: presets, files, and GPU_UTIL's unit read from the data, never guessed."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from gpu_finops.facts import dcgm
from gpu_finops.facts.dcgm_inputs import (
    AUTO,
    PERCENT,
    PINNED,
    PRESETS,
    RATIO,
    RENAMES,
    SRC_GO_DCGM,
    ZERO,
    Spelling,
    SpellingError,
    load_spelling,
    spelling_argument,
    util_unit,
)

AUTO_SPELLING = PINNED
RATIO_SPELLING = PRESETS["dcgm-exporter-4.9"]


def samples(*values: float) -> list[tuple[str, float]]:
    return [(f'{dcgm.GPU_UTIL}{{UUID="G{i}"}}', v) for i, v in enumerate(values)]


@pytest.mark.parametrize(
    ("spelling", "values", "unit"),
    [
        (AUTO_SPELLING, (100.0, 3.0), PERCENT),  # a value over 1 can only be a percentage
        (AUTO_SPELLING, (1.5, 0.2), PERCENT),  # the near miss of ambiguity: 1.5 is over 1
        (AUTO_SPELLING, (0.0, 0.0), ZERO),  # all zero: the same figure in either unit
        (AUTO_SPELLING, (), ZERO),
        (RATIO_SPELLING, (1.0, 0.3), RATIO),  # declared, and the data agrees
        (RATIO_SPELLING, (), RATIO),
    ],
)
def test_the_unit_is_read_from_the_data(spelling, values, unit):
    assert util_unit(spelling, samples(*values)) == unit


@pytest.mark.parametrize(
    ("spelling", "values", "error"),
    [
        (
            AUTO_SPELLING,
            (0.4, 1.0),
            r"cannot tell DCGM_FI_DEV_GPU_UTIL's unit from the data: every value is "
            r"within 0..1 \(largest DCGM_FI_DEV_GPU_UTIL\{UUID=\"G1\"\} = 1\).*gpu_util_unit: ratio",
        ),
        (
            RATIO_SPELLING,
            (100.0,),
            r"DCGM_FI_DEV_GPU_UTIL_RATIO is declared a 0-1 ratio \(spelling "
            r"dcgm-exporter-4.9\) but .*G0\"\} = 100: the data is in percent",
        ),
        (AUTO_SPELLING, (100.0, 250.0), r"not a utilization: DCGM_FI_DEV_GPU_UTIL\{UUID=\"G1\"\} = 250"),
        (AUTO_SPELLING, (-1.0, 50.0), r"not a utilization: DCGM_FI_DEV_GPU_UTIL\{UUID=\"G0\"\} = -1"),
    ],
)
def test_data_that_cannot_tell_or_contradicts_is_an_error_naming_the_series(spelling, values, error):
    with pytest.raises(SpellingError, match=error):
        util_unit(spelling, samples(*values))


def test_a_spelling_file_starts_from_a_preset_and_is_checked(tmp_path):
    good = tmp_path / "fleet.yaml"
    good.write_text("preset: dcgm-exporter-4.10\nsm_clock: CLK_HZ\nsm_clock_per_mhz: 1000000\n"
                    "hostname_labels: [k8s_node_name]\n")  # fmt: skip
    s = load_spelling(str(good))
    assert (s.sm_active, s.sm_clock, s.sm_clock_per_mhz, s.hostname_labels) == (
        "DCGM_FI_PROF_SM_UTIL_RATIO", "CLK_HZ", 1_000_000, ("k8s_node_name",))  # fmt: skip
    assert (
        s.gpu_util_unit == RATIO
        and s.canonical("CLK_HZ") == dcgm.SM_CLOCK
        and s.spelled(dcgm.SM_CLOCK) == "CLK_HZ"
    )
    for body, error in (
        ("sm_clok: X\n", r"unknown keys \['sm_clok'\]"),
        ("preset: dcgm-exporter-9\n", r"preset 'dcgm-exporter-9' is not one of"),
        ("gpu_util_unit: fraction\n", r"gpu_util_unit must be one of \('auto', 'percent', 'ratio'\)"),
        ("fb_per_mib: 0\n", r"fb_per_mib must be a positive number, got 0"),
        ("- a list\n", r"expected a mapping of Spelling fields"),
    ):
        bad = tmp_path / "bad.yaml"
        bad.write_text(body)
        with pytest.raises(SpellingError, match=error):
            load_spelling(str(bad))


def test_presets_by_name_and_a_bad_name_is_a_usage_error():
    assert load_spelling(None) is PINNED and load_spelling("dcgm-exporter-4.8") is PINNED
    assert PINNED.gpu_util_unit == AUTO and PINNED.hostname_labels == dcgm.HOSTNAME_LABELS
    assert PRESETS["dcgm-exporter-pre-4.8.3"].hostname_label == dcgm.OLD_HOSTNAME_LABEL
    assert PRESETS["dcgm-exporter-4.10"].pcie_tx == "DCGM_FI_PROF_PCIE_TX_BYTES_PER_SECOND"
    assert PRESETS["dcgm-exporter-4.9"].pcie_tx == dcgm.PCIE_TX_BYTES  # renamed in 4.10, not 4.9
    with pytest.raises(argparse.ArgumentTypeError, match=r"exporter spelling 'dcgm-4': neither a preset"):
        spelling_argument("dcgm-4")


# Every preset field that differs from the pinned exporter's, as (field, value): exactly the confirmed
# renames of its release and the ones before it, each with the scale its new unit needs.
EXPECTED_RENAMES = {
    "dcgm-exporter-4.8": {},
    "dcgm-exporter-pre-4.8.3": {},
    "dcgm-exporter-4.9": {
        "gpu_util": "DCGM_FI_DEV_GPU_UTIL_RATIO",
        "sm_active": "DCGM_FI_PROF_SM_UTIL_RATIO",
        "sm_occupancy": "DCGM_FI_PROF_SM_OCCUPANCY_RATIO",
        "power": "DCGM_FI_DEV_BOARD_POWER_WATTS",
        "sm_clock": "DCGM_FI_DEV_SM_CLOCK_HERTZ",
        "sm_clock_per_mhz": 1_000_000.0,
        "gpu_util_unit": RATIO,
    },
}
EXPECTED_RENAMES["dcgm-exporter-4.10"] = {
    **EXPECTED_RENAMES["dcgm-exporter-4.9"],
    "pcie_tx": "DCGM_FI_PROF_PCIE_TX_BYTES_PER_SECOND",
    "pcie_rx": "DCGM_FI_PROF_PCIE_RX_BYTES_PER_SECOND",
    "nvlink_tx": "DCGM_FI_PROF_NVLINK_TX_BYTES_PER_SECOND",
    "nvlink_rx": "DCGM_FI_PROF_NVLINK_RX_BYTES_PER_SECOND",
}
IGNORED = {"name", "source", "hostname_labels"}


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_each_preset_renames_exactly_the_confirmed_fields_of_its_release(preset):
    spelling = PRESETS[preset]
    differs = {
        f.name: getattr(spelling, f.name)
        for f in dataclasses.fields(Spelling)
        if f.name not in IGNORED and getattr(spelling, f.name) != getattr(PINNED, f.name)
    }
    assert differs == EXPECTED_RENAMES[preset]


def test_every_rename_cites_upstream_and_only_confirmed_ones_reach_a_preset():
    assert PINNED.source and all(s.source for s in PRESETS.values())
    for r in RENAMES:
        assert f"{r.release}.0 release notes" in r.source, r
        assert getattr(PINNED, r.field) == r.old, r  # renamed from the pinned exporter's name
        if r.confirmed:
            assert r.new and (
                r.release == "4.10"
                or (SRC_GO_DCGM in r.source and f"use {r.new}" in r.source.replace("Use ", "use "))
            ), r
        else:
            assert r.new is None, r  # reported, name unknown: never guessed
            for preset in PRESETS.values():
                assert getattr(preset, r.field) == r.old, (preset.name, r)
    unconfirmed = sorted(r.field for r in RENAMES if not r.confirmed)
    assert unconfirmed == ["fb_free", "fb_used"]


def test_a_reported_rename_is_spelled_by_the_fleet_in_a_file(tmp_path):
    """4.9's framebuffer fields move to bytes under names no upstream text here gives: a fleet names them."""
    f = tmp_path / "fleet.yaml"
    f.write_text(
        "preset: dcgm-exporter-4.9\nfb_used: MY_FB_USED_BYTES\nfb_free: MY_FB_FREE_BYTES\nfb_per_mib: 1048576\n"
    )
    s = load_spelling(str(f))
    assert (s.fb_used, s.fb_free, s.fb_per_mib, s.sm_clock) == (
        "MY_FB_USED_BYTES",
        "MY_FB_FREE_BYTES",
        1048576,
        "DCGM_FI_DEV_SM_CLOCK_HERTZ",
    )
    assert s.canonical("MY_FB_USED_BYTES") == dcgm.FB_USED
