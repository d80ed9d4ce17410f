"""JSON read from a file or an object someone else could have written: one decoder, whose every refusal is
a JSONTextError saying why in a few words (the caller names the input and what to do).

The standard library alone lets through or crashes on what a hand edit or a hostile writer produces:
`json.loads(bytes)` guesses UTF-16 and UTF-32, and skips a UTF-8 byte order mark; nesting past Python's
recursion limit raises RecursionError; an integer of more than 4,300 digits raises a plain ValueError
(CPython's int-to-str limit); `NaN` and `Infinity` are accepted. Here the text must be strict UTF-8 without
a byte order mark, numbers finite, each key once per object, and each of those is a JSONTextError.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any


class JSONTextError(ValueError):
    """Not the JSON text the reader expects; the message says why, without naming the input."""


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JSONTextError(f"number {text[:40]!r} is out of range")
    return value


def _no_constant(name: str) -> Any:
    raise JSONTextError(f"{name} is not a JSON number")


def _no_key_twice(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are each given once: `{"outcome": "failed", "outcome": "passed"}` would
    otherwise be read as passed, the earlier value silently dropped (as the config's YAML refuses it)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise JSONTextError(f"key {key[:60]!r} is given twice in one object; keep one")
        out[key] = value
    return out


def loads(raw: bytes | str) -> Any:
    """The JSON document in `raw` (bytes: strict UTF-8), or a JSONTextError."""
    if isinstance(raw, bytes):
        if raw.startswith(b"\xef\xbb\xbf"):
            raise JSONTextError("starts with a byte order mark; expected UTF-8 without one")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JSONTextError(
                f"not UTF-8 (byte {raw[exc.start : exc.start + 1]!r} at offset {exc.start})"
            ) from None
    else:
        text = raw
    try:
        return json.loads(
            text, parse_float=_finite, parse_constant=_no_constant, object_pairs_hook=_no_key_twice
        )
    except JSONTextError:
        raise
    except json.JSONDecodeError as exc:
        raise JSONTextError(f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise JSONTextError("nested too deep") from None
    except ValueError:  # an integer past CPython's int-to-str digit limit
        raise JSONTextError(f"a number is longer than {sys.get_int_max_str_digits():,} digits") from None
