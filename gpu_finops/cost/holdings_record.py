"""Who held each node's GPUs in each collected interval, recorded when the interval was collected.

The collector reads the pods holding GPUs (gpu_finops.cost.gpu_holdings: the Kubernetes API, with the kubelet's
pod-resources device ids where a reader for them is given) once per cycle and stores, per node-interval,
the holdings that overlapped it. Allocation of a past interval then uses what was held then: a pod deleted
before the export is still attributed, and an interval for which nothing was recorded (no reader, or the
reader failed) is one unallocated row whose x_Status says so, never a split guessed from today's pods.

A pod seen holding GPUs in one cycle and gone by the next is taken to have held them until it was last
seen (as a node gone between cycles is charged until it was last listed); what it held after that is
unknown, so unallocated.

`recorded` and an empty `holdings` means: the reader answered and nobody held the node's GPUs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gpu_finops.cost.gpu_holdings import GpuHolding, gpu_holdings, holdings_from_json, with_devices

STATUS_NO_HOLDINGS = "no-holdings"  # x_Status of the unallocated row of a node-interval nobody recorded
SOURCE_KUBE = "kube"
SOURCE_KUBE_POD_RESOURCES = "kube+pod-resources"


@dataclass(frozen=True)
class IntervalHoldings:
    """The GPU holdings of one node over one collected interval, as read when it was collected."""

    node: str  # ResourceName
    resource_id: str  # ResourceId of the cost record (the store's key on DynamoDB)
    start: str  # ChargePeriodStart, ISO 8601 UTC, as on the cost record
    end: str
    source: str  # what read them: kube, kube+pod-resources, or file
    recorded_at: str  # when they were read (ISO 8601 UTC)
    holdings: tuple[GpuHolding, ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        return (self.node, self.start)

    def holdings_json(self) -> str:
        return json.dumps([h.to_dict() for h in self.holdings], sort_keys=True)

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "resource_id": self.resource_id,
            "start": self.start,
            "end": self.end,
            "source": self.source,
            "recorded_at": self.recorded_at,
            "holdings": [h.to_dict() for h in self.holdings],
        }

    @classmethod
    def from_parts(
        cls, node: str, resource_id: str, start: str, end: str, source: str, recorded_at: str, holdings: str
    ) -> IntervalHoldings:
        return cls(
            node,
            resource_id,
            start,
            end,
            source,
            recorded_at,
            tuple(holdings_from_json(holdings, f"{node} at {start}")),
        )


@dataclass
class HoldingsReader:
    """What the collector calls each cycle: the cluster's GPU holdings, and the name of their source."""

    read: Callable[[], list[GpuHolding]]
    source: str = SOURCE_KUBE


def _key(h: GpuHolding) -> tuple[str, str, str]:
    return (h.node, h.namespace, h.pod)


class HoldingsRecorder:
    """Remembers the last cycle's listing, so a pod gone since is charged until it was last seen."""

    def __init__(self, reader: HoldingsReader):
        self.reader = reader
        self._last: dict[tuple[str, str, str], tuple[GpuHolding, datetime]] = {}

    def read(self, listed_at: datetime) -> list[GpuHolding]:
        """This cycle's holdings, plus those of pods that vanished since the last cycle, ended when they
        were last seen. Raises what the reader raises (the collector records nothing then)."""
        current = self.reader.read()
        seen = {_key(h) for h in current}
        vanished = []
        for key, (h, seen_at) in self._last.items():
            if key in seen:
                continue
            vanished.append(h if h.end is not None else _ended(h, seen_at))
        self._last = {_key(h): (h, listed_at) for h in current}
        return current + vanished


def _ended(h: GpuHolding, at: datetime) -> GpuHolding:
    from dataclasses import replace

    return replace(h, end=max(at, h.start))


def for_intervals(
    keys: Sequence[tuple[str, str, datetime, datetime]],
    holdings: Sequence[GpuHolding],
    source: str,
    recorded_at: str,
) -> list[IntervalHoldings]:
    """Per (node, resource id, start, end): the holdings on that node that overlapped [start, end)."""
    from gpu_finops.facts.timestamps import iso

    out = []
    for node, resource_id, start, end in keys:
        held = tuple(h for h in holdings if h.node == node and h.seconds_within(start, end) > 0)
        out.append(IntervalHoldings(node, resource_id, iso(start), iso(end), source, recorded_at, held))
    return out


def kube_reader(kube: Any, pod_resources_url: str | None = None):
    """The collector's holdings reader: pods from the Kubernetes API, plus pod-resources device ids."""
    if pod_resources_url:
        return HoldingsReader(
            lambda: with_devices(gpu_holdings(kube), pod_resources_url), SOURCE_KUBE_POD_RESOURCES
        )
    return HoldingsReader(lambda: gpu_holdings(kube), SOURCE_KUBE)
