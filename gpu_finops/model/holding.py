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
# A physical card as the NVIDIA device plugin names it: `GPU-` and its UUID, ASCII letters, digits and dashes.
# A MIG slice (`MIG-...`) or anything else is not a card this model prices yet: refused, never a whole card.
CARD_ID = re.compile(r"GPU-[0-9A-Za-z][0-9A-Za-z-]{0,127}", re.ASCII)
REPLICA_INDEX = re.compile(r"0|[1-9][0-9]{0,5}", re.ASCII)  # a plain decimal from 0, as the plugin writes it
REPLICAS_LABEL_VALUE = re.compile(r"[1-9][0-9]{0,5}", re.ASCII)


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
    Raises DeviceIdError for an id the device plugin would not write: not text, a card that is not
    `GPU-<uuid>` (empty, whitespace or control characters, a MIG slice), a replica index that is not a
    plain decimal from 0 (`01`, `-1`, empty), or a second `::`."""
    if not isinstance(device_id, str):
        raise DeviceIdError(f"device id {device_id!r} is a {type(device_id).__name__}, not text")
    card, sep, replica = device_id.partition(REPLICA_SEPARATOR)
    if not CARD_ID.fullmatch(card):
        raise DeviceIdError(
            f"device id {device_id!r} names no card: expected GPU-<uuid> or GPU-<uuid>::<replica index> "
            "(MIG slices and other device kinds are not modeled)"
        )
    if not sep:
        return Device(device_id, device_id, Kind.WHOLE)
    if not REPLICA_INDEX.fullmatch(replica):
        raise DeviceIdError(
            f"device id {device_id!r}: replica index {replica!r} is not a plain decimal from 0 "
            "(the device plugin writes GPU-<uuid>::<n>)"
        )
    return Device(device_id, card, Kind.REPLICA, replica)


def _ids(device_ids: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """Device ids as a sequence of ids: one id given as a bare string would read as its characters."""
    if isinstance(device_ids, (str, bytes)) or not isinstance(device_ids, (tuple, list)):
        raise TypeError(
            f"device ids {device_ids!r}: expected a tuple or list of ids, not a {type(device_ids).__name__}"
        )
    return tuple(device_ids)


def card_of(device_id: str) -> str:
    """The physical card's UUID behind a device id."""
    return device(device_id).card


def cards(device_ids: tuple[str, ...] | list[str]) -> set[str]:
    """The distinct physical cards behind device ids (each id must be one the device plugin writes)."""
    return {card_of(d) for d in _ids(device_ids)}


def share(replicas: int) -> Fraction:
    """What one device is worth of its card on a node advertising `replicas` devices per card (1: whole).
    Raises ValueError for anything but a whole number from 1: no node advertises a card as zero devices."""
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 1:
        raise ValueError(f"replicas per card {replicas!r}: a card is advertised as 1 or more devices")
    return Fraction(1, replicas)


def replicas_per_card(node_labels: Mapping[str, str]) -> int:
    """Devices the node advertises per physical card: GFD's `nvidia.com/gpu.replicas` label, 1 without
    it (no time-slicing). A value GFD does not write (not a plain ASCII decimal from 1: `0`, `04`, `four`,
    `４`) also reads as 1: the diagnosis and the collector must count a node they cannot read alike, as
    whole cards, as the ledger's rules do."""
    raw = node_labels.get(LABEL_GPU_REPLICAS, "1")
    return int(raw) if isinstance(raw, str) and REPLICAS_LABEL_VALUE.fullmatch(raw) else 1


def physical_gpus(devices: int, replicas: int) -> Fraction:
    """Physical cards held by `devices` allocated devices on a node with `replicas` per card."""
    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 0:
        raise ValueError(f"allocated devices {devices!r}: a count from 0")
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
    Raises DeviceIdError for what the kubelet would not give one pod on such a node: a device twice, a
    replica index the node does not advertise (index >= replicas), a whole-card id on a node that shares
    its cards as replicas, or a replica id on a node that does not."""
    each = share(replicas)
    ids = _ids(device_ids)
    twice = sorted({d for d in ids if ids.count(d) > 1})
    if twice:
        raise DeviceIdError(f"device ids {twice} given to {holder.namespace}/{holder.pod} twice")
    out = []
    for d in ids:
        dev = device(d)
        if dev.kind is Kind.REPLICA and int(dev.replica or 0) >= replicas:
            raise DeviceIdError(
                f"device id {d!r}: replica {dev.replica} on a node advertising {replicas} per card "
                f"(indexes 0..{replicas - 1})"
            )
        if (dev.kind is Kind.WHOLE) != (replicas == 1):
            raise DeviceIdError(
                f"device id {d!r}: a {dev.kind} on a node advertising {replicas} device(s) per card "
                f"(expected {'GPU-<uuid>' if replicas == 1 else 'GPU-<uuid>::<n>'})"
            )
        out.append(HeldGpu(dev, holder, each if dev.kind is Kind.REPLICA else Fraction(1)))
    return out


def card_shares(holdings: list[HeldGpu]) -> dict[str, Fraction]:
    """The part of each physical card held, summed over its holders (a card over 1 is held more than once)."""
    out: dict[str, Fraction] = {}
    for h in holdings:
        out[h.card] = out.get(h.card, Fraction(0)) + h.share
    return out
