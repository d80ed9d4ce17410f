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

from gpu_finops.model.holding import Device, HeldGpu, Holder, Kind, MigProfile

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
    taints: tuple[str, ...] = ()

    @property
    def tainted(self) -> bool:
        return bool(self.taints)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.driver, self.pool, self.name)


def _string(device: Mapping[str, Any], name: str, where: str) -> str:
    value = ((device.get("attributes") or {}).get(name) or {}).get("string")
    if not isinstance(value, str) or not value:
        raise DraReadError(
            f"{where}: attribute {name!r} is not a non-empty string ({device.get('attributes')!r})"
        )
    return value


TAINT_EFFECTS = ("NoSchedule", "NoExecute")  # resource.k8s.io/v1 DeviceTaint effects that keep claims off


def _taints(raw: Mapping[str, Any], where: str) -> tuple[str, ...]:
    taints = raw.get("taints") or []
    if not isinstance(taints, list) or not all(isinstance(t, Mapping) for t in taints):
        raise DraReadError(f"{where}: taints {taints!r} is not a list of taints")
    return tuple(
        f"{t.get('key')}={t.get('value') or ''}:{t['effect']}"
        for t in taints
        if t.get("effect") in TAINT_EFFECTS
    )


def _device(
    driver: str, pool: str, node: str | None, raw: Mapping[str, Any], where: str
) -> SliceDevice | None:
    kind = ((raw.get("attributes") or {}).get("type") or {}).get("string")
    if kind not in ("gpu", "mig"):
        return None  # not a GPU (a VFIO device, a compute-domain channel): not ours to count
    name = raw.get("name")
    where = f"{where} device {name!r}"
    uuid = _string(raw, "uuid", where)
    taints = _taints(raw, where)
    if kind == "gpu":
        return SliceDevice(driver, pool, str(name), node, Kind.WHOLE, uuid, uuid, taints=taints)
    profile = MigProfile.parse(_string(raw, "profile", where))
    return SliceDevice(
        driver,
        pool,
        str(name),
        node,
        Kind.MIG_SLICE,
        _string(raw, "parentUUID", where),
        uuid,
        profile,
        taints,
    )


def installed(
    slices: Iterable[Mapping[str, Any]], driver: str = GPU_DRIVER
) -> dict[tuple[str, str, str], SliceDevice]:
    """The GPU devices `driver` publishes, by (driver, pool, device name): each pool at its newest generation,
    when complete. Raises DraReadError for a slice without its pool or for an incomplete newest generation."""
    pools: dict[str, dict[int, list[Mapping[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for s in slices:
        spec = s.get("spec") or {}
        if spec.get("driver") != driver:
            continue
        name = (s.get("metadata") or {}).get("name")
        pool = spec.get("pool") or {}
        if not isinstance(pool.get("name"), str) or not isinstance(pool.get("generation"), int):
            raise DraReadError(f"ResourceSlice {name}: spec.pool {pool!r} has no name and generation")
        pools[pool["name"]][pool["generation"]].append(s)
    out: dict[tuple[str, str, str], SliceDevice] = {}
    for pool, generations in pools.items():
        newest = max(generations)
        members = generations[newest]
        want = (members[0]["spec"]["pool"]).get("resourceSliceCount")
        if want != len(members):
            raise DraReadError(
                f"pool {pool} of {driver}: generation {newest} has {len(members)} of its {want} ResourceSlice(s): "
                "the driver is republishing it; read it again"
            )
        for s in members:
            where = f"ResourceSlice {s['metadata'].get('name')}"
            for raw in s["spec"].get("devices") or []:
                d = _device(driver, pool, s["spec"].get("nodeName"), raw, where)
                if d is not None:
                    if d.key in out:
                        raise DraReadError(f"{where}: device {d.name} published twice in pool {pool}")
                    out[d.key] = d
    return out


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
    """One GPU device a claim allocates, as one pod it is reserved for holds it: the claim's name with it."""

    claim: str
    node: str | None
    held: HeldGpu


def reservations(
    claims: Iterable[Mapping[str, Any]],
    devices: Mapping[tuple[str, str, str], SliceDevice],
    tenant_of: Mapping[str, str] | None = None,
) -> list[Reservation]:
    """Every GPU device allocated by a claim, once per pod it is reserved for, with that pod's part of the
    card. `tenant_of`: namespace -> tenant. Raises DraReadError for a result naming a device no complete pool
    publishes, or a claim whose reservedFor is not a list of consumers."""
    part = shares(devices)
    out = []
    for c in claims:
        meta, status = c.get("metadata") or {}, c.get("status") or {}
        where = f"ResourceClaim {meta.get('namespace')}/{meta.get('name')}"
        results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
        consumers = status.get("reservedFor") or []
        if not isinstance(consumers, list) or not all(isinstance(r, Mapping) for r in consumers):
            raise DraReadError(f"{where}: status.reservedFor {consumers!r} is not a list of consumers")
        pods = [r for r in consumers if r.get("resource") == "pods"]
        if not results or not pods:
            continue  # not allocated, or allocated to no pod yet: nobody holds it
        for r in results:
            key = (r.get("driver"), r.get("pool"), r.get("device"))
            if key[0] != GPU_DRIVER:
                continue
            d = devices.get(key)
            if d is None:
                raise DraReadError(
                    f"{where}: allocated device {key[2]} of pool {key[1]} ({key[0]}), which no complete "
                    "ResourceSlice pool publishes"
                )
            each = part[key] / len(pods)
            ns = meta.get("namespace") or ""
            for p in pods:
                holder = Holder(ns, p.get("name") or "", (tenant_of or {}).get(ns))
                out.append(
                    Reservation(
                        str(meta.get("name")),
                        d.node,
                        HeldGpu(Device(d.uuid, d.card, d.kind), holder, each, d.kind),
                    )
                )
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
