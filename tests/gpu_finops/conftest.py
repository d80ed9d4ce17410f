"""The bad inputs' folder (tests/gpu_finops/bad_inputs.py): the files the cases name, a closed port, a
FIFO for the tables that want one, and the runner every table shares."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from gpu_finops.dcgm.metrics_csv import MAX_CSV_BYTES
from tests.gpu_finops.bad_inputs import CONFIGS, Case, check, closed_port


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A folder with a short path: the messages elide a value past gpu_finops.facts.errors' limit, and pytest's own
    tmp_path under xdist (`.../popen-gw1/test_a_bad_input_ends_with_its92/`) is long enough to be elided,
    so the line the case expects would name a path the message shortened."""
    path = Path(tempfile.mkdtemp(prefix="gf-bad-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def inputs(short_tmp: Path, fake_prometheus: str) -> dict[str, str]:
    tmp_path = short_tmp
    for name, text in CONFIGS.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "latin1.yaml").write_bytes(b"cluster_name: caf\xe9\n")
    (tmp_path / "config-dir").mkdir()
    (tmp_path / "a-file").write_text("not a directory\n")
    (tmp_path / "big.csv").write_text("#" * (MAX_CSV_BYTES + 1))
    (tmp_path / "bad-row.csv").write_text("DCGM_FI_PROF_SM_ACTIVE, gauge\n")
    (tmp_path / "nodes.json").write_text(json.dumps({"items": []}))
    (tmp_path / "rates.json").write_text(json.dumps({"g6e.xlarge": {"on-demand": 1.86, "spot": 0.6}}))
    port = closed_port()
    (tmp_path / "kubeconfig").write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    _safety_files(tmp_path)
    return {"tmp": str(tmp_path), "closed": str(port), "prom": fake_prometheus}


@pytest.fixture
def bad_input(inputs: dict[str, str], capsys, monkeypatch, request) -> Callable[[Case], None]:
    """The runner of every bad-input table: `bad_input(case)` runs the case in the test's folder and checks
    it (bad_inputs.check: its exit code, one stderr line saying what it says, no traceback)."""
    return lambda case: check(case, inputs, capsys, monkeypatch, request)


@pytest.fixture
def fifo(inputs: dict[str, str]) -> Path:
    """{tmp}/fifo: nothing ever writes it, so a read that blocks would hang the test."""
    path = Path(inputs["tmp"], "fifo")
    os.mkfifo(path)
    return path


ANSWERS = {  # a path prefix on the fake Prometheus -> the body it answers every query with
    "deep": b"[" * 100_000 + b"]" * 100_000,  # JSON nested beyond Python's recursion limit
    "html": b"<html><body>Grafana</body></html>",
    "list": b"[]",
    "nodata": b'{"status": "success"}',
    "nonnumber": b'{"status": "success", "data": {"resultType": "vector", "result": '
    b'[{"metric": {"Hostname": "n"}, "value": [1, "many"]}]}}',
    "matrixnonnumber": b'{"status": "success", "data": {"resultType": "matrix", "result": '
    b'[{"metric": {}, "values": [[1, "many"]]}]}}',
}


@pytest.fixture(scope="session")
def fake_prometheus() -> Iterator[str]:
    """An HTTP server answering /<kind>/api/v1/... with ANSWERS[kind]: a Prometheus URL that is not one."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = ANSWERS.get(self.path.strip("/").split("/")[0], b"{}")
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _safety_files(tmp: Path) -> None:
    """The files the issue-24 cases name: stores, a foreign SQLite file, broken exports."""
    import sqlite3

    import pyarrow as pa
    import pyarrow.parquet as pq

    from gpu_finops.cost.store import SqliteCostStore

    SqliteCostStore(tmp / "empty.sqlite").close()
    foreign = sqlite3.connect(tmp / "foreign.sqlite")
    foreign.execute("CREATE TABLE songs (title TEXT)")
    foreign.execute("PRAGMA user_version = 7")
    foreign.commit()
    foreign.close()
    (tmp / "not-sqlite.sqlite").write_text("hello\n")
    corrupt = tmp / "corrupt" / "billing_period=2026-11"
    corrupt.mkdir(parents=True)
    (corrupt / "focus.parquet").write_bytes(b"PAR1 not really")
    wrong = tmp / "wrong-schema" / "billing_period=2026-11"
    wrong.mkdir(parents=True)
    pq.write_table(pa.table({"song": ["a"]}), wrong / "focus.parquet")
    (tmp / "plan.json").write_text("{}")
