"""Bad inputs of windows and output paths: options that contradict each other (a window named twice, a
billing period without the export it picks from, a reversed range) and outputs that cannot be written,
each refused with exit 2 before Prometheus, the store or AWS is read (run by test_bad_inputs.py)."""

from __future__ import annotations

from tests.gpu_finops.bad_inputs import Case

CLOSED_PROMETHEUS = ("--prometheus-url", "http://127.0.0.1:{closed}")

CASES: dict[str, Case] = {
    "ledger --month beside --to": Case(
        ("ledger", "month", "--month", "2026-11", "--to", "2026-12-01T00:00:00Z", *CLOSED_PROMETHEUS),
        2,
        "gpu-finops ledger: --to goes with --from; --month '2026-11' already names the whole window",
    ),
    "ledger --from in year 1": Case(
        (
            "ledger",
            "month",
            "--from",
            "0001-01-01T00:00:00Z",
            "--to",
            "2026-01-01T00:00:00Z",
            *CLOSED_PROMETHEUS,
        ),
        2,
        "gpu-finops ledger: --from '0001-01-01T00:00:00Z' is outside the years 1970-9998 (UTC) a window may span",
    ),
    "ledger --to reversed": Case(
        (
            "ledger",
            "month",
            "--from",
            "2026-02-01T00:00:00Z",
            "--to",
            "2026-01-01T00:00:00Z",
            *CLOSED_PROMETHEUS,
        ),
        2,
        "gpu-finops ledger: the window must be a positive whole number of 60s steps",
    ),
    "ledger --png not a .png": Case(
        ("ledger", "month", "--month", "2026-11", "--png", "{tmp}/chart.txt", *CLOSED_PROMETHEUS),
        2,
        "gpu-finops ledger month: argument --png: expected a path ending in .png, got '{tmp}/chart.txt'",
    ),
    "ledger --png under a file": Case(
        ("ledger", "ladder", "--png", "{tmp}/a-file/chart.png", *CLOSED_PROMETHEUS),
        2,
        "gpu-finops ledger ladder: argument --png: cannot create {tmp}/a-file/chart.png: {tmp}/a-file is not a directory",
    ),
    "cost report --period without --parquet": Case(
        ("cost", "report", "--store", "{tmp}/none.sqlite", "--period", "2026-11"),
        2,
        "gpu-finops cost: --period 2026-11 picks a billing period of a FOCUS export: give --parquet with it",
    ),
    "cost report --since after --until": Case(
        (
            "cost",
            "report",
            "--store",
            "{tmp}/none.sqlite",
            "--since",
            "2026-12-01T00:00:00Z",
            "--until",
            "2026-11-01T00:00:00Z",
        ),
        2,
        "gpu-finops cost: --since 2026-12-01T00:00:00+00:00 is not before --until 2026-11-01T00:00:00+00:00",
    ),
    "cost export --since equal to --until": Case(
        (
            "cost",
            "export",
            "--store",
            "{tmp}/none.sqlite",
            "--out",
            "{tmp}/export",
            "--since",
            "2026-11-01T00:00:00Z",
            "--until",
            "2026-11-01T00:00:00Z",
        ),
        2,
        "gpu-finops cost: --since 2026-11-01T00:00:00+00:00 is not before --until 2026-11-01T00:00:00+00:00",
    ),
    "cost report --json a directory": Case(
        ("cost", "report", "--store", "{tmp}/none.sqlite", "--json", "{tmp}/config-dir"),
        2,
        "gpu-finops cost report: argument --json: {tmp}/config-dir is a directory; name a file",
    ),
    "cost report --png /dev/full": Case(
        ("cost", "report", "--store", "{tmp}/none.sqlite", "--png", "/dev/full"),
        2,
        "gpu-finops cost report: argument --png: expected a path ending in .png, got '/dev/full'",
    ),
    "report --out a FIFO": Case(
        ("report", "--out", "{tmp}/fifo"),
        2,
        "gpu-finops report: argument --out: {tmp}/fifo is a symlink, FIFO or device, not a regular file",
    ),
    "report --out /dev/full": Case(
        ("report", "--out", "/dev/full"),
        2,
        "gpu-finops report: argument --out: /dev/full is a symlink, FIFO or device, not a regular file",
    ),
}
