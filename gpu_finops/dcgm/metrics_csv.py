"""The dcgm-exporter metrics CSV: generated from a typed list and validated exactly as the exporter reads it.

dcgm-exporter (the version pinned in gpu_finops/facts/config.py, 4.6.0-4.8.3) reads the file with Go's encoding/csv
(`csv.NewReader`, `Comment = '#'`, `ReadAll`, every other option at its default) and then checks each
record (`ExtractCounters`, internal/pkg/counters/counter_config.go at the tag). Both steps are reproduced:

- CSV syntax, Go's rules (`read_go_csv`, in gpu_finops/dcgm/go_csv.py): fields split on commas; a field that starts
  with `"` is quoted, so commas and newlines inside it are text and `""` is one quote; a `"` anywhere in
  an unquoted field is an error (LazyQuotes is off), and a space before the opening quote makes the field
  unquoted; `#` starts a comment only in the first column; empty lines are skipped, but a line of spaces
  is a record; CRLF reads as LF; a UTF-8 byte order mark is not stripped. FieldsPerRecord is 0, so the
  first record fixes the field count of every later one. The first error ends the read, as ReadAll does.
- The exporter's checks, in its order, after trimming spaces (spaces only, not tabs) around each field:
  three fields; a Prometheus type it can render (`promMetricType` in internal/pkg/counters/variables.go:
  counter, gauge, label, untyped; since 4.8.3 checked on every row, the exporter's own counters too, and
  before the field name); a field name go-dcgm knows (current or legacy name) or one of the exporter's own
  counters, listed in dcgm_field_names.json with its source and version. It skips profiling rows the GPU
  cannot collect after those checks; this checks every row, since the same CSV ships to every GPU.
- Project rules, stricter than the exporter: every field is UTF-8, the help text is not empty, no field is
  listed twice, there is at least one row, and the file is at most MAX_CSV_BYTES.

tests/gpu_finops/dcgm/test_go_csv.py runs Go's own reader over the same inputs, so the two cannot drift.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from gpu_finops.dcgm.go_csv import CsvRecord, GoCsvError, read_go_csv
from gpu_finops.facts import dcgm

_NAMES = json.loads(Path(__file__).with_name("dcgm_field_names.json").read_text())
DCGM_EXPORTER_VERSION: str = _NAMES["dcgm_exporter"]
GO_DCGM_VERSION: str = _NAMES["go_dcgm"]
# go-dcgm's GetFieldID: the current names, then the legacy ones.
KNOWN_FIELDS = frozenset(_NAMES["fields"]) | frozenset(_NAMES["legacy_fields"])
# The exporter's own counters (IdentifyMetricType), accepted without a type check.
EXPORTER_FIELDS = frozenset(_NAMES["exporter_fields"]) - KNOWN_FIELDS
# dcgm-exporter's promMetricType (internal/pkg/counters/variables.go at 4.6.0-4.8.3): the scalar types it
# renders. Before 4.8.3 it also took histogram and summary.
KNOWN_PROM_TYPES = frozenset({"counter", "gauge", "label", "untyped"})
# The exporter's default CSV is about 10 KB; a file a hundred times that is not a metrics CSV.
MAX_CSV_BYTES = 1 << 20
UTF8_BOM = b"\xef\xbb\xbf"
_STRICTER = "a project rule, stricter than the exporter"


class MetricsCsvError(ValueError):
    """A metrics CSV row the exporter would reject. Names the row and the reason."""

    def __init__(self, line_no: int, row: str, reason: str, source: str = "<csv>"):
        self.line_no, self.row, self.reason, self.source = line_no, row, reason, source
        super().__init__(f"{source}:{line_no}: {reason}: {row!r}" if line_no else f"{source}: {reason}")


class MetricsCsvTooLarge(MetricsCsvError):
    """The input is over MAX_CSV_BYTES: refused unread, not checked."""


# ---------------------------------------------------------------------------------------------------------
# The exporter's checks, and ours


@dataclass(frozen=True)
class MetricRow:
    """One exported DCGM field."""

    field: str
    prom_type: str
    help: str

    def line(self) -> str:
        help_text = self.help
        if any(c in help_text for c in ',"\r\n') or help_text != help_text.strip(" "):
            # Quoted, with the opening quote right after the comma: a space before it would make the
            # field unquoted, and its quotes bare.
            help_text = '"' + help_text.replace('"', '""') + '"'
            return f"{self.field}, {self.prom_type},{help_text}"
        return f"{self.field}, {self.prom_type}, {help_text}"


# The project's metrics: SM_ACTIVE and friends switched on (dcgm-exporter ships them commented out).
PROJECT_METRICS: tuple[MetricRow, ...] = (
    MetricRow(dcgm.SM_ACTIVE, "gauge", "Ratio of cycles an SM has at least 1 warp assigned."),
    MetricRow(
        dcgm.SM_OCCUPANCY,
        "gauge",
        "Ratio of number of warps resident to theoretical maximum warps per cycle.",
    ),
    MetricRow(dcgm.GR_ENGINE_ACTIVE, "gauge", "Ratio of time the graphics engine is active."),
    MetricRow(dcgm.PIPE_TENSOR_ACTIVE, "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
    MetricRow(
        dcgm.DRAM_ACTIVE,
        "gauge",
        "Ratio of cycles the device memory interface is active sending or receiving data.",
    ),
    MetricRow(dcgm.GPU_UTIL, "gauge", "GPU utilization (in %)."),
    MetricRow(dcgm.POWER_USAGE, "gauge", "Power draw (in W)."),
    MetricRow(dcgm.SM_CLOCK, "gauge", "SM clock frequency (in MHz)."),
    MetricRow(dcgm.FB_USED, "gauge", "Framebuffer memory used (in MiB)."),
    MetricRow(dcgm.FB_FREE, "gauge", "Framebuffer memory free (in MiB)."),
    MetricRow(
        dcgm.PCIE_TX_BYTES,
        "gauge",
        "The rate of data transmitted over the PCIe bus - including both protocol headers and data "
        "payloads - in bytes per second.",
    ),
    MetricRow(
        dcgm.PCIE_RX_BYTES,
        "gauge",
        "The rate of data received over the PCIe bus - including both protocol headers and data "
        "payloads - in bytes per second.",
    ),
    MetricRow(
        dcgm.NVLINK_TX_BYTES,
        "gauge",
        "The rate of data transmitted over NVLink - not including protocol headers - in bytes per second.",
    ),
    MetricRow(
        dcgm.NVLINK_RX_BYTES,
        "gauge",
        "The rate of data received over NVLink - not including protocol headers - in bytes per second.",
    ),
)

# dcgm-exporter's own default counters file leaves every DCGM_FI_PROF_* row commented out; this is
# the shape of it that matters to us (used by the local target to prove a collector notices).
EXPORTER_DEFAULT_METRICS: tuple[MetricRow, ...] = tuple(
    r for r in PROJECT_METRICS if not r.field.startswith("DCGM_FI_PROF_")
)


def _whitespace_only(fields: Iterable[bytes]) -> bool:
    return all(not f.strip() for f in fields)


def _record_hints(record: CsvRecord) -> list[str]:
    """Why a record the author meant as no record at all is one."""
    if _whitespace_only(record.fields):
        return [f"line {record.line} holds only whitespace, which is a record, not a blank line"]
    if record.fields and record.fields[0].lstrip().startswith(b"#"):
        return [f"line {record.line} is not a comment: `#` starts one only in the first column"]
    return []


_SPLIT_HELP = (
    "a comma in the help text splits it: quote the help text, the opening quote right after the comma"
)
_BOM = (
    "the file starts with a UTF-8 byte order mark, which the exporter reads as text: line 1's first field "
    "starts with U+FEFF and a `#` after it starts no comment; save the file without it"
)


def _syntax_problem(exc: GoCsvError) -> tuple[str, list[str]]:
    """Go's own message for a CSV syntax error, and what to do about it."""
    hints: list[str] = []
    if exc.kind == "field_count" and exc.first is not None:
        first, this = len(exc.first.fields), len(exc.record)
        hints.append(
            f"the first record, on line {exc.first.line}, has {first} field(s) and every record must "
            f"match it; this one has {this}"
        )
        hints += _record_hints(exc.first) + _record_hints(CsvRecord(exc.start_line, exc.record))
        if this > first == 3:
            hints.append(_SPLIT_HELP)
    elif exc.kind == "bare_quote":
        hints.append(
            "a field that holds a quote must be quoted whole: the opening quote right after the comma, "
            "with no space before it, and each quote inside doubled"
        )
    elif exc.kind == "quote":
        hints.append(
            "inside a quoted field a quote is written twice, and the closing quote must be followed by "
            "a comma or the end of the line"
            if exc.start_line == exc.line
            else "a quoted field is never closed: it runs on to the end of the file"
        )
    return exc.message, hints


def _record_problem(record: CsvRecord) -> tuple[str, list[str], MetricRow | None]:
    """The exporter's checks, then the project's: (reason, hints, None) or ("", [], row)."""
    fields = [f.strip(b" ") for f in record.fields]  # strings.Trim(field, " "): spaces only
    if len(fields) != 3:
        hints = _record_hints(record) + ([_SPLIT_HELP] if len(fields) > 3 else [])
        return f"expected exactly 3 fields (field, prom type, help), found {len(fields)}", hints, None
    name, prom_type, help_text = (f.decode("utf-8", "surrogateescape") for f in fields)
    if prom_type not in KNOWN_PROM_TYPES:  # every row, before the name (ExtractCounters since 4.8.3)
        hints = []
        if prom_type != prom_type.strip():
            hints.append(f"only spaces around a field are trimmed, not {prom_type!r}")
        elif prom_type.lower() in KNOWN_PROM_TYPES:
            hints.append("prom types are lower case")
        return f"unknown prom type {prom_type!r}; known: {sorted(KNOWN_PROM_TYPES)}", hints, None
    if name not in KNOWN_FIELDS and name not in EXPORTER_FIELDS:
        hints = [h for h in _record_hints(record) if "not a comment" in h]
        if name != name.strip():
            hints.append(f"only spaces around a field are trimmed, not {name!r}")
        # Only the slips this file's rules explain: case, a byte order mark, an indented comment's `#`.
        bare = name.strip().lstrip("\ufeff#").strip()
        meant = next((k for k in (bare, bare.upper()) if k in KNOWN_FIELDS | EXPORTER_FIELDS), None)
        if meant and meant != name:
            hints.append(f"perhaps {meant} was meant")
        reason = f"field {name!r} is not a DCGM field dcgm-exporter {DCGM_EXPORTER_VERSION} knows"
        return f"{reason} (go-dcgm {GO_DCGM_VERSION})", hints, None
    for label, value in (("field", name), ("prom type", prom_type), ("help text", help_text)):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"the {label} is not UTF-8 text ({_STRICTER})", [], None
    if not help_text:
        return f"empty help text ({_STRICTER})", [], None
    return "", [], MetricRow(name, prom_type, help_text)


def _too_large(source: str) -> MetricsCsvTooLarge:
    return MetricsCsvTooLarge(
        0,
        "",
        f"over {MAX_CSV_BYTES:,} bytes, refused unread: a dcgm-exporter metrics CSV is a few KB",
        source,
    )


def parse(text: str | bytes, source: str = "<csv>") -> list[MetricRow]:
    """Validate a whole CSV as the exporter reads it, plus the project rules; raises on the first bad row."""
    data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else bytes(text)
    if len(data) > MAX_CSV_BYTES:
        raise _too_large(source)
    lines = data.split(b"\n")
    bom = [_BOM] if data.startswith(UTF8_BOM) else []

    def bad(line_no: int, reason: str, hints: list[str]) -> MetricsCsvError:
        row = lines[line_no - 1].rstrip(b"\r").decode("utf-8", "backslashreplace") if line_no else ""
        hints = hints + bom
        return MetricsCsvError(line_no, row, reason + (f" ({'; '.join(hints)})" if hints else ""), source)

    try:
        records = read_go_csv(data)
    except GoCsvError as exc:
        raise bad(exc.line, *_syntax_problem(exc)) from None
    rows: list[MetricRow] = []
    seen: dict[str, int] = {}
    for record in records:
        reason, hints, row = _record_problem(record)
        if row is None:
            raise bad(record.line, reason, hints)
        if row.field in seen:
            raise bad(
                record.line, f"field {row.field} already listed on line {seen[row.field]} ({_STRICTER})", []
            )
        seen[row.field] = record.line
        rows.append(row)
    if not rows:
        raise MetricsCsvError(0, "", "no metric rows: the exporter would export nothing", source)
    return rows


def render(rows: Iterable[MetricRow] = PROJECT_METRICS) -> str:
    """Render rows to CSV text, then re-validate it, so a bad typed row fails synthesis naming the row."""
    rows = list(rows)
    header = "# Format\n# DCGM FIELD, Prometheus metric type, help message\n"
    text = header + "".join(r.line() + "\n" for r in rows)
    parse(text, source="generated metrics CSV")
    return text


def exported_fields(text: str) -> frozenset[str]:
    """The set of DCGM fields a (valid) CSV exports."""
    return frozenset(r.field for r in parse(text))
