"""Verdict's text and JSON form exactly, and compose()'s verdict exactly: what a report shows is what a
reader judges the claim by, so each line and key is asserted whole (mutation testing found the partial
checks in test_verdict.py let reworded or dropped lines through)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from assertions.clauses import Miss, before, compose, parse_iso, seconds, stamp, whole_seconds
from assertions.verdict import ClaimFailed, ClauseFailure, Verdict, fails, holds, require

FAILED = Verdict(
    "two of twelve admitted",
    False,
    "exactly 2 admitted",
    "exactly_n_admitted: 3 admitted",
    {"admitted": ["a", "b", "c"], "n": 2},
    (ClauseFailure("exactly_n_admitted", "exactly 2", "3 admitted"), ClauseFailure("other", "x", "y")),
)


def test_a_failed_verdict_renders_every_line_exactly():
    assert FAILED.render() == "\n".join(
        [
            "claim:    two of twelve admitted",
            "verdict:  DOES NOT HOLD",
            "expected: exactly 2 admitted",
            "observed: exactly_n_admitted: 3 admitted",
            "failed clauses:",
            "  exactly_n_admitted: expected exactly 2; observed 3 admitted",
            "  other: expected x; observed y",
            "evidence:",
            '  admitted: [\n      "a",\n      "b",\n      "c"\n    ]',
            "  n: 2",
        ]
    )


def test_a_holding_verdict_renders_without_failures_or_evidence():
    assert holds("c", "e", "o").render() == "claim:    c\nverdict:  HOLDS\nexpected: e\nobserved: o"


def test_evidence_keys_are_rendered_sorted_inside_a_value():
    v = holds("c", "e", "o", seen={"b": 1, "a": datetime(2026, 1, 1, tzinfo=UTC)})
    assert v.render().splitlines()[4:] == [
        "evidence:",
        "  seen: {",
        '      "a": "2026-01-01 00:00:00+00:00",',
        '      "b": 1',
        "    }",
    ]


def test_to_dict_is_every_field_exactly():
    assert FAILED.to_dict() == {
        "claim": "two of twelve admitted",
        "holds": False,
        "expected": "exactly 2 admitted",
        "observed": "exactly_n_admitted: 3 admitted",
        "evidence": {"admitted": ["a", "b", "c"], "n": 2},
        "failed_clauses": [
            {"clause": "exactly_n_admitted", "expected": "exactly 2", "observed": "3 admitted"},
            {"clause": "other", "expected": "x", "observed": "y"},
        ],
    }
    assert holds("c", "e", "o", at=datetime(2026, 1, 1)).to_dict()["evidence"] == {
        "at": "2026-01-01 00:00:00"
    }


def test_holds_and_fails_build_the_verdict_they_say():
    assert holds("c", "e", "o", k=1) == Verdict("c", True, "e", "o", {"k": 1}, ())
    assert fails("c", "e", "o", k=1) == Verdict("c", False, "e", "o", {"k": 1}, ())


def test_failed_clauses_are_each_named_once_in_order():
    v = Verdict("c", False, "e", "o", {}, tuple(ClauseFailure(n, "e", "o") for n in ("b", "a", "b")))
    assert v.failed_clauses == ("b", "a")


def test_claim_failed_carries_the_verdict_and_its_whole_text():
    with pytest.raises(ClaimFailed) as info:
        require(FAILED)
    assert info.value.verdict is FAILED
    assert str(info.value) == "\n" + FAILED.render()


def test_require_names_the_type_it_was_given():
    with pytest.raises(TypeError, match=r"^require\(\) takes a Verdict, got bool$"):
        require(True)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^use verdict.holds, not the Verdict itself, as a boolean$"):
        bool(FAILED)


def needs_two(n: int) -> list[Miss]:
    return [] if n == 2 else [Miss("exactly 2", f"{n}")]


def never_three(n: int) -> list[Miss]:
    return [Miss("not 3", "3"), Miss("not 3, again", "3 again")] if n == 3 else []


def test_compose_names_each_failure_in_the_claims_order():
    v = compose("two", "exactly two", (needs_two, never_three), 3, lambda: "unused", n=3)
    assert v == Verdict(
        "two",
        False,
        "exactly two",
        "needs_two: 3; never_three: 3; never_three: 3 again",
        {"n": 3},
        (
            ClauseFailure("needs_two", "exactly 2", "3"),
            ClauseFailure("never_three", "not 3", "3"),
            ClauseFailure("never_three", "not 3, again", "3 again"),
        ),
    )


def test_compose_holds_with_what_was_observed_when_every_clause_holds():
    assert compose("two", "exactly two", (needs_two, never_three), 2, lambda: "2 seen", n=2) == Verdict(
        "two", True, "exactly two", "2 seen", {"n": 2}, ()
    )


T = datetime(2026, 11, 30, 12, 0, 0, 900_000, tzinfo=UTC)


def test_time_helpers_at_their_edges():
    assert whole_seconds(T) == datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    assert not before(T, T.replace(microsecond=100))  # the same whole second
    assert before(T, T.replace(second=1, microsecond=0))
    assert not before(T.replace(second=1), T)
    assert seconds(T, T.replace(second=5, microsecond=0)) == pytest.approx(4.1)
    assert seconds(None, T) is None and seconds(T, None) is None
    assert stamp(None) == "never" and stamp(T) == "2026-11-30T12:00:00.900000+00:00"


@pytest.mark.parametrize(
    "text",
    ["2026-11-30T12:00:00Z", "2026-11-30T12:00:00+00:00", "2026-11-30T13:00:00+01:00"],
)
def test_parse_iso_reads_z_and_offsets_as_the_same_utc_instant(text):
    got = parse_iso(text)
    assert got == datetime(2026, 11, 30, 12, 0, tzinfo=UTC) and got.tzinfo is UTC
