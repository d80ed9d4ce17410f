"""The metrics CSV rule table: for each rule, inputs where it holds and inputs where it fails, with the
precise reason (moved from test_metrics_csv.py; test_go_csv.py feeds the same inputs to Go's reader)."""

from __future__ import annotations

from dataclasses import dataclass

HEADER = b"# Format\n# DCGM FIELD, Prometheus metric type, help message\nDCGM_FI_PROF_SM_ACTIVE, gauge, ok\n"
FIRST = ("DCGM_FI_PROF_SM_ACTIVE", "gauge", "ok")
BOM = "\ufeff".encode()

UNKNOWN = "is not a DCGM field dcgm-exporter 4.6.0-4.8.3 knows (go-dcgm v1.4601.1)"
TYPES = "known: ['counter', 'gauge', 'label', 'untyped']"
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
        + b"DCGM_FI_DEV_GPU_UTIL, untyped, a\nDCGM_FI_DEV_FB_USED, gauge, b\n"
        + b"DCGM_FI_DRIVER_VERSION, label, c\nDCGM_FI_DEV_FB_FREE, counter, d\n",
        Holds(
            (
                FIRST,
                ("DCGM_FI_DEV_GPU_UTIL", "untyped", "a"),
                ("DCGM_FI_DEV_FB_USED", "gauge", "b"),
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
    "a type 4.8.3 no longer renders (it took histogram and summary before)": (
        HEADER + b"DCGM_FI_DEV_GPU_UTIL, histogram, a\n",
        Fails(4, f"unknown prom type 'histogram'; {TYPES}"),
    ),
    "an exporter counter, whose type 4.8.3 checks too": (
        HEADER + b"DCGM_EXP_XID_ERRORS_COUNT, gauge, xid\nDCGM_EXP_CLOCK_EVENTS_TOTAL, counter, ce\n",
        Holds(
            (
                FIRST,
                ("DCGM_EXP_XID_ERRORS_COUNT", "gauge", "xid"),
                ("DCGM_EXP_CLOCK_EVENTS_TOTAL", "counter", "ce"),
            )
        ),
    ),
    "an exporter counter with a bad type": (
        HEADER + b"DCGM_EXP_CLOCK_EVENTS_COUNT, histogramm, ce\n",
        Fails(4, f"unknown prom type 'histogramm'; {TYPES}"),
    ),
    "the type is checked before the name": (
        HEADER + b"DCGM_FI_DEV_GPU_UTILISATION, Gauge, util\n",
        Fails(4, f"unknown prom type 'Gauge'; {TYPES} (prom types are lower case)"),
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
