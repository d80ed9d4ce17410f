"""The report checked in a real browser (Debian's headless Chromium through Selenium), for a passing run,
a run with a failing act and a run with no cost data: it loads from file:// with no console error and no
request but its own; every chart has marks, and they sit where the records say; no text leaves the
viewport at 1280 and 800 px; headings go in order; axe-core finds nothing serious; screenshots go to
reports/ for a person to look at."""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

import pytest

from gpu_finops.cli import main
from tests.gpu_finops.report import fixtures
from tests.gpu_finops.report.browser import chromium, console_errors, requests, screenshot
from tests.gpu_finops.report.readback import marks

ROOT = Path(__file__).resolve().parents[3]
RUNS = ("passing", "failing", "no-cost")
pytestmark = pytest.mark.slow

OVERFLOW_JS = """
const vw = document.documentElement.clientWidth, out = [];
if (document.documentElement.scrollWidth > vw) out.push('page scrolls sideways: ' + document.documentElement.scrollWidth);
for (const w of document.querySelectorAll('.table-wrap')) if (w.scrollWidth > w.clientWidth + 1) out.push('table wider than its box: ' + w.textContent.slice(0, 60));
for (const e of document.querySelectorAll('body *')) {
  const own = Array.from(e.childNodes).some(n => n.nodeType === 3 && n.textContent.trim());
  if (!own) continue;
  const r = e.getBoundingClientRect();
  if (!r.width && !r.height) continue;  // not rendered: a <title>, a <style>, a closed <details>
  if ( (r.left < -1 || r.right > vw + 1)) out.push(`${e.tagName} '${e.textContent.trim().slice(0, 50)}' spans ${r.left.toFixed(0)}..${r.right.toFixed(0)} of ${vw}`);
  const svg = e.closest('svg');
  if (svg) { const s = svg.getBoundingClientRect();
    if (r.left < s.left - 1 || r.right > s.right + 1 || r.top < s.top - 1 || r.bottom > s.bottom + 1) out.push(`chart text '${e.textContent}' outside its chart`); }
}
return out;
"""


def _inputs(folder: Path, run: str) -> dict[str, Path]:
    evidence = folder / "test_05_spot_interruption"
    if run == "failing":
        evidence.mkdir(parents=True)
        (evidence / "nodes.json").write_text("[]")
    acts = fixtures.passing_acts() + ([fixtures.failing_act(evidence)] if run == "failing" else [])
    return fixtures.write_all(folder, acts, cost=run != "no-cost")


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, dict[str, Path]]:
    out = {}
    for run in RUNS:
        paths = _inputs(tmp_path_factory.mktemp(run), run)
        assert main(["report", *(f"--{k}={v}" for k, v in paths.items())]) == 0
        out[run] = paths
    return out


@pytest.fixture(scope="module")
def browser():
    with chromium() as driver:
        yield driver


def load(driver, page: Path, width: int = 1280):
    driver.set_window_size(width, 900)
    driver.get_log("performance")  # what the browser fetched before (its start page) is not the page's
    driver.get(page.as_uri())
    return driver


@pytest.mark.parametrize("run", RUNS)
def test_the_page_loads_from_file_with_no_console_error_and_no_request_but_itself(browser, pages, run):
    page = pages[run]["out"]
    load(browser, page)
    assert browser.title == "gpu-finops run report"
    assert requests(browser) == [page.as_uri()]
    assert console_errors(browser) == []


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("width", [1280, 800])
def test_no_text_leaves_its_box_and_every_chart_has_marks(browser, pages, run, width):
    load(browser, pages[run]["out"], width)
    assert browser.execute_script(OVERFLOW_JS) == []
    charts = browser.execute_script(
        "return Array.from(document.querySelectorAll('figure')).map(f => [f.id, Array.from("
        "f.querySelectorAll('[id*=\"--mark-\"]')).filter(m => m.getBoundingClientRect().width > 0).length])"
    )
    assert charts and all(n > 0 for _id, n in charts), charts
    if width == 1280:
        shot = screenshot(browser, ROOT / "reports" / f"report-{run}-{width}.png", width)
        assert shot.stat().st_size > 10_000


@pytest.mark.parametrize("run", RUNS)
def test_headings_go_in_order_and_axe_finds_nothing_serious(browser, pages, run):
    load(browser, pages[run]["out"])
    levels = browser.execute_script(
        "return Array.from(document.querySelectorAll('h1,h2,h3,h4,h5,h6')).map(h => +h.tagName[1])"
    )
    assert levels[0] == 1 and levels.count(1) == 1
    assert all(b <= a + 1 for a, b in itertools.pairwise(levels)), levels
    browser.execute_script(axe_source())
    violations = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']}).then(r => done(r.violations.map("
        "v => [v.id, v.impact, v.nodes.length, v.help])))"
    )
    assert [v for v in violations if v[1] in ("serious", "critical")] == []


def axe_source() -> str:
    folder = subprocess.run(
        ["make", "-s", "print-axe-core"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    path = Path(folder) / "node_modules" / "axe-core" / "axe.min.js"
    if not path.is_file():
        pytest.fail(f"{path} is missing: `make test` installs axe-core there first", pytrace=False)
    return path.read_text()


def test_a_failing_act_comes_first_with_a_link_to_its_evidence(browser, pages):
    load(browser, pages["failing"]["out"])
    first = browser.find_element("css selector", "#acts article")
    assert first.get_attribute("id") == "act-test_05_spot_interruption"
    assert "does not hold" in first.text and "the job was killed" in first.text
    link = first.find_element("css selector", "a").get_attribute("href")
    assert link.endswith("/test_05_spot_interruption/")
    assert (Path(link.removeprefix("file://")) / "nodes.json").is_file()


def test_an_acts_timings_on_the_local_target_say_they_are_the_simulators(browser, pages):
    load(browser, pages["failing"]["out"])
    cold = browser.find_element("css selector", "#act-test_01_cold_start")
    note = cold.find_element("css selector", "p.simulated-timings")
    assert note.is_displayed() and note.text.startswith(
        "Measured on the local target: kwok creates and readies"
    )


def test_a_run_without_cost_data_says_why_instead_of_a_chart(browser, pages):
    load(browser, pages["no-cost"]["out"])
    cost = browser.find_element("css selector", "#cost")
    assert cost.find_elements("css selector", "figure") == []
    store = pages["no-cost"]["store"]
    assert f"Not shown: no cost store at {store}: no cost was recorded in this run" in cost.text


def close(a: float, b: float, span: float) -> bool:
    return abs(a - b) <= span * 0.01


def test_timeline_bars_sit_at_their_phases_and_lifecycles(browser, pages):
    load(browser, pages["passing"]["out"])
    e0 = fixtures.E0
    # act 1's lanes, seconds since its first observation (e0); the open node ends where the act's last
    # phase ended (46 s), hatched
    expected = {"submit the job": (0, 5, True), "wait for a node": (5, 46, True), "node gpu-a": (8, 46, False),
                "pod tenant-a/job-1": (40, 70, True)}  # fmt: skip
    got = {m.lane: m for m in marks(browser, "act0")}
    assert set(got) == set(expected)
    for lane, (s, e, observed) in expected.items():
        m = got[lane]
        assert close(m.x0, s, 70) and close(m.x1, e, 70), (lane, m)
        assert ("url(#" in m.style) is not observed, (lane, m.style)  # hatched where the end was unseen
    run = {m.lane: m for m in marks(browser, "run")}
    assert close(run["01_cold_start"].x0, 0, 120) and close(run["01_cold_start"].x1, 70, 120)
    assert close(run["02_quota_admits_one_job_per_tenant"].x0, 80, 120)
    assert close(run["02_quota_admits_one_job_per_tenant"].x1, 120, 120)
    assert e0 == fixtures.T0.timestamp()


def test_cost_bars_and_interval_segments_match_the_records(browser, pages, tmp_path):
    load(browser, pages["passing"]["out"])
    recs = fixtures.write_store(tmp_path / "same.sqlite")  # the records the page's store holds
    by_node: dict[str, tuple[float, float]] = {}
    for r in recs:
        cost, idle = by_node.get(r.node, (0.0, 0.0))
        by_node[r.node] = (cost + r.cost, idle + r.cost * (1 - r.sm))
    bars = marks(browser, "cost-nodes")
    for node, (cost, idle) in by_node.items():
        busy_bar, idle_bar, unmeasured = (m for m in bars if m.lane == node)
        assert close(busy_bar.x0, 0, 0.02) and close(busy_bar.x1, cost - idle, 0.02), busy_bar
        assert close(idle_bar.x0, cost - idle, 0.02) and close(idle_bar.x1, cost, 0.02), idle_bar
        assert close(unmeasured.x1 - unmeasured.x0, 0, 0.02)
    tenants = {m.lane: m for m in marks(browser, "cost-tenants") if m.n % 3 == 1}  # the idle segments
    a = by_node["gpu-a"]
    b = by_node["gpu-b"]
    assert close(tenants["tenant-a"].x1, a[0], 0.02)  # held gpu-a whole
    assert close(tenants["tenant-b"].x1, b[0] / 2, 0.02)  # held gpu-b half of each interval
    assert close(tenants["unallocated"].x1, b[0] / 2, 0.02)
    steps = marks(browser, "util")
    expected = [(r.start, r.end, v) for node in sorted(by_node) for v_of in ("util", "sm")
                for r in recs if r.node == node for v in [r.util if v_of == "util" else r.sm * 100]]  # fmt: skip
    assert len(steps) == len(expected)
    for m, (s, e, v) in zip(steps, expected, strict=True):
        assert close(m.x0, s, 30) and close(m.x1, e, 30) and close(m.y, v, 105), (m, s, e, v)
