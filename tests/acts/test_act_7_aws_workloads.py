"""Act 7's AWS holders (acts/gpu_workloads.py), offline: the rendered pod specs (image pinned, one GPU
asked and limited, the GPU taint tolerated, no runtime class: the EKS NVIDIA AMI's containerd runs nvidia
by default), the pattern each script is meant to make classified as the diagnosis needs, and each script
run against a stand-in `torch` to check what it allocates and that it stops or waits as said. The local
path is unchanged: kwok pods keep the pause image and their annotations, and get no command or init
container."""

from __future__ import annotations

import io
import sys
import types
from contextlib import redirect_stdout

import pytest

from acts import gpu_workloads as w
from acts.jobs import gpu_job, gpu_pod
from acts.targets import aws_target, local_target
from gpu_finops.diagnose import activity as act
from gpu_finops.diagnose.kube_observer import tolerations
from gpu_finops.diagnose.model import Taint
from gpu_finops.diagnose.scheduling import untolerated
from gpu_finops.facts.kube_keys import ANNOTATION_GPU_PROFILE, GPU_RESOURCE, SHARED_GPU_RESOURCE
from local.sim.profiles import DATA_STARVED, RESIDENT_MODEL

OUR_GPU_TAINT = Taint(GPU_RESOURCE, "NoSchedule", "true")  # nvidia.com/gpu=true:NoSchedule on GPU nodes
AWS = aws_target()


def trainer_job() -> dict:
    return gpu_job(AWS, "trainer-a-r1", "team-a", "team-a", "r1", seconds=3600, profile=DATA_STARVED)


def server_pod() -> dict:
    return gpu_pod(AWS, "server-0", "team-a", "r1", resource=SHARED_GPU_RESOURCE, profile=RESIDENT_MODEL)


def memory_pod() -> dict:
    return gpu_pod(AWS, "waits-memory", "team-a", "r1", resource=SHARED_GPU_RESOURCE, never_starts=True)


def pod_spec(body: dict) -> dict:
    return body["spec"]["template"]["spec"] if body["kind"] == "Job" else body["spec"]


def test_each_holder_runs_its_profiles_script_in_the_pinned_public_image():
    cases = [
        (pod_spec(trainer_job())["containers"][0], w.SCRIPTS[DATA_STARVED], "3600"),
        (pod_spec(server_pod())["containers"][0], w.SCRIPTS[RESIDENT_MODEL], "inf"),
    ]
    for container, script, seconds in cases:
        assert container["image"] == w.WORKLOAD_IMAGE
        assert container["command"] == ["python", "-c", script, seconds]
    name, tag = w.WORKLOAD_IMAGE.rsplit(":", 1)
    assert name == "docker.io/pytorch/pytorch" and tag == "2.5.1-cuda12.4-cudnn9-runtime"


@pytest.mark.parametrize(
    "body, resource",
    [(trainer_job(), GPU_RESOURCE), (server_pod(), SHARED_GPU_RESOURCE), (memory_pod(), SHARED_GPU_RESOURCE)],
    ids=["trainer", "server", "memory"],
)
def test_every_container_asks_one_gpu_and_the_pod_tolerates_our_gpu_taint(body, resource):
    spec = pod_spec(body)
    for c in (*spec.get("initContainers", ()), *spec["containers"]):
        assert c["resources"] == {"limits": {resource: "1"}, "requests": {resource: "1"}}, c["name"]
        image = c["image"]
        assert ":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest"), f"{image} not pinned"
    assert untolerated(tolerations(spec), (OUR_GPU_TAINT,)) == []
    assert "runtimeClassName" not in spec  # the EKS NVIDIA AMI's default runtime is nvidia
    assert spec["restartPolicy"] == "Never"


def test_the_memory_pod_waits_in_an_init_container_only_on_aws():
    (init,) = memory_pod()["spec"]["initContainers"]
    assert init["name"] == "wait-for-vram" and init["image"] == w.WORKLOAD_IMAGE
    assert init["command"][:2] == ["python", "-c"]
    local = gpu_pod(local_target(), "waits-memory", "team-a", "r1", resource=SHARED_GPU_RESOURCE,
                    never_starts=True)  # fmt: skip
    assert "initContainers" not in local["spec"]
    assert local["metadata"]["annotations"]["pod-ready.stage.kwok.x-k8s.io/delay"] == "24h"


def test_the_local_path_is_unchanged_pause_image_annotations_and_no_command():
    job = gpu_job(local_target(), "t", "team-a", "team-a", "r1", seconds=3600, profile=DATA_STARVED)
    tpl = job["spec"]["template"]
    (c,) = tpl["spec"]["containers"]
    assert c == {
        "name": "gpu",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"limits": {GPU_RESOURCE: "1"}, "requests": {GPU_RESOURCE: "1"}},
    }
    assert tpl["metadata"]["annotations"][ANNOTATION_GPU_PROFILE] == DATA_STARVED
    pod = gpu_pod(local_target(), "s", "team-a", "r1", resource=SHARED_GPU_RESOURCE, profile=RESIDENT_MODEL)
    assert "command" not in pod["spec"]["containers"][0]
    assert pod["metadata"]["annotations"] == {ANNOTATION_GPU_PROFILE: RESIDENT_MODEL}


def test_a_profile_without_a_workload_is_refused_naming_those_there_are():
    with pytest.raises(ValueError, match=r"no AWS workload for GPU profile 'busy-trainer'; there are: "):
        gpu_pod(AWS, "x", "team-a", "r1", profile="busy-trainer")


def activity(sm: float, fb_ratio: float, pcie_bps: float) -> act.Activity:
    return act.Activity(sm, 0.01, fb_ratio, fb_ratio * 46068, pcie_bps, 0.0, 80.0, ("n/GPU-x",))


CONTEXT = 0.5 * 1024 / 46068  # one CUDA context's VRAM (~0.5 GiB) as a share of an L40S


def test_the_patterns_the_scripts_make_classify_as_the_diagnosis_needs():
    """The stated pattern, at its worst edge, in the diagnosis's own classifier."""
    starved_pcie = 10 * (1 << 20) / 0.5  # 1 MiB per step of >= 0.5 s, ten times over for PCIe overhead
    assert act.classify(activity(0.05, w.STARVED_FRACTION + CONTEXT, starved_pcie)) == act.STARVED
    assert act.classify(activity(0.05, w.STARVED_FRACTION, starved_pcie)) == act.STARVED
    three = 3 * w.RESIDENT_FRACTION  # the card's VRAM with three servers, contexts not counted
    assert act.classify(activity(0.01, three, 0.0)) == act.RESIDENT
    assert three >= act.FB_RESIDENT
    # the waiting replica never finds room: what three servers leave free is less than it needs
    assert 1 - three - 3 * CONTEXT < w.VRAM_NEEDED_FRACTION


class FakeTensor:
    def __init__(self, n: int = 1) -> None:
        self.n = n

    def numel(self) -> int:
        return self.n

    def to(self, _device: str) -> FakeTensor:
        return self

    def __matmul__(self, _other: FakeTensor) -> FakeTensor:
        return self

    def sum(self) -> FakeTensor:
        return self

    def item(self) -> float:
        return 0.0


def fake_torch(free: list[int], total: int, made: list[tuple[str, int]]) -> types.ModuleType:
    torch = types.ModuleType("torch")
    torch.uint8 = "uint8"

    def alloc(kind: str):
        def make(*shape, **_kw):
            n = shape[0] if len(shape) == 1 else shape[0] * shape[1]
            made.append((kind, n))
            return FakeTensor(n)

        return make

    torch.ones, torch.zeros, torch.randn = alloc("ones"), alloc("zeros"), alloc("randn")
    torch.tanh = lambda t: t
    torch.cuda = types.SimpleNamespace(
        mem_get_info=lambda: (free.pop(0) if len(free) > 1 else free[0], total), synchronize=lambda: None
    )
    return torch


def run_script(script: str, monkeypatch, free: list[int], total: int, seconds: str = "0.01"):
    made: list[tuple[str, int]] = []
    monkeypatch.setitem(sys.modules, "torch", fake_torch(free, total, made))
    monkeypatch.setattr("time.sleep", lambda _s: None)
    monkeypatch.setattr(sys, "argv", ["-c", seconds])
    monkeypatch.setenv("NVIDIA_VISIBLE_DEVICES", "GPU-0f2a")
    out = io.StringIO()
    with redirect_stdout(out):
        exec(compile(script, "<workload>", "exec"), {"__name__": "__main__"})
    return made, out.getvalue()


TOTAL = 46068 << 20


def test_the_trainer_holds_30_percent_and_stops_at_its_deadline(monkeypatch):
    made, out = run_script(w.SCRIPTS[DATA_STARVED], monkeypatch, [TOTAL], TOTAL)
    assert made[:3] == [("ones", int(TOTAL * 0.30)), ("randn", 256 * 256), ("zeros", 1 << 20)]
    assert out.splitlines()[0] == "visible devices: GPU-0f2a"  # what pod_devices reads on AWS


def test_the_server_holds_28_percent_and_stops_at_its_deadline(monkeypatch):
    made, out = run_script(w.SCRIPTS[RESIDENT_MODEL], monkeypatch, [TOTAL], TOTAL)
    assert made[:2] == [("ones", int(TOTAL * 0.28)), ("randn", 64 * 64)]
    assert out.splitlines()[0] == "visible devices: GPU-0f2a"


def test_the_vram_wait_waits_while_the_card_is_full_and_ends_when_there_is_room(monkeypatch):
    full, room = int(TOTAL * 0.12), int(TOTAL * 0.30)
    _, out = run_script(w._VRAM_WAIT, monkeypatch, [full, full, room], TOTAL)
    assert out.splitlines() == [f"waiting for VRAM: {full >> 20} MiB free of 46068"] * 2
