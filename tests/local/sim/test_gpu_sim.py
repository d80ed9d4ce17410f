"""The cluster-driven GPU simulator: a pod's profile drives its card's DCGM values, time-sliced holders
are reported on the card the device plugin gave them, and the old annotation and fallback still work."""

from __future__ import annotations

from types import SimpleNamespace as NS

from gpu_finops.facts import dcgm
from local.sim.device_plugin import gpu_uuid
from local.sim.gpu_sim import devices_from_pod_resources, gpus_from_cluster
from local.sim.profiles import DATA_STARVED, RESIDENT_MODEL, profile_values


def node(name: str, cards: int) -> NS:
    return NS(
        metadata=NS(name=name, labels={"nvidia.com/gpu.count": str(cards)}),
        status=NS(capacity={"nvidia.com/gpu": str(cards)}),
    )


def pod(
    name: str, on: str, annotations: dict[str, str], *, phase: str = "Running", res: str = "nvidia.com/gpu"
):
    return NS(
        metadata=NS(namespace="ns", name=name, annotations=annotations),
        spec=NS(node_name=on, containers=[NS(name="gpu", resources=NS(limits={res: "1"}))]),
        status=NS(phase=phase),
    )


def answer(node_name: str, entries: dict[str, str]) -> dict:
    """A pod-resources List answer: pod -> device id."""
    return {
        "podResources": [
            {
                "namespace": "ns",
                "name": p,
                "containers": [
                    {"name": "gpu", "devices": [{"resourceName": "nvidia.com/gpu.shared", "deviceIds": [d]}]}
                ],
            }
            for p, d in entries.items()
        ]
    }


def test_a_profile_annotation_drives_every_field_of_its_card():
    (gpu,) = gpus_from_cluster(
        [node("n1", 1)], [pod("llm", "n1", {"gpu-finops.io/gpu-profile": RESIDENT_MODEL})]
    )
    assert gpu.pod == ("ns", "llm", "gpu")
    assert gpu.values == profile_values(RESIDENT_MODEL)


def test_sm_active_annotation_still_sets_sm_alone_and_overrides_a_profile():
    (alone,) = gpus_from_cluster([node("n1", 1)], [pod("a", "n1", {"gpu-finops.io/sm-active": "0.4582"})])
    assert alone.values[dcgm.SM_ACTIVE] == 0.4582 and alone.values[dcgm.GPU_UTIL] == 100.0
    (both,) = gpus_from_cluster(
        [node("n1", 1)],
        [pod("b", "n1", {"gpu-finops.io/gpu-profile": DATA_STARVED, "gpu-finops.io/sm-active": "0.3"})],
    )
    assert (
        both.values[dcgm.SM_ACTIVE] == 0.3
        and both.values[dcgm.FB_USED] == profile_values(DATA_STARVED)[dcgm.FB_USED]
    )


def test_an_unknown_profile_falls_back_to_the_default_load_rather_than_stopping_the_simulator():
    (gpu,) = gpus_from_cluster(
        [node("n1", 1)], [pod("typo", "n1", {"gpu-finops.io/gpu-profile": "resident"})]
    )
    assert gpu.values[dcgm.SM_ACTIVE] == 0.5


def test_time_sliced_holders_are_reported_on_the_card_the_device_plugin_gave_them():
    n = node("shared", 2)
    u0, u1 = gpu_uuid("shared", 0), gpu_uuid("shared", 1)
    devices = {"shared": devices_from_pod_resources(answer("shared", {"a": f"{u1}::0", "b": f"{u1}::3"}))}
    pods = [
        pod("a", "shared", {"gpu-finops.io/gpu-profile": RESIDENT_MODEL}, res="nvidia.com/gpu.shared"),
        pod("b", "shared", {"gpu-finops.io/gpu-profile": RESIDENT_MODEL}, res="nvidia.com/gpu.shared"),
    ]
    gpus = gpus_from_cluster([n], pods, devices)
    by_card = {(g.uuid, g.pod[1] if g.pod else None) for g in gpus}
    assert by_card == {(u0, None), (u1, "a"), (u1, "b")}  # card 0 unheld, both replicas on card 1
    # the replica each holds, which the exporter reports as `vgpu`
    assert {g.pod[1]: g.vgpu for g in gpus if g.pod} == {"a": "0", "b": "3"}


def test_without_an_allocation_holders_take_the_first_free_cards_and_pending_pods_hold_nothing():
    pods = [
        pod("late", "n1", {}, phase="Pending"),
        pod("first", "n1", {}),
        pod("second", "n1", {}),
        pod("third", "n1", {}),  # more holders than cards: not reported, as before
    ]
    gpus = gpus_from_cluster([node("n1", 2)], pods, {})
    assert [(g.index, g.pod[1]) for g in gpus if g.pod] == [(0, "first"), (1, "second")]


def test_pod_resources_keep_the_physical_card_once_per_pod_with_its_first_replica():
    body = answer("n", {"p": "GPU-abc::1"})
    body["podResources"][0]["containers"][0]["devices"][0]["deviceIds"] = ["GPU-abc::1", "GPU-abc::2"]
    assert devices_from_pod_resources(body) == {("ns", "p"): ("GPU-abc::1",)}


def test_mig_slice_holders_are_reported_per_gpu_instance_of_the_card_their_slice_was_cut_from():
    from local.sim.dcgm_sim import DcgmSimulator
    from local.sim.device_plugin import mig_layout, mig_slices

    labels = {"node.kubernetes.io/instance-type": "p5.48xlarge", "nvidia.com/mig.config": "all-3g.40gb",
              "nvidia.com/mig.config.state": "success", "nvidia.com/mig.strategy": "mixed", "nvidia.com/gpu.count": "8"}  # fmt: skip
    n = NS(metadata=NS(name="mig", labels=labels), status=NS(capacity={"nvidia.com/mig-3g.40gb": "16"}))
    slices = mig_slices("mig", 8, mig_layout("p5.48xlarge", "all-3g.40gb"))
    (first, _, _), (second, _, _), (on_card_5, card, _) = slices[0], slices[1], slices[10]
    devices = {"mig": devices_from_pod_resources(answer("mig", {"a": first, "b": second, "c": on_card_5}))}
    pods = [
        pod(p, "mig", {"gpu-finops.io/gpu-profile": RESIDENT_MODEL}, res="nvidia.com/mig-3g.40gb")
        for p in "abc"
    ]
    gpus = gpus_from_cluster([n], pods, devices)
    # one series set per GPU instance (2 per card), each with its card's UUID, none for the card itself
    assert len(gpus) == 16 and len({g.uuid for g in gpus}) == 8
    assert sorted({(g.uuid, g.instance) for g in gpus}) == sorted(
        (gpu_uuid("mig", c), ("3g.40gb", gi)) for c in range(8) for gi in (1, 2)
    )
    held = {g.pod[1]: (g.uuid, g.instance) for g in gpus if g.pod}
    assert (
        held
        == {
            "a": (gpu_uuid("mig", 0), ("3g.40gb", 1)),
            "b": (gpu_uuid("mig", 0), ("3g.40gb", 2)),
            "c": (gpu_uuid("mig", card), ("3g.40gb", 1)),
        }
        and card == 5
    )
    assert all(g.vgpu is None and dcgm.GPU_UTIL not in g.values for g in gpus), (
        "DCGM has no GPU_UTIL per MIG instance"
    )
    sim = DcgmSimulator([dcgm.GPU_UTIL, dcgm.SM_ACTIVE])
    sim.set_gpus(gpus)
    text = sim.render()
    assert dcgm.GPU_UTIL not in text
    lines = [line for line in text.splitlines() if line.startswith(dcgm.SM_ACTIVE + "{")]
    assert len(lines) == 16
    held_line = next(line for line in lines if 'pod="a"' in line)
    assert f'UUID="{gpu_uuid("mig", 0)}"' in held_line and 'gpu="0"' in held_line
    assert 'GPU_I_PROFILE="3g.40gb"' in held_line and 'GPU_I_ID="1"' in held_line


def test_a_pod_holding_a_card_through_a_dra_claim_is_reported_on_that_card_with_the_claim_s_labels():
    from local.sim import dra_driver
    from local.sim.dcgm_sim import DcgmSimulator
    from local.sim.gpu_sim import dra_holdings

    cards = [gpu_uuid("d1", i) for i in range(2)]
    slices = [dra_driver.resource_slice("d1", "u", "g6e.12xlarge", cards)]
    claim = {"metadata": {"name": "llm-gpu-x", "namespace": "ns"},
             "status": {"allocation": {"devices": {"results": [
                 {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "d1", "device": "gpu-1"}]}},
                 "reservedFor": [{"resource": "pods", "name": "llm", "uid": "u-llm"}]}}  # fmt: skip
    devices, labels = dra_holdings(slices, [claim])
    assert devices == {"d1": {("ns", "llm"): (cards[1],)}}
    by_claim = NS(
        metadata=NS(namespace="ns", name="llm", annotations={"gpu-finops.io/gpu-profile": RESIDENT_MODEL}, uid="u-llm"),
        spec=NS(node_name="d1", resource_claims=[NS(name="gpu")], containers=[NS(name="gpu", resources=NS(limits={}))]),
        status=NS(phase="Running"),
    )  # fmt: skip
    dra_node = NS(
        metadata=NS(name="d1", labels={"node.kubernetes.io/instance-type": "g6e.12xlarge"}),
        status=NS(capacity={}),
    )
    unheld, held = sorted(gpus_from_cluster([dra_node], [by_claim], devices, labels), key=lambda g: g.index)[
        :2
    ]
    assert (unheld.pod, held.pod, held.uuid) == (None, ("ns", "llm", "gpu"), cards[1])
    assert held.dra == ("ns", "llm-gpu-x", "gpu.nvidia.com", "d1", "gpu-1")
    sim = DcgmSimulator([dcgm.SM_ACTIVE])
    sim.set_gpus([held])
    (line,) = [x for x in sim.render().splitlines() if x.startswith(dcgm.SM_ACTIVE + "{")]
    assert (
        'dra_claim_namespace="ns",dra_claim_name="llm-gpu-x",dra_driver_name="gpu.nvidia.com",dra_pool_name="d1",dra_device_name="gpu-1"'
        in line
    )


def test_a_claim_reserved_for_an_earlier_pod_of_the_name_is_not_reported_on_the_current_one():
    from local.sim import dra_driver
    from local.sim.gpu_sim import dra_holdings

    slices = [dra_driver.resource_slice("d1", "u", "g6e.12xlarge", [gpu_uuid("d1", 0)])]
    claim = {"metadata": {"name": "c", "namespace": "ns"},
             "status": {"allocation": {"devices": {"results": [
                 {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "d1", "device": "gpu-0"}]}},
                 "reservedFor": [{"resource": "pods", "name": "llm", "uid": "u-old"}]}}  # fmt: skip
    assert dra_holdings(slices, [claim], {("ns", "llm"): "u-new"}) == ({}, {})
    assert dra_holdings(slices, [claim], {("ns", "llm"): "u-old"})[0] == {
        "d1": {("ns", "llm"): (gpu_uuid("d1", 0),)}
    }
