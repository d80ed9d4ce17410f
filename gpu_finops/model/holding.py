"""A held GPU: device -> holder -> share. Who holds which physical card, through which device, and what part
of the card that device is worth.

A **device** is what the kubelet allocates and names in its pod-resources answer: a whole card
(`GPU-<uuid>`), or a time-sliced replica of one (`GPU-<uuid>::<n>`, the NVIDIA device plugin's replica
id). Its **card** is the physical GPU behind it, the unit that is bought and priced. Its **share** is the
part of the card one device is worth: 1 for a whole card, 1/replicas for a time-sliced replica (the node's
GFD label `nvidia.com/gpu.replicas`). A **holder** is the pod the device was allocated to, in its namespace
and tenant. Further ways of sharing a card (a MIG slice, an MPS client, a DRA-allocated device) are new
kinds here, each with its own rule for the card and the share, not new readers elsewhere.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction

from gpu_finops.facts.kube_keys import LABEL_GPU_REPLICAS

REPLICA_SEPARATOR = "::"  # the device plugin's time-sliced id: <card uuid>::<replica index>
REPLICA_INDEX = re.compile(r"0|[1-9][0-9]*")  # the plugin writes the index as a plain decimal from 0


class Kind(StrEnum):
    WHOLE = "whole card"
    REPLICA = "time-sliced replica"


@dataclass(frozen=True)
class Device:
    """One allocatable device, as the kubelet named it."""

    id: str
    card: str  # the physical card's UUID
    kind: Kind
    replica: str | None = None  # the replica index, for a time-sliced device


class DeviceIdError(ValueError):
    """A device id that names no card, or a replica in a form the device plugin does not write."""


def device(device_id: str) -> Device:
    """The device behind a kubelet device id: a whole card, or a replica of the card before `::`.
    Raises DeviceIdError for an id the device plugin would not write: empty, no card before `::`, a
    replica index that is not a plain decimal from 0 (`01`, `-1`, empty), or a second `::`."""
    card, sep, replica = device_id.partition(REPLICA_SEPARATOR)
    if not card.strip() or card != card.strip():
        raise DeviceIdError(
            f"device id {device_id!r} names no card: expected <card uuid> or <card uuid>::<replica index>"
        )
    if not sep:
        return Device(device_id, device_id, Kind.WHOLE)
    if not REPLICA_INDEX.fullmatch(replica):
        raise DeviceIdError(
            f"device id {device_id!r}: replica index {replica!r} is not a plain decimal from 0 "
            "(the device plugin writes <card uuid>::<n>)"
        )
    return Device(device_id, card, Kind.REPLICA, replica)


def card_of(device_id: str) -> str:
    """The physical card's UUID behind a device id."""
    return device(device_id).card


def cards(device_ids: tuple[str, ...] | list[str]) -> set[str]:
    """The distinct physical cards behind device ids (each id must be one the device plugin writes)."""
    return {card_of(d) for d in device_ids}


def share(replicas: int) -> Fraction:
    """What one device is worth of its card on a node advertising `replicas` devices per card (1: whole).
    Raises ValueError for fewer than 1: no node advertises a card as zero devices."""
    if replicas < 1:
        raise ValueError(f"replicas per card {replicas!r}: a card is advertised as 1 or more devices")
    return Fraction(1, replicas)


def replicas_per_card(node_labels: Mapping[str, str]) -> int:
    """Devices the node advertises per physical card: GFD's `nvidia.com/gpu.replicas` label, 1 without
    it (no time-slicing). A label that is not a whole number from 1 also reads as 1: GFD writes only
    those, and the diagnosis and the collector must count a node they cannot read as whole cards alike."""
    raw = node_labels.get(LABEL_GPU_REPLICAS, "1")
    return int(raw) if raw.isdigit() and int(raw) > 0 else 1


def physical_gpus(devices: int, replicas: int) -> Fraction:
    """Physical cards held by `devices` allocated devices on a node with `replicas` per card."""
    return devices * share(replicas)


@dataclass(frozen=True)
class Holder:
    """The pod a device was allocated to."""

    namespace: str
    pod: str
    tenant: str | None = None


@dataclass(frozen=True)
class HeldGpu:
    """One device held by one pod, and the part of its physical card that is."""

    device: Device
    holder: Holder
    share: Fraction

    @property
    def card(self) -> str:
        return self.device.card


def held(holder: Holder, device_ids: tuple[str, ...] | list[str], replicas: int) -> list[HeldGpu]:
    """Each device a pod holds, with its share: a replica is worth 1/replicas of its card, a whole card 1.
    Raises DeviceIdError for a replica index the node does not advertise (index >= replicas)."""
    out = []
    for d in device_ids:
        dev = device(d)
        if dev.kind is Kind.REPLICA and int(dev.replica or 0) >= replicas:
            raise DeviceIdError(
                f"device id {d!r}: replica {dev.replica} on a node advertising {replicas} per card "
                f"(indexes 0..{replicas - 1})"
            )
        out.append(HeldGpu(dev, holder, share(replicas) if dev.kind is Kind.REPLICA else Fraction(1)))
    return out


def card_shares(holdings: list[HeldGpu]) -> dict[str, Fraction]:
    """The part of each physical card held, summed over its holders (a card over 1 is held more than once)."""
    out: dict[str, Fraction] = {}
    for h in holdings:
        out[h.card] = out.get(h.card, Fraction(0)) + h.share
    return out
