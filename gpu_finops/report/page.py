"""The page around the sections: one HTML file with its styles inline, no script, no font and no request
at view time, so it opens from file:// and can be mailed to a colleague."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

from gpu_finops.facts.errors import printable
from gpu_finops.report.sources import Absent

CSS = """
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0;color:#1a202c;
 background:#fff;line-height:1.45;font-size:15px}
header,main,footer{max-width:1080px;margin:0 auto;padding:0 20px}
header{padding-top:20px}
h1{font-size:1.6em;margin:0 0 4px}h2{font-size:1.3em;margin:32px 0 8px;border-bottom:2px solid #e2e8f0}
h3{font-size:1.08em;margin:20px 0 6px}
nav ul{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:6px 16px}
a{color:#2b55a0}
.badge{display:inline-block;padding:0 8px;border-radius:4px;font-weight:600;color:#fff;font-size:.9em}
.passed{background:#276749}.failed{background:#9b2c2c}.skipped,.not-run{background:#4a5568}
.act{border:1px solid #e2e8f0;border-left:6px solid #4a5568;border-radius:6px;padding:4px 16px 12px;margin:14px 0}
.act.failed-act{border-left-color:#9b2c2c}.act.passed-act{border-left-color:#276749}
.missing{border:1px dashed #a0aec0;background:#f7fafc;padding:10px 14px;border-radius:6px}
table{border-collapse:collapse;margin:8px 0;max-width:100%}
th,td{border-bottom:1px solid #e2e8f0;padding:4px 10px;text-align:left;vertical-align:top;
 overflow-wrap:break-word}
.table-wrap{max-width:100%;overflow-x:auto}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}td.num{white-space:nowrap}
@media (max-width:900px){body{font-size:14px}th,td{padding:4px 5px}header,main{padding:0 12px}}
pre,code{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.85em}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f7fafc;padding:8px;border-radius:4px;margin:6px 0}
figure{margin:12px 0;max-width:960px}
figcaption{font-size:.9em;color:#4a5568}
svg.chart{width:100%;height:auto;display:block}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:6px 0}
dt{font-weight:600}dd{margin:0;overflow-wrap:anywhere}
details{margin:6px 0}summary{cursor:pointer}
footer{color:#4a5568;font-size:.85em;padding:24px 20px}
"""


def esc(text: object) -> str:
    """Text for the page: HTML-escaped, and its control and bidirectional formatting characters shown as
    escapes (\\x1b, \\u202e), as the terminal shows them: what a file said is shown as itself."""
    return html.escape(printable(str(text)), quote=True)


@dataclass(frozen=True)
class Section:
    """One <section>: its anchor, heading and body (HTML), or why its data is missing."""

    anchor: str
    heading: str
    body: str


def missing(what: Absent) -> str:
    return f'<p class="missing"><strong>Not shown:</strong> {esc(what.reason)}.</p>'


def table(head: Sequence[str], rows: Sequence[Sequence[object]], numeric: Sequence[int] = (),
          caption: str | None = None) -> str:  # fmt: skip
    """A plain table; cells are escaped text, columns in `numeric` right-aligned."""

    def cell(tag: str, i: int, value: object) -> str:
        cls = ' class="num"' if i in numeric else ""
        scope = ' scope="col"' if tag == "th" else ""
        return f"<{tag}{cls}{scope}>{esc(value)}</{tag}>"

    out = ['<div class="table-wrap"><table>']
    if caption:
        out.append(f"<caption>{esc(caption)}</caption>")
    out.append("<thead><tr>" + "".join(cell("th", i, h) for i, h in enumerate(head)) + "</tr></thead><tbody>")
    out += ["<tr>" + "".join(cell("td", i, v) for i, v in enumerate(r)) + "</tr>" for r in rows]
    out.append("</tbody></table></div>")
    return "".join(out)


def figure(svg: str, caption: str, name: str) -> str:
    return f'<figure id="chart-{esc(name)}">{svg}<figcaption>{esc(caption)}</figcaption></figure>'


def document(title: str, subtitle: str, sections: Sequence[Section]) -> str:
    nav = "".join(f'<li><a href="#{s.anchor}">{esc(s.heading)}</a></li>' for s in sections)
    body = "".join(
        f'<section id="{s.anchor}" aria-labelledby="{s.anchor}-h"><h2 id="{s.anchor}-h">{esc(s.heading)}</h2>'
        f"{s.body}</section>"
        for s in sections
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f'<header><h1>{esc(title)}</h1><p>{esc(subtitle)}</p><nav aria-label="sections"><ul>{nav}</ul></nav>'
        f"</header><main>{body}</main>"
        "<footer>Written by <code>gpu-finops report</code> from what the run recorded; "
        "docs/report.md says what each section holds.</footer></body></html>\n"
    )
