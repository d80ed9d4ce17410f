"""`cost report`'s PNG draws each idle-dollar bar over its own record's interval: 10-second records are
10 seconds wide, start where their record starts, and two nodes' bars at one interval stack."""

from __future__ import annotations

from datetime import timedelta

import matplotlib.dates as mdates
import matplotlib.pyplot as plt

from gpu_finops.cost.cost_report import chart
from tests.gpu_finops.cost.focus_fixtures import T0, record


def test_idle_bars_span_their_intervals_and_stack_and_the_legends_stay_off_the_plots(tmp_path, monkeypatch):
    records = [record(node, start=T0 + timedelta(seconds=10 * i), seconds=10, cost=0.01, sm_active=sm)
               for node, sm in (("gpu-a", 0.5), ("gpu-b", 0.25)) for i in range(3)]  # fmt: skip
    figures = []
    monkeypatch.setattr(plt, "close", figures.append)  # keep the figure to read back what was drawn
    chart(records, tmp_path / "cost.png")
    (fig,) = figures
    top, bottom = fig.axes
    drawn = {p.get_gid(): p for p in bottom.patches if p.get_gid()}
    for node, sm, below in (("gpu-a", 0.5, 0.0), ("gpu-b", 0.25, 0.005)):
        for i in range(3):
            bar = drawn[f"idle-{node}-{i}"]
            start = T0 + timedelta(seconds=10 * i)
            assert abs(bar.get_x() - mdates.date2num(start)) * 86400 < 1e-3
            assert abs(bar.get_width() * 86400 - 10) < 1e-3
            assert abs(bar.get_height() - 0.01 * (1 - sm)) < 1e-9 and abs(bar.get_y() - below) < 1e-9
    fig.canvas.draw()
    for ax in (top, bottom):
        legend = ax.get_legend().get_window_extent()
        assert legend.x0 >= ax.get_window_extent().x1  # beside the plot, over no line or bar
    assert (tmp_path / "cost.png").stat().st_size > 1000
