"""GPUs allocated through Dynamic Resource Allocation on the local target, with the real scheduler's allocator:
a node whose cards only the simulated NVIDIA DRA driver publishes (no nvidia.com/gpu in its capacity), one pod
asking through a ResourceClaimTemplate and one asking nvidia.com/gpu served from DRA. The collector, as the
chart's ServiceAccount, prices the node by its published cards and records each pod holding the devices its
claims allocate; the ledger's rules count the node installed and the pods allocated, each card once."""

from __future__ import annotations

from fractions import Fraction

import pytest

from gpu_finops.clients.nodes import KubeNodeSource
from gpu_finops.cost.gpu_holdings import gpu_holdings
from gpu_finops.facts.collector_metrics import DRA_GPUS, POD_DRA_GPUS
from gpu_finops.facts.kube_keys import GPU_RESOURCE
from harness.waits import eventually
from local.sim.device_plugin import DRA_NODE_LABEL, DRA_NODE_VALUE, gpu_uuid
from tests.local.test_product_on_local import prom_query

pytestmark = [pytest.mark.local, pytest.mark.slow, pytest.mark.timeout(900)]

NODE, NS, TENANT, ITYPE = "dra-live-0", "dra-live", "dra-team", "g6e.12xlarge"  # 4 cards
CARDS = [gpu_uuid(NODE, i) for i in range(4)]


def pod(name: str, **spec) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": NODE},
            "terminationGracePeriodSeconds": 1,
            **spec,
        },
    }


@pytest.fixture(scope="module")
def dra_fleet(local_cluster):
    kube = local_cluster.kube()
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": NODE,
            "annotations": {"kwok.x-k8s.io/node": "fake"},
            "labels": {
                "kubernetes.io/hostname": NODE,
                "node.kubernetes.io/instance-type": ITYPE,
                "type": "kwok",
                DRA_NODE_LABEL: DRA_NODE_VALUE,
            },
        },
    }
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-gpu", "namespace": NS},
        "spec": {
            "spec": {
                "devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}
            }
        },
    }
    by_claim = pod(
        "by-claim",
        resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
        containers=[{"name": "main", "image": "fake", "resources": {"claims": [{"name": "gpu"}]}}],
    )
    by_resource = pod(
        "by-resource",
        containers=[{"name": "main", "image": "fake", "resources": {"limits": {GPU_RESOURCE: "2"}}}],
    )
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": NS, "labels": {"gpu-finops.io/tenant": TENANT}},
    }
    kube.apply([namespace, node])
    eventually(
        lambda: kube.custom.list_cluster_custom_object(
            "resource.k8s.io", "v1", "resourceslices", field_selector=f"spec.nodeName={NODE}"
        )["items"],
        lambda items: len(items) == 1,
        timeout=120,
        what=f"the DRA driver's ResourceSlice of {NODE}",
    )
    kube.apply([template, by_claim, by_resource])
    eventually(
        lambda: {p.metadata.name: p.status.phase for p in kube.core.list_namespaced_pod(NS).items},
        lambda phases: phases == {"by-claim": "Running", "by-resource": "Running"},
        timeout=180,
        what=f"both pods Running on {NODE}",
    )
    yield local_cluster
    kube.core.delete_namespace(NS)
    kube.core.delete_node(NODE)


def test_the_node_advertises_no_gpu_resource_and_is_priced_by_the_cards_its_driver_publishes(dra_fleet):
    from local.cluster import product

    capacity = dra_fleet.kube().core.read_node(NODE).status.capacity or {}
    assert GPU_RESOURCE not in capacity, capacity
    as_collector = KubeNodeSource.from_kubeconfig(str(product.service_account_kubeconfig(dra_fleet)))
    (node,) = [n for n in as_collector.gpu_nodes() if n.name == NODE]
    assert (node.gpu_count, node.dra.installed, node.dra.schedulable) == (4, 4, 4)


def test_each_pod_holds_the_devices_its_claim_allocates_once_for_its_tenant(dra_fleet):
    held = {h.pod: h for h in gpu_holdings(dra_fleet.kube()) if h.namespace == NS}
    assert sorted(held) == ["by-claim", "by-resource"]
    claim, resource = held["by-claim"], held["by-resource"]
    assert (claim.gpus, claim.equivalents, claim.tenant, claim.node) == (1, Fraction(1), TENANT, NODE)
    assert (resource.gpus, resource.equivalents, resource.tenant) == (2, Fraction(2), TENANT)
    assert claim.claims[0].startswith("by-claim-gpu-") and resource.claims[0].startswith(
        "by-resource-extended-resources-"
    )
    devices = claim.devices + resource.devices
    assert len(set(devices)) == 3 and set(devices) <= set(CARDS), devices


def test_the_ledger_counts_the_node_installed_and_both_pods_allocated(dra_fleet):
    from local.cluster import product

    url = product.prometheus_url()
    exported = eventually(
        lambda: (
            prom_query(url, f'{DRA_GPUS}{{node="{NODE}",state="installed"}}'),
            prom_query(url, f'sum({POD_DRA_GPUS}{{node="{NODE}"}})'),
        ),
        lambda got: [r["value"][1] for r in got[0]] == ["4"] and [r["value"][1] for r in got[1]] == ["3"],
        timeout=240,
        interval=5,
        what=f"the collector's DRA series of {NODE} in the local Prometheus",
    )
    assert exported
    ledger = eventually(
        lambda: {
            rule: [r["value"][1] for r in prom_query(url, f'{rule}{{node="{NODE}"}}')]
            for rule in (
                "node:ledger_gpus_installed:sum",
                "node:ledger_gpus_allocated:sum",
                "node:ledger_gpus_free:sum",
            )
        },
        lambda got: (
            got
            == {
                "node:ledger_gpus_installed:sum": ["4"],
                "node:ledger_gpus_allocated:sum": ["3"],
                "node:ledger_gpus_free:sum": ["1"],
            }
        ),
        timeout=240,
        interval=5,
        what=f"the ledger's rules counting {NODE}",
    )
    assert ledger
