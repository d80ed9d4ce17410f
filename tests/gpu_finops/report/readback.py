"""Read a chart's marks back from the SVG the browser drew: each mark's box in pixels, and the axes'
ticks (their pixel position and label) to turn pixels back into data."""

from __future__ import annotations

from dataclasses import dataclass

JS = """
const name = arguments[0];
const fig = document.getElementById('chart-' + name);
const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.right, r.top, r.bottom]; };
const ticks = axis => Array.from(fig.querySelectorAll(`[id^="${name}--${axis}tick_"]`)).map(g => {
  const use = g.querySelector('use'), text = g.querySelector('text');
  if (!use || !text) return null;
  const [l, r, t, b] = box(use);
  return [axis === 'x' ? (l + r) / 2 : (t + b) / 2, text.textContent];
}).filter(x => x);
const marks = Array.from(fig.querySelectorAll(`[id^="${name}--mark-"]`)).map(g => {
  const path = g.querySelector('path');
  return [parseInt(g.id.split('--mark-')[1]), box(g), path ? (path.getAttribute('style') || '') : ''];
});
return [ticks('x'), ticks('y'), marks];
"""


@dataclass(frozen=True)
class Mark:
    n: int
    x0: float  # data units
    x1: float
    y: float  # data units (a numeric y axis) or the pixel centre (a categorical one)
    lane: str | None  # the y tick label nearest the mark's centre (categorical y)
    style: str


def _fit(points: list[tuple[float, float]]):
    """value = a + b * pixel, least squares over the ticks."""
    n = len(points)
    assert n >= 2, f"an axis needs two ticks to be read back, found {points}"
    mx = sum(p for p, _ in points) / n
    my = sum(v for _, v in points) / n
    b = sum((p - mx) * (v - my) for p, v in points) / sum((p - mx) ** 2 for p, _ in points)
    return lambda px: my + b * (px - mx)


def number(label: str) -> float:
    return float(label.replace("\u2212", "-").replace(",", ""))


def marks(driver, name: str) -> list[Mark]:
    xt, yt, raw = driver.execute_script(JS, name)
    to_x = _fit([(p, number(t)) for p, t in xt])
    try:
        to_y = _fit([(p, number(t)) for p, t in yt])
        lanes = None
    except ValueError:  # categorical: the tick labels are lane names
        to_y, lanes = None, yt
    out = []
    for n, (left, right, top, bottom), style in sorted(raw):
        centre = (top + bottom) / 2
        lane = min(lanes, key=lambda t: abs(t[0] - centre))[1] if lanes else None
        out.append(Mark(n, to_x(left), to_x(right), to_y(centre) if to_y else centre, lane, style))
    return out
