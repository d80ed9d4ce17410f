"""The act report: what each act records while it runs (`ActReport`: its claim, verdict, phases and the
node and pod lifecycles it saw), kept per pytest session; then a rich table on the terminal, JSON with every
claim, verdict, evidence and timings, and a PNG timeline of the run (act phases, node and pod lifecycles)."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.table import Table

from assertions.observed import Interval
from assertions.verdict import Verdict

REPORT_DIR = Path(os.environ.get("GPU_FINOPS_REPORT_DIR", "reports"))


@dataclass
class ActReport:
    act: str
    claim: str = ""
    verdict: dict[str, Any] | None = None
    timings: dict[str, float | None] = field(default_factory=dict)
    phases: list[tuple[str, float, float]] = field(default_factory=list)  # (name, start, end) epoch seconds
    lifecycles: list[tuple[str, float, float | None]] = field(default_factory=list)  # nodes/pods
    outcome: str = "not run"
    message: str = ""
    evidence: str | None = None  # the folder a failing act's evidence was written to

    def phase(self, name: str) -> Phase:
        return Phase(self, name)

    def record(self, verdict: Verdict) -> Verdict:
        self.claim = verdict.claim
        self.verdict = verdict.to_dict()
        self.timings.update(
            verdict.evidence.get("timings", {}) if isinstance(verdict.evidence.get("timings"), dict) else {}
        )
        return verdict

    def node_seen(self, name: str, created: datetime) -> None:
        """A node on the timeline from its creation; its end is not observed."""
        self.lifecycles.append((f"node {name}", created.timestamp(), None))

    def pod_ran(self, label: str, running: Interval | None) -> None:
        """A pod's Running interval on the timeline (open when its end was not seen); nothing if it never ran."""
        if running:
            self.lifecycles.append(
                (label, running.start.timestamp(), running.end.timestamp() if running.end else None)
            )


class Phase:
    """`with report.phase(name):` times one step of an act for the timeline."""

    def __init__(self, report: ActReport, name: str):
        self.report, self.name = report, name

    def __enter__(self) -> None:
        self.start = time.time()

    def __exit__(self, *exc: object) -> None:
        self.report.phases.append((self.name, self.start, time.time()))


# The session's reports, in the order the acts ran (the `report` fixture and the hooks share them).
REPORTS = pytest.StashKey[list[ActReport]]()


def session_reports(config: pytest.Config) -> list[ActReport]:
    return config.stash.setdefault(REPORTS, [])


def report_for(config: pytest.Config, act: str) -> ActReport:
    """The act's report in this session, made when the act has none yet (a setup failure or a skip)."""
    reports = session_reports(config)
    found = next((r for r in reports if r.act == act), None)
    if found is None:
        found = ActReport(act=act)
        reports.append(found)
    return found


def record_outcome(r: ActReport, rep: pytest.TestReport) -> bool:
    """Record one phase's pytest outcome into the act's report; True when the act itself failed (its call),
    so the caller collects the cluster's evidence."""
    if rep.when == "setup" and rep.failed:  # a fixture error, or a skip --require-all-acts turned into one
        r.outcome, r.message = "failed", str(rep.longrepr)[-4000:]
    elif rep.when == "setup" and rep.skipped:
        r.outcome, r.message = "skipped", _skip_reason(rep)
    elif rep.when == "call":
        r.outcome = rep.outcome
        if rep.skipped:
            r.message = _skip_reason(rep)
        elif rep.failed:
            r.message = str(rep.longrepr)[-4000:]
            return True
    return False


def _skip_reason(rep: pytest.TestReport) -> str:
    return str(rep.longrepr[-1]) if isinstance(rep.longrepr, tuple) else str(rep.longrepr)


def write_reports(reports: list[ActReport], folder: Path, target: str, finished: datetime) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    data = {
        "target": target,
        "finished": finished.isoformat(),
        "acts": [
            {
                "act": r.act,
                "outcome": r.outcome,
                "claim": r.claim,
                "verdict": r.verdict,
                "timings": r.timings,
                "message": r.message,
                "evidence": r.evidence,
                "phases": r.phases,
                "lifecycles": r.lifecycles,
            }
            for r in reports
        ],
    }
    (folder / "acts.json").write_text(json.dumps(data, indent=2, default=str))
    console = Console(width=TABLE_WIDTH)
    console.print()  # pytest's last progress line has no newline yet at session finish: the title starts its own
    console.print(terminal_table(reports, target))
    timeline(reports, folder / "acts-timeline.png")


TABLE_WIDTH = 120  # what CI logs show: the table wraps its cells to fit, never wider


def seconds(value: float) -> str:
    """Whole seconds, never a negative zero (a -0.3 s clock skew prints 0, not -0)."""
    return f"{round(value) + 0:d}"


def terminal_table(reports: list[ActReport], target: str) -> Table:
    table = Table(title=f"gpu-finops acts on {target}", expand=False)
    table.add_column("act", overflow="fold", max_width=34)
    table.add_column("outcome")
    table.add_column("claim / reason", overflow="fold", ratio=1)
    table.add_column("timings (s)", overflow="fold", max_width=30)
    for r in reports:
        timings = ", ".join(f"{k}={seconds(v)}" for k, v in r.timings.items() if isinstance(v, int | float))
        text = r.claim if r.outcome == "passed" else (r.message.splitlines()[-1] if r.message else r.claim)
        table.add_row(r.act.removeprefix("test_"), r.outcome, text[:160], timings)
    return table


@dataclass(frozen=True)
class Bar:
    act: str
    label: str
    start: float  # seconds since the first act began
    length: float
    kind: str  # phase | object
    end_observed: bool


def timeline_bars(reports: list[ActReport]) -> list[Bar]:
    """The timeline's bars. A lifecycle whose end was never observed stops at its act's last phase end
    (the last moment the act was watching) and says so, rather than running on to the end of the run."""
    rows = [(r, name, s, e, "phase") for r in reports for name, s, e in r.phases]
    rows += [(r, name, s, e, "object") for r in reports for name, s, e in r.lifecycles]
    if not rows:
        return []
    t0 = min(s for _r, _n, s, _e, _k in rows)
    bars = []
    for r, name, s, e, kind in rows:
        watched_until = max((pe for _pn, _ps, pe in r.phases), default=s)
        end = e if e is not None else max(watched_until, s)
        label = name if e is not None else f"{name} (end not observed; watched until here)"
        bars.append(Bar(r.act.removeprefix("test_"), label, s - t0, end - s, kind, e is not None))
    return bars


def timeline(reports: list[ActReport], path: Path) -> Path | None:
    """One lane per phase, node and pod, grouped by act (a heading lane names each act); the labels are the
    y axis's, so none runs past the plot, and the figure is cropped to what it draws, title included."""
    bars = timeline_bars(reports)
    if not bars:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows: list[tuple[str, Bar | None]] = []
    for act in dict.fromkeys(b.act for b in bars):
        rows.append((act, None))
        rows += [(f"  {b.label.split(' (')[0]}", b) for b in bars if b.act == act]
    fig, ax = plt.subplots(figsize=(12, 0.3 * len(rows) + 1.6), layout="constrained")
    for i, (_label, b) in enumerate(rows):
        if b is None:
            ax.axhline(i, color="#cbd5e0", linewidth=0.8)
            continue
        color = "tab:blue" if b.kind == "phase" else "tab:orange"
        ax.barh(i, b.length, left=b.start, height=0.6, color=color if b.end_observed else "white",
                edgecolor=color, hatch=None if b.end_observed else "//")  # fmt: skip
    ax.set_yticks(range(len(rows)), [label[:60] for label, _b in rows], fontsize=8)
    for tick, (_label, b) in zip(ax.get_yticklabels(), rows, strict=True):
        if b is None:
            tick.set_fontweight("bold")
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlabel("seconds since the first act began")
    ax.set_title("Act phases (blue) and node/pod lifecycles (orange; hatched: end not observed), by act",
                 loc="left")  # fmt: skip
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return path
