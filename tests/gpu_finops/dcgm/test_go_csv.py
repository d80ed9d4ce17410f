"""Our reader of dcgm-exporter's CSV against Go's own `encoding/csv` (tests/gpu_finops/dcgm/csvref), configured as the
exporter configures it: the rule table, reader edge cases and seeded random inputs must give the same
records, or the same error at the same line and column (moved from test_metrics_csv.py)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from gpu_finops.dcgm.go_csv import GoCsvError, read_go_csv
from gpu_finops.dcgm.metrics_csv import PROJECT_METRICS, MetricRow, render
from gpu_finops.facts import dcgm
from tests.gpu_finops.dcgm.metrics_csv_table import BOM, TABLE

CSVREF = Path(__file__).parent / "csvref"


# Reader edge cases beyond the table, for the comparison with Go only.
READER_EDGES: dict[str, bytes] = {
    "empty": b"",
    "only a newline": b"\n",
    "only CRs": b"\r\r\n\r",
    "empty fields": b",,\n,,\n",
    "a quoted empty field": b'"",a\n',
    "a lone quote": b'"',
    "a quote at the end of a quoted line": b'a,"b""\n',
    "a CR inside an unquoted field": b"a\rb,c\n",
    "CRLF inside quotes": b'a,"b\r\nc",d\r\n',
    "a quoted field then a bare quote on its next line": b'a,"b\nc",d"e\n',
    "a comment after a quoted field's line": b'a,"b\n#c",d\n#e\nf,g,h\n',
    "a # after a BOM": BOM + b"#x\n",
    "a quote after a BOM": BOM + b'"a",b\n',
    "unterminated at EOF without newline": b'a,"bc',
    "unterminated with a trailing CR": b'a,"b\n\r',
    "non-UTF-8 bytes": b"\xff,\xfe\n\xff\xfe,x\n",
    "a multi-byte rune before a comma": "é,ü\n".encode(),
    "field count after multi-line": b'a,b\n"c\nd",e,f\n',
}


def fuzz_documents(n: int = 1500, seed: int = 15) -> list[bytes]:
    tokens = [
        b"a",
        b"b",
        b",",
        b'"',
        b'""',
        b"#",
        b" ",
        b"\t",
        b"\r",
        b"\n",
        b"\r\n",
        BOM,
        b"\xff",
        "é".encode(),
    ]
    rng = random.Random(seed)
    return [b"".join(rng.choice(tokens) for _ in range(rng.randint(0, 14))) for _ in range(n)]


def ours(data: bytes) -> dict:
    try:
        return {"records": [list(r.fields) for r in read_go_csv(data)]}
    except GoCsvError as e:
        return {"error": {"kind": e.kind, "start_line": e.start_line, "line": e.line, "column": e.column}} | {
            "message": e.message
        }


def theirs(result: dict) -> dict:
    if "error" in result:
        err = result["error"]
        return {
            "error": {k: err[k] for k in ("kind", "start_line", "line", "column")},
            "message": err["message"],
        }
    return {"records": [[base64.b64decode(f) for f in rec] for rec in result.get("records", [])]}


@pytest.fixture(scope="session")
def go_csv_reader() -> Path:
    """tests/gpu_finops/dcgm/csvref built once per source and Go version, cached outside the clone."""
    go = shutil.which("go")
    if go is None:
        pytest.fail(
            "Go is not on PATH: the CSV reader is checked against Go's encoding/csv (install Go >= 1.22)"
        )
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0"}
    version = subprocess.run(
        [go, "env", "GOVERSION"], capture_output=True, text=True, env=env, check=True
    ).stdout
    digest = hashlib.sha256(
        version.encode() + (CSVREF / "go.mod").read_bytes() + (CSVREF / "main.go").read_bytes()
    ).hexdigest()[:16]
    cache = Path(os.environ.get("GPU_FINOPS_CACHE", Path.home() / ".cache" / "gpu-finops")) / "tools"
    binary = cache / f"csvref-{digest}" / "csvref"
    if not binary.is_file():
        binary.parent.mkdir(parents=True, exist_ok=True)
        partial = binary.with_name(f"csvref.{os.getpid()}.partial")
        built = subprocess.run(
            [go, "build", "-trimpath", "-o", str(partial), "."],
            cwd=CSVREF,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert built.returncode == 0, f"building {CSVREF} failed:\n{built.stdout}{built.stderr}"
        partial.replace(binary)
    return binary


def read_with_go(binary: Path, documents: list[bytes]) -> list[dict]:
    docs = json.dumps([base64.b64encode(d).decode() for d in documents])
    out = subprocess.run([str(binary)], input=docs, capture_output=True, text=True, timeout=120, check=True)
    return [theirs(r) for r in json.loads(out.stdout)]


@pytest.mark.parametrize("group", ["table", "reader edges", "seeded random"])
def test_our_reader_and_gos_encoding_csv_agree(go_csv_reader, group):
    documents = {
        "table": {case: data for case, (data, _) in TABLE.items()},
        "reader edges": READER_EDGES,
        "seeded random": {f"random {i}: {d!r}": d for i, d in enumerate(fuzz_documents())},
    }[group]
    go = read_with_go(go_csv_reader, list(documents.values()))
    differ = {
        name: {"ours": ours(data), "go": want}
        for (name, data), want in zip(documents.items(), go, strict=True)
        if ours(data) != want
    }
    assert not differ, json.dumps(differ, indent=1, default=repr)
    if group == "seeded random":  # the inputs reach every outcome, or they prove little
        kinds = {r["error"]["kind"] if "error" in r else "records" for r in go}
        assert kinds == {"records", "bare_quote", "quote", "field_count"}


def test_the_rendered_csv_reads_the_same_in_go(go_csv_reader):
    rows = (*PROJECT_METRICS, MetricRow(dcgm.FB_USED.replace("USED", "TOTAL"), "gauge", 'total, in "MiB"'))
    text = render(rows).encode()
    (go,) = read_with_go(go_csv_reader, [text])
    assert go == ours(text)
    assert [tuple(f.strip(b" ").decode() for f in rec) for rec in go["records"]] == [
        (r.field, r.prom_type, r.help) for r in rows
    ]
