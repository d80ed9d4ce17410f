"""A held GPU: device -> holder -> share. Who holds which physical card, through which device, and what part
of the card that device is worth.

A **device** is what the kubelet allocates and names in its pod-resources answer, as the NVIDIA device plugin
(v0.17) advertises it: a whole card (`GPU-<uuid>`), a replica of one (`GPU-<uuid>::<n>`: time-sliced, or an
MPS client where the node shares its cards through MPS; the plugin writes both alike), or a MIG slice
(`MIG-<uuid>` from driver R470, `MIG-GPU-<card uuid>/<gi>/<ci>` before; `::<n>` where the slices are
time-sliced in turn). Its **card** is the physical GPU behind it, the unit that is bought and priced; a
`MIG-<uuid>` names its slice only, so its card is unknown from the id (None). Its **share** is the part of a
card one device is worth, and depends on the node (`NodeGpus`, read from GFD's labels and the node's
capacity): 1 for a whole card; 1/replicas for a replica (GFD's `nvidia.com/gpu.replicas`); for a MIG slice,
its GPU instance's compute slices over the compute slices of every slice the node advertises, times the cards
partitioned, so the slices of a node sum to its partitioned cards exactly whatever the layout (docs/finops.md,
"Shared cards"). A **holder** is the pod the device was allocated to, in its namespace and tenant.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from fractions import Fraction

from gpu_finops.facts.catalog import GPU_TYPES
from gpu_finops.facts.kube_keys import (
    GPU_RESOURCE,
    LABEL_GPU_COUNT,
    LABEL_GPU_PRODUCT,
    LABEL_GPU_REPLICAS,
    LABEL_GPU_SHARING,
    LABEL_INSTANCE_GPU_COUNT,
    LABEL_INSTANCE_TYPE,
    LABEL_MIG_STRATEGY,
    MIG_RESOURCE_PREFIX,
)

REPLICA_SEPARATOR = "::"  # the device plugin's time-sliced id: <card uuid>::<replica index>
# A physical card as the NVIDIA device plugin names it: `GPU-` and its UUID, ASCII letters, digits and dashes.
CARD_ID = re.compile(r"GPU-[0-9A-Za-z][0-9A-Za-z-]{0,127}", re.ASCII)
# A MIG slice: its own UUID (driver R470 and later), or, before, its card's UUID and the GPU and compute
# instance ids (k8s-device-plugin api/config/v1/replicas.go)
MIG_ID = re.compile(r"MIG-[0-9A-Za-z][0-9A-Za-z-]{0,127}", re.ASCII)
MIG_LEGACY_ID = re.compile(
    r"MIG-(GPU-[0-9A-Za-z][0-9A-Za-z-]{0,127})/(0|[1-9][0-9]?)/(0|[1-9][0-9]?)", re.ASCII
)
# A MIG profile as the plugin names its resource: <g>g.<memory>gb, an attribute suffix such as `.me` (the
# profile's `+me` with `+` made `.`); g is the GPU instance's compute slices, of 7 on A100, H100 and H200
# (`shared` is not an attribute: it is the plugin's renameByDefault suffix on a resource, read apart)
MIG_PROFILE = re.compile(
    r"([1-7])g\.([1-9][0-9]{0,3})gb((?:[.+](?!shared(?![a-z]))[a-z]{1,8}){0,3})", re.ASCII
)
CARD_COMPUTE_SLICES = 7  # the compute slices of a MIG-capable card: A100, H100, H200 and B200 alike
COUNT_VALUE = re.compile(r"0|[1-9][0-9]{0,5}", re.ASCII)
REPLICA_INDEX = re.compile(r"0|[1-9][0-9]{0,5}", re.ASCII)  # a plain decimal from 0, as the plugin writes it
REPLICAS_LABEL_VALUE = re.compile(r"[1-9][0-9]{0,5}", re.ASCII)


class Kind(StrEnum):
    WHOLE = "whole card"
    REPLICA = "time-sliced replica"
    MPS_CLIENT = "MPS client"
    MIG_SLICE = "MIG slice"


class Sharing(StrEnum):
    """How a node shares its cards: GFD's `nvidia.com/gpu.sharing-strategy`, or MIG by the plugin's strategy."""

    NONE = "none"
    TIME_SLICING = "time-slicing"
    MPS = "mps"
    MIG_SINGLE = "mig-single"
    MIG_MIXED = "mig-mixed"


@dataclass(frozen=True)
class Device:
    """One allocatable device, as the kubelet named it. `kind` is what the id says: WHOLE, REPLICA (a replica
    id: time-sliced or an MPS client, as the node's sharing says) or MIG_SLICE."""

    id: str
    # the physical card's UUID, its hex lower-cased (a UUID is one value in either case, RFC 9562, so two
    # spellings are one card); None for a MIG slice named by its own UUID
    card: str | None
    kind: Kind
    replica: str | None = None  # the replica index, for a replica id
    # a MIG slice named by its card (`MIG-GPU-<uuid>/<gi>/<ci>`): its GPU and compute instance ids, as NVML
    # numbers them (DCGM's GPU_I_ID is the first); None where the id does not say
    gpu_instance: str | None = None
    compute_instance: str | None = None


class DeviceIdError(ValueError):
    """A device id that names no card, or a replica in a form the device plugin does not write."""


def _canonical(card_id: str) -> str:
    """`GPU-<uuid>` with the UUID lower-cased, as nvidia-smi and NVML write it."""
    return card_id[:4] + card_id[4:].lower()


def device(device_id: str) -> Device:
    """The device behind a kubelet device id: a whole card, a replica of the card before `::`, or a MIG
    slice (`MIG-<uuid>`, `MIG-GPU-<uuid>/<gi>/<ci>`, either with `::<n>`). Raises DeviceIdError for an id the
    device plugin would not write: not text, neither `GPU-<uuid>` nor a MIG slice (empty, whitespace or
    control characters), a replica index that is not a plain decimal from 0 (`01`, `-1`, empty), or a second
    `::`."""
    if not isinstance(device_id, str):
        raise DeviceIdError(f"device id {device_id!r} is a {type(device_id).__name__}, not text")
    base, sep, replica = device_id.partition(REPLICA_SEPARATOR)
    legacy = MIG_LEGACY_ID.fullmatch(base)
    instances = (legacy.group(2), legacy.group(3)) if legacy else (None, None)
    if legacy:
        card, kind = _canonical(legacy.group(1)), Kind.MIG_SLICE
    elif MIG_ID.fullmatch(base):
        card, kind = None, Kind.MIG_SLICE
    elif CARD_ID.fullmatch(base):
        card, kind = _canonical(base), (Kind.REPLICA if sep else Kind.WHOLE)
    else:
        raise DeviceIdError(
            f"device id {device_id!r} names no card: expected GPU-<uuid>, GPU-<uuid>::<replica index>, or a "
            "MIG slice MIG-<uuid> or MIG-GPU-<uuid>/<gi>/<ci>"
        )
    if not sep:
        return Device(device_id, card, kind, None, *instances)
    if not REPLICA_INDEX.fullmatch(replica):
        raise DeviceIdError(
            f"device id {device_id!r}: replica index {replica!r} is not a plain decimal from 0 "
            "(the device plugin writes <id>::<n>)"
        )
    return Device(device_id, card, kind, replica, *instances)


def _ids(device_ids: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """Device ids as a sequence of ids: one id given as a bare string would read as its characters."""
    if isinstance(device_ids, (str, bytes)) or not isinstance(device_ids, (tuple, list)):
        raise TypeError(
            f"device ids {device_ids!r}: expected a tuple or list of ids, not a {type(device_ids).__name__}"
        )
    return tuple(device_ids)


def card_of(device_id: str) -> str:
    """The physical card's UUID behind a device id. Raises DeviceIdError for a MIG slice named by its own
    UUID: which card it was cut from is the node's to say (nvidia-smi, DCGM's UUID label), not the id's."""
    dev = device(device_id)
    if dev.card is None:
        raise DeviceIdError(
            f"device id {device_id!r} is a MIG slice named by its own UUID: its card is not in the id "
            "(read it from the node's MIG layout)"
        )
    return dev.card


def devices(device_ids: tuple[str, ...] | list[str]) -> list[Device]:
    """Each device id read (each must be one the device plugin writes)."""
    return [device(d) for d in _ids(device_ids)]


def cards(device_ids: tuple[str, ...] | list[str]) -> set[str]:
    """The distinct physical cards behind device ids (each id must be one the device plugin writes, and name
    its card: see card_of)."""
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
    kind: Kind = Kind.WHOLE  # what the device is on its node: a replica id is an MPS client under MPS

    @property
    def card(self) -> str | None:
        return self.device.card


def held(holder: Holder, device_ids: tuple[str, ...] | list[str], advertised: int | Offer) -> list[HeldGpu]:
    """Each device a pod holds, with its share of a card. `advertised`: what one device of the resource it
    was given is on its node (an Offer, from NodeGpus), or the replicas per card of a node that shares only
    by replicas (1: whole cards). Raises DeviceIdError for what the kubelet would not give one pod on such a
    node: a device twice, a replica index the node does not advertise (index >= replicas), a whole-card id
    where the node shares its cards as replicas or slices, a replica id where it does not, a card's id where
    it advertises MIG slices and a slice's where it does not."""
    offer = advertised if isinstance(advertised, Offer) else replica_offer(advertised)
    ids = _ids(device_ids)
    twice = sorted({d for d in ids if ids.count(d) > 1})
    if twice:
        raise DeviceIdError(f"device ids {twice} given to {holder.namespace}/{holder.pod} twice")
    out = []
    for d in ids:
        dev = device(d)
        mig = offer.kind is Kind.MIG_SLICE
        if (dev.kind is Kind.MIG_SLICE) != mig:
            raise DeviceIdError(
                f"device id {d!r}: a {_what(dev)} where the node advertises {offer.resource} as {offer.kind}s"
            )
        if (dev.replica is None) != (offer.replicas == 1):
            want = "MIG-<uuid>" if mig else "GPU-<uuid>"
            raise DeviceIdError(
                f"device id {d!r}: a {_what(dev)} on a node advertising "
                f"{offer.replicas} device(s) per {'slice' if mig else 'card'} "
                f"(expected {want if offer.replicas == 1 else want + '::<n>'})"
            )
        if dev.replica is not None and int(dev.replica) >= offer.replicas:
            raise DeviceIdError(
                f"device id {d!r}: replica {dev.replica} on a node advertising {offer.replicas} per "
                f"{'slice' if mig else 'card'} (indexes 0..{offer.replicas - 1})"
            )
        out.append(HeldGpu(dev, holder, offer.share, offer.kind))
    return out


def _what(dev: Device) -> str:
    if dev.kind is Kind.MIG_SLICE and dev.replica is not None:
        return "replica of a MIG slice"
    return str(dev.kind)


def card_shares(holdings: list[HeldGpu]) -> dict[str, Fraction]:
    """The part of each physical card held, summed over its holders (a card over 1 is held more than once).
    A MIG slice named by its own UUID counts under that UUID: its card is not in the id."""
    out: dict[str, Fraction] = {}
    for h in holdings:
        key = h.card or h.device.id.partition(REPLICA_SEPARATOR)[0]
        out[key] = out.get(key, Fraction(0)) + h.share
    return out


# --- a node's cards and what it advertises of them ------------------------------------------------------


@dataclass(frozen=True)
class MigProfile:
    """A MIG GPU instance profile as the device plugin names it (`1g.10gb`, `1g.10gb.me`)."""

    name: str
    compute: int  # the GPU instance's compute slices: the `g`
    memory_gb: int

    @property
    def compute_fraction(self) -> Fraction:
        """The part of its card's compute this GPU instance has: its compute slices of the card's 7."""
        return Fraction(self.compute, CARD_COMPUTE_SLICES)

    @classmethod
    def parse(cls, name: str) -> MigProfile:
        m = MIG_PROFILE.fullmatch(name) if isinstance(name, str) else None
        if not m:
            raise NodeGpusError(
                f"MIG profile {name!r}: expected <g>g.<memory>gb as the device plugin names it (1g.10gb, "
                "3g.40gb, 1g.10gb.me)"
            )
        return cls(name, int(m.group(1)), int(m.group(2)))


@dataclass(frozen=True)
class Offer:
    """What one device of a resource a node advertises is."""

    resource: str
    kind: Kind
    share: Fraction  # of a card, one device
    replicas: int = 1  # devices per card (per slice, under MIG)
    count: int = 0  # devices the node advertises
    profile: MigProfile | None = None

    @property
    def label(self) -> str:
        """How `gpu-finops gpus` and the reports name it: `MIG slice 1g.10gb`, `MPS client 1/4`."""
        if self.kind is Kind.MIG_SLICE and self.profile is not None:
            tail = f" ({self.replicas} replicas)" if self.replicas > 1 else ""
            return f"{self.kind} {self.profile.name}{tail}"
        return str(self.kind) if self.kind is Kind.WHOLE else f"{self.kind} 1/{self.replicas}"


def replica_offer(
    replicas: int, resource: str = GPU_RESOURCE, sharing: Sharing = Sharing.TIME_SLICING
) -> Offer:
    """A card advertised as `replicas` devices (1: whole): time-sliced, or MPS clients under MPS."""
    each = share(replicas)
    if replicas == 1:
        return Offer(resource, Kind.WHOLE, each)
    kind = Kind.MPS_CLIENT if sharing is Sharing.MPS else Kind.REPLICA
    return Offer(resource, kind, each, replicas)


class NodeGpusError(ValueError):
    """A GPU node whose cards or advertisement cannot be read: never counted as zero cards or as whole ones."""


@dataclass(frozen=True)
class NodeGpus:
    """A GPU node's physical cards and what it advertises of them, read from GFD's labels and the node's
    capacity (`node_gpus`)."""

    cards: int
    sharing: Sharing
    offers: Mapping[str, Offer]  # resource -> what one device of it is
    replicas: int = 1  # GFD's replicas per card (1 without the label, and under MIG)

    def offer(self, resource: str) -> Offer:
        """What one device of `resource` is here. A whole-card or replica resource the node no longer
        advertises (its device plugin config changed under a pod that holds one) reads by the node's replicas
        label, as a node without MIG is read; a MIG profile it does not advertise is refused."""
        if (
            resource not in self.offers
            and resource in (GPU_RESOURCE, GPU_RESOURCE + ".shared")
            and self.sharing
            in (
                Sharing.NONE,
                Sharing.TIME_SLICING,
                Sharing.MPS,
            )
        ):
            return replica_offer(self.replicas, resource, self.sharing)
        if resource not in self.offers:
            raise NodeGpusError(
                f"the node advertises no {resource} (it advertises {sorted(self.offers) or 'no GPU resource'})"
            )
        return self.offers[resource]

    def equivalents(self, requests: Mapping[str, int]) -> Fraction:
        """Cards' worth of `requests` (resource -> devices) on this node. Raises NodeGpusError for a count
        that is not a whole number from 0, more devices of a resource than the node advertises, or any device
        on a node with no cards."""
        total = Fraction(0)
        for r, n in requests.items():
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise NodeGpusError(f"{n!r} devices of {r}: a count is a whole number from 0")
            if not n:
                continue
            if self.cards == 0:
                raise NodeGpusError(f"{n} {r} on a node with no GPU cards")
            offer = self.offer(r)
            if offer.count and n > offer.count:
                raise NodeGpusError(f"{n} {r} on a node that advertises {offer.count}")
            total += offer.share * n
        return total

    @property
    def advertised(self) -> Fraction:
        """Cards' worth of every device the node advertises: its cards when every card is advertised."""
        return sum((o.share * o.count for o in self.offers.values()), Fraction(0))

    @property
    def problem(self) -> str | None:
        """Why its devices are not worth its cards (None when they are, or when it advertises none yet)."""
        if not self.advertised or self.advertised == self.cards:
            return None
        shown = ", ".join(f"{o.count} {r} at {o.share}" for r, o in sorted(self.offers.items()))
        return (
            f"its devices ({shown}) are worth {self.advertised} cards, not its {self.cards}: its labels and "
            "capacity disagree (a card lost to the driver, a layout half applied, or labels from another config)"
        )


def is_gpu_resource(resource: str) -> bool:
    """A resource of the NVIDIA device plugin's: nvidia.com/gpu, nvidia.com/gpu.<anything> (a renamed share)
    or nvidia.com/mig-<anything>. Broad on purpose: what is one but not a name the model reads (node_gpus)
    is refused there, naming it, rather than passed over as not a GPU."""
    return isinstance(resource, str) and (
        resource == GPU_RESOURCE or resource.startswith((GPU_RESOURCE + ".", MIG_RESOURCE_PREFIX))
    )


SHARED_SUFFIX = ".shared"  # the device plugin's renameByDefault suffix


def mig_resource(resource: str) -> tuple[MigProfile, bool]:
    """A MIG mixed resource's profile, and whether it is the renamed share of one (`nvidia.com/mig-1g.10gb`,
    `nvidia.com/mig-1g.10gb.shared`)."""
    name = resource.removeprefix(MIG_RESOURCE_PREFIX)
    shared = name.endswith(SHARED_SUFFIX)
    profile = MigProfile.parse(name.removesuffix(SHARED_SUFFIX))
    return profile, shared


def _count(value: object, what: str) -> int:
    text = str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else None
    if text is None or not COUNT_VALUE.fullmatch(text):
        raise NodeGpusError(f"{what} {value!r} is not a whole number of devices")
    return int(text)


def _label_count(labels: Mapping[str, str], key: str, *, zero_is_one: bool = False) -> int:
    """A replicas label read strictly: absent 1; GFD's plain decimal from 1 (0 where GFD writes it for
    cards cut by MIG, when `zero_is_one`); anything else refused naming it, never read as whole cards."""
    raw = labels.get(key)
    if raw is None or (zero_is_one and raw == "0"):
        return 1
    if isinstance(raw, str) and REPLICAS_LABEL_VALUE.fullmatch(raw):
        return int(raw)
    raise NodeGpusError(f"label {key}={raw!r}: GFD writes a plain decimal from 1 (the label absent: 1)")


def _cards(labels: Mapping[str, str], strategy: str | None, known: int | None) -> int | None:
    """Physical cards: Karpenter's instance-gpu-count, else `known`, else GFD's count except under MIG
    single, where `nvidia.com/gpu.count` counts slices (under mixed it counts the cards, cut or whole)."""
    for key in (LABEL_INSTANCE_GPU_COUNT, None, LABEL_GPU_COUNT):
        if key is None:
            if known is not None:
                return known
            continue
        if key == LABEL_GPU_COUNT and strategy == "single":
            continue
        raw = labels.get(key)
        if raw is not None:
            if not (isinstance(raw, str) and COUNT_VALUE.fullmatch(raw)):
                raise NodeGpusError(f"label {key}={raw!r}: expected a plain decimal count of cards")
            return int(raw)
    return None


STRATEGIES = ("single", "mixed")


def _advertised(capacity: Mapping[str, object]) -> dict[str, int]:
    """The GPU resources in a node's capacity, each a count, each one the model reads."""
    advertised: dict[str, int] = {}
    for r, v in capacity.items():
        if not isinstance(r, str):
            raise NodeGpusError(f"capacity key {r!r} is not a resource name")
        if not is_gpu_resource(r):
            continue
        advertised[r] = _count(v, f"capacity {r}")
        if r not in (GPU_RESOURCE, GPU_RESOURCE + SHARED_SUFFIX) and not r.startswith(MIG_RESOURCE_PREFIX):
            raise NodeGpusError(
                f"capacity {r}: a GPU resource this model does not read (nvidia.com/gpu, nvidia.com/gpu.shared, "
                "nvidia.com/mig-<profile>[.shared]); a device plugin `rename` to another name is not priced"
            )
    return advertised


def node_cards(labels: Mapping[str, str], capacity: Mapping[str, object], cards: int | None = None) -> int:
    """The node's physical cards alone (what the collector prices), read as `node_gpus` reads them, without
    requiring its devices to add up to them: Karpenter's `karpenter.k8s.aws/instance-gpu-count`, else `cards`
    (the instance type's catalog entry), else GFD's count (not under MIG single, where it counts slices), else
    the whole-card devices it advertises over its replicas. Raises NodeGpusError naming what is missing or
    what GFD would not write."""
    if cards is not None and (isinstance(cards, bool) or not isinstance(cards, int) or cards < 0):
        raise NodeGpusError(f"cards {cards!r}: a whole number from 0")
    strategy = labels.get(LABEL_MIG_STRATEGY)
    if strategy is not None and strategy not in STRATEGIES:
        raise NodeGpusError(
            f"label {LABEL_MIG_STRATEGY}={strategy!r}: expected single or mixed (absent: none)"
        )
    advertised = _advertised(capacity)
    profiles = sorted(r for r, n in advertised.items() if r.startswith(MIG_RESOURCE_PREFIX) and n)
    if profiles and strategy != "mixed":
        raise NodeGpusError(
            f"capacity {profiles} without {LABEL_MIG_STRATEGY}=mixed (it is {strategy or 'absent'}): MIG profiles "
            "as resources are the mixed strategy's"
        )
    known = _cards(labels, strategy, cards)
    if known is not None:
        return known
    if strategy is not None:
        raise NodeGpusError(
            f"a MIG node ({LABEL_MIG_STRATEGY}={strategy}) without {LABEL_INSTANCE_GPU_COUNT} or a known "
            "instance type: its physical cards are unknown (GFD's count is its slices)"
        )
    replicas = _label_count(labels, LABEL_GPU_REPLICAS)
    whole = advertised.get(GPU_RESOURCE, 0) + advertised.get(GPU_RESOURCE + SHARED_SUFFIX, 0)
    if whole % replicas:
        raise NodeGpusError(
            f"{whole} GPU devices advertised is not a whole number of cards of {replicas} replicas"
        )
    return whole // replicas


def node_gpus(
    labels: Mapping[str, str],
    capacity: Mapping[str, object],
    cards: int | None = None,
    *,
    strict: bool = True,
) -> NodeGpus:
    """The node's cards (`node_cards`) and offers, read from its labels and its capacity (capacity, not
    allocatable: a card the kubelet marks unhealthy is still bought). The devices it advertises must be worth
    exactly its cards (or nothing yet). Raises NodeGpusError, naming what is wrong, for what `node_cards`
    refuses; a replicas label that is no count or a sharing strategy that contradicts the replicas; a MIG
    single node whose product label names no profile; counts that do not divide into cards or slices; devices
    worth more or less than the cards (`strict=False`: said as the node's `problem` instead, for a reader that
    must go on while a node's labels and capacity are between two configs: GFD and the device plugin update
    them apart)."""
    known = node_cards(labels, capacity, cards)
    strategy = labels.get(LABEL_MIG_STRATEGY)
    advertised = _advertised(capacity)
    replicas = _label_count(labels, LABEL_GPU_REPLICAS, zero_is_one=strategy is not None)
    if strategy == "single":
        node = _mig_single(labels, advertised, known, replicas)
    elif strategy == "mixed":
        node = _mig_mixed(labels, advertised, known)
    else:
        node = _cards_only(labels, advertised, known, replicas)
    if strict and node.problem:
        raise NodeGpusError(node.problem)
    return node


def catalog_cards(labels: Mapping[str, str]) -> int | None:
    """The physical cards of the node's instance type (`node.kubernetes.io/instance-type`) as the catalog knows
    them, None for a type it does not list."""
    known = GPU_TYPES.get(labels.get(LABEL_INSTANCE_TYPE, ""))
    return known[2] if known else None


def read_node_cards(name: str, labels: Mapping[str, str], capacity: Mapping[str, object]) -> int:
    """`node_cards` with the catalog's cards for the node's instance type, its errors naming the node."""
    try:
        return node_cards(labels, capacity, catalog_cards(labels))
    except NodeGpusError as exc:
        raise NodeGpusError(f"node {name}: {exc}") from None


def read_node(
    name: str, labels: Mapping[str, str], capacity: Mapping[str, object], *, strict: bool = True
) -> NodeGpus:
    """`node_gpus` with the catalog's cards for the node's instance type, its errors naming the node: the one
    reading of a node's GPUs the collector, the diagnosis and `gpus` share."""
    try:
        return node_gpus(labels, capacity, catalog_cards(labels), strict=strict)
    except NodeGpusError as exc:
        raise NodeGpusError(f"node {name}: {exc}") from None


def _cards_only(labels: Mapping[str, str], advertised: dict[str, int], cards: int, replicas: int) -> NodeGpus:
    """No MIG: whole cards, or each card as `replicas` devices, time-sliced or MPS clients as GFD's sharing
    strategy says (none unless replicas > 1)."""
    said = labels.get(LABEL_GPU_SHARING)
    if said is not None and said not in ("none", "time-slicing", "mps"):
        raise NodeGpusError(f"label {LABEL_GPU_SHARING}={said!r}: expected none, time-slicing or mps")
    if said is not None and (said == "none") != (replicas == 1):
        raise NodeGpusError(
            f"label {LABEL_GPU_SHARING}={said} with {LABEL_GPU_REPLICAS}={replicas}: GFD writes none exactly when "
            "a card is one device"
        )
    sharing = Sharing.NONE if replicas == 1 else (Sharing.MPS if said == "mps" else Sharing.TIME_SLICING)
    offers = {r: replace(replica_offer(replicas, r, sharing), count=n) for r, n in advertised.items()}
    return NodeGpus(cards, sharing, offers, replicas)


def _mig_single(labels: Mapping[str, str], advertised: dict[str, int], cards: int, replicas: int) -> NodeGpus:
    """MIG single: every card cut alike, each slice advertised as nvidia.com/gpu (times replicas where the
    slices are time-sliced; GFD then appends -SHARED to the product unless the resource was renamed), the
    profile at the end of GFD's product label: `NVIDIA-H100-80GB-HBM3-MIG-1g.10gb`."""
    product = labels.get(LABEL_GPU_PRODUCT, "")
    product = product if isinstance(product, str) else ""
    name = product.rpartition("-MIG-")[2].removesuffix("-SHARED") if "-MIG-" in product else ""
    if not name or name.startswith("INVALID"):
        raise NodeGpusError(
            f"a MIG single node whose {LABEL_GPU_PRODUCT} {labels.get(LABEL_GPU_PRODUCT, '')!r} names no MIG "
            "profile (GFD writes <card>-MIG-<profile>; -MIG-INVALID when the cards are not cut alike)"
        )
    profile = MigProfile.parse(name)
    count = sum(advertised.values())
    if count % replicas:
        raise NodeGpusError(
            f"{count} MIG devices advertised is not a whole number of slices of {replicas} replicas"
        )
    offers = {
        r: Offer(r, Kind.MIG_SLICE, Fraction(cards, count), replicas, n, profile) for r, n in advertised.items()
    } if count else {}  # fmt: skip
    return NodeGpus(cards, Sharing.MIG_SINGLE, offers, replicas)


def _mig_mixed(labels: Mapping[str, str], advertised: dict[str, int], cards: int) -> NodeGpus:
    """MIG mixed: a resource per profile (nvidia.com/mig-<profile>, `.shared` when its replicas are renamed),
    and nvidia.com/gpu (or .shared) for cards left whole. A slice is worth its compute slices over the compute
    slices of every slice advertised, times the cards partitioned: the slices sum to those cards exactly (a
    layout that strands compute, such as 1g.20gb x 4 of 7, prices the stranded part into its slices)."""
    whole_replicas = _label_count(labels, LABEL_GPU_REPLICAS, zero_is_one=True)
    offers: dict[str, Offer] = {}
    whole = 0
    for r in (GPU_RESOURCE, GPU_RESOURCE + SHARED_SUFFIX):
        if advertised.get(r):
            offers[r] = replace(replica_offer(whole_replicas, r), count=advertised[r])
            whole += advertised[r]
    if whole % whole_replicas:
        raise NodeGpusError(
            f"{whole} whole-card devices is not a whole number of cards of {whole_replicas} replicas"
        )
    cut = cards - whole // whole_replicas
    slices: dict[str, tuple[MigProfile, int, int]] = {}
    for r, n in advertised.items():
        if not r.startswith(MIG_RESOURCE_PREFIX) or not n:
            continue
        profile, _ = mig_resource(r)
        # GFD labels a profile under its own name, renamed (`.shared`) or not: nvidia.com/mig-1g.10gb.replicas
        reps = _label_count(labels, f"{MIG_RESOURCE_PREFIX}{profile.name}.replicas", zero_is_one=True)
        if n % reps:
            raise NodeGpusError(f"capacity {r} {n} is not a whole number of slices of {reps} replicas")
        slices[r] = (profile, n, reps)
    total = sum(p.compute * (n // reps) for p, n, reps in slices.values())
    if slices and cut <= 0:
        raise NodeGpusError(
            f"a MIG mixed node advertising {sorted(slices)} with {cards} card(s), {whole // whole_replicas} of "
            "them whole: no card left to cut the slices from"
        )
    for r, (profile, n, reps) in slices.items():
        offers[r] = Offer(r, Kind.MIG_SLICE, Fraction(cut * profile.compute, total * reps), reps, n, profile)
    return NodeGpus(cards, Sharing.MIG_MIXED, offers, whole_replicas)
