"""The DaemonSet placement rehearsal: every DaemonSet the addons stack installs for GPU nodes,
rendered by the real Helm from the device plugin chart's source with the values the stack synthesizes,
placed by the real DaemonSet controller and kube-scheduler on a kwok node shaped like our AWS GPU node,
stage by stage (local/charts/gpu_node.py says which labels exist at which stage, local/charts/gpu_placement.py
what v0.18.0 of the chart proves for our pinned 0.20.0 and what it does not).

It runs its own control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok; no
Karpenter, Kueue or simulated device plugin, which would act on the node) on the local target's fixed
ports. So it must run before the session's full target starts: the file name sorts it first in tests/local,
and it refuses to start when something already answers on the API server's port.
Run it under the local-target lock: `flock /tmp/gpu-finops-local.lock .venv/bin/pytest tests/local/test_a_gpu_daemonsets_on_local.py`.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpu_finops.facts.config import load_config
from local.charts import gpu_placement
from local.charts.gpu_node import STAGES, gpu_node

pytestmark = [pytest.mark.local, pytest.mark.slow, pytest.mark.timeout(1200)]
C = load_config()


def _port_busy(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def control_plane(tmp_path_factory) -> Iterator[Any]:
    from local.build import binaries as build
    from local.cluster.lifecycle import PORTS, LocalCluster

    if _port_busy(PORTS["apiserver"]):
        pytest.fail(
            f"something already answers on 127.0.0.1:{PORTS['apiserver']} (a local target is up): this "
            "rehearsal needs the fixed ports to itself; run `gpu-finops local down` or run it first"
        )
    target = LocalCluster(run_dir=tmp_path_factory.mktemp("placement-target"))
    bins = target.run_dir / "bin"  # only what this target runs: no Karpenter, Kueue or their builds
    bins.mkdir()
    needed = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"]
    if not all(build.binary_path(n).is_file() for n in needed):
        build.build_all()
    for name in needed:
        (bins / name).symlink_to(build.binary_path(name))
    try:
        target.run_dir.mkdir(parents=True, exist_ok=True)
        target.pki.ensure()
        target.write_kubeconfig()
        target.start_control_plane(bins)
        target.start_kwok(bins)
        yield target
    finally:
        target.sup.stop_all()


@pytest.fixture(scope="module")
def synthesized_out(tmp_path_factory) -> Path:
    from infra.app import synth

    out = tmp_path_factory.mktemp("cdktf.out")
    synth(C, out)
    return out


def _stages(shared: bool = False) -> dict[str, dict]:
    return {s: gpu_node(C, s, shared=shared, name="gpu-shared-0" if shared else "gpu-0") for s in STAGES}


def test_every_gpu_daemonset_lands_on_the_aws_shaped_gpu_node(control_plane, synthesized_out, tmp_path):
    docs = gpu_placement.render(C, synthesized_out, tmp_path)
    names = {d["metadata"]["name"] for d in docs if d["kind"] == "DaemonSet"}
    assert names == set(gpu_placement.EXPECTED), "the rendered DaemonSets changed: update EXPECTED"
    result = gpu_placement.place(control_plane.kube(), docs, _stages())
    assert result.misplaced() == []
    # NFD's worker lands before the device plugin and GFD can: they wait for its label
    assert "nvidia-device-plugin" not in result.landed["launched"]
    assert (
        "node(s) didn't match Pod's node affinity/selector"
        in result.refused["launched"]["nvidia-device-plugin"]
    )
    assert "nvidia-device-plugin-node-feature-discovery-worker" in result.landed["launched"]
    # the shared pool's node too (its label picks the time-slicing config, same placement)
    shared = gpu_placement.place(control_plane.kube(), docs, _stages(shared=True))
    assert shared.misplaced() == []


def test_the_charts_own_nfd_tolerations_keep_the_worker_and_so_every_gpu_daemonset_off(
    control_plane, synthesized_out, tmp_path
):
    """What the chart shipped before its NFD worker tolerations were fixed: the chart's NFD worker tolerations
    (nvidia.com/gpu=present only). The worker never lands, so neither NFD's label nor the device plugin."""
    chart_default = [
        {"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": "", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
    ]
    docs = gpu_placement.render(
        C, synthesized_out, tmp_path, values_patch={"nfd": {"worker": {"tolerations": chart_default}}}
    )
    kube = control_plane.kube()
    node = gpu_node(C, "launched", name="gpu-untolerated-0")
    result = gpu_placement.place(kube, docs, {"launched": node}, settle=20)
    worker = "nvidia-device-plugin-node-feature-discovery-worker"
    (miss,) = result.misplaced(stages=("launched",))
    assert miss.startswith(f"launched: {worker} did not land on the GPU node: FailedScheduling: "), miss
    assert "node(s) had untolerated taint(s)" in miss, miss  # v1.36 names no taint here


def test_on_a_dra_pool_node_the_device_plugin_and_gfd_stay_off_while_the_whole_card_node_keeps_them(
    control_plane, tmp_path_factory, tmp_path
):
    """With a DRA pool, the device plugin chart's affinity keeps its device plugin and GFD (and MPS daemon) off
    the pool's nodes, where NVIDIA's DRA driver publishes the cards instead; NFD's worker and dcgm-exporter still
    land there, and on a whole-card node the device plugin lands as before."""
    from dataclasses import replace

    from gpu_finops.facts.kube_keys import GPU_ALLOCATION_DRA, LABEL_GPU_ALLOCATION, LABEL_NODEPOOL
    from infra.app import synth

    tenants = tuple(replace(t, dra_gpu_quota=1) for t in C.tenants)
    dra = replace(C, tenants=tenants, dra_on_aws=True, gvt_spot_vcpu_quota=20).validate()
    out = tmp_path_factory.mktemp("cdktf-dra")
    synth(dra, out)
    docs = gpu_placement.render(dra, out, tmp_path)

    def on_the_dra_pool(node: dict) -> dict:
        labels = node["metadata"]["labels"]
        labels |= {LABEL_GPU_ALLOCATION: GPU_ALLOCATION_DRA, LABEL_NODEPOOL: dra.dra_nodepool_name}
        return node

    stages = {s: on_the_dra_pool(gpu_node(dra, s, name="gpu-dra-0")) for s in STAGES}
    off = ("nvidia-device-plugin", "nvidia-device-plugin-gpu-feature-discovery")
    expected = {**gpu_placement.EXPECTED, **dict.fromkeys(off)}
    result = gpu_placement.place(control_plane.kube(), docs, stages, expected, settle=30)
    assert result.misplaced(expected) == []
    for ds in off:
        assert "node(s) didn't match Pod's node affinity/selector" in result.refused["gfd"][ds], (
            result.refused
        )
    beside = {
        s: gpu_node(dra, s, name="gpu-beside-dra-0") for s in STAGES
    }  # a node no earlier stage labelled
    whole = gpu_placement.place(control_plane.kube(), docs, beside)
    assert whole.misplaced() == []
