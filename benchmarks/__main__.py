"""Benchmarks: the local target's Go builds (`python -m benchmarks build --help`), synthesis time, one collector cycle at fleet scale against real Prometheus, teardown verify
over a large account, `diagnose --all`'s engine over a synthetic 10,000-GPU fleet, and the ledger (`python -m benchmarks ledger --help`: `ledger month` over a
backfilled month, rule evaluation per step). Prints figures; asserts nothing (a noisy machine's absolute time is not a test)."""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path


def bench_synth(runs: int) -> None:
    from gpu_finops.facts.config import load_config
    from infra.app import synth

    times = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as d:
            t = time.perf_counter()
            synth(load_config(), Path(d))
            times.append(time.perf_counter() - t)
    print(
        f"synth, all three stacks: median {statistics.median(times):.2f}s over {runs} runs "
        f"(min {min(times):.2f}s, max {max(times):.2f}s)"
    )


def bench_collector(gpu_counts: list[int]) -> None:
    from benchmarks.processes import peak_rss
    from gpu_finops.clients.nodes import GpuNode
    from gpu_finops.clients.promql import PrometheusClient
    from gpu_finops.cost.collector import Collector
    from gpu_finops.cost.pricing import CatalogRates
    from gpu_finops.cost.store import SqliteCostStore
    from gpu_finops.dcgm.metrics_csv import PROJECT_METRICS
    from gpu_finops.facts import dcgm
    from harness.waits import eventually
    from local.cluster.prometheus_server import PrometheusServer
    from local.sim.dcgm_sim import DcgmSimulator, SimGpu

    class Nodes:
        def __init__(self, nodes):
            self.nodes = nodes

        def gpu_nodes(self):
            return self.nodes

    for gpus in gpu_counts:
        n_nodes = gpus // 8
        sim = DcgmSimulator(r.field for r in PROJECT_METRICS)
        sim.set_gpus(
            [
                SimGpu(
                    f"node-{n:05d}",
                    g,
                    f"GPU-{n:05d}-{g}",
                    values={
                        dcgm.GPU_UTIL: 100.0,
                        dcgm.SM_ACTIVE: 0.45,
                        dcgm.SM_OCCUPANCY: 0.3,
                        dcgm.POWER_USAGE: 300.0,
                        dcgm.SM_CLOCK: 1980.0,
                    },
                )
                for n in range(n_nodes)
                for g in range(8)
            ]
        )
        server = sim.serve()
        # a scrape must end within its interval: 2 s holds up to 10,000 GPUs here; beyond, dcgm-exporter's
        # own ServiceMonitor interval (15 s) is what a fleet that size scrapes at
        scrape = "2s" if gpus <= 10_000 else "15s"
        now = datetime.now(UTC)
        nodes = [
            GpuNode(
                f"node-{n:05d}",
                "p5.48xlarge",
                "on-demand",
                "us-east-1a",
                "gpu-spot",
                f"i-{n:017x}",
                8,
                now - timedelta(hours=1),
            )
            for n in range(n_nodes)
        ]
        with (
            tempfile.TemporaryDirectory() as d,
            PrometheusServer(Path(d), [f"127.0.0.1:{server.server_port}"], scrape_interval=scrape) as prom,
        ):
            client = PrometheusClient(prom.url)
            t_scraped = time.perf_counter()
            eventually(
                lambda c=client: c.query(f"count({dcgm.SM_ACTIVE})"),
                lambda s, n=gpus: bool(s) and s[0].value >= n,
                timeout=180 * max(1, gpus // 10_000),
                interval=2,
                what=f"{gpus} GPUs scraped",
            )
            first_scraped = time.perf_counter() - t_scraped
            c = Collector(
                Nodes(nodes),
                client,
                CatalogRates({("p5.48xlarge", "on-demand"): 55.04}),
                SqliteCostStore(Path(d) / "c.sqlite"),
                interval=60,
            )
            end = datetime.now(UTC)
            c.cycle(end - timedelta(seconds=60), end)  # warm: connection, Prometheus' own caches
            walls, proms = [], []
            for _ in range(5):  # alternate, so both sides see the same machine noise; report medians
                t = time.perf_counter()
                result = c.cycle(end - timedelta(seconds=60), end)
                walls.append(time.perf_counter() - t)
                # Prometheus' own time for the same five queries, through the same HTTP client and JSON
                # decoding: the ratio is what the collector adds (join, pricing, records, the store).
                t = time.perf_counter()
                by = ", ".join((*dcgm.HOSTNAME_LABELS, "gpu", "UUID"))  # the collector's grouping
                for metric in dcgm.COLLECTED:
                    client.query(f"avg by ({by}) (avg_over_time({metric}[60s]))", at=end)
                proms.append(time.perf_counter() - t)
            wall, prom_time = statistics.median(walls), statistics.median(proms)
            tracemalloc.start()  # a separate cycle: tracing slows Python, so it is not in the timed one
            c.cycle(end - timedelta(seconds=60), end)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            prom_mib = round(peak_rss(prom.process.pid) / 2**20) if prom.process else None
            up = {s.labels.get("job"): s.value for s in client.query("scrape_duration_seconds")}
        server.shutdown()
        print(
            f"collector cycle, {gpus:>6} GPUs ({n_nodes} nodes of 8): median {wall:.2f}s wall of 5, {result.queries} queries, "
            f"peak {peak / 2**20:.1f} MiB, {len(result.records)} records; Prometheus alone median {prom_time:.2f}s; "
            f"ratio {wall / prom_time:.2f}; scraped at {scrape} (last scrape {up.get('dcgm', float('nan')):.2f}s, "
            f"all {gpus} GPUs after {first_scraped:.0f}s); Prometheus peak RSS {prom_mib} MiB"
        )


def bench_verify(resources: int) -> None:
    import logging
    import os
    import urllib.request

    import boto3
    from moto.server import ThreadedMotoServer

    from gpu_finops.facts.names import PROJECT, TAG_PROJECT
    from local.cluster.prometheus_server import free_port
    from teardown.engine import inventory
    from teardown.model import Context, TeardownConfig
    from teardown.provenance import Sources

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    os.environ.update(
        AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}",
        AWS_ACCESS_KEY_ID="x",
        AWS_SECRET_ACCESS_KEY="x",
        AWS_DEFAULT_REGION="us-east-1",
    )
    urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/moto-api/reset", method="POST"))
    session = boto3.Session(region_name="us-east-1")
    ec2 = session.client("ec2")
    tag = [{"ResourceType": "security-group", "Tags": [{"Key": TAG_PROJECT, "Value": PROJECT}]}]
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    for i in range(resources):
        ec2.create_security_group(GroupName=f"sg-{i}", Description="x", VpcId=vpc, TagSpecifications=tag)
    # provenance (teardown.provenance): the groups are in a Terraform state of their own
    state = Path(tempfile.mkdtemp()) / ".state"
    state.mkdir()
    groups = [g["GroupId"] for g in ec2.describe_security_groups()["SecurityGroups"]]
    instances = [{"attributes": {"id": g}} for g in groups]
    (state / "terraform.bench.tfstate").write_text(
        json.dumps(
            {
                "version": 4,
                "resources": [{"mode": "managed", "type": "aws_security_group", "instances": instances}],
            }
        )
    )
    ctx = Context(
        TeardownConfig(region="us-east-1", allowed_accounts=("123456789012",)),
        session,
        sources=Sources(state, state.parent / "teardown-run.json", state.parent / "journal.jsonl"),
    )
    t = time.perf_counter()
    found = inventory(ctx)
    wall = time.perf_counter() - t
    server.stop()
    print(
        f"teardown verify over {resources} owned resources (+ every other type empty): {wall:.2f}s, "
        f"{ctx.api_calls} API calls, {len(found)} found"
    )


def main() -> None:
    import sys

    if sys.argv[1:2] == ["twin"]:  # `python -m benchmarks twin --nodes N` against the running local target
        from benchmarks.twin import main as twin_main

        twin_main(sys.argv[2:])
        return
    if sys.argv[1:2] == ["scaleout"]:  # `python -m benchmarks scaleout --pods N`: Karpenter's own scale-out
        from benchmarks.scaleout import main as scaleout_main

        scaleout_main(sys.argv[2:])
        return
    if sys.argv[1:2] == ["twin-submit"]:  # `python -m benchmarks twin-submit --jobs N`: the twin's submission
        from benchmarks.twin_submit import main as twin_submit_main

        twin_submit_main(sys.argv[2:])
        return
    if sys.argv[1:2] == [
        "build"
    ]:  # `python -m benchmarks build [--time] [--cold]`: the local target's Go builds
        from benchmarks.build import main as build_main

        build_main(sys.argv[2:])
        return
    if sys.argv[1:2] == ["diagnose"]:  # `python -m benchmarks diagnose --nodes N`: the engine at fleet size
        from benchmarks.diagnose import main as diagnose_main

        diagnose_main(sys.argv[2:])
        return
    if sys.argv[1:2] == ["ledger"]:  # `python -m benchmarks ledger --gpus N --days D [--quick]`
        from benchmarks.ledger import main as ledger_main

        ledger_main(sys.argv[2:])
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--synth-runs", type=int, default=3)
    parser.add_argument("--gpus", type=int, nargs="*", default=[1000, 10000])
    parser.add_argument("--verify-resources", type=int, default=2000)
    parser.add_argument(
        "--ledger-quick", action="store_true", help="the ledger benchmarks at their quick size"
    )
    args = parser.parse_args()
    bench_synth(args.synth_runs)
    bench_collector(args.gpus)
    bench_verify(args.verify_resources)
    from benchmarks.diagnose import main as diagnose_main

    diagnose_main([])
    from benchmarks.ledger import main as ledger_main

    ledger_main(["--quick"] if args.ledger_quick else [])


if __name__ == "__main__":
    main()
