"""Ledger benchmarks against Debian's real Prometheus: `ledger month` over a backfilled month, and the
recording rules' evaluation time per step over a scraped 10,000-GPU fleet. Prints figures; fails loudly
(raises) when Prometheus does not hold exactly what was generated, never on time."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import yaml

from benchmarks.ledger_data import fleet_exposition, month_openmetrics
from benchmarks.processes import MIB, mib, own_metrics, peak_rss, prometheus, self_maxrss, serve, tool
from gpu_finops.clients.promql import PrometheusClient
from gpu_finops.facts import timeouts
from gpu_finops.ledger import accounting, render, rules, source
from gpu_finops.ledger.conventions import interval_seconds
from harness.waits import eventually

MONTH_START = datetime(2026, 7, 1, tzinfo=UTC)


class BenchmarkDataError(RuntimeError):
    """Prometheus does not hold what the benchmark generated: the figures would measure nothing."""


class SampleCountingClient(source.RangeClient):
    """The ledger's reader asking Prometheus for its query statistics (`stats=all`, Prometheus >= 2.35):
    the samples each query read. Used in an untimed run, so the statistics cost is not in the figures."""

    samples = 0

    def _get_with_retries(self, path: str, params: dict[str, str] | None = None) -> dict:
        body = super()._get_with_retries(path, {**(params or {}), "stats": "all"})
        stats = body.get("data", {}).get("stats", {}).get("samples")
        if path.startswith("/api/v1/query") and not stats:
            raise BenchmarkDataError(f"Prometheus at {self.url} returned no query statistics for {path}")
        if stats:
            self.samples += int(stats["totalQueryableSamples"])
        return body


def _month_once(
    url: str,
    window: source.Window,
    step: int,
    owners: dict[str, str],
    client: source.RangeClient | None = None,
) -> tuple[float, int, accounting.Ledger]:
    """The month computation as `ledger month --json` does it (queries, reconciliation, rendering)."""
    client = client or source.RangeClient(url)
    t = time.perf_counter()
    ledger = source.month_ledger(client, window, step, owners)
    render.dumps(render.ledger_json(ledger))
    return time.perf_counter() - t, client.queries, ledger


def check_month(ledger: accounting.Ledger, data, step: int) -> None:
    """Raise unless the ledger read back exactly what was backfilled."""
    problems = []
    if ledger.observed_samples != data.samples_per_series:
        problems.append(
            f"observed {ledger.observed_samples} samples of installed, generated {data.samples_per_series}"
        )
    expected_installed = Decimal(data.installed_sum) * step / 3600
    if ledger.installed_gpu_hours != expected_installed:
        problems.append(f"installed {ledger.installed_gpu_hours} GPU-hours, generated {expected_installed}")
    for bucket, total in data.bucket_sums.items():
        got = ledger.line(bucket).gpu_hours
        if got != Decimal(total) * step / 3600:
            problems.append(f"{bucket}: {got} GPU-hours, generated {Decimal(total) * step / 3600}")
    if problems:
        raise BenchmarkDataError(
            "ledger month read back something else than was backfilled: " + "; ".join(problems)
        )


def bench_month(gpus: int, days: int, runs: int = 3) -> dict[str, object]:
    step = interval_seconds(str(rules.load()["groups"][0]["interval"]))
    window = source.Window(MONTH_START, MONTH_START + timedelta(days=days))
    with tempfile.TemporaryDirectory(prefix="bench-ledger-month-") as d:
        work = Path(d)
        t = time.perf_counter()
        lines, data = month_openmetrics(gpus, MONTH_START, days, step)
        om = work / "month.om"
        with om.open("w") as f:
            for line in lines:
                f.write(line + "\n")
        generate = time.perf_counter() - t
        t = time.perf_counter()
        subprocess.run(
            [
                tool("promtool"),
                "tsdb",
                "create-blocks-from",
                "openmetrics",
                "--quiet",
                "--max-block-duration=768h",
                str(om),
                str(work / "data"),
            ],
            check=True,
            capture_output=True,
            timeout=1800,
        )
        backfill = time.perf_counter() - t
        size = om.stat().st_size
        om.unlink()
        blocks = sum(f.stat().st_size for f in (work / "data").rglob("*") if f.is_file())
        print(
            f"ledger month data: {data.series} recorded series x {data.samples_per_series:,} samples "
            f"({step}s step, {days} days) = {data.samples:,} samples, {size / MIB:,.0f} MiB OpenMetrics written in {generate:.1f}s; "
            f"promtool backfill {backfill:.1f}s, {blocks / MIB:,.1f} MiB of blocks",
            flush=True,
        )
        config = {"global": {"scrape_interval": "1m"}, "scrape_configs": []}
        with prometheus(work, config, work / "data") as (url, process):
            owners = accounting.load_owners()
            walls = []
            for _ in range(runs):
                wall, queries, ledger = _month_once(url, window, step, owners)
                check_month(ledger, data, step)
                walls.append(wall)
            counting = SampleCountingClient(url)
            _month_once(url, window, step, owners, counting)
            cli = _cli_month(url, window, step)
            prom_peak = peak_rss(process.pid)
            prom_rss = own_metrics(url)["process_resident_memory_bytes"]
    result = {
        "gpus": gpus,
        "days": days,
        "first": walls[0],
        "median": statistics.median(walls),
        "queries": queries,
        "samples": counting.samples,
        "cli": cli,
        "prom_peak": prom_peak,
        "prom_rss": prom_rss,
    }
    print(
        f"ledger month, {gpus:,} GPUs, {days} days at {step}s: {walls[0]:.2f}s first, median {result['median']:.2f}s of {runs} "
        f"(queries + arithmetic + JSON), {queries} queries reading {counting.samples:,} samples; "
        f"CLI process end to end {cli['wall']:.2f}s, peak RSS {mib(cli['maxrss'])}; "
        f"Prometheus peak RSS {mib(prom_peak)} (resident now {mib(prom_rss)}); goal <= 30 s",
        flush=True,
    )
    return result


def _cli_month(url: str, window: source.Window, step: int) -> dict[str, float]:
    """`gpu-finops ledger month --json` as its own process: wall time from exec, and its own ru_maxrss
    (wait4 on its pid: RUSAGE_CHILDREN would report promtool's if that was larger)."""
    argv = [
        sys.executable,
        "-m",
        "gpu_finops.cli",
        "ledger",
        "month",
        "--prometheus-url",
        url,
        "--step",
        f"{step}s",
        "--json",
    ]
    argv += ["--from", window.start.isoformat(), "--to", window.end.isoformat()]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t = time.perf_counter()
        process = subprocess.Popen(argv, stdout=out, stderr=err, cwd=Path(__file__).resolve().parents[1])
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - t
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        report, errors = out.read(), err.read().decode()
    if process.returncode != 0 or not report.strip():
        raise BenchmarkDataError(
            f"`gpu-finops ledger month` exited {process.returncode} with no report: {errors[-1000:]}"
        )
    return {"wall": wall, "maxrss": usage.ru_maxrss * 1024}


# --- (b) rule evaluation per step over a scraped fleet ------------------------------------------------


def _group_value(metrics: dict[str, float], name: str) -> float | None:
    for key, value in metrics.items():
        if key.startswith(name + "{") and f';{rules.GROUP}"' in key:
            return value
    return None


def _ledger_now(client: PrometheusClient) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {"buckets": {}, "rungs": {}}
    for s in client.query(rules.BUCKET):
        out["buckets"][s.labels.get("bucket", "")] = int(s.value)
    for s in client.query(rules.RUNG):
        out["rungs"][s.labels.get("rung", "")] = int(s.value)
    return out


def _slowest_rules(url: str, n: int = 3) -> list[tuple[str, float]]:
    """The rules that took longest at the group's last evaluation (`/api/v1/rules` evaluationTime)."""
    body = json.loads(urllib.request.urlopen(f"{url}/api/v1/rules", timeout=timeouts.PROM_QUERY).read())
    times = [
        (rule["name"], float(rule["evaluationTime"]))
        for group in body["data"]["groups"]
        for rule in group["rules"]
        if group["name"] == rules.GROUP
    ]
    return sorted(times, key=lambda nt: -nt[1])[:n]


def bench_rules(gpus: int, interval: str = "15s", evaluations: int = 5) -> dict[str, object]:
    production = interval_seconds(str(rules.load()["groups"][0]["interval"]))
    every = interval_seconds(interval)
    t = time.perf_counter()
    pages, fleet = fleet_exposition(gpus)
    generate = time.perf_counter() - t
    server = serve(pages)
    target = f"127.0.0.1:{server.server_port}"
    print(
        f"ledger rules data: {gpus:,} GPUs on {gpus // 8:,} nodes, {fleet.pods:,} running GPU pods + {fleet.pending_pods} pending, "
        f"{sum(fleet.series.values()):,} input series ({sum(len(p) for p in pages.values()) / MIB:.1f} MiB exposition) "
        f"rendered in {generate:.1f}s",
        flush=True,
    )
    try:
        with tempfile.TemporaryDirectory(prefix="bench-ledger-rules-") as d:
            work = Path(d)
            group = rules.load()
            group["groups"][0]["interval"] = interval
            (work / "rules.yaml").write_text(yaml.safe_dump(group, sort_keys=False))
            config = {
                "global": {
                    "scrape_interval": interval,
                    "scrape_timeout": interval,
                    "evaluation_interval": interval,
                },
                "rule_files": [str(work / "rules.yaml")],
                "scrape_configs": [
                    {"job_name": job, "metrics_path": f"/{job}", "static_configs": [{"targets": [target]}]}
                    for job in pages
                ],
            }
            with prometheus(work, config, work / "data") as (url, process):
                client = PrometheusClient(url)
                want = {"buckets": fleet.buckets, "rungs": fleet.rungs}

                def matches(now: dict[str, dict[str, int]]) -> bool:
                    rungs = {r: v for r, v in now["rungs"].items() if r in fleet.rungs}
                    return now["buckets"] == fleet.buckets and rungs == fleet.rungs

                try:
                    eventually(
                        lambda: _ledger_now(client),
                        matches,
                        timeout=20 * every + 180,
                        interval=2,
                        what="ledger rules over the full fleet",
                    )
                except Exception as exc:
                    raise BenchmarkDataError(
                        f"the recording rules never produced the generated fleet's ledger ({exc}); expected {want}, "
                        f"last read {_ledger_now(client)}; Prometheus log: {work / 'prometheus.log'}"
                    ) from exc
                durations, samples = [], 0.0
                seen = _group_value(own_metrics(url), "prometheus_rule_group_iterations_total")
                deadline = time.monotonic() + (evaluations + 4) * every + 120
                while len(durations) < evaluations:
                    if time.monotonic() > deadline:
                        raise BenchmarkDataError(
                            f"only {len(durations)} of {evaluations} rule evaluations seen in time"
                        )
                    time.sleep(1)
                    m = own_metrics(url)
                    now_iter = _group_value(m, "prometheus_rule_group_iterations_total")
                    if now_iter is not None and seen is not None and now_iter > seen:
                        seen = now_iter
                        durations.append(
                            _group_value(m, "prometheus_rule_group_last_duration_seconds") or float("nan")
                        )
                        samples = _group_value(m, "prometheus_rule_group_last_evaluation_samples") or 0.0
                failures = _group_value(m, "prometheus_rule_evaluation_failures_total")
                missed = _group_value(m, "prometheus_rule_group_iterations_missed_total")
                if failures:
                    raise BenchmarkDataError(
                        f"{failures:.0f} rule evaluation failures; see {work / 'prometheus.log'}"
                    )
                per_rule = {
                    q: m.get(f'prometheus_rule_evaluation_duration_seconds{{quantile="{q}"}}')
                    for q in ("0.5", "0.99")
                }
                scrape = {s.labels["job"]: s.value for s in client.query("scrape_duration_seconds")}
                matches_after = matches(_ledger_now(client))
                slowest = _slowest_rules(url)
                prom_peak = peak_rss(process.pid)
                prom_rss = m["process_resident_memory_bytes"]
    finally:
        server.shutdown()
    if not matches_after:
        raise BenchmarkDataError(
            "the ledger drifted from the generated fleet during the measured evaluations"
        )
    med, worst = statistics.median(durations), max(durations)
    print(
        f"ledger rules, {gpus:,} GPUs: group of {len(group['groups'][0]['rules'])} rules evaluated every {every}s, "
        f"last duration median {med:.3f}s, max {worst:.3f}s over {len(durations)} evaluations, {samples:,.0f} samples out per evaluation; "
        f"fraction of the production interval ({production}s): median {med / production:.4f}, max {worst / production:.4f} "
        f"(of the {every}s used here: {worst / every:.3f}); per rule p50 {per_rule['0.5'] or 0:.4f}s, p99 {per_rule['0.99'] or 0:.4f}s; "
        f"missed iterations {missed or 0:.0f}; scrape {', '.join(f'{j} {v:.2f}s' for j, v in sorted(scrape.items()))}; "
        f"Prometheus peak RSS {mib(prom_peak)} (resident now {mib(prom_rss)}); this process peak RSS {mib(self_maxrss())}; "
        "goal: a small fraction of the interval",
        flush=True,
    )
    print(
        f"  slowest rules at the last evaluation: {'; '.join(f'{name} {t:.3f}s' for name, t in slowest)}",
        flush=True,
    )
    return {"gpus": gpus, "median": med, "max": worst, "fraction": worst / production, "prom_peak": prom_peak}


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m benchmarks ledger", description=__doc__)
    parser.add_argument("--gpus", type=int, default=10_000, help="fleet size (default: the issue's 10,000)")
    parser.add_argument("--days", type=int, default=31, help="month length for `ledger month` (default 31)")
    parser.add_argument("--interval", default="15s", help="rule and scrape interval for the rules benchmark")
    parser.add_argument("--evaluations", type=int, default=5, help="rule evaluations measured")
    parser.add_argument("--runs", type=int, default=3, help="timed `ledger month` computations")
    parser.add_argument("--only", choices=("month", "rules"), default=None)
    parser.add_argument("--quick", action="store_true", help="800 GPUs, 2 days, 3 evaluations: a smoke run")
    args = parser.parse_args(argv)
    if args.quick:
        args.gpus, args.days, args.evaluations, args.runs = 800, 2, 3, 2
    print(
        f"ledger benchmarks: {args.gpus:,} GPUs, {args.days} days, {datetime.now(UTC):%Y-%m-%d %H:%M}Z, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    if args.only in (None, "month"):
        bench_month(args.gpus, args.days, args.runs)
    if args.only in (None, "rules"):
        bench_rules(args.gpus, args.interval, args.evaluations)
    print(f"ledger benchmarks done, load average {os.getloadavg()[0]:.1f}", flush=True)
