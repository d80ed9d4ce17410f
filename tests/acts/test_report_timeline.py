"""The act timeline draws what was observed: an unobserved end stops where the act stopped watching."""

from __future__ import annotations

from acts.report import ActReport, timeline, timeline_bars


def test_open_lifecycles_stop_where_their_act_stopped_watching(tmp_path):
    a = ActReport(
        "test_01_cold_start", phases=[("submit", 100.0, 130.0)], lifecycles=[("node n1", 105.0, None)]
    )
    b = ActReport("test_02_quota", phases=[("admit", 500.0, 900.0)], lifecycles=[("pod p", 510.0, 600.0)])
    bars = {(x.act, x.label.split(" (")[0]): x for x in timeline_bars([a, b])}
    node = bars[("01_cold_start", "node n1")]
    assert not node.end_observed and node.start == 5.0 and node.length == 25.0  # not to 900, the run's end
    assert "end not observed" in node.label
    pod = bars[("02_quota", "pod p")]
    assert pod.end_observed and pod.length == 90.0
    assert timeline([a, b], tmp_path / "t.png").stat().st_size > 1000


def test_no_observations_draw_nothing(tmp_path):
    assert timeline([ActReport("test_x")], tmp_path / "t.png") is None
    assert not (tmp_path / "t.png").exists()


def test_the_terminal_table_fits_120_columns_and_prints_no_negative_zero():
    from rich.console import Console

    from acts.report import TABLE_WIDTH, seconds, terminal_table

    long_claim = "every record of a GPU node has GPU_UTIL, SM_ACTIVE, a cost and an idle share " * 3
    r = ActReport("test_06_every_record_has_cost_and_idle_share", claim=long_claim, outcome="passed",
                  timings={"skew": -0.3, "cold_start": 41.6, "records": 30.0})  # fmt: skip
    console = Console(width=TABLE_WIDTH, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(terminal_table([r], "local"))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 120
    assert "skew=0" in text and "-0" not in text and "cold_start=42" in text
    assert (seconds(-0.4), seconds(-0.6), seconds(0.0)) == ("0", "-1", "0")


def test_the_png_timeline_groups_lanes_by_act(tmp_path):
    a = ActReport(
        "test_01_cold_start", phases=[("submit", 100.0, 130.0)], lifecycles=[("node n1", 105.0, None)]
    )
    b = ActReport("test_02_quota", phases=[("admit", 500.0, 900.0)], lifecycles=[("pod p", 510.0, 600.0)])
    path = timeline([a, b], tmp_path / "t.png")
    from PIL import Image

    width, height = Image.open(path).size
    assert width >= 1000 and height > 200
