"""The one JSON decoder for text someone else could have written: each way the standard library lets bad
text through, or crashes on it, is a JSONTextError saying why."""

from __future__ import annotations

import pytest

from gpu_finops.facts.json_text import JSONTextError, loads


def test_a_document_reads_from_bytes_and_text():
    assert loads(b'{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}
    assert loads('{"a": 1}') == {"a": 1}


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ('{"a": 1}'.encode("utf-16"), "not UTF-8 (byte b'\\xff' at offset 0)"),
        ('{"a": 1}'.encode("utf-32"), "not UTF-8 (byte b'\\xff' at offset 0)"),
        (b'\xef\xbb\xbf{"a": 1}', "starts with a byte order mark; expected UTF-8 without one"),
        (b'{"a": "\xe9"}', "not UTF-8 (byte b'\\xe9' at offset 7)"),
        (b'{"a": 1', "not JSON (Expecting ',' delimiter at line 1 column 8)"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deep"),
        (b"1" * 5000, "a number is longer than 4,300 digits"),
        (b'{"a": NaN}', "NaN is not a JSON number"),
        (b'{"a": -Infinity}', "-Infinity is not a JSON number"),
        (b'{"a": 1e400}', "number '1e400' is out of range"),
    ],
    ids=["utf-16", "utf-32", "bom", "latin-1", "torn", "deep", "long-int", "nan", "infinity", "1e400"],
)
def test_each_bad_text_is_refused_saying_why(raw, why):
    with pytest.raises(JSONTextError) as err:
        loads(raw)
    assert str(err.value) == why
