"""A small Prometheus HTTP API reader: instant queries in, plain samples out, with bounded retries."""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_exponential

from gpu_finops.facts import timeouts
from gpu_finops.facts.errors import Unreachable

log = logging.getLogger(__name__)


class PrometheusUnavailable(Unreachable, RuntimeError):
    """Prometheus did not answer within the retry budget."""


class PrometheusQueryError(Unreachable, RuntimeError):
    """Prometheus answered, but rejected the query (a bad expression, a server-side error)."""


class _Transient(Exception):
    """A failure worth retrying: connection refused, timeout, 5xx."""


@dataclass(frozen=True)
class Sample:
    """One series of an instant-vector result."""

    labels: dict[str, str]
    value: float


class PrometheusClient:
    """Instant queries against one Prometheus. Counts the queries it makes (for benchmarks and tests)."""

    def __init__(
        self, url: str, *, timeout: float = timeouts.PROM_QUERY, retry_for: float = timeouts.PROM_RETRY
    ):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.retry_for = retry_for
        self.queries = 0

    def _get(self, path: str, params: dict[str, str] | None = None) -> dict[str, Any]:
        query = ("?" + urllib.parse.urlencode(params)) if params else ""
        request = urllib.request.Request(self.url + path + query, headers={"Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            body = exc.read().decode(errors="replace")
            if exc.code >= 500:
                raise _Transient(f"HTTP {exc.code}: {body[:300]}") from exc
            raise PrometheusQueryError(
                f"Prometheus at {self.url} rejected {path}{query}: HTTP {exc.code}: {body[:500]}"
            ) from exc
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            raise _Transient(str(getattr(exc, "reason", exc))) from exc
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError, RecursionError):  # JSONDecodeError is a ValueError;
            # RecursionError: JSON nested thousands deep, which no Prometheus answers
            text = raw[:80].decode(errors="replace")
            raise PrometheusQueryError(
                f"Prometheus at {self.url} answered {path} with something that is not JSON "
                f"({' '.join(text.split())!r}); check that the Prometheus URL points at Prometheus"
            ) from None
        if not isinstance(body, dict):
            raise self.malformed(path, f"a JSON {type(body).__name__}, not an object")
        return body

    def malformed(self, path: str, what: str) -> PrometheusQueryError:
        """The error for an answer that is JSON but not the Prometheus HTTP API's shape."""
        return PrometheusQueryError(
            f"Prometheus at {self.url} answered {path} with {what}; check that the Prometheus URL points at "
            "Prometheus (its HTTP API: /api/v1)"
        )

    @contextmanager
    def reading(self, path: str) -> Iterator[None]:
        """Around the code that picks an answer apart: a missing `data`, a result that is not a list, a
        value that is not a number, all become one error naming Prometheus (exit 3), not a bug."""
        try:
            yield
        except (KeyError, IndexError, TypeError, ValueError, ArithmeticError) as exc:
            raise self.malformed(path, f"an answer of another shape ({type(exc).__name__}: {exc})") from None

    def _get_with_retries(self, path: str, params: dict[str, str] | None = None) -> dict[str, Any]:
        retrying = Retrying(
            stop=stop_after_delay(self.retry_for),
            wait=wait_exponential(multiplier=0.2, max=3),
            retry=retry_if_exception_type(_Transient),
            reraise=True,
        )
        try:
            return retrying(self._get, path, params)
        except _Transient as exc:
            raise PrometheusUnavailable(
                f"Prometheus at {self.url} did not answer {path} for {self.retry_for:g}s (last error: {exc}); "
                "check that it is running and that the Prometheus URL is right"
            ) from exc

    def ready(self) -> bool:
        """True when Prometheus answers its readiness endpoint."""
        try:
            request = urllib.request.Request(self.url + "/-/ready")
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.status == 200
        except (urllib.error.URLError, TimeoutError, ConnectionError):
            return False

    def query(self, promql: str, at: datetime | float | None = None) -> list[Sample]:
        """Evaluate an instant query; returns one Sample per series. NaN values are dropped, not zeroed."""
        params = {"query": promql}
        if at is not None:
            params["time"] = f"{at.timestamp() if isinstance(at, datetime) else at:.3f}"
        self.queries += 1
        body = self._get_with_retries("/api/v1/query", params)
        if body.get("status") != "success":
            raise PrometheusQueryError(
                f"query {promql!r} failed: {body.get('errorType')}: {body.get('error')}"
            )
        with self.reading("/api/v1/query"):
            data = body["data"]
            if data["resultType"] != "vector":
                raise PrometheusQueryError(
                    f"query {promql!r} returned {data['resultType']}, expected an instant vector"
                )
            samples = []
            for series in data["result"]:
                value = float(series["value"][1])
                if value != value:  # NaN: no data in the window; missing, not a number
                    continue
                samples.append(Sample(labels=dict(series["metric"]), value=value))
        return samples
