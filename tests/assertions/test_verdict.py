"""Verdict and require(): a failing claim fails the test with claim, expected, observed and evidence."""

from __future__ import annotations

import pytest

from assertions.verdict import ClaimFailed, Verdict, fails, holds, require


def test_require_passes_a_holding_claim_through():
    v = holds("two of twelve admitted", "2", "2", admitted=["a", "b"])
    assert require(v) is v


def test_require_fails_with_everything_printed():
    v = fails("two of twelve admitted", "exactly 2 admitted", "3 admitted: a, b, c", admitted=["a", "b", "c"])
    with pytest.raises(ClaimFailed) as info:
        require(v)
    text = str(info.value)
    for part in (
        "two of twelve admitted",
        "DOES NOT HOLD",
        "exactly 2 admitted",
        "3 admitted: a, b, c",
        '"c"',
    ):
        assert part in text


def test_verdict_cannot_be_used_as_a_boolean():
    v = Verdict("c", False, "e", "o")
    with pytest.raises(TypeError):
        bool(v)


def test_require_rejects_non_verdicts():
    with pytest.raises(TypeError):
        require(True)  # type: ignore[arg-type]


def test_to_dict_is_json_ready():
    from datetime import datetime

    d = fails("c", "e", "o", when=datetime(2026, 1, 1)).to_dict()
    assert d["holds"] is False and d["evidence"]["when"].startswith("2026-01-01")
