"""The Acts section: each act's claim in words, verdict, expected and observed, evidence and timings,
a failing act first with a link to its reports/<act>/ evidence; a timeline of the run grouped by act."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

from gpu_finops.report import charts
from gpu_finops.report.page import Section, esc, figure, missing, table
from gpu_finops.report.sources import Absent, Act, ActsRun

ORDER = {"failed": 0, "not run": 1, "skipped": 2, "passed": 3}
EVIDENCE_CHARS = 20_000  # a verdict's evidence past this is cut (the JSON file has it whole)


def seconds(value: object) -> str:
    """A duration for people: one decimal under 10 s, whole seconds above; never a negative zero."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    v = round(float(value), 1 if abs(value) < 10 else 0) + 0.0  # + 0.0 turns -0.0 into 0.0
    return f"{v:.1f}" if abs(v) < 10 else f"{v:.0f}"


def clock(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def act_lanes(act: Act, t0: float) -> list[charts.Lane]:
    """Phases first, then nodes and pods; an open lifecycle is drawn to the act's last phase end."""
    until = act.watched_until
    lanes = [charts.Lane(p.label, p.start - t0, None if p.end is None else p.end - t0, charts.PHASE)
             for p in act.phases]  # fmt: skip
    for s in act.lifecycles:
        kind = charts.NODE if s.label.startswith("node ") else charts.POD
        lanes.append(charts.Lane(s.label, s.start - t0, None if s.end is None else s.end - t0, kind,
                                 None if until is None else until - t0))  # fmt: skip
    return lanes


def span(act: Act) -> tuple[float, float | None] | None:
    starts = [s.start for s in (*act.phases, *act.lifecycles)]
    if not starts:
        return None
    ends = [s.end for s in (*act.phases, *act.lifecycles) if s.end is not None]
    return min(starts), max(ends, default=None)


def overview(run: ActsRun) -> str:
    spans = [(a, span(a)) for a in run.acts]
    drawn = [(a, s) for a, s in spans if s is not None]
    if not drawn:
        return missing(Absent("no act recorded a phase or a lifecycle, so there is no timeline to draw"))
    t0 = min(s[0] for _a, s in drawn)
    lanes = [charts.Lane(a.title, s[0] - t0, None if s[1] is None else s[1] - t0, a.outcome, s[0] - t0)
             for a, s in drawn]  # fmt: skip
    title = "The run: each act from its first observation to its last, coloured by outcome"
    svg = charts.timeline("run", title, lanes, f"seconds since the first act began ({clock(t0)})")
    left_out = [a.title for a, s in spans if s is None]
    note = f" Not drawn (nothing timed): {', '.join(left_out)}." if left_out else ""
    return figure(svg, "Each bar spans an act's phases and the nodes and pods it watched." + note, "run")


def _relative(target: str, out_dir: Path) -> str:
    return Path(os.path.relpath(Path(target).resolve(), out_dir.resolve())).as_posix()


# what the acts' seconds are on the local target, under each act's timings
SIMULATED_TIMINGS = (
    "Measured on the local target: kwok creates and readies a node the moment Karpenter launches it, so the "
    "seconds to a node are the simulator's, not an EC2 instance's boot; the control plane's own steps are real."
)


def act_card(act: Act, index: int, out_dir: Path, simulated: bool = False) -> str:
    state = act.outcome.replace(" ", "-")
    parts = [f'<article class="act {state}-act" id="act-{esc(act.name)}">',
             f'<h3>{esc(act.title)} <span class="badge {state}">{esc(act.outcome)}</span></h3>']  # fmt: skip
    v = act.verdict or {}
    claim = v.get("claim") or act.claim
    parts.append(f"<p><strong>Claim:</strong> {esc(claim)}</p>" if claim else "<p>No claim was recorded: the act "
                 "ended before it checked one.</p>")  # fmt: skip
    if v:
        parts.append(
            f"<dl><dt>Verdict</dt><dd>{'holds' if v.get('holds') else 'does not hold'}</dd>"
            f"<dt>Expected</dt><dd>{esc(v.get('expected', ''))}</dd>"
            f"<dt>Observed</dt><dd>{esc(v.get('observed', ''))}</dd></dl>"
        )
    if act.outcome != "passed" and act.message:
        tail = "\n".join(act.message.strip().splitlines()[-25:])
        parts.append(f"<p><strong>{'Why it failed' if act.outcome == 'failed' else 'Why'}:</strong></p>"
                     f"<pre>{esc(tail)}</pre>")  # fmt: skip
    if act.outcome == "failed":
        if act.evidence:
            href = _relative(act.evidence, out_dir)
            parts.append(f'<p><strong>Evidence:</strong> <a href="{esc(href)}/">{esc(href)}/</a> (the cluster\'s '
                         "objects and the controllers' log tails when it failed)</p>")  # fmt: skip
        else:
            parts.append("<p><strong>Evidence:</strong> none was collected (the act failed before its check "
                         "ran, so only the message above says why).</p>")  # fmt: skip
    if act.timings:
        rows = [(k, seconds(val)) for k, val in act.timings.items()]
        parts.append(table(("timing", "seconds"), rows, numeric=(1,)))
        if simulated:
            parts.append(f'<p class="simulated-timings">{esc(SIMULATED_TIMINGS)}</p>')
    lanes = act_lanes(act, min((s.start for s in (*act.phases, *act.lifecycles)), default=0.0))
    if lanes:
        t0 = min(s.start for s in (*act.phases, *act.lifecycles))
        name = f"act{index}"
        title = f"{act.title}: phases, and the nodes and pods it watched"
        svg = charts.timeline(name, title, lanes, f"seconds since the act began ({clock(t0)})")
        parts.append(figure(svg, "Phases are blue, nodes green, pods orange; hatched: the end was not "
                                 "observed, drawn to the act's last phase end.", name))  # fmt: skip
    evidence = v.get("evidence")
    if evidence:
        text = json.dumps(evidence, indent=1, sort_keys=True, default=str)
        cut = f"\n… cut at {EVIDENCE_CHARS} characters" if len(text) > EVIDENCE_CHARS else ""
        parts.append(f"<details><summary>The evidence the verdict was decided from</summary>"
                     f"<pre>{esc(text[:EVIDENCE_CHARS] + cut)}</pre></details>")  # fmt: skip
    parts.append("</article>")
    return "".join(parts)


def section(run: ActsRun | Absent, out_dir: Path) -> Section:
    if isinstance(run, Absent):
        return Section("acts", "Acts", missing(run))
    counts = {k: sum(a.outcome == k for a in run.acts) for k in ORDER}
    summary = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
    ordered = sorted(enumerate(run.acts), key=lambda ia: (ORDER.get(ia[1].outcome, 1), ia[0]))
    body = [f"<p>{len(run.acts)} act(s) on target <code>{esc(run.target)}</code>: {esc(summary)}; finished "
            f"{esc(run.finished)}. {'Failing acts come first.' if counts['failed'] else ''}</p>", overview(run)]  # fmt: skip
    body += [act_card(a, i, out_dir, simulated=run.target == "local") for i, a in ordered]
    return Section("acts", "Acts", "".join(body))
