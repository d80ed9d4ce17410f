"""The build benchmark's arithmetic: packages needed again at another version, and compile/link times read
from the go command's action trace."""

from __future__ import annotations

import json

from benchmarks.build import overlap, trace_times


def test_overlap_counts_other_versions_and_same_versions_against_earlier_binaries():
    rows = overlap(
        [
            ("a", {"k8s.io/api/core/v1": "k8s.io/api@v0.36.3", "x/y": "x@v1"}),
            ("b", {"k8s.io/api/core/v1": "k8s.io/api@v0.37.0", "x/y": "x@v1", "z": "z@v1"}),
            ("c", {"k8s.io/api/core/v1": "k8s.io/api@v0.36.3"}),
        ]
    )
    assert rows == [
        {"binary": "a", "packages": 2, "again_other_version": 0, "same_version": 0},
        {"binary": "b", "packages": 3, "again_other_version": 1, "same_version": 1},
        {"binary": "c", "packages": 1, "again_other_version": 0, "same_version": 1},
    ]


def test_trace_times_split_compile_from_link_and_skip_cache_hits(tmp_path):
    def span(name, tid, begin_us, end_us):
        return [
            {"name": name, "ph": "B", "ts": begin_us, "tid": tid},
            {"name": name, "ph": "E", "ts": end_us, "tid": tid},
        ]

    events = (
        span("Executing action (build a)", 1, 0, 2_000_000)
        + span("Executing action (build b)", 2, 1_000_000, 1_010_000)  # 10 ms: a cache hit
        + [{"name": "Executing action (build a) -> Executing action (link m)", "ph": "s", "ts": 2_000_000}]
        + span("Executing action (link m)", 1, 3_000_000, 7_000_000)
    )
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps(events))
    assert trace_times(trace) == {
        "compile_s": 2.0, "link_s": 4.0, "after_s": 5.0, "compile_actions": 1, "links": 1,
    }  # fmt: skip
