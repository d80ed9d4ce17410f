"""The ledger of one run's window on the local target, for `make demo`'s report.

`python -m local.ledger_window -- COMMAND...` runs COMMAND (the acts) while a Prometheus scrapes the
local target's kube-state-metrics and the cluster-driven GPU simulator and evaluates the ledger's
recording rules every STEP; then `gpu-finops ledger month --from START --to END --json` and
`gpu-finops ledger ladder --at END --window ... --json` over exactly the steps the command ran in are
written to reports/ledger-month.json and reports/ledger-ladder.json, the files `gpu-finops report` reads.
It exits with COMMAND's code: the ledger is the report's, never the verdict. When the ledger cannot be
written (a window shorter than a step, no data: `ledger` exits 1) its one-line reason is printed and the
report's Ledger section says which file is missing and what writes it.

The rules are the shipped ones at a 5 s interval (production: 1 minute), so a run of minutes has dozens
of evaluations; the window starts and ends on that grid, as `ledger month` requires.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpu_finops.ledger import rules
from gpu_finops.ledger.conventions import Conventions

STEP_S = 5
SCRAPE_S = 2
OUTPUTS = {"month": "ledger-month.json", "ladder": "ledger-ladder.json"}


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def window(start: float, end: float, step: int = STEP_S) -> tuple[int, int] | None:
    """The whole steps inside [start, end]: the first grid point at or after start, the last at or before
    end; None when not one whole step fits."""
    first, last = math.ceil(start / step) * step, math.floor(end / step) * step
    return (first, last) if last - first >= step else None


@contextmanager
def ledger_prometheus(workdir: Path, scrape_configs: list[dict[str, Any]]) -> Iterator[str]:
    """A Prometheus evaluating the ledger's rules every STEP_S over the given scrape jobs; yields its URL."""
    from local.cluster.prometheus_server import PrometheusServer

    workdir.mkdir(parents=True, exist_ok=True)
    rules_file = workdir / "ledger-rules.yaml"
    rules_file.write_text(rules.render(Conventions(interval=f"{STEP_S}s")))
    server = PrometheusServer(
        workdir / "prometheus",
        [],
        scrape_interval=f"{SCRAPE_S}s",
        evaluation_interval=f"{STEP_S}s",
        rule_files=[rules_file],
        scrape_configs=scrape_configs,
    )
    with server:
        yield server.url


def write_ledger(url: str, start: int, end: int, out: Path, run: Callable = subprocess.run) -> list[str]:
    """Write the month and the ladder of [start, end) into `out`; returns one line per file: its path, or
    why it was not written (the ledger's own error line)."""
    out.mkdir(parents=True, exist_ok=True)
    common = ["--prometheus-url", url, "--step", f"{STEP_S}s", "--json"]
    argv = {
        "month": ["month", "--from", iso(start), "--to", iso(end), *common],
        "ladder": ["ladder", "--at", iso(end), "--window", f"{end - start}s", *common],
    }
    said = []
    for what, args in argv.items():
        path = out / OUTPUTS[what]
        done = run([sys.executable, "-m", "gpu_finops.cli", "ledger", *args], capture_output=True, text=True)
        if done.returncode == 0:
            json.loads(done.stdout)  # what `report` reads; a non-JSON answer is a bug here, not a page
            path.write_text(done.stdout)
            said.append(f"ledger {what}: {path} ({iso(start)} to {iso(end)})")
        else:
            path.unlink(missing_ok=True)  # never leave an earlier run's ledger beside this run's acts
            reason = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
            said.append(f"ledger {what}: not written ({reason})")
    return said


def local_scrape_configs(target_json: Path, sim_port: int) -> list[dict[str, Any]]:
    ksm = json.loads(target_json.read_text())["kube_state_metrics_url"].removeprefix("http://")
    return [
        {"job_name": "kube-state-metrics", "static_configs": [{"targets": [ksm]}]},
        {"job_name": "dcgm-sim", "static_configs": [{"targets": [f"127.0.0.1:{sim_port}"]}]},
    ]


def record_during(
    command: list[str], scrape_configs: list[dict[str, Any]], workdir: Path, out: Path
) -> tuple[int, list[str]]:
    """Run `command` under a ledger Prometheus; (its exit code, what was written or why not)."""
    with ledger_prometheus(workdir, scrape_configs) as url:
        started = time.time()
        code = subprocess.run(command).returncode
        ended = time.time()
        time.sleep(STEP_S + SCRAPE_S)  # the last whole step evaluated before it is read
        span = window(started, ended)
        if span is None:
            for name in OUTPUTS.values():  # an earlier run's ledger is not this run's
                (out / name).unlink(missing_ok=True)
            return code, [
                f"ledger: not written (the run lasted {ended - started:.0f} s, under one {STEP_S} s step)"
            ]
        return code, write_ledger(url, *span, out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m local.ledger_window", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("reports"))
    parser.add_argument(
        "--run-dir", type=Path, default=None, help="the local target's run dir (default .local)"
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    from gpu_finops.dcgm.metrics_csv import exported_fields, render
    from local.cluster.lifecycle import LocalCluster
    from local.sim.gpu_sim import ClusterGpuSimulator

    cluster = LocalCluster(**({"run_dir": args.run_dir} if args.run_dir else {}))
    target = cluster.run_dir / "target.json"
    sim = ClusterGpuSimulator(
        cluster.kube(),
        exported_fields(render()),
        pod_resources_url=json.loads(target.read_text())["pod_resources_url"],
    )
    port = sim.start()
    try:
        code, said = record_during(
            command, local_scrape_configs(target, port), cluster.run_dir / "ledger-window", args.out
        )
    finally:
        sim.stop()
    for line in said:
        print(line, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
