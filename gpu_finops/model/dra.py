"""GPUs allocated through Dynamic Resource Allocation (resource.k8s.io/v1), read into the held-GPU model.

Installed: the devices a GPU driver (NVIDIA's `gpu.nvidia.com`) publishes in ResourceSlices. A pool is read
at its newest generation only, and only when that generation is complete (as many slices as its
`resourceSliceCount`): the scheduler ignores older generations, and a pool still being republished is not a
count of anything. Whole cards are `type: gpu` devices; MIG slices are `type: mig` devices naming their card
(`parentUUID`) and `profile`. A card cut into slices is one card: each slice holds the part of it its compute
slices are of the compute slices cut on that card (as the collector reads a MIG node, docs/finops.md). A device
tainted NoSchedule or NoExecute (`devices[].taints`, the DRADeviceTaints feature) is installed but not
schedulable: the scheduler allocates it to no claim that does not tolerate the taint.

Allocated: a ResourceClaim's `status.allocation.devices.results` (driver, pool, device) held by the pods in
its `reservedFor`; a claim shared by several pods splits each device evenly among them. A result naming a
device no complete pool publishes is an error naming the claim, never a zero."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from gpu_finops.model.holding import CARD_COMPUTE_SLICES, Device, HeldGpu, Holder, Kind, MigProfile

GPU_DRIVER = "gpu.nvidia.com"
API = ("resource.k8s.io", "v1")  # the group and version served since Kubernetes 1.34 (GA)


class DraReadError(ValueError):
    """A ResourceSlice or ResourceClaim that cannot be read as the driver and the API write them."""


@dataclass(frozen=True)
class SliceDevice:
    """One GPU device a driver publishes: where (driver, pool, node), what (a card or a MIG slice) and which
    card it is on."""

    driver: str
    pool: str
    name: str
    node: str | None
    kind: Kind  # WHOLE or MIG_SLICE
    card: str  # the physical card's UUID (a slice's parentUUID)
    uuid: str
    profile: MigProfile | None = None
    # its NoSchedule and NoExecute taints (key=value:effect): not offered to a claim that does not tolerate them
    taints: tuple[tuple[str, str, str], ...] = ()  # (key, value, effect)

    @property
    def tainted(self) -> bool:
        return bool(self.taints)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.driver, self.pool, self.name)


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise DraReadError(f"{where}: {value!r} is not an object")
    return value


def _list(value: Any, where: str) -> list[Mapping[str, Any]]:
    """A list of objects (None reads as empty, as the API omits an empty list)."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise DraReadError(f"{where}: {value!r} is not a list of objects")
    return value


def _count(value: Any, where: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise DraReadError(f"{where}: {value!r} is not a whole number from {least}")
    return value


def _attribute(device: Mapping[str, Any], name: str, where: str) -> str | None:
    """A string attribute, None where the device has none; anything but {string: <non-empty>} is refused."""
    raw = device.get("attributes")
    attributes = _mapping({} if raw is None else raw, f"{where} attributes")
    if name not in attributes:
        return None
    value = _mapping(attributes[name], f"{where} attribute {name!r}").get("string")
    if not isinstance(value, str) or not value:
        raise DraReadError(f"{where}: attribute {name!r} is not a non-empty string ({attributes[name]!r})")
    return value


def _string(device: Mapping[str, Any], name: str, where: str) -> str:
    value = _attribute(device, name, where)
    if value is None:
        raise DraReadError(f"{where}: attribute {name!r} is missing ({device.get('attributes')!r})")
    return value


TAINT_EFFECTS = ("NoSchedule", "NoExecute")  # resource.k8s.io/v1 DeviceTaint effects that keep claims off


def _taints(raw: Mapping[str, Any], where: str) -> tuple[tuple[str, str, str], ...]:
    return tuple(
        (str(t.get("key") or ""), str(t.get("value") or ""), str(t["effect"]))
        for t in _list(raw.get("taints"), f"{where} taints")
        if t.get("effect") in TAINT_EFFECTS
    )


def _device(driver: str, pool: str, node: str | None, raw: Any, where: str) -> SliceDevice | None:
    raw = _mapping(raw, f"{where} device")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise DraReadError(f"{where}: a device without a name ({raw!r})")
    where = f"{where} device {name!r}"
    kind = _attribute(raw, "type", where)
    if kind not in ("gpu", "mig"):
        return None  # not a GPU (a VFIO device, a compute-domain channel): not ours to count
    if node is None:
        raise DraReadError(
            f"{where}: a GPU in a pool with no nodeName (allNodes or a nodeSelector): a GPU is on one node, and "
            "this pool does not say which"
        )
    uuid = _string(raw, "uuid", where)
    taints = _taints(raw, where)
    if kind == "gpu":
        return SliceDevice(driver, pool, name, node, Kind.WHOLE, uuid, uuid, taints=taints)
    try:
        profile = MigProfile.parse(_string(raw, "profile", where))
    except ValueError as exc:
        raise DraReadError(f"{where}: {exc}") from None
    return SliceDevice(
        driver, pool, name, node, Kind.MIG_SLICE, _string(raw, "parentUUID", where), uuid, profile, taints
    )


def installed(
    slices: Iterable[Mapping[str, Any]], driver: str = GPU_DRIVER
) -> dict[tuple[str, str, str], SliceDevice]:
    """The GPU devices `driver` publishes, by (driver, pool, device name): each pool at its newest generation,
    when complete. Raises DraReadError, naming the slice, device or card, for what the API or the driver would
    not write: a slice or device that is not an object, a pool without its name, generation (a whole number) or
    slice count (one every slice of the generation agrees on), a generation not yet complete, a device without a
    name or published twice, a GPU with no node, a physical card published twice (its UUID in two devices, or a
    whole card also cut into MIG slices), a card whose slices are on two nodes or cut into more than its compute
    slices."""
    pools: dict[str, dict[int, list[Mapping[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for s in slices:
        s = _mapping(s, "a ResourceSlice")
        spec = _mapping(s.get("spec") or {}, "a ResourceSlice's spec")
        if spec.get("driver") != driver:
            continue
        name = _mapping(s.get("metadata") or {}, "a ResourceSlice's metadata").get("name")
        where = f"ResourceSlice {name}"
        pool = _mapping(spec.get("pool") or {}, f"{where} spec.pool")
        if not isinstance(pool.get("name"), str) or not pool["name"]:
            raise DraReadError(f"{where}: spec.pool {pool!r} has no name")
        generation = _count(pool.get("generation"), f"{where} spec.pool.generation", 0)
        _count(pool.get("resourceSliceCount"), f"{where} spec.pool.resourceSliceCount", 1)
        pools[pool["name"]][generation].append(s)
    out: dict[tuple[str, str, str], SliceDevice] = {}
    for pool, generations in pools.items():
        newest = max(generations)
        members = generations[newest]
        counts = {m["spec"]["pool"]["resourceSliceCount"] for m in members}
        if len(counts) > 1:
            raise DraReadError(
                f"pool {pool} of {driver}: generation {newest}'s slices disagree on its resourceSliceCount "
                f"({sorted(counts)})"
            )
        (want,) = counts
        if want != len(members):
            raise DraReadError(
                f"pool {pool} of {driver}: generation {newest} has {len(members)} of its {want} ResourceSlice(s): "
                "the driver is republishing it; read it again"
            )
        for s in members:
            where = f"ResourceSlice {s['metadata'].get('name')}"
            node = s["spec"].get("nodeName")
            if node is not None and (not isinstance(node, str) or not node):
                raise DraReadError(f"{where}: spec.nodeName {node!r} is not a node's name")
            for raw in _list(s["spec"].get("devices"), f"{where} spec.devices"):
                d = _device(driver, pool, node, raw, where)
                if d is not None:
                    if d.key in out:
                        raise DraReadError(f"{where}: device {d.name} published twice in pool {pool}")
                    out[d.key] = d
    _one_card_once(out.values())
    return out


def _one_card_once(devices: Iterable[SliceDevice]) -> None:
    """Each physical card is published once: as one whole device, or as MIG slices of one node whose compute
    slices fit in it."""
    by_uuid: dict[str, SliceDevice] = {}
    whole: dict[str, SliceDevice] = {}
    cut: dict[str, list[SliceDevice]] = defaultdict(list)
    for d in devices:
        if d.uuid in by_uuid:
            other = by_uuid[d.uuid]
            raise DraReadError(
                f"UUID {d.uuid} is published twice: device {other.name} of pool {other.pool} and device {d.name} of "
                f"pool {d.pool}; one card is counted once"
            )
        by_uuid[d.uuid] = d
        if d.profile is None:
            whole[d.card] = d
        else:
            cut[d.card].append(d)
    for card, parts in cut.items():
        if card in whole:
            raise DraReadError(
                f"card {card} is published whole (device {whole[card].name} of pool {whole[card].pool}) and cut "
                f"into MIG slices ({', '.join(sorted(p.name for p in parts))}); one card is counted once"
            )
        nodes = sorted({p.node or "" for p in parts})
        if len(nodes) > 1:
            raise DraReadError(
                f"card {card}: its MIG slices are published on {len(nodes)} nodes ({', '.join(nodes)})"
            )
        compute = sum(p.profile.compute for p in parts if p.profile)
        if compute > CARD_COMPUTE_SLICES:
            raise DraReadError(
                f"card {card}: its MIG slices ({', '.join(sorted(p.name for p in parts))}) take {compute} compute "
                f"slices of the card's {CARD_COMPUTE_SLICES}"
            )


def shares(devices: Mapping[tuple[str, str, str], SliceDevice]) -> dict[tuple[str, str, str], Fraction]:
    """Each device's part of its card: 1 for a whole card; a MIG slice its compute slices over those cut on
    its card."""
    cut: dict[str, int] = defaultdict(int)
    for d in devices.values():
        if d.profile is not None:
            cut[d.card] += d.profile.compute
    return {
        k: Fraction(1) if d.profile is None else Fraction(d.profile.compute, cut[d.card])
        for k, d in devices.items()
    }


@dataclass(frozen=True)
class NodeCards:
    """A node's GPUs as its DRA driver publishes them, in cards: every device's part of its card, and the part
    not tainted away from claims."""

    installed: Fraction
    schedulable: Fraction


def node_cards(devices: Mapping[tuple[str, str, str], SliceDevice]) -> dict[str, NodeCards]:
    """Node -> its published GPUs in cards (a card cut into slices counted once, by its slices' parts)."""
    part = shares(devices)
    installed: dict[str, Fraction] = defaultdict(Fraction)
    schedulable: dict[str, Fraction] = defaultdict(Fraction)
    for k, d in devices.items():
        if d.node is None:
            continue  # a network-attached pool: no node to put it on
        installed[d.node] += part[k]
        if not d.tainted:
            schedulable[d.node] += part[k]
    return {n: NodeCards(installed[n], schedulable[n]) for n in installed}


@dataclass(frozen=True)
class Reservation:
    """One GPU device a claim allocates, as one pod it is reserved for holds it: the claim's name with it, and the
    pod's UID as the claim names it (a pod re-created under the same name is another pod)."""

    claim: str
    node: str | None
    held: HeldGpu
    pod_uid: str = ""


def reservations(
    claims: Iterable[Mapping[str, Any]],
    devices: Mapping[tuple[str, str, str], SliceDevice],
    tenant_of: Mapping[str, str] | None = None,
) -> list[Reservation]:
    """Every GPU device allocated by a claim, once per pod it is reserved for, with that pod's part of the
    card. `tenant_of`: namespace -> tenant. A result with admin access (`adminAccess`: monitoring, not holding)
    holds nothing. Raises DraReadError naming the claim for what the API would not write or that would count a
    card twice: a claim without its namespace and name, results or reservedFor that are not lists of objects, a
    pod consumer without its name and UID or listed twice, a result naming a device no complete pool publishes,
    a device allocated twice (in one claim or two), a share of a device's capacity (`shareID`), which is not read."""
    part = shares(devices)
    out = []
    taken: dict[tuple[str, str, str], str] = {}
    for c in claims:
        c = _mapping(c, "a ResourceClaim")
        meta, status = _mapping(c.get("metadata") or {}, "a ResourceClaim's metadata"), c.get("status") or {}
        ns, name = meta.get("namespace"), meta.get("name")
        where = f"ResourceClaim {ns}/{name}"
        if not isinstance(ns, str) or not ns or not isinstance(name, str) or not name:
            raise DraReadError(f"{where}: metadata without its namespace and name")
        status = _mapping(status, f"{where} status")
        allocation = _mapping(status.get("allocation") or {}, f"{where} status.allocation")
        results = _list(_mapping(allocation.get("devices") or {}, f"{where} allocation.devices").get("results"),
                        f"{where} status.allocation.devices.results")  # fmt: skip
        pods = [
            r
            for r in _list(status.get("reservedFor"), f"{where} status.reservedFor")
            if r.get("resource") == "pods"
        ]
        names = [(p.get("name"), p.get("uid")) for p in pods]
        if any(not isinstance(n, str) or not n or not isinstance(u, str) or not u for n, u in names):
            raise DraReadError(f"{where}: a pod in status.reservedFor without its name and uid ({pods!r})")
        if len({u for _, u in names}) != len(names) or len({n for n, _ in names}) != len(names):
            raise DraReadError(
                f"{where}: a pod is listed twice in status.reservedFor ({[n for n, _ in names]})"
            )
        for r in results:
            key = (r.get("driver"), r.get("pool"), r.get("device"))
            if key[0] != GPU_DRIVER or r.get("adminAccess") is True:
                continue
            if r.get("shareID"):
                raise DraReadError(
                    f"{where}: allocates a share ({r.get('shareID')}) of device {key[2]}'s capacity, which is not read"
                )
            d = devices.get(key)  # type: ignore[arg-type]
            if d is None:
                raise DraReadError(
                    f"{where}: allocated device {key[2]} of pool {key[1]} ({key[0]}), which no complete "
                    "ResourceSlice pool publishes"
                )
            if d.key in taken:
                raise DraReadError(
                    f"{where}: allocates device {d.name} of pool {d.pool}, which {taken[d.key]} allocates too; "
                    "a device is held once"
                )
            taken[d.key] = where
            if not pods:
                continue  # allocated to no pod yet: nobody holds it
            each = part[d.key] / len(pods)
            for pod_name, uid in names:
                holder = Holder(ns, pod_name, (tenant_of or {}).get(ns))
                held = HeldGpu(Device(d.uuid, d.card, d.kind), holder, each, d.kind)
                out.append(Reservation(name, d.node, held, uid))
    return out


def by_pod(reserved: Iterable[Reservation]) -> dict[tuple[str, str], list[Reservation]]:
    """(namespace, pod) -> the GPU devices reserved for it, in the order read."""
    out: dict[tuple[str, str], list[Reservation]] = defaultdict(list)
    for r in reserved:
        out[(r.held.holder.namespace, r.held.holder.pod)].append(r)
    return dict(out)


def held(
    claims: Iterable[Mapping[str, Any]],
    devices: Mapping[tuple[str, str, str], SliceDevice],
    tenant_of: Mapping[str, str] | None = None,
) -> list[HeldGpu]:
    """Every GPU device allocated by a claim, once per pod it is reserved for, with that pod's part of the
    card (`reservations` without the claims)."""
    return [r.held for r in reservations(claims, devices, tenant_of)]
