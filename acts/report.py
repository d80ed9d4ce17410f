"""The act report: a rich table on the terminal, JSON with every claim, verdict, evidence and timings,
and a PNG timeline of the run (act phases, node and pod lifecycles)."""

from __future__ import annotations

import json
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


def timeline(reports: list[Any], path: Path) -> Path | None:
    rows = [(r.act, name, s, e, "phase") for r in reports for name, s, e in r.phases]
    rows += [(r.act, name, s, e, "object") for r in reports for name, s, e in r.lifecycles]
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t0 = min(s for *_, s, _e, _k in rows)
    fig, ax = plt.subplots(figsize=(12, 0.4 * len(rows) + 1.5))
    for i, (act, name, s, e, kind) in enumerate(rows):
        end = e if e is not None else max((x[3] or x[2]) for x in rows)
        ax.barh(i, end - s, left=s - t0, color="tab:blue" if kind == "phase" else "tab:orange")
        ax.text(s - t0, i, f" {act.removeprefix('test_')}: {name}", va="center", fontsize=7)
    ax.set_yticks([])
    ax.set_xlabel("seconds since the first act began")
    ax.set_title("act phases (blue) and node/pod lifecycles (orange)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
