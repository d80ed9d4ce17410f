"""The one Kueue Job builder: what every Job it makes holds, and each setting landing where Kueue and the
Job controller read it."""

from __future__ import annotations

import pytest

from harness.jobs import GPU_TOLERATION, KueueJob


def test_every_job_is_suspended_never_retried_and_tolerates_the_gpu_taint():
    job = KueueJob("train", "team-a").queue("team-a").gpus(2).obj()
    spec = job["spec"]
    assert (spec["suspend"], spec["backoffLimit"]) == (True, 0)
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never" and pod["tolerations"] == [GPU_TOLERATION]
    assert pod["containers"][0]["resources"] == {
        "limits": {"nvidia.com/gpu": "2"},
        "requests": {"nvidia.com/gpu": "2"},
    }
    assert job["metadata"] == {
        "name": "train",
        "namespace": "team-a",
        "labels": {"kueue.x-k8s.io/queue-name": "team-a"},
    }


def test_priority_labels_eviction_policy_and_grace_land_on_the_job_and_its_pods():
    job = (
        KueueJob("serve", "team-b")
        .queue("lq")
        .priority("high")
        .priority(None)  # no class: the one set stays
        .label("run", "r1")
        .pod_label("run", "r1")
        .pod_annotations({"a": "1"})
        .gpus(1, resource="nvidia.com/gpu.shared", image="img")
        .grace(0)
        .node_selector({"gpu-finops.io/none": "true"})
        .survives_eviction()
        .obj()
    )
    assert job["metadata"]["labels"] == {
        "kueue.x-k8s.io/queue-name": "lq",
        "kueue.x-k8s.io/priority-class": "high",
        "run": "r1",
    }
    template = job["spec"]["template"]
    assert template["metadata"] == {"labels": {"run": "r1"}, "annotations": {"a": "1"}}
    assert template["spec"]["terminationGracePeriodSeconds"] == 0
    assert template["spec"]["nodeSelector"] == {"gpu-finops.io/none": "true"}
    assert job["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"] == [{"type": "DisruptionTarget"}]


def test_a_job_without_a_container_is_refused_by_name():
    with pytest.raises(ValueError, match="Job team-a/empty: no container"):
        KueueJob("empty", "team-a").queue("team-a").obj()


def test_each_obj_is_a_copy_the_caller_may_change():
    builder = KueueJob("j", "ns").queue("q").gpus()
    first = builder.obj()
    first["spec"]["template"]["spec"]["containers"][0]["image"] = "changed"
    assert builder.obj()["spec"]["template"]["spec"]["containers"][0]["image"] != "changed"
