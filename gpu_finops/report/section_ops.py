"""The Ledger section (the month's table with owners, and the allocation ladder) and the Diagnosis
section (each waiting GPU pod with its first cause and evidence)."""

from __future__ import annotations

import json
import math
from typing import Any

from gpu_finops.report import charts
from gpu_finops.report.page import Section, esc, figure, missing, table
from gpu_finops.report.sources import RUNG_LABELS, Absent


def _number(text: object) -> float | None:
    try:
        return None if text is None else float(str(text))
    except ValueError:
        return None


WHOLE_HOURS_FROM = 100  # from this many installed GPU-hours the ledger's apportioned whole hours are shown


def decimals_for(total: float | None) -> int:
    """Enough decimals that the total shows three significant digits: a five-minute local run's 0.163
    GPU-hours must not print as 0."""
    if total is None or total <= 0:
        return 3
    return max(0, 2 - math.floor(math.log10(total)))


def figure_text(value: object, places: int) -> str:
    """A ledger figure (a Decimal string) at `places` decimals, never a negative zero; '?' when absent."""
    number = _number(value)
    if number is None:
        return "?" if value is None else str(value)
    text = f"{number:,.{places}f}"
    return text.lstrip("-") if float(text.replace(",", "")) == 0 else text


def month_part(month: dict[str, Any] | Absent) -> str:
    if isinstance(month, Absent):
        return "<h3>The month</h3>" + missing(month)
    total = _number(month.get("installed_gpu_hours"))
    if total is not None and total >= WHOLE_HOURS_FROM:  # apportioned: the shown lines sum to the shown total
        shown = [f"{month.get('installed_gpu_hours_shown', '?'):,}"]
        shown += [f"{line.get('gpu_hours_shown', '?'):,}" for line in month["lines"]]
    else:  # a short window: the exact hours, rounded each (the last digit may not sum)
        places = decimals_for(total)
        shown = [figure_text(month.get("installed_gpu_hours"), places)]
        shown += [figure_text(line.get("gpu_hours"), places) for line in month["lines"]]
    rows = [("installed GPU-hours", shown[0], "100.0 %", "")]
    rows += [(line.get("label", line.get("line")), hours, f"{line.get('share_percent', '?')} %",
              line.get("owner", "")) for line, hours in zip(month["lines"], shown[1:], strict=True)]  # fmt: skip
    warnings = "".join(f"<li>{esc(w)}</li>" for w in month.get("warnings") or [])
    return (
        f"<h3>The month: {esc(month.get('start', '?'))} to {esc(month.get('end', '?'))}</h3>"
        + table(("line", "GPU-hours", "share", "owner"), rows, numeric=(1, 2))
        + (f"<p>Warnings:</p><ul>{warnings}</ul>" if warnings else "")
    )


def ladder_part(ladder: dict[str, Any] | Absent) -> str:
    if isinstance(ladder, Absent):
        return "<h3>The allocation ladder</h3>" + missing(ladder)
    rungs = [r for r in ladder["rungs"] if _number(r.get("mean_gpus")) is not None]
    installed = next((r for r in ladder["rungs"] if r.get("rung") == "installed"), {})
    places_gpus = decimals_for(_number(installed.get("mean_gpus")))
    places_hours = decimals_for(_number(installed.get("gpu_hours")))
    rows = [(RUNG_LABELS.get(r["rung"], r["rung"]), r.get("now") or "—", figure_text(r.get("mean_gpus"), places_gpus),
             figure_text(r.get("gpu_hours"), places_hours)) for r in ladder["rungs"]]  # fmt: skip
    out = f"<h3>The allocation ladder: {esc(ladder.get('start', '?'))} to {esc(ladder.get('end', '?'))}</h3>"
    out += table(("rung", "GPUs now", "mean GPUs", "GPU-hours"), rows, numeric=(1, 2, 3))
    if rungs:
        svg = charts.stacked_bars(
            "ladder", "Each rung of the ladder: how many of the installed GPUs reach it",
            [RUNG_LABELS.get(r["rung"], r["rung"]).split(" (")[0] for r in rungs],
            [charts.Segment("mean GPUs", "#2b6cb0", [_number(r["mean_gpus"]) or 0.0 for r in rungs])],
            "GPUs, mean over the window", [f"{_number(r['mean_gpus']):,.1f}" for r in rungs],
        )  # fmt: skip
        out += figure(svg, "What falls between two rungs is lost between them.", "ladder")
    largest = ladder.get("largest_placeable")
    out += f"<p>Largest placeable allocation now: {esc(largest if largest is not None else 'unknown')} GPU(s).</p>"
    return out


def ledger_section(month: dict[str, Any] | Absent, ladder: dict[str, Any] | Absent) -> Section:
    return Section("ledger", "Ledger", month_part(month) + ladder_part(ladder))


def diagnosis_card(d: dict[str, Any]) -> str:
    findings = d.get("findings") or []
    first = next((f for f in findings if f.get("check") == d.get("first_cause")), None)
    out = [f"<h3>{esc(d.get('target', '?'))} ({esc(d.get('kind', '?'))})</h3>"]
    if first is None:
        out.append("<p><strong>First cause:</strong> none found by the checks made.</p>")
    else:
        out.append(
            f"<dl><dt>First cause</dt><dd>{esc(first['check'])}</dd><dt>What it saw</dt>"
            f"<dd>{esc(first.get('summary', ''))}</dd><dt>Next action</dt><dd>{esc(first.get('next_action', ''))}"
            f"</dd><dt>Key evidence</dt><dd>{esc(', '.join(first.get('key_evidence') or []) or 'none')}</dd></dl>"
        )
    if d.get("also_explains"):
        out.append(f"<p>Also holding, later in the order: {esc(', '.join(d['also_explains']))}.</p>")
    if d.get("not_checked"):
        out.append(f"<p>Not checked: {esc(', '.join(d['not_checked']))}.</p>")
    marks = {True: "explains", False: "no", None: "not checked"}
    rows = [(f.get("check"), "FIRST CAUSE" if f is first else marks.get(f.get("explains"), "?"), f.get("summary", ""))
            for f in findings]  # fmt: skip
    evidence = json.dumps(first.get("evidence") if first else {}, indent=1, sort_keys=True, default=str)
    out.append(
        "<details><summary>Every check, in the walk's order</summary>"
        + table(("check", "result", "what it saw"), rows)
        + (f"<p>The first cause's evidence:</p><pre>{esc(evidence)}</pre>" if first else "")
        + "</details>"
    )
    return "".join(out)


def diagnosis_section(data: dict[str, Any] | Absent) -> Section:
    if isinstance(data, Absent):
        return Section("diagnosis", "Diagnosis", missing(data))
    diagnoses = data["diagnoses"]
    dcgm = f"; DCGM {data['dcgm']}" if data.get("dcgm") else ""
    lead = (f"<p>{len(diagnoses)} waiting GPU pod(s) or workload(s); checks in the order "
            f"{esc(' → '.join(data.get('order') or []))}{esc(dcgm)}.</p>")  # fmt: skip
    if not diagnoses:
        lead += "<p>No GPU pod was waiting and no workload was unadmitted when the diagnosis ran.</p>"
    return Section("diagnosis", "Diagnosis", lead + "".join(diagnosis_card(d) for d in diagnoses))
