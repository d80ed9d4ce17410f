"""The twin's fleet and policies: one YAML file (docs/twin.md, "The fleet file") naming the node kind from
the catalog, how many static kwok nodes (some cordoned, some in the repair queue) and/or a Karpenter pool
from zero, the tenants with their nominal quotas, and named policies. The Kueue objects come from the addons
stack's own functions (infra/objects/kueue.py, given each tenant's QueuePolicy), the NodePool from
local/charts/render.py, as `local up` renders them.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_finops.facts import input_files
from gpu_finops.facts.catalog import GPU_TYPES
from gpu_finops.facts.config import Config, Tenant, load_config
from gpu_finops.facts.errors import ConfigError, excerpt, shown
from gpu_finops.facts.kube_keys import (
    LABEL_ARCH,
    LABEL_CAPACITY_TYPE,
    LABEL_HOSTNAME,
    LABEL_INSTANCE_TYPE,
    LABEL_NODEPOOL,
    LABEL_POOL,
    LABEL_UNSCHEDULABLE_REASON,
    LABEL_ZONE,
)
from gpu_finops.facts.kubelet import node_resources
from infra.objects.karpenter import GPU_TAINT
from infra.objects.kueue import QueuePolicy, kueue_objects
from local.sim.device_plugin import KWOK_ANNOTATION

STATIC_POOL = "twin-static"  # the static nodes' karpenter.sh/nodepool value: no NodePool owns it
REPAIR_REASON = "repair-queue"  # gpu_finops/ledger/conventions.py's reason for unschedulable_repair_queue
NODE_PREFIX = "twin-node-"
POLICY_KEYS = {f.name for f in dataclasses.fields(QueuePolicy)}
# Kueue v1beta2's enums for the policy's string fields (ClusterQueue spec.preemption, spec.queueingStrategy)
POLICY_VALUES = {
    "within_cluster_queue": ("Never", "LowerPriority", "LowerOrNewerEqualPriority"),
    "reclaim_within_cohort": ("Never", "LowerPriority", "Any"),
    "borrow_within_cohort": ("Never", "LowerPriority"),
    "queueing_strategy": ("StrictFIFO", "BestEffortFIFO"),
}


@dataclass(frozen=True)
class Fleet:
    instance_type: str
    static_nodes: int
    cordoned: int
    repair: int
    karpenter_nodes: int  # the Karpenter pool's limit in nodes (0: no pool)
    tenants: tuple[Tenant, ...]
    policies: dict[str, dict[str, QueuePolicy]]  # policy name -> tenant -> QueuePolicy
    zone: str

    @property
    def gpus_per_node(self) -> int:
        return GPU_TYPES[self.instance_type][2]

    @property
    def installed_gpus(self) -> int:
        """Static GPUs (cordoned and repair included: installed, not schedulable)."""
        return self.static_nodes * self.gpus_per_node

    @property
    def schedulable_gpus(self) -> int:
        return (self.static_nodes - self.cordoned - self.repair) * self.gpus_per_node

    @property
    def karpenter_pools(self) -> frozenset[str]:
        """The NodePools whose nodes are the fleet's (none for a static fleet)."""
        return frozenset({self.config().nodepool_name}) if self.karpenter_nodes else frozenset()

    def config(self) -> Config:
        """The project config the local target renders its objects from, with the fleet's tenants and node
        kind. Static fleets use their own pool name, so the Karpenter pool `local up` makes never claims them."""
        base = load_config()
        vcpu = GPU_TYPES[self.instance_type][0]
        nodes = max(self.karpenter_nodes, 1) + self.static_nodes
        return dataclasses.replace(
            base,
            tenants=self.tenants,
            gpu_instance_types=(self.instance_type,),
            gpu_node_vcpu=vcpu,
            gpus_per_node=self.gpus_per_node,
            gvt_spot_vcpu_quota=vcpu * nodes,
            nodepool_name=base.nodepool_name if self.karpenter_nodes else STATIC_POOL,
        ).validate()

    def kueue(self, policy: str) -> list[dict[str, Any]]:
        """Namespaces, flavor, ClusterQueues under `policy`, LocalQueues, priority classes."""
        if policy not in self.policies:
            raise ConfigError(
                "policy", f"{policy!r} is not in the fleet file's policies {sorted(self.policies)}"
            )
        return kueue_objects(self.config(), self.policies[policy])

    def node_names(self) -> list[str]:
        return [f"{NODE_PREFIX}{i:05d}" for i in range(self.static_nodes)]

    def nodes(self) -> list[dict[str, Any]]:
        """The static kwok nodes: the first `repair` in the repair queue, the next `cordoned` cordoned."""
        c = self.config()
        capacity, allocatable = node_resources(self.instance_type)  # as the type's kubelet on EKS
        out = []
        for i, name in enumerate(self.node_names()):
            labels = {
                LABEL_INSTANCE_TYPE: self.instance_type,
                LABEL_NODEPOOL: c.nodepool_name,
                LABEL_CAPACITY_TYPE: "spot",
                LABEL_ZONE: self.zone,
                LABEL_HOSTNAME: name,
                LABEL_ARCH: "amd64",
                "kubernetes.io/os": "linux",
                LABEL_POOL: "gpu",
                "type": "kwok",
            }
            unschedulable = i < self.repair + self.cordoned
            if i < self.repair:
                labels[LABEL_UNSCHEDULABLE_REASON] = REPAIR_REASON
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": name, "labels": labels, "annotations": {KWOK_ANNOTATION: "fake"}},
                    "spec": {
                        "taints": [dict(GPU_TAINT)],
                        "unschedulable": unschedulable,
                        "providerID": f"kwok://{name}",
                    },
                    "status": {"capacity": capacity, "allocatable": allocatable},
                }
            )
        return out


def _int(where: str, key: str, raw: dict[str, Any], default: int | None = None, low: int = 0) -> int:
    value = raw.get(key.rsplit(".", 1)[-1], default) if isinstance(raw, dict) else None
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(key, f"expected an integer >= {low}, found {shown(value)}", where)
    return value


def _policy(where: str, name: str, raw: Any) -> QueuePolicy:
    if not isinstance(raw, dict):
        raise ConfigError(
            f"policies.{name}", f"expected a mapping of QueuePolicy fields, found {shown(raw)}", where
        )
    unknown = sorted(set(raw) - POLICY_KEYS)
    if unknown:
        raise ConfigError(
            f"policies.{name}.{unknown[0]}", f"unknown; a policy has {sorted(POLICY_KEYS)}", where
        )
    for key in ("borrowing_limit", "lending_limit"):
        value = raw.get(key, 0 if key == "borrowing_limit" else None)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ConfigError(
                f"policies.{name}.{key}", f"expected null or an integer >= 0, found {shown(value)}", where
            )
    for key, allowed in POLICY_VALUES.items():
        if key in raw and raw[key] not in allowed:
            raise ConfigError(
                f"policies.{name}.{key}", f"expected one of {list(allowed)}, found {shown(raw[key])}", where
            )
    return QueuePolicy(**raw)


FLEET_KEYS = (
    "instance_type",
    "static_nodes",
    "cordoned",
    "repair",
    "karpenter_nodes",
    "tenants",
    "policies",
    "zone",
)
TENANT_KEYS = ("name", "quota")


def _unknown(keys: Any, known: tuple[str, ...], at: str, where: str) -> None:
    """A key the fleet does not have is refused, with the closest one it does."""
    for key in keys:
        if key not in known:
            close = difflib.get_close_matches(str(key)[:200], known, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(known)}"
            raise ConfigError(f"{at}{excerpt(str(key), 80)}", f"not a known key; {hint}", where)


def parse(raw: Any, where: str) -> Fleet:
    if not isinstance(raw, dict):
        raise ConfigError("fleet", f"expected a mapping, found {shown(raw)}", where)
    _unknown(raw, FLEET_KEYS, "", where)
    itype = raw.get("instance_type")
    if itype not in GPU_TYPES:
        raise ConfigError(
            "instance_type",
            f"{shown(itype)} is not in gpu_finops/facts/catalog.py's {sorted(GPU_TYPES)}",
            where,
        )
    static = _int(where, "static_nodes", raw, 0)
    cordoned, repair = _int(where, "cordoned", raw, 0), _int(where, "repair", raw, 0)
    if cordoned + repair > static:
        raise ConfigError("cordoned", f"cordoned {cordoned} + repair {repair} > static_nodes {static}", where)
    karpenter = _int(where, "karpenter_nodes", raw, 0)
    if static + karpenter == 0:
        raise ConfigError(
            "static_nodes", "the fleet has no nodes: set static_nodes or karpenter_nodes", where
        )
    tenants_raw = raw.get("tenants")
    if not isinstance(tenants_raw, list) or not tenants_raw:
        raise ConfigError("tenants", f"expected a list of {{name, quota}}, found {shown(tenants_raw)}", where)
    if not all(isinstance(t, dict) and isinstance(t.get("name"), str) for t in tenants_raw):
        raise ConfigError("tenants", f"expected a list of {{name, quota}}, found {shown(tenants_raw)}", where)
    for t in tenants_raw:
        _unknown(t, TENANT_KEYS, "tenants.", where)
    tenants = tuple(Tenant(t["name"], _int(where, "tenants.quota", t, None, 1)) for t in tenants_raw)
    policies_raw = raw.get("policies") or {"shipped": {}}
    if not isinstance(policies_raw, dict):
        raise ConfigError(
            "policies", f"expected a mapping name -> policy, found {shown(policies_raw)}", where
        )
    policies: dict[str, dict[str, QueuePolicy]] = {}
    names = {t.name for t in tenants}
    for pname, body in policies_raw.items():
        body = body or {}
        if not isinstance(body, dict) or set(body) - {"default", "tenants"}:
            raise ConfigError(
                f"policies.{pname}", "expected `default` and/or `tenants` (per-tenant overrides)", where
            )
        base, per = body.get("default") or {}, body.get("tenants") or {}
        if set(per) - names:
            raise ConfigError(
                f"policies.{pname}.tenants", f"{sorted(set(per) - names)} are not tenants", where
            )
        policies[pname] = {
            t.name: _policy(where, f"{pname}.{t.name}", {**base, **(per.get(t.name) or {})}) for t in tenants
        }
    zone = raw.get("zone", "us-east-1a")
    if not isinstance(zone, str) or not re.fullmatch(r"[a-z]{2}(-[a-z]+)+-[0-9]+[a-z]", zone):
        raise ConfigError(
            "zone", f"expected an availability zone like us-east-1a, found {shown(zone)}", where
        )
    fleet = Fleet(itype, static, cordoned, repair, karpenter, tenants, policies, zone)
    quota = sum(t.gpu_quota for t in tenants)
    if not karpenter and quota > fleet.schedulable_gpus:
        raise ConfigError(
            "tenants",
            f"the quotas add up to {quota} GPUs but the static fleet schedules {fleet.schedulable_gpus}: Kueue would "
            "admit what cannot run; lower the quotas or add nodes",
            where,
        )
    try:
        fleet.config()
    except ConfigError as exc:
        raise exc.in_file(where) from None
    return fleet


def load(path: Path) -> Fleet:
    """A fleet file, read through the input layer (a regular file, strict YAML as the config's)."""
    data = input_files.read_yaml(path, "fleet")
    try:
        return parse(data, str(path))
    except ConfigError as exc:  # named as a fleet file
        raise exc.in_file(exc.source or str(path), input_files.kind("fleet")) from None
