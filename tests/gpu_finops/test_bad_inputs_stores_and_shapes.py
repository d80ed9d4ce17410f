"""Bad inputs inside files that parse: a cost store whose rows are no intervals, report inputs with times,
figures or paths no run could write, nodes, owners, rates and deadline files of the wrong shape, durations
and trace figures past what a run can hold, names no service accepts, and special files where a kubeconfig
or an export partition belongs. Each is exit 2 and one line naming the file and the place, before a
service is called (run by test_bad_inputs.py)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from gpu_finops.cost.holdings_record import IntervalHoldings
from gpu_finops.cost.store import SqliteCostStore
from tests.gpu_finops.bad_inputs import Case
from tests.gpu_finops.cost.focus_fixtures import T0, hold, iso, record
from tests.gpu_finops.report import fixtures as report_fixtures
from tests.gpu_finops.test_bad_inputs_twin import FLEET, HEAD

CLOSED_PROMETHEUS = ("--prometheus-url", "http://127.0.0.1:{closed}")
NODE = {"metadata": {"name": "gpu-1", "creationTimestamp": "2026-11-30T10:00:00Z",
                     "labels": {"node.kubernetes.io/instance-type": "g6e.xlarge"}},
        "status": {"capacity": {"nvidia.com/gpu": "1"}}}  # fmt: skip


def _store(path: Path, update: str | None = None) -> None:
    r = record("gpu-a", start=T0, seconds=60, cost=0.03, sm_active=0.5)
    h = hold("team-a", node="gpu-a", start=T0)
    store = SqliteCostStore(path)
    store.upsert([r], [IntervalHoldings("gpu-a", r.ResourceId, r.ChargePeriodStart, r.ChargePeriodEnd, "kube",
                                        r.ChargePeriodStart, (h,))])  # fmt: skip
    store.close()
    if update:
        with sqlite3.connect(path) as db:
            db.execute(update)


def _acts(tmp: Path, name: str, **act: object) -> None:
    body = {"target": "local", "finished": iso(T0), "acts": [{**report_fixtures.passing_acts()[0], **act}]}
    (tmp / name).write_text(json.dumps(body))


def write_files(inputs: dict[str, str]) -> None:
    tmp = Path(inputs["tmp"])
    _store(tmp / "good.sqlite")
    _store(tmp / "start-yesterday.sqlite", "UPDATE cost_records SET ChargePeriodStart = 'yesterday'")
    _store(tmp / "end-first.sqlite", "UPDATE cost_records SET ChargePeriodEnd = '2020-01-01T00:00:00Z'")
    _store(tmp / "huge-cost.sqlite", "UPDATE cost_records SET EffectiveCost = 1e308")
    _store(tmp / "holdings-object.sqlite", """UPDATE gpu_holdings SET holdings = '{"a": 1}'""")
    _acts(tmp, "epoch-1e300.json", phases=[["p", 1e300, 1e300]])
    _acts(tmp, "epoch-negative.json", phases=[["p", -1e13, 0]])
    _acts(tmp, "evidence-nul.json", outcome="failed", evidence="ev\u0000dir")
    ledger = {**report_fixtures.LEDGER, "installed_gpu_hours": "1e400"}
    (tmp / "ledger-1e400.json").write_text(json.dumps(ledger))
    ladder = {**report_fixtures.LADDER, "rungs": [{"rung": "installed", "now": "8", "mean_gpus": "-8",
                                                    "gpu_hours": "192"}]}  # fmt: skip
    (tmp / "ladder-negative.json").write_text(json.dumps(ladder))
    (tmp / "nodes-list.json").write_text(json.dumps([NODE]))
    no_name = {**NODE, "metadata": {k: v for k, v in NODE["metadata"].items() if k != "name"}}
    (tmp / "nodes-no-name.json").write_text(json.dumps({"items": [no_name]}))
    abc = {**NODE, "status": {"capacity": {"nvidia.com/gpu": "abc"}}}
    (tmp / "nodes-abc.json").write_text(json.dumps({"items": [abc]}))
    (tmp / "rates-quoted.json").write_text(json.dumps({"g6e.xlarge": {"on-demand": "1.86", "spot": 0.6}}))
    (tmp / "rates-true.json").write_text(json.dumps({"g6e.xlarge": {"on-demand": True, "spot": 0.6}}))
    (tmp / "owners-list.yaml").write_text("- platform\n")
    (tmp / "owners-numbers.yaml").write_text(
        "".join(f"{line}: [1, 2]\n" for line in ("unschedulable_repair_queue", "free_placeable"))
    )
    (tmp / "deadline-deep.json").write_text("[" * 30_000 + "]" * 30_000)
    (tmp / "zone.yaml").write_text(Path(FLEET).read_text() + "zone: {not: a zone}\n")
    for name, head in (("slow.jsonl", {**HEAD, "compression": 1e-300}),
                       ("long.jsonl", {**HEAD, "horizon_s": 1e300})):  # fmt: skip
        job = {"id": "j", "tenant": "team-a", "submit_s": 0, "gpus": 1, "duration_s": 5}
        (tmp / name).write_text(json.dumps({**head, "jobs": 1}) + "\n" + json.dumps(job) + "\n")
    partition = tmp / "export" / "billing_period=2026-01"
    partition.mkdir(parents=True)
    os.mkfifo(partition / "focus.parquet")
    os.mkfifo(tmp / "kubeconfig-fifo")


REPORT = ("report", "--ledger", "{tmp}/none", "--ladder", "{tmp}/none", "--diagnose", "{tmp}/none",
          "--store", "{tmp}/none.sqlite", "--out", "{tmp}/r.html")  # fmt: skip
NODES = (
    "collect",
    "--once",
    "--rates",
    "catalog:{tmp}/rates.json",
    "--store",
    "{tmp}/c.sqlite",
    *CLOSED_PROMETHEUS,
)
STORE_SAYS = "is this a gpu-finops cost store? (`gpu-finops collect` writes one)"

CASES: dict[str, Case] = {
    # a cost store whose rows parse but are no intervals (report, cost report)
    "report on a store whose start is no time": Case(
        (*REPORT[:7], "--store", "{tmp}/start-yesterday.sqlite", "--out", "{tmp}/r.html"),
        2,
        "the record of gpu-a at yesterday: ChargePeriodStart is 'yesterday'; expected an ISO 8601 time with a "
        "zone, in 1970-9998; " + STORE_SAYS,
    ),
    "cost report on a store whose interval ends before it starts": Case(
        ("cost", "report", "--store", "{tmp}/end-first.sqlite", "--png", "{tmp}/c.png"),
        2,
        "ChargePeriodEnd 2020-01-01T00:00:00Z is not after ChargePeriodStart 2026-11-30T10:00:00Z",
    ),
    "cost report on a store of 1e308 dollars": Case(
        ("cost", "report", "--store", "{tmp}/huge-cost.sqlite", "--png", "{tmp}/c.png"),
        2,
        "EffectiveCost is 1e+308; expected a figure within ±1e+12 (no interval costs more)",
    ),
    "report on a store whose holdings are an object": Case(
        (*REPORT[:7], "--store", "{tmp}/holdings-object.sqlite", "--out", "{tmp}/r.html"),
        2,
        "the holdings of gpu-a at 2026-11-30T10:00:00Z: <root>: expected a list, found object",
    ),
    "report on a directory as the store": Case(
        (*REPORT[:7], "--store", "{tmp}/config-dir", "--out", "{tmp}/r.html"),
        2,
        "gpu-finops report: --store {tmp}/config-dir: not a regular file (a directory, FIFO or device)",
    ),
    "report on a FIFO as the store": Case(
        (*REPORT[:7], "--store", "{tmp}/fifo", "--out", "{tmp}/r.html"),
        2,
        "gpu-finops report: --store {tmp}/fifo: not a regular file (a directory, FIFO or device)",
    ),
    # report inputs with times, paths and figures no run writes
    "report on an act at epoch 1e300": Case(
        ("report", "--acts", "{tmp}/epoch-1e300.json", *REPORT[1:]),
        2,
        "acts[1].phases[1][2]: expected epoch seconds in 1970-9997, found 1e+300",
    ),
    "report on an act before 1970": Case(
        ("report", "--acts", "{tmp}/epoch-negative.json", *REPORT[1:]),
        2,
        "acts[1].phases[1][2]: expected epoch seconds in 1970-9997, found -10000000000000.0",
    ),
    "report on evidence with a NUL": Case(
        ("report", "--acts", "{tmp}/evidence-nul.json", *REPORT[1:]),
        2,
        "acts[1].evidence: expected a path (without a NUL character), found 'ev\\x00dir'",
    ),
    "report on a ledger of 1e400 GPU-hours": Case(
        ("report", "--acts", "{tmp}/none.json", "--ledger", "{tmp}/ledger-1e400.json", *REPORT[3:]),
        2,
        'installed_gpu_hours: expected a decimal number written as a string, like "12.5", within ±1e+15, '
        "found '1e400'",
    ),
    "report on a ladder of negative GPUs": Case(
        (
            "report",
            "--acts",
            "{tmp}/none.json",
            "--ladder",
            "{tmp}/ladder-negative.json",
            *REPORT[1:3],
            *REPORT[5:],
        ),
        2,
        "rungs[1].mean_gpus: expected a decimal number that is not negative, found '-8'",
    ),
    # nodes, owners, rates and deadline files of the wrong shape
    "collect on a nodes file that is a list": Case(
        (*NODES, "--nodes", "file:{tmp}/nodes-list.json"),
        2,
        "gpu-finops collect: nodes file {tmp}/nodes-list.json: <root>: expected an object, found list",
    ),
    "collect on a node without a name": Case(
        (*NODES, "--nodes", "file:{tmp}/nodes-no-name.json"),
        2,
        "gpu-finops collect: nodes file {tmp}/nodes-no-name.json: items[1].metadata.name: required, missing",
    ),
    "collect on a node of 'abc' GPUs": Case(
        (*NODES, "--nodes", "file:{tmp}/nodes-abc.json"),
        2,
        "nodes file {tmp}/nodes-abc.json: items[1]: node 'gpu-1': nvidia.com/gpu capacity 'abc' is not a whole number",
    ),
    "collect on quoted prices": Case(
        (
            "collect",
            "--once",
            "--nodes",
            "file:{tmp}/nodes.json",
            "--rates",
            "catalog:{tmp}/rates-quoted.json",
            "--store",
            "{tmp}/c.sqlite",
            *CLOSED_PROMETHEUS,
        ),
        2,
        "g6e.xlarge.on-demand: expected a number, found string '1.86'",
    ),
    "collect on a price of true": Case(
        (
            "collect",
            "--once",
            "--nodes",
            "file:{tmp}/nodes.json",
            "--rates",
            "catalog:{tmp}/rates-true.json",
            "--store",
            "{tmp}/c.sqlite",
            *CLOSED_PROMETHEUS,
        ),
        2,
        "g6e.xlarge.on-demand: expected a number, found boolean True",
    ),
    "ledger on an owners file that is a list": Case(
        ("ledger", "month", "--month", "2026-11", "--owners", "{tmp}/owners-list.yaml", *CLOSED_PROMETHEUS),
        2,
        "gpu-finops ledger: owners file {tmp}/owners-list.yaml: expected a mapping line -> owner, found list",
    ),
    "ledger on owners that are lists": Case(
        (
            "ledger",
            "month",
            "--month",
            "2026-11",
            "--owners",
            "{tmp}/owners-numbers.yaml",
            *CLOSED_PROMETHEUS,
        ),
        2,
        "owners file {tmp}/owners-numbers.yaml: names no owner for: unschedulable_driver_rollout",
    ),
    "guard on a deadline file nested 30,000 deep": Case(
        ("guard", "run", "--deadline-file", "{tmp}/deadline-deep.json", "--", "true"),
        2,
        "deadline file {tmp}/deadline-deep.json is not JSON (nested too deep)",
    ),
    # durations, figures and names past what anything accepts
    "ledger --step empty": Case(
        ("ledger", "month", "--month", "2026-11", "--step", "", *CLOSED_PROMETHEUS),
        2,
        "gpu-finops ledger: --step is empty: give a duration like 1m, or leave the option out",
    ),
    "ledger --month empty": Case(
        ("ledger", "month", "--month", "", *CLOSED_PROMETHEUS),
        2,
        "gpu-finops ledger: --month '' is not a calendar month YYYY-MM",
    ),
    "ledger --window of 99999999999 days": Case(
        ("ledger", "ladder", "--window", "99999999999d", *CLOSED_PROMETHEUS),
        2,
        "'99999999999d' is longer than any window: at most 3660d",
    ),
    "cost report on an empty DynamoDB table name": Case(
        ("cost", "report", "--store", "dynamodb:"),
        2,
        "gpu-finops cost: --store dynamodb:: '' is not a DynamoDB table name (3-255 of letters, digits, '_', '-', '.')",
    ),
    "collect with a Prometheus URL no DNS name can be": Case(
        ("collect", "--once", "--nodes", "file:{tmp}/nodes.json", "--rates", "catalog:{tmp}/rates.json"),
        2,
        "gpu-finops collect: argument --prometheus-url: expected an http(s) URL like http://127.0.0.1:9090",
        env=(("PROMETHEUS_URL", "http://" + "a" * 100_000),),
    ),
    "twin generate in a zone that is a mapping": Case(
        ("twin", "generate", "--fleet", "{tmp}/zone.yaml", "--out", "{tmp}/t.jsonl"),
        2,
        "gpu-finops twin: fleet file {tmp}/zone.yaml: key 'zone': expected an availability zone like us-east-1a, "
        "found {{'not': 'a zone'}}",
    ),
    "twin generate --compression 1e-300": Case(
        ("twin", "generate", "--fleet", FLEET, "--out", "{tmp}/t.jsonl", "--compression", "1e-300"),
        2,
        "gpu-finops twin generate: argument --compression: expected a finite number >= 1 and <= 1e+06, got '1e-300'",
    ),
    "twin generate --training-median-h 1e-300": Case(
        ("twin", "generate", "--fleet", FLEET, "--out", "{tmp}/t.jsonl", "--training-median-h", "1e-300"),
        2,
        "gpu-finops twin generate: argument --training-median-h: expected a finite number >= 0.0166667",
    ),
    "twin erlang-trace --mean-s 1e-300": Case(
        ("twin", "erlang-trace", "--out", "{tmp}/t.jsonl", "--mean-s", "1e-300"),
        2,
        "gpu-finops twin erlang-trace: argument --mean-s: expected a finite number >= 1",
    ),
    "twin run on a trace of compression 1e-300": Case(
        ("twin", "run", "--fleet", FLEET, "--trace", "{tmp}/slow.jsonl", "--out", "{tmp}/r.json"),
        2,
        "gpu-finops twin: trace file {tmp}/slow.jsonl:1: key 'compression': expected a number from 1 to 1e+06, "
        "found 1e-300",
    ),
    "twin run on a trace of horizon 1e300": Case(
        ("twin", "run", "--fleet", FLEET, "--trace", "{tmp}/long.jsonl", "--out", "{tmp}/r.json"),
        2,
        "gpu-finops twin: trace file {tmp}/long.jsonl:1: key 'horizon_s': expected a number from 0 to 3.17088e+07, "
        "found 1e+300",
    ),
    # special files where a kubeconfig or a partition belongs: refused, never waited on
    "cost report on an export whose partition is a FIFO": Case(
        ("cost", "report", "--store", "{tmp}/good.sqlite", "--parquet", "{tmp}/export"),
        2,
        "focus.parquet is not a regular file (a FIFO, device or directory)",
    ),
    "diagnose on a kubeconfig that is a FIFO": Case(
        ("diagnose", "--all", "--kubeconfig", "{tmp}/kubeconfig-fifo"),
        2,
        "gpu-finops diagnose: --kubeconfig {tmp}/kubeconfig-fifo: not a regular file (a directory, FIFO or "
        "device); name a kubeconfig file",
    ),
    "collect with $KUBECONFIG a FIFO": Case(
        ("collect", "--once", "--rates", "catalog:{tmp}/rates.json", "--store", "{tmp}/c.sqlite"),
        2,
        "gpu-finops collect: $KUBECONFIG {tmp}/kubeconfig-fifo: not a regular file (a directory, FIFO or device)",
        env=(("KUBECONFIG", "{tmp}/kubeconfig-fifo"), ("KUBERNETES_SERVICE_HOST", "")),
    ),
}
