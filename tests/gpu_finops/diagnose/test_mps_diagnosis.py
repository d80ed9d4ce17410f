"""The memory check on a card shared by MPS: the device plugin's control daemon caps each client at its card's
memory over the clients, so a card whose VRAM the other clients hold still has this client's share; where a
time-sliced card's resident VRAM is the cause, an MPS card's is not, and the finding says the cap instead."""

from __future__ import annotations

from dataclasses import replace

from gpu_finops.diagnose.engine import diagnose_pod
from gpu_finops.diagnose.model import MEMORY
from local.sim.profiles import RESIDENT_MODEL
from tests.gpu_finops.diagnose import diagnose_fixtures as fx

MPS = {"nvidia.com/gpu.sharing-strategy": "mps", "nvidia.com/gpu.memory": "46068"}
TIME_SLICED = {"nvidia.com/gpu.sharing-strategy": "time-slicing"}


def world(labels: dict[str, str]):
    """One card as 4 replicas, one held by a resident model (VRAM 90 % used), three free."""
    node = fx.gpu_node("gpu-s", replicas=4, labels=labels)
    return fx.pending(), fx.cluster([node], [fx.holding("gpu-s", "llm", RESIDENT_MODEL)])


def test_a_pod_bound_to_a_resident_time_sliced_card_waits_for_memory_but_not_on_an_mps_card():
    pod, c = world(TIME_SLICED)
    assert diagnose_pod(replace(pod, node_name="gpu-s"), c).finding(MEMORY).explains is True
    pod, c = world(MPS)
    f = diagnose_pod(replace(pod, node_name="gpu-s"), c).finding(MEMORY)
    assert f.explains is False, f
    assert f.summary.startswith(
        "bound to gpu-s, which shares its cards by MPS: the control daemon caps each client at 11517 MiB "
        "(46068 MiB / 4), so the other clients cannot take this one's memory"
    ), f.summary
    assert f.evidence == {
        "node": "gpu-s",
        "mps": {"card_memory_mib": 46068, "clients_per_card": 4, "client_limit_mib": 11517},
    }
    assert f.key_evidence == ("mps-client-limit:gpu-s",)


def test_a_free_client_on_a_resident_mps_card_has_its_share_of_the_memory():
    pod, c = world(TIME_SLICED)
    assert diagnose_pod(pod, c).finding(MEMORY).explains is True
    pod, c = world(MPS)
    f = diagnose_pod(pod, c).finding(MEMORY)
    assert f.explains is False
    assert f.summary == (
        "free nvidia.com/gpu with VRAM room on gpu-s (MPS: each client's memory capped at its share)"
    ), f.summary
    assert f.evidence["mps"] == {
        "gpu-s": {"card_memory_mib": 46068, "clients_per_card": 4, "client_limit_mib": 11517}
    }


def test_an_mps_card_without_gfds_memory_label_is_said_as_a_share_not_a_figure():
    pod, c = world({"nvidia.com/gpu.sharing-strategy": "mps"})
    f = diagnose_pod(replace(pod, node_name="gpu-s"), c).finding(MEMORY)
    assert f.explains is False and "caps each client at 1/4 of its card's memory" in f.summary, f.summary
    assert f.evidence["mps"]["client_limit_mib"] is None
