"""`eventually` and `consistently`: a predicate plus a named timeout; the error carries the last observation."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from tenacity import RetryError, Retrying, retry_if_result, stop_after_delay, wait_fixed

T = TypeVar("T")

_MISSING = object()


class WaitTimeout(AssertionError):
    """A wait ran out. Carries what it waited for, for how long, and the last thing it observed."""

    def __init__(self, what: str, timeout: float, last: object, error: BaseException | None = None):
        self.what, self.timeout, self.last, self.error = what, timeout, last, error
        last_text = "nothing (the observer never returned)" if last is _MISSING else repr(last)
        msg = f"timed out after {timeout:g}s waiting for: {what}\nlast observation: {last_text}"
        if error is not None:
            msg += f"\nlast error: {type(error).__name__}: {error}"
        super().__init__(msg)


def eventually(
    observe: Callable[[], T],
    check: Callable[[T], bool],
    *,
    timeout: float,
    what: str,
    interval: float = 1.0,
) -> T:
    """Observe until `check(observation)` is true; return that observation, or raise WaitTimeout."""
    last: list[object] = [_MISSING]
    last_error: list[BaseException | None] = [None]

    def attempt() -> tuple[bool, object]:
        try:
            value = observe()
        except Exception as exc:  # an observer failing is an observation too; keep trying
            last_error[0] = exc
            return False, _MISSING
        last[0] = value
        last_error[0] = None
        return bool(check(value)), value

    retrying = Retrying(
        stop=stop_after_delay(timeout),
        wait=wait_fixed(interval),
        retry=retry_if_result(lambda outcome: not outcome[0]),
        reraise=False,
    )
    try:
        _, value = retrying(attempt)
    except RetryError:
        raise WaitTimeout(what, timeout, last[0], last_error[0]) from None
    return value  # type: ignore[return-value]


def consistently(
    observe: Callable[[], T],
    check: Callable[[T], bool],
    *,
    duration: float,
    what: str,
    interval: float = 1.0,
) -> list[T]:
    """Observe for `duration`; every observation must pass `check`. Returns all observations."""
    seen: list[T] = []
    deadline = time.monotonic() + duration
    while True:
        value = observe()
        seen.append(value)
        if not check(value):
            raise AssertionError(
                f"stopped holding after {len(seen)} observation(s): {what}\nobservation that broke it: {value!r}"
            )
        if time.monotonic() >= deadline:
            return seen
        time.sleep(interval)
