"""Act 4 (time-slicing): holding worlds and their near-misses."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from assertions.observed import Interval, NodeObs, PodObs, WorkloadObs
from assertions.timeslicing import TimeSlicingObs
from tests.assertions.near_misses import Break
from tests.assertions.tables import admitted_snap, t

SHARED = (("nvidia.com/gpu.shared", "gpu-shared"),)  # what Kueue charges a replica


@st.composite
def holding(draw: st.DrawFn) -> TimeSlicingObs:
    n = draw(st.sampled_from([2, 4, 8]))
    labels = {"nvidia.com/gpu.count": "1", "nvidia.com/gpu.replicas": str(n),
              "nvidia.com/gpu.sharing-strategy": "time-slicing", "karpenter.sh/nodepool": "gpu-shared"}  # fmt: skip
    node = NodeObs("gpu-ts", t(0), labels, capacity_shared=n, allocatable_shared=n, ready_at=t(2))
    aws = draw(st.booleans())  # AWS shows the physical UUID only; local the replica index too
    starts = [draw(st.integers(10, 30)) for _ in range(n)]
    ends = [max(starts) + draw(st.integers(1, 60)) for _ in range(n)]
    pods = tuple(PodObs(f"ts-{i}", "gpu-ts", "Succeeded", Interval(t(starts[i]), t(ends[i])), exit_code=0,
                        devices=("GPU-1111" if aws else f"GPU-1111::{i}",)) for i in range(n))  # fmt: skip
    wls = tuple(WorkloadObs(f"job-ts-{i}", "team-a", snapshots=(admitted_snap(5, flavors=("gpu-shared",), uid=f"uid-ts-{i}", admitted=SHARED),),
                            pods=(pods[i],)) for i in range(n))  # fmt: skip
    return TimeSlicingObs(
        node, pods, wls, replicas=n, observed_at=t(max(ends) + 5), nodepool="gpu-shared", tenant="team-a"
    )


def node(o: TimeSlicingObs, **changes) -> TimeSlicingObs:
    return replace(o, node=replace(o.node, **changes))


def label(o: TimeSlicingObs, key: str, value: str) -> TimeSlicingObs:
    return node(o, labels={**o.node.labels, key: value})


def first_pod(o: TimeSlicingObs, **changes) -> TimeSlicingObs:
    changed = replace(o.pods[0], **changes)
    wls = (replace(o.workloads[0], pods=(changed,)), *o.workloads[1:])
    return replace(o, pods=(changed, *o.pods[1:]), workloads=wls)


def unadmitted(o: TimeSlicingObs) -> TimeSlicingObs:
    return replace(o, workloads=(replace(o.workloads[0], snapshots=()), *o.workloads[1:]))


def admitted_late(o: TimeSlicingObs) -> TimeSlicingObs:
    late = (o.pods[0].running.start - t(0)).total_seconds() + 3
    return replace(o, workloads=(replace(o.workloads[0], snapshots=(admitted_snap(late, flavors=("gpu-shared",)),)),
                                 *o.workloads[1:]))  # fmt: skip


BREAKS = (
    Break("node_advertises_one_gpu_as_n_replicas", "state", "MIG slices advertised beside the replicas",
          lambda o: node(o, mig_capacity={"nvidia.com/mig-1g.10gb": 7})),
    Break("node_advertises_one_gpu_as_n_replicas", "time", "the node Ready only after the pods ran",
          lambda o: node(o, ready_at=o.observed_at)),
    Break("node_advertises_one_gpu_as_n_replicas", "provenance", "the node never seen Ready",
          lambda o: node(o, ready_at=None)),
    Break("node_advertises_one_gpu_as_n_replicas", "ownership", "a node of another NodePool",
          lambda o: label(o, "karpenter.sh/nodepool", "gpu-mig")),
    Break("each_pod_admitted_by_kueue_on_the_shared_flavor", "ownership", "every Workload of another tenant, admitted by its own queue",
          lambda o: replace(o, workloads=tuple(replace(w, tenant="team-b", snapshots=tuple(replace(s, cluster_queue="team-b") for s in w.snapshots)) for w in o.workloads))),
    Break("node_advertises_one_gpu_as_n_replicas", "count", "two physical GPUs", lambda o: label(o, "nvidia.com/gpu.count", "2")),
    Break("node_advertises_one_gpu_as_n_replicas", "count", "replicas label off by one",
          lambda o: label(o, "nvidia.com/gpu.replicas", str(o.replicas + 1))),
    Break("node_advertises_one_gpu_as_n_replicas", "state", "MPS, not time-slicing",
          lambda o: label(o, "nvidia.com/gpu.sharing-strategy", "mps")),
    Break("node_advertises_one_gpu_as_n_replicas", "count", "capacity one replica short",
          lambda o: node(o, capacity_shared=o.replicas - 1, allocatable_shared=o.replicas - 1)),
    Break("node_advertises_one_gpu_as_n_replicas", "count", "allocatable below capacity",
          lambda o: node(o, allocatable_shared=o.replicas - 1)),
    Break("no_whole_gpu_beside_the_replicas", "count", "a whole GPU advertised too", lambda o: node(o, capacity_gpu=1)),
    Break("each_pod_admitted_by_kueue_on_the_shared_flavor", "count", "a pod missing",
          lambda o: replace(o, pods=o.pods[1:], workloads=o.workloads[1:])),
    Break("each_pod_admitted_by_kueue_on_the_shared_flavor", "count", "one pod recorded twice",
          lambda o: replace(o, pods=(*o.pods[:-1], o.pods[0]))),
    Break("each_pod_admitted_by_kueue_on_the_shared_flavor", "state", "a Workload never admitted", unadmitted),
    Break("each_pod_admitted_by_kueue_on_the_shared_flavor", "ownership", "admitted on the whole-card flavor",
          lambda o: replace(o, workloads=(replace(o.workloads[0], snapshots=(admitted_snap(5, flavors=("gpu-spot",)),)),
                                          *o.workloads[1:]))),
    Break("each_pod_admitted_by_kueue_on_the_shared_flavor", "ownership", "a pod no Workload owns",
          lambda o: replace(o, workloads=(replace(o.workloads[0], pods=()), *o.workloads[1:]))),
    Break("each_pod_admitted_by_kueue_on_the_shared_flavor", "time", "a pod Running before its Workload's admission",
          admitted_late),
    Break("all_pods_on_that_node", "identity", "a pod on another node", lambda o: first_pod(o, node="gpu-other")),
    Break("all_ran_at_once", "state", "a pod never Running", lambda o: first_pod(o, running=None, phase="Pending")),
    Break("all_ran_at_once", "time", "one pod ended before the last started",
          lambda o: first_pod(o, running=Interval(t(1), t(5)))),
    Break("each_pod_got_one_replica_of_one_uuid", "provenance", "a pod with no device observed",
          lambda o: first_pod(o, devices=())),
    Break("each_pod_got_one_replica_of_one_uuid", "identity", "a pod on another card",
          lambda o: first_pod(o, devices=("GPU-2222::0",))),
    Break("each_pod_got_one_replica_of_one_uuid", "identity", "one replica handed to two pods",
          lambda o: replace(o, pods=tuple(replace(p, devices=("GPU-1111::0",)) for p in o.pods))),
    Break("each_ran_to_success", "state", "a pod failed", lambda o: first_pod(o, phase="Failed", exit_code=1)),
)  # fmt: skip
