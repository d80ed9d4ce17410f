"""Go's encoding/csv reader, as dcgm-exporter configures it (`csv.NewReader`, `Comment = '#'`, `ReadAll`,
every other option at its default): the same records, error kinds and error positions (moved from
metrics_csv.py). tests/gpu_finops/dcgm/test_go_csv.py holds it to Go's own reader."""

from __future__ import annotations

from dataclasses import dataclass

GO_CSV_ERRORS = {
    "bare_quote": 'bare " in non-quoted-field',  # csv.ErrBareQuote
    "quote": 'extraneous or missing " in quoted-field',  # csv.ErrQuote
    "field_count": "wrong number of fields",  # csv.ErrFieldCount
}


@dataclass(frozen=True)
class CsvRecord:
    """One record as Go's reader returns it: raw bytes per field, and the line the record starts on."""

    line: int
    fields: tuple[bytes, ...]


@dataclass(eq=False)  # an exception: mutable (raising sets attributes) and hashable by identity
class GoCsvError(Exception):
    """A csv.ParseError: its kind (a key of GO_CSV_ERRORS), where, and what Go's Error() says."""

    kind: str
    start_line: int
    line: int
    column: int  # 1-based byte index, as Go counts it
    record: tuple[bytes, ...] = ()  # the fields read before the error (all of them for field_count)
    first: CsvRecord | None = None  # the record that fixed the field count

    @property
    def message(self) -> str:
        err = GO_CSV_ERRORS[self.kind]
        if self.kind == "field_count":
            return f"record on line {self.line}: {err}"
        if self.start_line != self.line:
            return (
                f"record on line {self.start_line}; parse error on line {self.line}, "
                f"column {self.column}: {err}"
            )
        return f"parse error on line {self.line}, column {self.column}: {err}"

    def __str__(self) -> str:
        return self.message


def _nl(line: bytes) -> int:
    return 1 if line.endswith(b"\n") else 0


class _GoCsvReader:
    """encoding/csv's Reader with Comma ',', Comment '#', FieldsPerRecord 0, LazyQuotes and
    TrimLeadingSpace off: the same line handling, field scanning and error positions."""

    def __init__(self, data: bytes):
        self._data = data
        self._pos = 0
        self.num_line = 0
        self.first: CsvRecord | None = None

    def _read_line(self) -> tuple[bytes, bool]:
        """The next line with its newline, and whether input had ended. Counts a line even at the end,
        drops a lone trailing \\r at the end, and reads CRLF as LF, as Go's readLine does."""
        self.num_line += 1
        if self._pos >= len(self._data):
            return b"", True
        end = self._data.find(b"\n", self._pos)
        if end < 0:
            line, self._pos = self._data[self._pos :], len(self._data)
            if line.endswith(b"\r"):
                line = line[:-1]
        else:
            line, self._pos = self._data[self._pos : end + 1], end + 1
        if line.endswith(b"\r\n"):
            line = line[:-2] + b"\n"
        return line, False

    def read(self) -> CsvRecord | None:
        """The next record; None at the end of input; GoCsvError for what Go's Read refuses."""
        line, eof = b"", False
        while not eof:
            line, eof = self._read_line()
            if line.startswith(b"#"):  # a comment: `#` in the first column, nowhere else
                continue
            if not eof and len(line) == _nl(line):  # an empty line (a line of spaces is not empty)
                continue
            break
        if eof:
            return None
        start = self.num_line
        buf = bytearray()
        ends: list[int] = []
        pos_line, col = self.num_line, 1
        error: tuple[str, int, int] | None = None
        while True:
            if line.startswith(b'"'):
                line, col, pos_line, outcome = self._quoted(line, col, pos_line, buf)
                if isinstance(outcome, tuple):
                    error = outcome
                    break
                ends.append(len(buf))
                if outcome == "next":
                    continue
                break
            comma = line.find(b",")
            text = line[:comma] if comma >= 0 else line[: len(line) - _nl(line)]
            if (quote := text.find(b'"')) >= 0:
                error = ("bare_quote", self.num_line, col + quote)
                break
            buf += text
            ends.append(len(buf))
            if comma < 0:
                break
            line, col = line[comma + 1 :], col + comma + 1
        fields = tuple(bytes(buf[a:b]) for a, b in zip([0, *ends], ends, strict=False))
        if error:
            kind, at_line, at_col = error
            raise GoCsvError(kind, start, at_line, at_col, fields, self.first)
        record = CsvRecord(start, fields)
        if self.first is None:
            self.first = record
        elif len(fields) != len(self.first.fields):
            raise GoCsvError("field_count", start, start, 1, fields, self.first)
        return record

    def _quoted(
        self, line: bytes, col: int, pos_line: int, buf: bytearray
    ) -> tuple[bytes, int, int, str | tuple[str, int, int]]:
        """Scan a quoted field, across lines if need be. Outcome: "next" (a comma follows), "end" (the
        record ends), or an error (kind, line, column)."""
        line, col = line[1:], col + 1
        while True:
            quote = line.find(b'"')
            if quote >= 0:
                buf += line[:quote]
                line, col = line[quote + 1 :], col + quote + 1
                if line.startswith(b'"'):  # `""`: one quote
                    buf += b'"'
                    line, col = line[1:], col + 1
                elif line.startswith(b","):
                    return line[1:], col + 1, pos_line, "next"
                elif len(line) == _nl(line):
                    return line, col, pos_line, "end"
                else:  # a quote followed by anything else
                    return line, col, pos_line, ("quote", self.num_line, col - 1)
            elif line:  # the field goes on past this line: keep its text, newline included
                buf += line
                col += len(line)
                line, _ = self._read_line()
                if line:
                    pos_line, col = pos_line + 1, 1
            else:  # input ended inside the quotes
                return line, col, pos_line, ("quote", pos_line, col)


def read_go_csv(data: bytes) -> list[CsvRecord]:
    """Every record, as dcgm-exporter's `csv.NewReader` + `Comment = '#'` + `ReadAll` reads `data`."""
    reader = _GoCsvReader(data)
    records = []
    while (record := reader.read()) is not None:
        records.append(record)
    return records
