"""The one timestamp format: ISO 8601 in UTC with a `Z` (as Kubernetes and the cost table write it)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import overload


@overload
def parse(value: str | datetime) -> datetime: ...
@overload
def parse(value: None) -> None: ...
def parse(value: str | datetime | None) -> datetime | None:
    """`2025-01-02T03:04:05Z` (or any ISO form) -> an aware datetime in UTC; None stays None and a
    datetime passes through (the Kubernetes client already parses some fields)."""
    if value is None or isinstance(value, datetime):
        return value
    t = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    try:
        return t.astimezone(UTC) if t.tzinfo else t
    except OverflowError:  # 0001-01-01T00:00:00+01:00, 9999-12-31T23:59:59-05:00: no such UTC time
        raise ValueError(f"{value!r} is outside the datetimes UTC can hold") from None


def iso(t: datetime) -> str:
    """An aware datetime -> `2025-01-02T03:04:05Z` (whole seconds, the cost table's key format)."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# The years a time read from a file or an option may fall in: later arithmetic (a day, a month, ten years
# on or back) stays inside datetime's range, and nothing of ours happened before 1970.
TIME_YEARS = (1970, 9998)


def parse_or_none(value: object) -> datetime | None:
    """An ISO 8601 text with a zone, in TIME_YEARS, as an aware UTC datetime; None for anything else (no
    zone, not a time, out of range, not text): for checks that name the value themselves."""
    if not isinstance(value, str):
        return None
    try:
        t = datetime.fromisoformat(value.replace("Z", "+00:00"))
        utc = t.astimezone(UTC) if t.tzinfo else None
    except (ValueError, OverflowError):
        return None
    return utc if utc is not None and TIME_YEARS[0] <= utc.year <= TIME_YEARS[1] else None
