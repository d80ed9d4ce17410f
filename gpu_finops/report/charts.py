"""The report's charts: matplotlib, written as SVG and inlined in the page.

Why matplotlib and not Vega-Lite (altair + vl-convert-python): matplotlib is already a runtime dependency
(the PNGs of `cost report`, `ledger --png` and the act timeline), so the report adds no package and no
embedded JavaScript engine to the lock; its SVG is plain paths and text, deterministic with a fixed hash
salt and no date, and needs nothing at view time. Text is written as SVG <text> (svg.fonttype none), so
the browser lays it out, a reader can select it, and the browser tests can measure it.

Each chart is one axes. Every mark a reader compares with the data (a bar, an interval's segment) carries
an id `<chart>--mark-<n>`, and every other id of the figure is prefixed with `<chart>--` too, so several
figures inline in one page never share a clip path. The ticks stay matplotlib's (`<chart>--xtick_<n>`):
a test reads a mark's data position back from them, through the pixels the browser drew.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from dataclasses import dataclass

PHASE, POD, NODE = "phase", "pod", "node"
COLORS = {PHASE: "#2b6cb0", POD: "#c05621", NODE: "#2f855a", "passed": "#2f855a", "failed": "#c53030",
          "skipped": "#718096", "not run": "#a0aec0"}  # fmt: skip
BUSY, IDLE, UNMEASURED = "#2f855a", "#c53030", "#a0aec0"
WIDTH_IN = 9.0  # 648 pt: at an 800 px window the page shows it at about 1.1 px per pt
LABEL_CHARS = 44  # a lane label past this is cut with an ellipsis (the table beside it has it whole)


@dataclass(frozen=True)
class Lane:
    """One row of a timeline: [start, end) in seconds on the chart's axis; end None: not observed, drawn
    to `until` (the last moment it was watched) and hatched."""

    label: str
    start: float
    end: float | None
    kind: str  # PHASE | POD | NODE, or an act's outcome on the run's overview
    until: float | None = None


@dataclass(frozen=True)
class Segment:
    """One stacked part of a horizontal bar chart: its name (the legend's), colour and a value per row."""

    name: str
    color: str
    values: Sequence[float]


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "svg.fonttype": "none",
            "svg.hashsalt": "gpu-finops-report",
            "font.family": "sans-serif",
            "font.size": 9,
            "axes.unicode_minus": False,  # a plain '-' in tick labels (the tests parse them)
            "axes.spines.top": False,
            "axes.spines.right": False,
        }
    )
    return plt


def short(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"


def to_svg(fig, name: str, title: str) -> str:
    """The figure as an inline <svg>: scaled to its container's width, every id prefixed with `name`,
    with a <title> for screen readers (the caption below the figure says the same for everyone)."""
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", pad_inches=0.1, metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)  # RDF boilerplate, nothing to show
    text = re.sub(r'\bid="([^"]+)"', rf'id="{name}--\1"', text)
    text = re.sub(r"url\(#([^)]+)\)", rf"url(#{name}--\1)", text)
    text = re.sub(r'xlink:href="#([^"]+)"', rf'xlink:href="#{name}--\1"', text)
    head, rest = text.split(">", 1)
    head = re.sub(r'\s(width|height)="[^"]*"', "", head)
    esc = title.replace("&", "&amp;").replace("<", "&lt;")
    return (
        f'{head} role="img" aria-labelledby="{name}--title" class="chart">'
        f'<title id="{name}--title">{esc}</title>{rest}'
    )


def timeline(name: str, title: str, lanes: Sequence[Lane], xlabel: str) -> str:
    """One lane per row, top to bottom in the order given; hatched where the end was not observed."""
    plt = _pyplot()
    fig, ax = plt.subplots(layout="constrained", figsize=(WIDTH_IN, 0.3 * len(lanes) + 1.3))
    for i, lane in enumerate(lanes):
        end = lane.end if lane.end is not None else max(lane.until or lane.start, lane.start)
        color = COLORS.get(lane.kind, "#4a5568")
        observed = lane.end is not None
        (bar,) = ax.barh(
            i, end - lane.start, left=lane.start, height=0.6, color=color if observed else "white",
            edgecolor=color, hatch=None if observed else "///", linewidth=1,
        )  # fmt: skip
        bar.set_gid(f"mark-{i}")
    ax.set_yticks(range(len(lanes)), [short(lane.label) for lane in lanes])
    ax.set_ylim(len(lanes) - 0.4, -0.6)
    ax.set_xlabel(xlabel)
    ax.set_title(title, loc="left", fontsize=10)
    ax.grid(axis="x", color="#e2e8f0")
    ax.set_axisbelow(True)
    kinds = list(dict.fromkeys(lane.kind for lane in lanes))
    handles = [plt.Rectangle((0, 0), 1, 1, color=COLORS.get(k, "#4a5568")) for k in kinds]
    labels = list(kinds)
    if any(lane.end is None for lane in lanes):
        handles.append(plt.Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="#4a5568", hatch="///"))
        labels.append("end not observed (drawn to where it was last watched)")
    fig.legend(handles, labels, loc="outside lower left", ncol=min(len(labels), 3), frameon=False, fontsize=8)
    return to_svg(fig, name, title)


def stacked_bars(name: str, title: str, rows: Sequence[str], segments: Sequence[Segment], xlabel: str,
                 notes: Sequence[str] = ()) -> str:  # fmt: skip
    """Horizontal bars, one per row, its segments stacked left to right; `notes` are written past each
    bar's end (say, the idle share). Mark n is row n // len(segments), segment n % len(segments)."""
    plt = _pyplot()
    fig, ax = plt.subplots(layout="constrained", figsize=(WIDTH_IN, 0.42 * len(rows) + 1.4))
    left = [0.0] * len(rows)
    n = 0
    for i in range(len(rows)):
        for seg in segments:
            (bar,) = ax.barh(i, seg.values[i], left=left[i], height=0.6, color=seg.color)
            bar.set_gid(f"mark-{n}")
            n += 1
            left[i] += seg.values[i]
    for i, note in enumerate(notes):
        ax.annotate(f" {note}", (left[i], i), va="center", fontsize=8)
    ax.set_yticks(range(len(rows)), [short(r) for r in rows])
    ax.set_ylim(len(rows) - 0.4, -0.6)
    ax.set_xlim(0, max(left, default=0) * 1.3 or 1)
    ax.set_xlabel(xlabel)
    ax.set_title(title, loc="left", fontsize=10)
    ax.grid(axis="x", color="#e2e8f0")
    ax.set_axisbelow(True)
    if len(segments) > 1:
        handles = [plt.Rectangle((0, 0), 1, 1, color=s.color) for s in segments]
        fig.legend(
            handles, [s.name for s in segments], loc="outside lower left", ncol=3, frameon=False, fontsize=8
        )
    return to_svg(fig, name, title)


@dataclass(frozen=True)
class Step:
    """One record's value held over its interval [start, end), seconds on the chart's axis."""

    start: float
    end: float
    value: float


def intervals(name: str, title: str, series: Sequence[tuple[str, str, str, Sequence[Step]]], xlabel: str,
              ylabel: str, ylim: tuple[float, float] | None = None) -> str:  # fmt: skip
    """Each record drawn as a flat segment over its own interval (a mean over the interval is no point in
    time), so a gap between records shows as a gap. series: (label, colour, linestyle, steps); mark n
    counts the steps of every series in order."""
    plt = _pyplot()
    fig, ax = plt.subplots(layout="constrained", figsize=(WIDTH_IN, 3.2))
    n = 0
    for label, color, style, steps in series:
        for j, s in enumerate(steps):
            (line,) = ax.plot([s.start, s.end], [s.value, s.value], color=color, linestyle=style,
                              linewidth=2, label=label if j == 0 else None)  # fmt: skip
            line.set_gid(f"mark-{n}")
            n += 1
    if ylim:
        ax.set_ylim(*ylim)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, loc="left", fontsize=10)
    ax.grid(color="#e2e8f0")
    ax.set_axisbelow(True)
    fig.legend(loc="outside lower left", ncol=2, frameon=False, fontsize=8)
    return to_svg(fig, name, title)
