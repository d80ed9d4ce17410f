"""Argument types every subcommand shares, so a bad value is refused by the parser, naming the option
(`argument --wait: must be a finite number >= 0, got '-1'`), before anything runs.

Each is an argparse `type=`: it returns the parsed value or raises ArgumentTypeError with the reason.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

from gpu_finops.facts import timestamps
from gpu_finops.facts.errors import printable
from gpu_finops.facts.regions import known_regions

CLUSTER_NAME = re.compile(
    r"[a-z][a-z0-9-]{1,38}"
)  # gpu_finops/facts/config.py checks cluster_name by the same rule


def number(minimum: float | None = None, *, above: bool = False, maximum: float | None = None) -> Callable:
    """A finite float within bounds: nan, inf and out-of-range values are refused."""
    bound = []
    if minimum is not None:
        bound.append(f"{'>' if above else '>='} {minimum:g}")
    if maximum is not None:
        bound.append(f"<= {maximum:g}")
    expected = "a finite number" + (f" {' and '.join(bound)}" if bound else "")

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        too_low = minimum is not None and (value <= minimum if above else value < minimum)
        if not math.isfinite(value) or too_low or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    parse.__name__ = "number"  # argparse names the type in its own messages
    return parse


def integer(minimum: int | None = None, maximum: int | None = None) -> Callable:
    """An integer within bounds."""
    bound = " and ".join(
        b for b in (minimum is not None and f">= {minimum}", maximum is not None and f"<= {maximum}") if b
    )
    expected = "an integer" + (f" {bound}" if bound else "")

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    parse.__name__ = "integer"
    return parse


def non_empty(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError(f"must not be empty, got {text!r}")
    return text


def cluster_name(text: str) -> str:
    if not CLUSTER_NAME.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a cluster name: lowercase letters, digits and '-', 2-39 characters, "
            "starting with a letter"
        )
    return text


def account_id(text: str) -> str:
    if not (len(text) == 12 and text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r} is not an AWS account id: expected 12 digits")
    return text


def printable_text(text: str) -> str:
    """A name written into a file others read (a FOCUS column): not blank, without control or bidirectional
    formatting characters, at most 256 characters."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    if printable(text) != text or len(text) > 256:
        raise argparse.ArgumentTypeError(
            f"{printable(text[:80])!r}: expected at most 256 characters without control or bidirectional "
            "formatting characters"
        )
    return text


def printable_text_from(variable: str) -> Callable:
    """`printable_text` for an option whose default is $`variable`: a refusal says where the value may
    have come from."""

    def parse(text: str) -> str:
        try:
            return printable_text(text)
        except argparse.ArgumentTypeError as exc:
            source = f" (set by ${variable}?)" if os.environ.get(variable) == text else ""
            raise argparse.ArgumentTypeError(f"{exc}{source}") from None

    parse.__name__ = "text"
    return parse


def kube_label(text: str) -> str:
    """A Kubernetes namespace (an RFC 1123 label: at most 63 of a-z, 0-9 and '-', alphanumeric at both ends):
    a name the API server would refuse is refused here, before a call."""
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", text):
        raise argparse.ArgumentTypeError(
            f"{text[:80]!r} is not a Kubernetes namespace: at most 63 of a-z, 0-9 and '-', starting and ending "
            "with a letter or digit"
        )
    return text


def kube_name(text: str) -> str:
    """A Kubernetes object name (an RFC 1123 subdomain: at most 253 of a-z, 0-9, '-' and '.')."""
    if len(text) > 253 or not re.fullmatch(
        r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", text
    ):
        raise argparse.ArgumentTypeError(
            f"{text[:80]!r} is not a Kubernetes object name: at most 253 of a-z, 0-9, '-' and '.', starting and "
            "ending with a letter or digit"
        )
    return text


def writable_file(text: str) -> Path:
    """A file path this process can create or overwrite: checked now, not after the work is done."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a directory; name a file")
    if path.is_symlink() or (path.exists() and not path.is_file()):  # private files are neither (F17, F18)
        raise argparse.ArgumentTypeError(
            f"{text} is a symlink, FIFO or device, not a regular file; name a file"
        )
    parent = next((p for p in (path.parent, *path.parent.parents) if p.exists()), Path("."))
    if not parent.is_dir():
        raise argparse.ArgumentTypeError(f"cannot create {text}: {parent} is not a directory")
    target = path if path.exists() else parent
    if not os.access(target, os.W_OK | (0 if path.exists() else os.X_OK)):
        raise argparse.ArgumentTypeError(f"cannot write {text}: permission denied on {target}")
    return path


def region(text: str) -> str:
    """An AWS region botocore's bundled endpoint data knows (offline), as gpu_finops/facts/config.py checks it."""
    if text not in known_regions():
        import difflib

        close = difflib.get_close_matches(text, known_regions(), n=1)
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an AWS region" + (f"; did you mean {close[0]!r}?" if close else "")
        )
    return text


TIME_YEARS = timestamps.TIME_YEARS  # times a window can start or end at


def aware_time(text: str) -> datetime:
    """An ISO 8601 time with its zone (`Z` or an offset), as an aware datetime in UTC: a time without a
    zone is refused, since the cost table's times are UTC and a local reading would shift the window."""
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        value = None
    try:  # year 1 with a positive offset, or 9999 with a negative one, is no UTC time
        utc = value.astimezone(UTC) if value is not None and value.tzinfo is not None else None
    except OverflowError:
        utc = None
    if value is None or value.tzinfo is None or utc is None or not TIME_YEARS[0] <= utc.year <= TIME_YEARS[1]:
        why = (
            "not an ISO 8601 time" if value is None
            else "without a zone" if value.tzinfo is None
            else f"outside the years {TIME_YEARS[0]}-{TIME_YEARS[1]}"
        )  # fmt: skip
        raise argparse.ArgumentTypeError(
            f"expected an ISO 8601 time with a zone, like 2026-11-01T00:00:00Z or 2026-11-01T03:00:00+05:00, "
            f"got {text[:80]!r} ({why})"
        )
    return utc


def calendar_month(text: str) -> str:
    """A calendar month `YYYY-MM` whose next month is a date too (so 9999-12 is refused, not overflowed)."""
    try:
        start = datetime.strptime(text, "%Y-%m")
        ok = re.fullmatch(r"[0-9]{4}-[0-9]{2}", text) is not None and start.year < 9999
    except ValueError:
        ok = False
    if not ok:
        raise argparse.ArgumentTypeError(
            f"expected a calendar month YYYY-MM (years 0001-9998), like 2026-11, got {text[:80]!r}"
        )
    return text


def http_url(text: str) -> str:
    """An http(s) URL with a host, like http://127.0.0.1:9090."""
    parts = urlsplit(text)
    try:
        port_ok = parts.port is None or parts.port > 0
        (parts.hostname or "").encode("idna")  # a label over 63 characters, or one no DNS name can be
    except (ValueError, UnicodeError):
        port_ok = False
    if len(text) > 2048 or parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise argparse.ArgumentTypeError(
            f"expected an http(s) URL like http://127.0.0.1:9090, got {text[:80]!r}"
        )
    return text


def suffixed(suffix: str) -> Callable:
    """A writable path ending in `suffix` (a chart's format follows its name: `--png out.txt` is refused;
    a folder that cannot be written is found before the work, not after)."""

    def parse(text: str) -> Path:
        if not text.lower().endswith(suffix):
            raise argparse.ArgumentTypeError(f"expected a path ending in {suffix}, got {text[:80]!r}")
        return writable_file(text)

    parse.__name__ = f"{suffix} path"
    return parse
