"""GPUs allocated through Dynamic Resource Allocation on the local target, with the real scheduler's allocator:
a node whose cards only the simulated NVIDIA DRA driver publishes (no nvidia.com/gpu in its capacity), one pod
asking through a ResourceClaimTemplate and one asking nvidia.com/gpu served from DRA. The collector, as the
chart's ServiceAccount, prices the node by its published cards and records each pod holding the devices its
claims allocate; the ledger's rules count the node installed and the pods allocated, each card once."""

from __future__ import annotations

from datetime import timedelta
from fractions import Fraction

import pytest

from gpu_finops.clients.nodes import KubeNodeSource
from gpu_finops.cost.gpu_holdings import gpu_holdings
from gpu_finops.facts.collector_metrics import DRA_GPUS, POD_DRA_GPUS
from gpu_finops.facts.kube_keys import GPU_RESOURCE
from harness.waits import eventually
from local.sim.device_plugin import DRA_NODE_LABEL, DRA_NODE_VALUE, gpu_uuid
from tests.local.kwok_nodes import kwok_node
from tests.local.test_product_on_local import prom_query

pytestmark = [pytest.mark.local, pytest.mark.slow, pytest.mark.timeout(900)]

NODE, NS, TENANT, ITYPE = "dra-live-0", "dra-live", "dra-team", "g6e.12xlarge"  # 4 cards
# the same workload on a device-plugin node of the same type, for the same tenant
PLUGIN_NODE, PLUGIN_NS = "dra-live-plugin-0", "dra-live-plugin"
CARDS = [gpu_uuid(NODE, i) for i in range(4)]


def claim_template(name: str, ns: str, count: int = 1) -> dict:
    """A ResourceClaimTemplate asking `count` devices of NVIDIA's gpu.nvidia.com class."""
    request = {"deviceClassName": "gpu.nvidia.com", "count": count}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": request}]}}},
    }


def pod(name: str, node: str = NODE, ns: str = NS, **spec) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "terminationGracePeriodSeconds": 1,
            **spec,
        },
    }


@pytest.fixture(scope="module")
def dra_fleet(local_cluster):
    kube = local_cluster.kube()
    node = kwok_node(NODE, ITYPE, labels={DRA_NODE_LABEL: DRA_NODE_VALUE})
    template = claim_template("one-gpu", NS)
    by_claim = pod(
        "by-claim",
        resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
        containers=[{"name": "main", "image": "fake", "resources": {"claims": [{"name": "gpu"}]}}],
    )
    by_resource = pod(
        "by-resource",
        containers=[{"name": "main", "image": "fake", "resources": {"limits": {GPU_RESOURCE: "2"}}}],
    )
    plugin_node = kwok_node(PLUGIN_NODE, ITYPE)
    plugin_pods = [
        pod(
            n,
            PLUGIN_NODE,
            PLUGIN_NS,
            containers=[{"name": "main", "image": "fake", "resources": {"limits": {GPU_RESOURCE: g}}}],
        )
        for n, g in (("by-claim", "1"), ("by-resource", "2"))
    ]
    plugin_ns = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": PLUGIN_NS, "labels": {"gpu-finops.io/tenant": TENANT}},
    }
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": NS, "labels": {"gpu-finops.io/tenant": TENANT}},
    }
    kube.apply([namespace, node, plugin_ns, plugin_node])
    eventually(
        lambda: kube.custom.list_cluster_custom_object(
            "resource.k8s.io", "v1", "resourceslices", field_selector=f"spec.nodeName={NODE}"
        )["items"],
        lambda items: len(items) == 1,
        timeout=120,
        what=f"the DRA driver's ResourceSlice of {NODE}",
    )
    kube.apply([template, by_claim, by_resource, *plugin_pods])
    for ns, where in ((NS, NODE), (PLUGIN_NS, PLUGIN_NODE)):
        eventually(
            lambda ns=ns: {p.metadata.name: p.status.phase for p in kube.core.list_namespaced_pod(ns).items},
            lambda phases: phases == {"by-claim": "Running", "by-resource": "Running"},
            timeout=180,
            what=f"both pods Running on {where}",
        )
    yield local_cluster
    for ns in (NS, PLUGIN_NS):
        kube.core.delete_namespace(ns)
    for name in (NODE, PLUGIN_NODE):
        kube.core.delete_node(name)


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


def test_each_tenant_s_share_of_the_dra_node_equals_its_share_of_a_device_plugin_node_for_the_same_work(
    dra_fleet,
):
    """The same two pods (1 and 2 cards) on a DRA node and on a device-plugin node of the same type: read by the
    collector's one reader of holdings, the tenant holds the same share of each node, so the same cost."""
    from gpu_finops.cost.allocation import UNALLOCATED, shares
    from local.cluster import product

    held = [h for h in gpu_holdings(dra_fleet.kube()) if h.namespace in (NS, PLUGIN_NS)]
    start = max(h.start for h in held)  # an interval in which every pod of both held its GPUs
    end = start + timedelta(seconds=60)
    capacity = Fraction(4 * 60)
    dra, plugin = (shares(node, start, end, capacity, held) for node in (NODE, PLUGIN_NODE))
    assert [(s.tenant, s.weight, s.pods) for s in dra] == [
        (TENANT, Fraction(3, 4), ("by-claim", "by-resource")),
        (UNALLOCATED, Fraction(1, 4), ()),
    ]
    assert [(s.tenant, s.weight, s.pods) for s in plugin] == [(s.tenant, s.weight, s.pods) for s in dra]
    by_node = {
        n.name: n
        for n in KubeNodeSource.from_kubeconfig(
            str(product.service_account_kubeconfig(dra_fleet))
        ).gpu_nodes()
        if n.name in (NODE, PLUGIN_NODE)
    }
    assert (by_node[NODE].gpu_count, by_node[NODE].instance_type) == (
        by_node[PLUGIN_NODE].gpu_count,
        by_node[PLUGIN_NODE].instance_type,
    )


def test_dcgm_series_of_a_card_held_through_a_claim_carry_the_pod_and_the_claim(dra_fleet):
    """The simulated exporter, as dcgm-exporter with KUBERNETES_ENABLE_DRA, labels the card a claim allocates with
    its holder's pod and the claim's dra_* labels, so utilisation joins to the pod that holds the device."""
    from gpu_finops.facts import dcgm
    from local.cluster import product

    url = product.prometheus_url()
    got = eventually(
        lambda: prom_query(url, f'{dcgm.SM_ACTIVE}{{hostname="{NODE}",dra_claim_name!=""}}'),
        lambda rows: {r["metric"].get("pod") for r in rows} == {"by-claim", "by-resource"},
        timeout=120,
        interval=5,
        what=f"{dcgm.SM_ACTIVE} of {NODE} with dra_* labels in the local Prometheus",
    )
    held = {h.pod: h for h in gpu_holdings(dra_fleet.kube()) if h.namespace == NS}
    for r in got:
        m = r["metric"]
        h = held[m["pod"]]
        assert (m["namespace"], m["dra_claim_namespace"], m["dra_driver_name"], m["dra_pool_name"]) == (
            NS, NS, "gpu.nvidia.com", NODE
        )  # fmt: skip
        assert m["dra_claim_name"] in h.claims and m["UUID"] in h.devices, (m, h)


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


def test_the_ledger_of_a_window_puts_every_installed_gpu_hour_of_the_fleet_with_its_dra_node_in_a_bucket(
    dra_fleet,
):
    """`gpu-finops ledger` over three of the chart's rule evaluations (1 min each) of the fleet as the product's
    Prometheus recorded it: every installed GPU-hour, the DRA node's cards among them, is in one owned bucket
    (nothing unattributed, nothing unobserved), and the allocated buckets hold what the fleet's allocated rung,
    the DRA pods' cards among them, held at each evaluation (other modules' nodes may come and go meanwhile: each
    rung is read at the window's own instants, not assumed constant)."""
    import json
    import subprocess
    import sys
    import time
    import urllib.parse
    import urllib.request
    from datetime import UTC, datetime
    from decimal import Decimal

    from gpu_finops.ledger.conventions import BUCKETS, Conventions, interval_seconds
    from local.cluster import product

    url, step = product.prometheus_url(), interval_seconds(Conventions().interval)  # the chart's rules'

    def aligned(t: datetime) -> datetime:
        epoch = int(t.timestamp())
        return datetime.fromtimestamp(epoch - epoch % step + step, UTC)

    def at_each_instant(expr: str) -> list[Decimal]:
        """The one series `expr` names at each of the window's evaluation instants, [w0, w1)."""
        q = urllib.parse.urlencode(
            {"query": expr, "start": w0.timestamp(), "end": w1.timestamp() - step, "step": step}
        )
        with urllib.request.urlopen(f"{url}/api/v1/query_range?{q}", timeout=10) as r:
            result = json.loads(r.read())["data"]["result"]
        assert len(result) == 1, (expr, result)
        return [Decimal(v) for _, v in result[0]["values"]]

    def dra_node_counted() -> bool:
        got = prom_query(url, f'node:ledger_gpus_installed:sum{{node="{NODE}"}}')
        return [r["value"][1] for r in got] == ["4"]

    eventually(dra_node_counted, bool, timeout=240, interval=5, what=f"the ledger's rules counting {NODE}")
    w0 = aligned(datetime.now(UTC))
    w1 = w0 + timedelta(seconds=3 * step)
    time.sleep(max((w1 - datetime.now(UTC)).total_seconds(), 0) + step)  # its last evaluation recorded
    # the DRA node's 4 cards installed and its pods' 3 allocated at every instant of the window
    assert at_each_instant(f'node:ledger_gpus_installed:sum{{node="{NODE}"}}') == [4] * 3
    assert at_each_instant(f'node:ledger_gpus_allocated:sum{{node="{NODE}"}}') == [3] * 3
    hours = Decimal(step) / 3600
    installed = sum(at_each_instant('fleet:ledger_rung_gpus:sum{rung="installed"}')) * hours
    allocated_rung = sum(at_each_instant('fleet:ledger_rung_gpus:sum{rung="allocated"}')) * hours
    run = subprocess.run(
        [sys.executable, "-m", "gpu_finops.cli", "ledger", "month", "--from", w0.isoformat(), "--to",
         w1.isoformat(), "--prometheus-url", url, "--json", "--step", f"{step}s"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    lines = {line["line"]: Decimal(line["gpu_hours"]) for line in report["lines"]}
    assert report["observed_samples"] == report["expected_samples"] == 3 and lines["unobserved"] == 0, report
    assert abs(Decimal(report["installed_gpu_hours"]) - installed) < Decimal("1e-9"), (str(installed), report)
    assert abs(lines["unattributed"]) < Decimal("1e-9"), report
    assert abs(sum(lines[b] for b in BUCKETS) - installed) < Decimal("1e-9"), report
    allocated = sum(lines[b] for b in BUCKETS if b.startswith("allocated_") or b.startswith("busy_"))
    assert abs(allocated - allocated_rung) < Decimal("1e-9"), (str(allocated), str(allocated_rung), report)


def test_the_diagnosis_names_the_claim_the_scheduler_cannot_allocate_and_why(dra_fleet):
    """A third pod's claim asks 2 devices of the class where 1 is free: the scheduler's DRA reason, read as the
    chart's ServiceAccount, is the diagnosis' first cause, naming the claim and the devices held."""
    from gpu_finops.clients.kube import Kube
    from gpu_finops.diagnose.engine import diagnose_pod
    from gpu_finops.diagnose.kube_observer import KubeObserver
    from gpu_finops.diagnose.model import ALLOCATION
    from gpu_finops.diagnose.read import read_cluster
    from local.cluster import product

    kube = dra_fleet.kube()
    two = claim_template("two-gpus", NS, 2)
    wants = pod(
        "wants-two",
        resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "two-gpus"}],
        containers=[{"name": "main", "image": "fake", "resources": {"claims": [{"name": "gpu"}]}}],
    )
    kube.apply([two, wants])
    eventually(
        lambda: kube.core.read_namespaced_pod("wants-two", NS),
        lambda p: any(c.reason == "Unschedulable" for c in (p.status.conditions or ())),
        timeout=120,
        interval=2,
        what="wants-two unschedulable",
    )
    observer = KubeObserver(Kube.from_kubeconfig(str(product.service_account_kubeconfig(dra_fleet))))
    pods, cluster = read_cluster(observer, "http://127.0.0.1:9", 60, retry_for=0, namespace=NS)
    (waiting,) = [p for p in pods if p.name == "wants-two"]
    diagnosis = diagnose_pod(waiting, cluster)
    finding = diagnosis.finding(ALLOCATION)
    assert diagnosis.first_cause == ALLOCATION and finding.explains is True, finding
    (claim,) = [c.claim for c in waiting.claims]
    assert claim and claim.startswith("wants-two-gpu-"), waiting.claims
    assert finding.key_evidence == (f"dra-claim:{NS}/{claim}", "dra-reason:cannot allocate all claims"), (
        finding
    )
    assert finding.summary.endswith(
        "gpu.nvidia.com: 2 asked, at most 1 free on one node (1 free, 3 held, 0 tainted on 1 usable node(s))"
    ), finding.summary


def test_kueue_charges_a_claim_template_job_and_an_extended_resource_job_to_the_same_gpu_quota(dra_fleet):
    """Through two tenants' LocalQueues, a Job whose pod asks one device of gpu.nvidia.com by a ResourceClaimTemplate
    and one asking nvidia.com/gpu: 1 are each admitted with their device counted as nvidia.com/gpu (the class mapped
    in Kueue's deviceClassMappings; the extended resource under its own name), the quota a tenant's GPUs are in."""
    from acts.namespaces import cleanup_namespaces, create_tenant_namespaces
    from gpu_finops.facts.kube_keys import KUEUE_GROUP, KUEUE_VERSION
    from harness.jobs import KueueJob
    from harness.observe import said_conditions

    kube = dra_fleet.kube()
    first, second = (t.name for t in dra_fleet.config.tenants[:2])
    spaces = create_tenant_namespaces(kube, dra_fleet.config)
    try:
        template = claim_template("one-gpu", spaces[first])
        jobs = [
            KueueJob("by-claim", spaces[first]).queue(first).gpus_by_claim("one-gpu").obj(),
            KueueJob("by-resource", spaces[second]).queue(second).gpus(1).obj(),
        ]
        kube.apply([template, *jobs])

        def usage() -> dict[str, object]:
            out: dict[str, object] = {}
            for ns in (spaces[first], spaces[second]):
                for w in kube.custom.list_namespaced_custom_object(
                    KUEUE_GROUP, KUEUE_VERSION, ns, "workloads"
                )["items"]:
                    job = next(
                        (o["name"] for o in w["metadata"].get("ownerReferences") or () if o["kind"] == "Job"),
                        "?",
                    )
                    status = w.get("status") or {}
                    out[job] = [
                        a.get("resourceUsage")
                        for a in (status.get("admission") or {}).get("podSetAssignments") or ()
                    ] or said_conditions(w, "message")
            return out

        got = eventually(
            usage,
            lambda u: u == {"by-claim": [{GPU_RESOURCE: "1"}], "by-resource": [{GPU_RESOURCE: "1"}]},
            timeout=120,
            interval=2,
            what=f"Kueue admitting both Jobs with their GPUs as {GPU_RESOURCE}",
        )
        assert got
    finally:
        cleanup_namespaces(kube, list(spaces.values()))


def test_gpu_finops_gpus_shows_the_dra_node_s_cards_and_each_pod_s_part_through_its_claim(dra_fleet):
    import json

    from tests.local.product_cli import cli

    result = cli(dra_fleet, "gpus", "--json")
    assert result.returncode == 0, result.stderr
    (node,) = [s for s in json.loads(result.stdout)["shares"] if s["node"] == NODE]
    assert (node["cards"], node["sharing"], node["unheld_cards"]) == (4, "dra", "1"), node
    held = {h["holder"]: (h["devices"], h["cards"]) for h in node["held"]}
    assert held == {f"{NS}/by-claim": (1, "1"), f"{NS}/by-resource": (2, "2")}, node
    assert all(h["resource"].startswith("claim by-") for h in node["held"]), node
