"""Act 7 — the diagnosis names the cause: each waiting GPU pod (or unadmitted Kueue workload) built with
a known cause is diagnosed with that cause first, with its evidence, every check shown.

Set up on the real cluster (two whole-card nodes, one card time-sliced four ways, as the NodePool limits
and Kueue quotas have it), in two steps because one card cannot be both full and free:

1. both whole cards held by Kueue-admitted data-starved trainers (team-a's and team-b's one card each);
   three replicas of the shared card held by resident-model servers (VRAM 90 %), then
   - admission: a second team-b Job; team-b's quota is used, so its Workload stays QuotaReserved False
     and the Job suspended;
   - memory: a replica pod the scheduler binds to the shared card (a replica is free), which cannot start
     there because the card's VRAM is resident. On the local target a kwok pod's containers start when
     kwok's pod-ready stage fires; the pod carries kwok's own per-pod delay for that stage
     (`pod-ready.stage.kwok.x-k8s.io/delay`, 24h), so it stays bound and Pending, as a pod whose
     containers cannot start does. The engine's rule for a bound-but-Pending pod checks its node's cards.
   - allocation: a replica pod: every replica is held, three by servers at 5 % SM_ACTIVE, and Karpenter
     launches no other shared node, the pool being at its cpu limit (its nodes advertise no nvidia.com/gpu,
     so cpu is the limit that counts; on the local target the nodes report the vCPUs their instance type's
     kubelet would, gpu_finops/facts/kubelet.py);
   - two causes at once: the same ask without the GPU toleration: every replica is held (allocation) and
     the taint rules the only shared node out (placement); the order names allocation;
   - application: a whole-card pod: both cards are held by data-starved trainers (SM 2 %, PCIe 10 MB/s).
2. team-b's trainer stops, its node is tainted for the act (restored afterwards), and
   - placement: a whole-card pod that tolerates the GPU taint but not the act's, with node affinity for
     the whole-card NodePool: the only node it matches is the busy one.

Assess: the diagnosis (the engine with KubeObserver, DCGM from Prometheus) in the order given by
GPU_FINOPS_DIAGNOSIS_ORDER (default: admission, allocation, memory, placement, application), checked
by `check_diagnosis`. Local: Prometheus scrapes the cluster-driven DCGM simulator, which reports each
holder's `gpu-finops.io/gpu-profile`. AWS: the same code with the stack's Prometheus
(GPU_FINOPS_PROMETHEUS_URL), and the holders are real workloads from a public image with a short script
as arguments (acts/gpu_workloads.py, which states the pattern each makes and why): the trainers hold 30 %
of their card and wait on input (SM_ACTIVE and PCIe low, VRAM in use), the servers hold 28 % each of the
shared card (three: its VRAM resident), and the memory pod's init container waits for VRAM room the card
never has, so it stays bound and Pending.

The claim, clause by clause (assertions/diagnosis.py, one function each):
1. a_situation_for_every_cause_and_one_with_two: every cause built, one target with two causes, none twice.
2. each_target_diagnosed_once: every built target diagnosed, exactly once.
3. checks_come_in_the_diagnosis_order: the checks in the order admission, allocation, memory, placement,
   application.
4. every_check_made: none left unchecked.
5. first_cause_agrees_with_the_findings: first_cause is the first finding that explains; also_explains the later.
6. first_cause_is_the_built_one: the first cause is the one built.
7. first_finding_carries_its_evidence: the built evidence (non-empty) is on the first finding.
8. the_other_built_cause_shown_holding: where two causes were built, the later one is shown holding.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acts.diagnosis_setup import (
    create_pod,
    eventually_bound_not_started,
    eventually_expect_gpu_nodes_within_the_pools,
    eventually_expect_nothing_holds_a_gpu,
    eventually_quota_refused,
    eventually_running,
    eventually_unschedulable,
    in_pool,
    job_pod_name,
    shared_card,
    start_job,
    stop,
    tainted,
    tenants_with_one_card,
)
from acts.jobs import gpu_job, gpu_pod
from acts.report import REPORT_DIR
from acts.targets import Target, local_description
from assertions.diagnosis import DiagnosisActObs, DiagnosisObs, Situation, check_diagnosis
from assertions.verdict import require
from gpu_finops.clients.kube import Kube
from gpu_finops.diagnose import ORDER, diagnose_all
from gpu_finops.diagnose.kube_observer import KubeObserver
from gpu_finops.diagnose.model import document
from gpu_finops.diagnose.prom_observer import read_or_reason
from gpu_finops.diagnose.read import read_cluster
from gpu_finops.facts import timeouts
from gpu_finops.facts.kube_keys import GPU_RESOURCE, SHARED_GPU_RESOURCE
from harness.waits import eventually
from local.sim.profiles import DATA_STARVED, RESIDENT_MODEL

log = logging.getLogger(__name__)
ORDER_ENV = "GPU_FINOPS_DIAGNOSIS_ORDER"  # e.g. "admission,placement,allocation,memory,application"
WINDOW_S = 20  # the DCGM window the diagnosis averages over (the simulator is scraped every second)
RESIDENT_REPLICAS = 3  # shared-card holders with a resident model; the memory pod takes the fourth replica
pytestmark = pytest.mark.timeout(
    timeouts.NODE_READY
    + 3 * timeouts.UNSCHEDULABLE
    + 2 * timeouts.DCGM_SERIES
    + 2 * timeouts.HOLDER_GONE
    + 300
)


def diagnosis_order() -> tuple[str, ...]:
    raw = os.environ.get(ORDER_ENV, "").strip()
    return tuple(p.strip() for p in raw.split(",")) if raw else ORDER


def test_each_waiting_gpu_pod_is_diagnosed_with_the_cause_it_was_built_with(
    kube, act_target, tenant_namespaces, config, report, tmp_path
):
    order = diagnosis_order()
    a, b = tenants_with_one_card(config)
    ns_a, ns_b = tenant_namespaces[a], tenant_namespaces[b]
    run = uuid.uuid4().hex[:6]
    eventually_expect_nothing_holds_a_gpu(kube)
    eventually_expect_gpu_nodes_within_the_pools(kube, config)
    with dcgm_prometheus(act_target, kube, tmp_path) as prom_url:
        with report.phase("holders: two data-starved trainers, three resident-model servers"):
            trainers = {
                t: start_job(kube, act_target, ns, t, f"trainer-{t}-{run}", run, DATA_STARVED)
                for t, ns in ((a, ns_a), (b, ns_b))
            }
            servers = [f"server-{i}" for i in range(RESIDENT_REPLICAS)]

            def serve(name: str) -> None:
                create_pod(kube, ns_a, gpu_pod(act_target, name, ns_a, run, resource=SHARED_GPU_RESOURCE,
                                              profile=RESIDENT_MODEL))  # fmt: skip

            for name in servers:
                serve(name)
            running = eventually_running(
                kube, ns_a, servers, {ns_a: trainers[a], ns_b: trainers[b]}, remake=serve
            )
            shared_node = running[(ns_a, servers[0])]
            card = shared_card(act_target, kube, ns_a, servers[0], shared_node)
            trainer_pods = {t: job_pod_name(kube, ns, trainers[t]) for t, ns in ((a, ns_a), (b, ns_b))}
            node_of = {t: running[(ns, trainer_pods[t])] for t, ns in ((a, ns_a), (b, ns_b))}
        with report.phase("the waiting pods: admission, memory, allocation, two causes, application"):
            kube.batch.create_namespaced_job(
                ns_b, gpu_job(act_target, f"second-{run}", ns_b, b, run, seconds=3600)
            )
            create_pod(kube, ns_a, gpu_pod(act_target, "waits-memory", ns_a, run, resource=SHARED_GPU_RESOURCE,
                                          never_starts=True))  # fmt: skip
            eventually_bound_not_started(kube, ns_a, "waits-memory", shared_node)
            # Not pinned: the shared pool is at its cpu limit, so Karpenter launches no second shared node. The
            # application pod is pinned to the whole-card pool, as Kueue's flavor would pin it.
            create_pod(
                kube, ns_a, gpu_pod(act_target, "waits-allocation", ns_a, run, resource=SHARED_GPU_RESOURCE)
            )
            create_pod(kube, ns_a, gpu_pod(act_target, "waits-two-causes", ns_a, run, resource=SHARED_GPU_RESOURCE,
                                          tolerate_gpu_taint=False))  # fmt: skip
            create_pod(kube, ns_a, gpu_pod(act_target, "waits-application", ns_a, run, resource=GPU_RESOURCE,
                                          node_affinity=in_pool(config.nodepool_name)))  # fmt: skip
            for name in ("waits-allocation", "waits-two-causes", "waits-application"):
                eventually_unschedulable(kube, ns_a, name)
            workload = eventually_quota_refused(kube, ns_b, f"second-{run}")
            holders = [f"{ns_a}/{s}" for s in servers]
            starved = [f"{ns_a}/{trainer_pods[a]}", f"{ns_b}/{trainer_pods[b]}"]
            eventually_profiles_in_prometheus(prom_url, holders + starved)
        situations = [
            Situation(f"{ns_b}/{workload}", "admission", (f"workload:{ns_b}/{workload}", "QuotaReserved=False", "suspended")),
            Situation(f"{ns_a}/waits-memory", "memory", (f"vram-full:{shared_node}/{card}",)),
            Situation(f"{ns_a}/waits-allocation", "allocation", tuple(f"holder:{h}" for h in holders)),
            Situation(f"{ns_a}/waits-two-causes", "allocation", tuple(f"holder:{h}" for h in holders),
                      also_holds=("placement",)),
            Situation(f"{ns_a}/waits-application", "application", tuple(f"starved:{h}" for h in starved)),
        ]  # fmt: skip
        with report.phase("diagnose: admission, memory, allocation, two causes, application"):
            first, written = diagnose(kube, prom_url, order)
            keep_cli_output(act_target, prom_url, REPORT_DIR / "act-7-diagnose-all.txt")
            keep_json(written, REPORT_DIR / "act-7-diagnose.json")
        with report.phase("placement: one whole card freed, its node tainted for the act"):
            stop(kube, ns_b, jobs=(f"second-{run}",))
            stop(kube, ns_a, pods=("waits-application",))
            with tainted(kube, node_of[b]):
                stop(kube, ns_b, jobs=(trainers[b],))
                create_pod(kube, ns_a, gpu_pod(act_target, "waits-placement", ns_a, run,
                                              node_affinity=in_pool(config.nodepool_name)))  # fmt: skip
                eventually_unschedulable(kube, ns_a, "waits-placement")
                second, _ = diagnose(kube, prom_url, order)
        situations.append(
            Situation(f"{ns_a}/waits-placement", "placement",
                      (f"ruled-out:{node_of[b]}:taint", f"only-match:{node_of[a]}"))
        )  # fmt: skip
    # every diagnosis as the command printed it (a target diagnosed twice stays twice, for
    # each_target_diagnosed_once to see), the placement situation's from the run after its node was tainted
    placement = f"{ns_a}/waits-placement"
    diagnosed = [d for d in first if d["target"] != placement] + [
        d for d in second if d["target"] == placement
    ]
    obs = DiagnosisActObs(
        situations=tuple(situations), diagnoses=tuple(DiagnosisObs.from_dict(d) for d in diagnosed)
    )
    require(report.record(check_diagnosis(obs)))


# --- the target's DCGM ----------------------------------------------------------------------------------
@contextlib.contextmanager
def dcgm_prometheus(t: Target, kube: Kube, tmp_path: Path) -> Iterator[str]:
    """A Prometheus URL with every GPU's DCGM series. Local: a Prometheus scraping the cluster-driven
    simulator, which follows the device plugin's allocation. AWS: the stack's (GPU_FINOPS_PROMETHEUS_URL)."""
    if not t.simulated:
        url = os.environ.get("GPU_FINOPS_PROMETHEUS_URL")
        if not url:
            pytest.fail(
                "set GPU_FINOPS_PROMETHEUS_URL to the stack's Prometheus (a port-forward)", pytrace=False
            )
        yield url
        return
    from gpu_finops.dcgm.metrics_csv import exported_fields, render
    from local.cluster.prometheus_server import PrometheusServer
    from local.sim.gpu_sim import ClusterGpuSimulator

    sim = ClusterGpuSimulator(
        kube, exported_fields(render()), pod_resources_url=local_description()["pod_resources_url"]
    )
    port = sim.start()
    try:
        with PrometheusServer(tmp_path / "prom", [f"127.0.0.1:{port}"], scrape_interval="1s") as prom:
            yield prom.url
    finally:
        sim.stop()


def diagnose(
    kube: Kube, prom_url: str, order: tuple[str, ...]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every pending GPU pod and unadmitted workload, as `gpu-finops diagnose --all --json` says them: each
    diagnosis, and the whole document that command writes."""
    pods, cluster = read_cluster(KubeObserver(kube), prom_url, WINDOW_S, retry_for=timeouts.PROM_RETRY)
    found = diagnose_all(pods, cluster, order)
    return [d.to_dict() for d in found], document(found, cluster, order)


def keep_cli_output(t: Target, prom_url: str, path: Path) -> None:
    """What `gpu-finops diagnose --all` prints for the situations, kept beside the report (docs/diagnose.md
    quotes it). Evidence only: it never decides the act."""
    cmd = [sys.executable, "-m", "gpu_finops.cli", "diagnose", "--all", f"--prometheus-url={prom_url}",
           f"--window={WINDOW_S}s", f"--kubeconfig={t.kubeconfig}"]  # fmt: skip
    try:
        r = subprocess.run(
            cmd, capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "150"}
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"$ gpu-finops diagnose --all --window {WINDOW_S}s   # exit {r.returncode}\n{r.stdout}{r.stderr}"
        )
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("gpu-finops diagnose --all could not be kept: %s", exc)


def keep_json(written: dict[str, Any], path: Path) -> None:
    """The document `gpu-finops diagnose --all --json` writes (gpu_finops/diagnose/model.py's `document`),
    for `gpu-finops report`'s Diagnosis section. Evidence only: it never decides the act."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(written, indent=1, default=str))


def eventually_profiles_in_prometheus(prom_url: str, holders: list[str]) -> None:
    """Every holder's series readable over the window, so the diagnosis reads what the holders do."""

    def observe() -> list[str]:
        stats, why = read_or_reason(prom_url, WINDOW_S)
        if stats is None:
            return [f"unreadable: {why}"]
        seen = {s.holder for s in stats if s.sm_active is not None and s.fb_used_mib is not None}
        return [h for h in holders if h not in seen]

    eventually(
        observe,
        lambda missing: not missing,
        timeout=timeouts.DCGM_SERIES,
        interval=2,
        what="every holder's DCGM series in Prometheus",
    )
