"""The dcgm metrics CSV: read exactly as dcgm-exporter reads it (Go's encoding/csv, then its field checks).

One table holds each rule: rows where it holds and rows where it fails, with the precise reason. The same
table, plus reader edge cases and seeded random inputs, goes through a real Go `encoding/csv` reader
configured as dcgm-exporter configures it (tests/infra/csvref), and our reader must return the same
records, or the same error at the same line and column, for every one.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from facts import dcgm
from infra.metrics_csv import (
    EXPORTER_DEFAULT_METRICS,
    MAX_CSV_BYTES,
    PROJECT_METRICS,
    GoCsvError,
    MetricRow,
    MetricsCsvError,
    MetricsCsvTooLarge,
    exported_fields,
    parse,
    read_go_csv,
    render,
)

CSVREF = Path(__file__).parent / "csvref"

HEADER = b"# Format\n# DCGM FIELD, Prometheus metric type, help message\nDCGM_FI_PROF_SM_ACTIVE, gauge, ok\n"
FIRST = ("DCGM_FI_PROF_SM_ACTIVE", "gauge", "ok")
BOM = "\ufeff".encode()

UNKNOWN = "is not a DCGM field dcgm-exporter 4.2.3-4.1.3 knows (go-dcgm v0.0.0-20250401195952-7c92211ba301)"
TYPES = "known: ['counter', 'gauge', 'histogram', 'label', 'summary']"
BARE = (
    "a field that holds a quote must be quoted whole: the opening quote right after the comma, with no "
    "space before it, and each quote inside doubled"
)
SPLIT = "a comma in the help text splits it: quote the help text, the opening quote right after the comma"
BOM_HINT = (
    "the file starts with a UTF-8 byte order mark, which the exporter reads as text: line 1's first field "
    "starts with U+FEFF and a `#` after it starts no comment; save the file without it"
)
STRICTER = "a project rule, stricter than the exporter"


def count(first_line: int, first: int, this: int) -> str:
    return (
        f"the first record, on line {first_line}, has {first} field(s) and every record must match it; "
        f"this one has {this}"
    )


@dataclass(frozen=True)
class Holds:
    rows: tuple[tuple[str, str, str], ...]


@dataclass(frozen=True)
class Fails:
    line: int
    reason: str


TABLE: dict[str, tuple[bytes, Holds | Fails]] = {
    # quoting
    "a quoted comma in the help text": (
        HEADER + b'DCGM_FI_DEV_GPU_UTIL, gauge,"GPU utilization, in %."\n',
        Holds((FIRST, ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization, in %."))),
    ),
    "doubled quotes in a quoted field": (
        HEADER + b'DCGM_FI_DEV_GPU_UTIL, gauge,"the ""util"" one"\n',
        Holds((FIRST, ("DCGM_FI_DEV_GPU_UTIL", "gauge", 'the "util" one'))),
    ),
    "a quoted help text over two lines": (
        HEADER + b'DCGM_FI_DEV_GPU_UTIL, gauge,"first\nsecond"\nDCGM_FI_DEV_FB_USED, gauge, fb\n',
        Holds(
            (
                FIRST,
                ("DCGM_FI_DEV_GPU_UTIL", "gauge", "first\nsecond"),
                ("DCGM_FI_DEV_FB_USED", "gauge", "fb"),
            )
        ),
    ),
    "a bare quote: a space before the opening quote": (
        HEADER + b'DCGM_FI_DEV_GPU_UTIL, gauge, "GPU utilization, in %."\n',
        Fails(4, f'parse error on line 4, column 30: bare " in non-quoted-field ({BARE})'),
    ),
    "a bare quote inside a field": (
        HEADER + b'DCGM_FI_DEV_GPU_UTIL, gauge, a 27" display\n',
        Fails(4, f'parse error on line 4, column 34: bare " in non-quoted-field ({BARE})'),
    ),
    "text after a closing quote": (
        HEADER + b'DCGM_FI_DEV_GPU_UTIL, gauge,"util "x" more"\n',
        Fails(
            4,
            'parse error on line 4, column 35: extraneous or missing " in quoted-field (inside a quoted '
            "field a quote is written twice, and the closing quote must be followed by a comma or the end "
            "of the line)",
        ),
    ),
    "a quoted field never closed": (
        HEADER + b'DCGM_FI_DEV_GPU_UTIL, gauge,"never closed\nDCGM_FI_DEV_FB_USED, gauge, fb\n',
        Fails(
            5,
            'record on line 4; parse error on line 5, column 32: extraneous or missing " in quoted-field '
            "(a quoted field is never closed: it runs on to the end of the file)",
        ),
    ),
    # comments, blank lines, line endings
    "a comment in column 1 mid-file": (
        HEADER + b"# DCGM_FI_DEV_FB_FREE, gauge, commented out\nDCGM_FI_DEV_GPU_UTIL, gauge, util\n",
        Holds((FIRST, ("DCGM_FI_DEV_GPU_UTIL", "gauge", "util"))),
    ),
    "a # inside the help text": (
        HEADER + b"DCGM_FI_DEV_GPU_UTIL, gauge, util # not a comment\n",
        Holds((FIRST, ("DCGM_FI_DEV_GPU_UTIL", "gauge", "util # not a comment"))),
    ),
    "an indented # comment with three fields": (
        HEADER + b"  # DCGM_FI_DEV_FB_FREE, gauge, commented out\n",
        Fails(
            4,
            f"field '# DCGM_FI_DEV_FB_FREE' {UNKNOWN} (line 4 is not a comment: `#` starts one only in the "
            "first column; perhaps DCGM_FI_DEV_FB_FREE was meant)",
        ),
    ),
    "an indented # comment": (
        HEADER + b"  # an indented comment\n",
        Fails(
            4,
            f"record on line 4: wrong number of fields ({count(3, 3, 1)}; line 4 is not a comment: `#` "
            "starts one only in the first column)",
        ),
    ),
    "empty lines, LF and CRLF": (
        HEADER + b"\n\r\n\nDCGM_FI_DEV_GPU_UTIL, gauge, util\n",
        Holds((FIRST, ("DCGM_FI_DEV_GPU_UTIL", "gauge", "util"))),
    ),
    "a whitespace-only line": (
        HEADER + b"   \nDCGM_FI_DEV_GPU_UTIL, gauge, util\n",
        Fails(
            4,
            f"record on line 4: wrong number of fields ({count(3, 3, 1)}; line 4 holds only whitespace, "
            "which is a record, not a blank line)",
        ),
    ),
    "a tab-only line": (
        HEADER + b"\t\n",
        Fails(
            4,
            f"record on line 4: wrong number of fields ({count(3, 3, 1)}; line 4 holds only whitespace, "
            "which is a record, not a blank line)",
        ),
    ),
    "CRLF line endings": (
        HEADER.replace(b"\n", b"\r\n") + b"DCGM_FI_DEV_GPU_UTIL, gauge, util\r\n",
        Holds((FIRST, ("DCGM_FI_DEV_GPU_UTIL", "gauge", "util"))),
    ),
    "no newline at the end": (
        HEADER + b"DCGM_FI_DEV_GPU_UTIL, gauge, util",
        Holds((FIRST, ("DCGM_FI_DEV_GPU_UTIL", "gauge", "util"))),
    ),
    "a lone CR at the end": (
        HEADER + b"DCGM_FI_DEV_GPU_UTIL, gauge, util\r",
        Holds((FIRST, ("DCGM_FI_DEV_GPU_UTIL", "gauge", "util"))),
    ),
    "a BOM before the header comment": (
        BOM + HEADER,
        Fails(3, f"record on line 3: wrong number of fields ({count(1, 1, 3)}; {BOM_HINT})"),
    ),
    "a BOM before the first row": (
        BOM + b"DCGM_FI_PROF_SM_ACTIVE, gauge, ok\n",
        Fails(
            1,
            f"field '\\ufeffDCGM_FI_PROF_SM_ACTIVE' {UNKNOWN} (perhaps DCGM_FI_PROF_SM_ACTIVE was meant; "
            f"{BOM_HINT})",
        ),
    ),
    # field counts (FieldsPerRecord 0: the first record sets it), then the exporter's three fields
    "a comma in unquoted help text": (
        HEADER + b"DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization, in %\n",
        Fails(4, f"record on line 4: wrong number of fields ({count(3, 3, 4)}; {SPLIT})"),
    ),
    "a first row of four fields": (
        b"DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization, in %\n",
        Fails(1, f"expected exactly 3 fields (field, prom type, help), found 4 ({SPLIT})"),
    ),
    "a first row of two fields, then three": (
        b"DCGM_FI_DEV_GPU_UTIL, gauge\nDCGM_FI_DEV_FB_USED, gauge, fb\n",
        Fails(2, f"record on line 2: wrong number of fields ({count(1, 2, 3)})"),
    ),
    # the exporter's field checks
    "a tab before the type": (
        HEADER + b"DCGM_FI_DEV_GPU_UTIL,\tgauge, util\n",
        Fails(
            4,
            f"unknown prom type '\\tgauge'; {TYPES} (only spaces around a field are trimmed, not '\\tgauge')",
        ),
    ),
    "spaces around fields are trimmed": (
        HEADER + b"  DCGM_FI_DEV_GPU_UTIL  ,  gauge  ,  util  \n",
        Holds((FIRST, ("DCGM_FI_DEV_GPU_UTIL", "gauge", "util"))),
    ),
    "a type in capitals": (
        HEADER + b"DCGM_FI_DEV_GPU_UTIL, Gauge, util\n",
        Fails(4, f"unknown prom type 'Gauge'; {TYPES} (prom types are lower case)"),
    ),
    "every type the exporter knows": (
        HEADER
        + b"DCGM_FI_DEV_GPU_UTIL, histogram, a\nDCGM_FI_DEV_FB_USED, summary, b\n"
        + b"DCGM_FI_DRIVER_VERSION, label, c\nDCGM_FI_DEV_FB_FREE, counter, d\n",
        Holds(
            (
                FIRST,
                ("DCGM_FI_DEV_GPU_UTIL", "histogram", "a"),
                ("DCGM_FI_DEV_FB_USED", "summary", "b"),
                ("DCGM_FI_DRIVER_VERSION", "label", "c"),
                ("DCGM_FI_DEV_FB_FREE", "counter", "d"),
            )
        ),
    ),
    "a field name DCGM does not know": (
        HEADER + b"DCGM_FI_DEV_GPU_UTILISATION, gauge, util\n",
        Fails(4, f"field 'DCGM_FI_DEV_GPU_UTILISATION' {UNKNOWN}"),
    ),
    "a field name in lower case": (
        HEADER + b"dcgm_fi_dev_gpu_util, gauge, util\n",
        Fails(4, f"field 'dcgm_fi_dev_gpu_util' {UNKNOWN} (perhaps DCGM_FI_DEV_GPU_UTIL was meant)"),
    ),
    "a legacy field name go-dcgm still maps": (
        HEADER + b"dcgm_sm_clock, gauge, legacy name\n",
        Holds((FIRST, ("dcgm_sm_clock", "gauge", "legacy name"))),
    ),
    "an exporter counter, whose type the exporter does not check": (
        HEADER + b"DCGM_EXP_XID_ERRORS_COUNT, gauge, xid\nDCGM_EXP_CLOCK_EVENTS_COUNT, histogramm, ce\n",
        Holds(
            (
                FIRST,
                ("DCGM_EXP_XID_ERRORS_COUNT", "gauge", "xid"),
                ("DCGM_EXP_CLOCK_EVENTS_COUNT", "histogramm", "ce"),
            )
        ),
    ),
    # project rules, stricter than the exporter
    "empty help text": (
        HEADER + b"DCGM_FI_DEV_GPU_UTIL, gauge, \n",
        Fails(4, f"empty help text ({STRICTER})"),
    ),
    "a field listed twice": (
        HEADER + b"DCGM_FI_PROF_SM_ACTIVE, gauge, again\n",
        Fails(4, f"field DCGM_FI_PROF_SM_ACTIVE already listed on line 3 ({STRICTER})"),
    ),
    "help text that is not UTF-8": (
        HEADER + b"DCGM_FI_DEV_GPU_UTIL, gauge, caf\xe9\n",
        Fails(4, f"the help text is not UTF-8 text ({STRICTER})"),
    ),
    "only comments": (
        b"# Format\n# nothing\n",
        Fails(0, "no metric rows: the exporter would export nothing"),
    ),
}


@pytest.mark.parametrize("case", TABLE)
def test_each_rule_holds_and_fails_with_the_precise_reason(case):
    data, expect = TABLE[case]
    if isinstance(expect, Holds):
        assert tuple((r.field, r.prom_type, r.help) for r in parse(data, source="x.csv")) == expect.rows
        return
    with pytest.raises(MetricsCsvError) as info:
        parse(data, source="x.csv")
    assert (info.value.line_no, info.value.reason) == (expect.line, expect.reason)
    if expect.line:
        assert str(info.value).startswith(f"x.csv:{expect.line}: {expect.reason}: ")


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
    """tests/infra/csvref built once per source and Go version, cached outside the clone."""
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


def test_project_csv_exports_sm_active_and_every_collected_metric():
    fields = exported_fields(render())
    assert dcgm.SM_ACTIVE in fields
    assert set(dcgm.COLLECTED) <= fields
    assert {
        dcgm.SM_OCCUPANCY,
        dcgm.GR_ENGINE_ACTIVE,
        dcgm.PIPE_TENSOR_ACTIVE,
        dcgm.DRAM_ACTIVE,
        dcgm.FB_USED,
        dcgm.FB_FREE,
    } <= fields
    assert set(dcgm.DIAGNOSED) <= fields  # what the pending-pod diagnosis reads


def test_exporter_default_has_no_sm_active():
    assert dcgm.SM_ACTIVE not in {r.field for r in EXPORTER_DEFAULT_METRICS}


def test_help_text_with_a_comma_or_quote_is_rendered_quoted():
    row = MetricRow(dcgm.FB_USED, "gauge", 'used, in "MiB"')
    assert row.line() == 'DCGM_FI_DEV_FB_USED, gauge,"used, in ""MiB"""'
    assert parse(render((row,)))[0] == row


def test_a_bad_typed_row_fails_rendering_naming_it():
    bad = (*PROJECT_METRICS, MetricRow(dcgm.FB_USED + "_X", "gauge", "used, in MiB"))
    with pytest.raises(MetricsCsvError, match="DCGM_FI_DEV_FB_USED_X"):
        render(bad)


def test_input_over_the_cap_is_refused():
    with pytest.raises(MetricsCsvTooLarge, match="over 1,048,576 bytes, refused unread"):
        parse(b"#" * (MAX_CSV_BYTES + 1), source="big.csv")


def cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gpu_finops.cli", "check-metrics-csv", *argv], capture_output=True, text=True
    )


@pytest.mark.parametrize(
    "content, code, says",
    [
        (None, 0, "valid: 14 metrics"),
        (b'DCGM_FI_PROF_SM_ACTIVE, gauge,"ratio, 0..1"\n', 0, "valid: 1 metrics"),
        (b"DCGM_FI_DEV_GPU_UTIL, gauge, util, percent\n", 1, ":1: expected exactly 3 fields"),
        (
            HEADER + b'DCGM_FI_DEV_GPU_UTIL, gauge, "util, %"\n',
            1,
            ':4: parse error on line 4, column 30: bare "',
        ),
        (HEADER + b"DCGM_FI_DEV_GPU_UTIL, gauge, caf\xe9\n", 1, ":4: the help text is not UTF-8 text"),
        (b"#" * (MAX_CSV_BYTES + 1), 2, "over 1,048,576 bytes, refused unread"),
    ],
    ids=["project", "quoted comma", "four fields", "bare quote", "not utf-8", "too large"],
)
def test_check_metrics_csv_command(tmp_path, content, code, says):
    path = tmp_path / "m.csv"
    path.write_bytes(content if content is not None else render().encode())
    result = cli(str(path))
    assert result.returncode == code, result.stderr
    assert says in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("target, says", [("missing.csv", "No such file"), (".", "Is a directory")])
def test_check_metrics_csv_unreadable_is_exit_2(tmp_path, target, says):
    result = cli(str(tmp_path / target))
    assert result.returncode == 2 and says in result.stderr and "Traceback" not in result.stderr


def test_check_metrics_csv_warns_without_sm_active(tmp_path):
    path = tmp_path / "default.csv"
    path.write_text(render(EXPORTER_DEFAULT_METRICS))
    result = cli(str(path))
    assert result.returncode == 0
    assert "DCGM_FI_PROF_SM_ACTIVE is not exported" in result.stderr
