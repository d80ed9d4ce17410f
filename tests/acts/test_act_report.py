"""What an act records while it runs: lifecycles for the timeline, and pytest's outcome per phase."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from acts.report import ActReport, record_outcome, report_for, session_reports
from assertions.observed import Interval

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
T1 = datetime(2026, 11, 30, 12, 1, tzinfo=UTC)


def test_a_pod_that_ran_is_drawn_with_its_end_or_open_and_one_that_never_ran_is_not():
    r = ActReport("test_x")
    r.pod_ran("pod done", Interval(T0, T1))
    r.pod_ran("pod running", Interval(T0, None))
    r.pod_ran("pod never ran", None)
    r.node_seen("n1", T0)
    assert r.lifecycles == [
        ("pod done", T0.timestamp(), T1.timestamp()),
        ("pod running", T0.timestamp(), None),
        ("node n1", T0.timestamp(), None),
    ]


def rep(when: str, outcome: str, longrepr: object = None) -> pytest.TestReport:
    return pytest.TestReport(
        "acts/test_x.py::test_x", ("acts/test_x.py", 1, "test_x"), {}, outcome, longrepr, when
    )


@pytest.mark.parametrize(
    ("reports", "outcome", "message", "collect_evidence"),
    [
        ([rep("setup", "passed"), rep("call", "passed"), rep("teardown", "passed")], "passed", "", False),
        ([rep("setup", "passed"), rep("call", "failed", "AssertionError: two admitted")], "failed",
         "AssertionError: two admitted", True),
        ([rep("setup", "failed", "fixture 'kube' broke")], "failed", "fixture 'kube' broke", False),
        ([rep("setup", "skipped", ("f.py", 1, "Skipped: no cluster"))], "skipped", "Skipped: no cluster", False),
        ([rep("setup", "passed"), rep("call", "skipped", ("f.py", 1, "Skipped: AWS only"))], "skipped",
         "Skipped: AWS only", False),
        ([rep("setup", "passed"), rep("call", "passed"), rep("teardown", "failed", "cleanup broke")], "passed",
         "", False),
    ],
    ids=["passed", "call failed", "setup failed", "setup skipped", "call skipped", "teardown failure kept out"],
)  # fmt: skip
def test_each_phase_outcome_is_recorded_and_only_a_failed_call_asks_for_evidence(
    reports, outcome, message, collect_evidence
):
    r = ActReport("test_x")
    asked = [record_outcome(r, x) for x in reports]
    assert (r.outcome, r.message) == (outcome, message)
    assert any(asked) is collect_evidence


def test_the_session_keeps_one_report_per_act_in_run_order(pytestconfig):
    before = list(session_reports(pytestconfig))
    a = report_for(pytestconfig, "test_report_a")
    assert report_for(pytestconfig, "test_report_a") is a
    b = report_for(pytestconfig, "test_report_b")
    assert session_reports(pytestconfig)[len(before) :] == [a, b]
    del session_reports(pytestconfig)[len(before) :]  # leave the session's list as it was


def test_the_acts_json_written_is_what_the_report_reads(tmp_path):
    from acts.report import write_reports
    from assertions.verdict import ClauseFailure, Verdict
    from gpu_finops.facts.file_schema import validate
    from gpu_finops.report.schemas import ActsReportFile

    passed, failed, skipped = ActReport("test_a"), ActReport("test_b"), ActReport("test_c", outcome="skipped")
    passed.record(Verdict("a holds", True, "x", "x", {"timings": {"cold_start_s": 41.2, "skew_s": None}}))
    passed.outcome = "passed"
    with passed.phase("submit"):
        pass
    passed.pod_ran("pod a", Interval(T0, None))
    failed.record(Verdict("b holds", False, "y", "z", {"nodes": {"n"}}, (ClauseFailure("c", "y", "z"),)))
    failed.outcome, failed.message, failed.evidence = "failed", "AssertionError: z", str(tmp_path / "ev")
    write_reports([passed, failed, skipped], tmp_path, "local", T1)
    data = json.loads((tmp_path / "acts.json").read_text())
    run = validate(ActsReportFile, data, "acts.json", "acts report")
    assert [a.outcome for a in run.acts] == ["passed", "failed", "skipped"]
    assert run.acts[1].verdict.failed_clauses[0].clause == "c"
