"""The act report: a rich table on the terminal, JSON with every claim, verdict, evidence and timings,
and a PNG timeline of the run (act phases, node and pod lifecycles)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table


def write_reports(reports: list[Any], folder: Path, target: str, finished: datetime) -> None:
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
                "evidence": getattr(r, "evidence", None),
                "phases": r.phases,
                "lifecycles": r.lifecycles,
            }
            for r in reports
        ],
    }
    (folder / "acts.json").write_text(json.dumps(data, indent=2, default=str))
    table = Table(title=f"gpu-finops acts on {target}")
    for col in ("act", "outcome", "claim / reason", "timings (s)"):
        table.add_column(col)
    for r in reports:
        timings = ", ".join(f"{k}={v:.0f}" for k, v in r.timings.items() if isinstance(v, int | float))
        text = r.claim if r.outcome == "passed" else (r.message.splitlines()[-1] if r.message else r.claim)
        table.add_row(r.act, r.outcome, text[:160], timings)
    Console(width=200).print(table)
    timeline(reports, folder / "acts-timeline.png")


@dataclass(frozen=True)
class Bar:
    act: str
    label: str
    start: float  # seconds since the first act began
    length: float
    kind: str  # phase | object
    end_observed: bool


def timeline_bars(reports: list[Any]) -> list[Bar]:
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


def timeline(reports: list[Any], path: Path) -> Path | None:
    bars = timeline_bars(reports)
    if not bars:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(12, 0.4 * len(bars) + 1.5))
    for i, b in enumerate(bars):
        ax.barh(
            i,
            b.length,
            left=b.start,
            color="tab:blue" if b.kind == "phase" else "tab:orange",
            alpha=1.0 if b.end_observed else 0.35,
            hatch=None if b.end_observed else "//",
        )
        ax.text(b.start, i, f" {b.act}: {b.label}", va="center", fontsize=7)
    ax.set_yticks([])
    ax.set_xlabel("seconds since the first act began")
    ax.set_title("act phases (blue) and node/pod lifecycles (orange; hatched: end not observed)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
