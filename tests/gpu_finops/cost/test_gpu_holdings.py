"""The Kubernetes reader of GPU holdings, over pod objects shaped as the API returns them."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from fractions import Fraction
from types import SimpleNamespace

import pytest
from kubernetes import client

from gpu_finops.cost.gpu_holdings import (
    GpuHolding,
    gpu_holdings,
    holdings_from_objects,
    read_holdings_file,
    write_holdings_file,
)
from gpu_finops.facts.errors import ConfigError

T = datetime(2026, 11, 30, 10, tzinfo=UTC)


def pod(
    name: str,
    namespace: str,
    *,
    node: str | None = "gpu-a",
    gpus: int = 1,
    phase: str = "Running",
    started: datetime | None = T,
    finished: datetime | None = None,
    queue: str | None = None,
    init_gpus: int = 0,
    resource: str = "nvidia.com/gpu",
    job: str | None = None,
) -> client.V1Pod:
    def container(n: str, g: int) -> client.V1Container:
        limits = {resource: str(g)} if g else {}
        return client.V1Container(name=n, resources=client.V1ResourceRequirements(limits=limits))

    state = (
        client.V1ContainerState(
            terminated=client.V1ContainerStateTerminated(exit_code=0, finished_at=finished)
        )
        if finished
        else client.V1ContainerState(running=client.V1ContainerStateRunning(started_at=started))
    )
    return client.V1Pod(
        metadata=client.V1ObjectMeta(
            name=name,
            namespace=namespace,
            labels={"kueue.x-k8s.io/queue-name": queue} if queue else {},
            owner_references=[
                client.V1OwnerReference(
                    api_version="batch/v1", kind="Job", name=job, uid="u", controller=True
                )
            ]
            if job
            else None,
        ),
        spec=client.V1PodSpec(
            node_name=node,
            containers=[container("main", gpus)],
            init_containers=[container("init", init_gpus)] if init_gpus else None,
        ),
        status=client.V1PodStatus(
            phase=phase,
            start_time=started,
            container_statuses=[
                client.V1ContainerStatus(
                    name="main", image="x", image_id="", ready=True, restart_count=0, state=state
                )
            ]
            if started
            else None,
        ),
    )


def test_holdings_read_tenant_interval_and_replicas():
    done = datetime(2026, 11, 30, 10, 30, tzinfo=UTC)
    pods = [
        pod("a", "team-a"),  # tenant from the namespace label
        pod("b", "ns-b", queue="lq", phase="Succeeded", finished=done),  # tenant from Kueue
        pod("c", "ns-c"),  # neither: the namespace
        pod("cpu", "team-a", gpus=0),  # holds no GPU
        pod("pending", "team-a", node=None, started=None, phase="Pending"),  # never on a node
        pod("init", "team-a", gpus=1, init_gpus=2),  # an init container asking more sets the count
    ]
    holdings = holdings_from_objects(
        pods,
        {"team-a": {"gpu-finops.io/tenant": "team-a"}, "ns-b": {}},
        {"gpu-a": 4},
        {("ns-b", "lq"): "team-b"},
    )
    got = {h.pod: (h.tenant, h.gpus, h.replicas, h.start, h.end) for h in holdings}
    assert got == {
        "a": ("team-a", 1, 4, T, None),
        "b": ("team-b", 1, 4, T, done),
        "c": ("ns-c", 1, 4, T, None),
        "init": ("team-a", 2, 4, T, None),
    }
    assert next(h for h in holdings if h.pod == "a").physical_gpus == Fraction(1, 4)


def test_a_kueue_jobs_pod_takes_its_queue_from_the_job():
    """Kueue's Job integration labels the Job, not its pods: a pod without the label is attributed by its
    controlling Job's queue; a Job without one (or a pod with no Job) leaves the namespace as tenant."""
    pods = [pod("j-1", "ns-b", job="j"), pod("k-1", "ns-b", job="k"), pod("bare", "ns-b")]
    holdings = holdings_from_objects(pods, {}, {}, {("ns-b", "lq"): "team-b"}, {("ns-b", "j"): "lq"})
    assert {h.pod: h.tenant for h in holdings} == {"j-1": "team-b", "k-1": "ns-b", "bare": "ns-b"}
    # the pod's own label wins over its Job's
    (h,) = holdings_from_objects(
        [pod("own", "ns-b", queue="lq2", job="j")], {}, {}, {("ns-b", "lq"): "team-b", ("ns-b", "lq2"): "team-c"},
        {("ns-b", "j"): "lq"},
    )  # fmt: skip
    assert h.tenant == "team-c"


def test_a_time_sliced_replica_is_a_holding_of_a_quarter_card():
    """nvidia.com/gpu.shared (the device plugin's renamed replicas) is held as surely as nvidia.com/gpu:
    reading only the latter left every shared node's cost unallocated."""
    (h,) = holdings_from_objects([pod("r", "team-b", resource="nvidia.com/gpu.shared")], {}, {"gpu-a": 4}, {})
    assert (h.pod, h.gpus, h.replicas, h.physical_gpus) == ("r", 1, 4, Fraction(1, 4))
    other = pod("m", "team-b", resource="example.com/fpga")
    assert holdings_from_objects([other], {}, {"gpu-a": 4}, {}) == []


def test_reader_lists_pods_namespaces_nodes_local_queues_and_queued_jobs():
    selectors = []

    def list_jobs(label_selector):
        selectors.append(label_selector)
        meta = client.V1ObjectMeta(name="j", namespace="ns-a", labels={"kueue.x-k8s.io/queue-name": "q"})
        return SimpleNamespace(items=[client.V1Job(metadata=meta)])

    objects = SimpleNamespace(
        batch=SimpleNamespace(list_job_for_all_namespaces=list_jobs),
        core=SimpleNamespace(
            list_pod_for_all_namespaces=lambda: SimpleNamespace(
                items=[pod("a", "ns-a", queue="q"), pod("j-1", "ns-a", job="j")]
            ),
            list_namespace=lambda: SimpleNamespace(
                items=[client.V1Namespace(metadata=client.V1ObjectMeta(name="ns-a"))]
            ),
            list_node=lambda: SimpleNamespace(
                items=[
                    client.V1Node(
                        metadata=client.V1ObjectMeta(
                            name="gpu-a", labels={"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.count": "1"}
                        ),
                        status=client.V1NodeStatus(capacity={"nvidia.com/gpu": "4"}),
                    )
                ]
            ),
        ),
        custom=SimpleNamespace(
            list_cluster_custom_object=lambda *a: {
                "items": [
                    {"metadata": {"namespace": "ns-a", "name": "q"}, "spec": {"clusterQueue": "team-a"}}
                ]
            }
        ),
    )
    got = {h.pod: (h.tenant, h.node, h.replicas) for h in gpu_holdings(objects)}
    assert got == {"a": ("team-a", "gpu-a", 4), "j-1": ("team-a", "gpu-a", 4)}
    assert selectors == ["kueue.x-k8s.io/queue-name"]  # only the Jobs Kueue queues


def test_holdings_file_round_trips(tmp_path):
    h = GpuHolding("ns", "t", "p", "n", 1, T, None, 4)
    write_holdings_file([h], tmp_path / "h.json")
    assert read_holdings_file(tmp_path / "h.json") == [h]


GOOD_HOLDING = {"namespace": "ns", "tenant": "t", "pod": "p", "node": "n", "gpus": 1,
                "start": "2026-11-30T10:00:00+00:00", "end": None, "replicas": 4, "devices": []}  # fmt: skip


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"holdings": []}, "<root>: expected a list, found object"),
        ([{**GOOD_HOLDING, "tenannt": "t"}], "[1].tenannt: not a known key; did you mean 'tenant'?"),
        ([{k: v for k, v in GOOD_HOLDING.items() if k != "node"}], "[1].node: required, missing"),
        ([{**GOOD_HOLDING, "gpus": "1"}], "[1].gpus: expected an integer, found string '1'"),
        ([{**GOOD_HOLDING, "gpus": 0}], "[1].gpus: expected a value >= 1, found 0"),
        ([{**GOOD_HOLDING, "replicas": 1.5}], "[1].replicas: expected an integer, found number 1.5"),
        (
            [{**GOOD_HOLDING, "start": "2026-11-30T10:00:00"}],
            "[1].start: expected an ISO 8601 time with a zone",
        ),
        ([{**GOOD_HOLDING, "start": "0001-01-01T00:00:00+00:00"}], "[1].start: expected an ISO 8601 time"),
        (
            [{**GOOD_HOLDING, "end": "2026-11-30T09:00:00+00:00"}],
            "[1]: holding ns/p ends (2026-11-30 09:00:00+00:00) before it starts (2026-11-30 10:00:00+00:00)",
        ),
        ([{**GOOD_HOLDING, "devices": "GPU-1"}], "[1].devices: expected a list, found string 'GPU-1'"),
    ],
)
def test_a_holdings_file_of_the_wrong_shape_is_refused_naming_the_place(tmp_path, body, says):
    path = tmp_path / "h.json"
    path.write_text(json.dumps(body))
    with pytest.raises(ConfigError) as err:
        read_holdings_file(path)
    assert str(err.value).startswith(f"holdings file {path}: {says}"), str(err.value)


def _node(labels: dict[str, str], capacity: dict[str, str]) -> client.V1Node:
    return client.V1Node(
        metadata=client.V1ObjectMeta(name="gpu-a", labels=labels),
        status=client.V1NodeStatus(capacity=capacity),
    )


P5 = {"node.kubernetes.io/instance-type": "p5.48xlarge"}


def test_a_mig_slice_holds_its_compute_share_of_a_card_and_a_nodes_slices_sum_to_its_cards():
    from gpu_finops.cost.allocation import shares
    from gpu_finops.cost.gpu_holdings import read_node_gpus

    node = read_node_gpus(
        _node(
            {**P5, "nvidia.com/mig.strategy": "mixed"},
            {"nvidia.com/mig-1g.10gb": "28", "nvidia.com/mig-3g.40gb": "8"},
        )
    )
    assert node.cards == 8, "the cards come from the catalog where no label gives them"
    pods = [
        pod("small", "ns-a", resource="nvidia.com/mig-1g.10gb", gpus=2),
        pod("big", "ns-b", resource="nvidia.com/mig-3g.40gb"),
    ]
    held = holdings_from_objects(pods, {}, {"gpu-a": node}, {})
    assert {h.pod: (h.gpus, h.equivalents, h.resources) for h in held} == {
        "small": (2, Fraction(4, 13), (("nvidia.com/mig-1g.10gb", 2),)),
        "big": (1, Fraction(6, 13), (("nvidia.com/mig-3g.40gb", 1),)),
    }
    split = shares("gpu-a", T, datetime(2026, 11, 30, 11, tzinfo=UTC), Fraction(8 * 3600), held)
    assert sum(s.weight for s in split) == 1
    assert {s.tenant: s.gpu_seconds for s in split} == {
        "ns-a": Fraction(4, 13) * 3600,
        "ns-b": Fraction(6, 13) * 3600,
        "unallocated": (8 - Fraction(10, 13)) * 3600,
    }
    every_slice = holdings_from_objects(
        [pod("s", "ns-a", resource="nvidia.com/mig-1g.10gb", gpus=28), pod("b", "ns-b", resource="nvidia.com/mig-3g.40gb", gpus=8)],
        {}, {"gpu-a": node}, {},
    )  # fmt: skip
    assert sum(h.physical_gpus for h in every_slice) == 8


@pytest.mark.parametrize(
    "labels, capacity, resource, equivalents",
    [
        ({"nvidia.com/gpu.count": "1", "nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "mps"},
         {"nvidia.com/gpu.shared": "4"}, "nvidia.com/gpu.shared", Fraction(1, 4)),
        ({**P5, "nvidia.com/mig.strategy": "single", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-MIG-3g.40gb"},
         {"nvidia.com/gpu": "16"}, "nvidia.com/gpu", Fraction(1, 2)),
        # a node whose config changed under a pod that holds a whole card: read by its replicas label
        ({"nvidia.com/gpu.count": "1", "nvidia.com/gpu.replicas": "4"}, {"nvidia.com/gpu.shared": "4"},
         "nvidia.com/gpu", Fraction(1, 4)),
    ],
)  # fmt: skip
def test_an_mps_client_and_a_mig_single_slice_hold_their_share(labels, capacity, resource, equivalents):
    from gpu_finops.cost.gpu_holdings import read_node_gpus

    held = holdings_from_objects(
        [pod("p", "ns-a", resource=resource)], {}, {"gpu-a": read_node_gpus(_node(labels, capacity))}, {}
    )
    assert [h.physical_gpus for h in held] == [equivalents]


def test_a_pod_holding_a_mig_profile_its_node_does_not_advertise_is_refused_naming_pod_and_node():
    from gpu_finops.cost.gpu_holdings import read_node_gpus
    from gpu_finops.model.holding import NodeGpusError

    node = read_node_gpus(_node({**P5, "nvidia.com/mig.strategy": "mixed"}, {"nvidia.com/mig-1g.10gb": "56"}))
    with pytest.raises(
        NodeGpusError, match=r"pod ns-a/p on node gpu-a: the node advertises no nvidia.com/mig-3g.40gb"
    ):
        holdings_from_objects([pod("p", "ns-a", resource="nvidia.com/mig-3g.40gb")], {}, {"gpu-a": node}, {})


def test_a_mig_node_whose_cards_nobody_says_is_refused_naming_it():
    from gpu_finops.cost.gpu_holdings import read_node_gpus
    from gpu_finops.model.holding import NodeGpusError

    with pytest.raises(
        NodeGpusError, match=r"node gpu-a: a MIG node \(nvidia.com/mig.strategy=mixed\) without"
    ):
        read_node_gpus(_node({"nvidia.com/mig.strategy": "mixed"}, {"nvidia.com/mig-1g.10gb": "7"}))


def test_a_holding_with_its_share_round_trips_through_the_holdings_file(tmp_path):
    h = GpuHolding(
        "ns",
        "t",
        "p",
        "n",
        2,
        T,
        None,
        1,
        ("MIG-abc", "MIG-def"),
        Fraction(2, 7),
        (("nvidia.com/mig-1g.10gb", 2),),
    )
    write_holdings_file([h], tmp_path / "h.json")
    assert read_holdings_file(tmp_path / "h.json") == [h]
    text = (tmp_path / "h.json").read_text().replace('"2/7"', '"2/0"')
    (tmp_path / "bad.json").write_text(text)
    with pytest.raises(ConfigError, match="equivalents"):
        read_holdings_file(tmp_path / "bad.json")


BASE = {
    "namespace": "ns",
    "tenant": "t",
    "pod": "p",
    "node": "n",
    "gpus": 1,
    "start": "2026-11-30T10:00:00+00:00",
}


@pytest.mark.parametrize(
    "entry, why",
    [
        (
            {"equivalents": "0"},
            "has equivalents 0: each of its 1 device(s) is worth more than nothing and at most a card",
        ),
        ({"equivalents": "0/5"}, "has equivalents 0"),
        ({"equivalents": "100"}, "has equivalents 100"),
        (
            {"resources": {"nvidia.com/gpu": 8}},
            "has resources {'nvidia.com/gpu': 8} adding up to 8 devices, not its gpus 1",
        ),
        ({"resources": {"cpu": 1}}, "asks for ['cpu'], which are not GPU resources"),
        (
            {"resources": {"nvidia.com/mig-1g.10gb": 1}},
            "holds MIG slices without their share of a card (equivalents)",
        ),
        ({"devices": ["not-a-device"]}, "has device id 'not-a-device' names no card"),
        ({"devices": ["GPU-a", "GPU-b", "GPU-c"]}, "has 3 device ids (3 distinct) for 1 device(s)"),
        ({"gpus": 2, "devices": ["GPU-a", "GPU-a"]}, "has 2 device ids (1 distinct) for 2 device(s)"),
    ],
)
def test_a_holding_no_collector_writes_is_refused_naming_why(tmp_path, entry, why):
    path = tmp_path / "h.json"
    path.write_text(json.dumps([{**BASE, **entry}]))
    with pytest.raises(ConfigError, match=re.escape(f"[1]: holding ns/p {why}")):
        read_holdings_file(path)


def test_quantities_read_as_the_api_server_keeps_them_and_sidecars_count_beside_the_app():
    from gpu_finops.cost.gpu_holdings import effective_requests

    def c(n: str, q: str, restart: str | None = None) -> client.V1Container:
        return client.V1Container(name=n, restart_policy=restart,
                                  resources=client.V1ResourceRequirements(limits={"nvidia.com/gpu": q}))  # fmt: skip

    p = client.V1Pod(spec=client.V1PodSpec(containers=[c("a", "1k")], init_containers=[]))
    assert effective_requests(p) == {"nvidia.com/gpu": 1000}
    p = client.V1Pod(
        spec=client.V1PodSpec(containers=[c("a", "1")], init_containers=[c("side", "1", "Always")])
    )
    assert effective_requests(p) == {"nvidia.com/gpu": 2}, "a sidecar runs beside the app containers"
    p = client.V1Pod(
        spec=client.V1PodSpec(
            containers=[c("a", "1")], init_containers=[c("side", "1", "Always"), c("i", "3")]
        )
    )
    assert effective_requests(p) == {"nvidia.com/gpu": 4}, "an init container after a sidecar runs beside it"
    for bad in ("0.5", "1_0", "x"):
        with pytest.raises(ValueError, match=re.escape(f"nvidia.com/gpu quantity {bad!r}")):
            effective_requests(client.V1Pod(spec=client.V1PodSpec(containers=[c("a", bad)])))


def test_a_node_between_two_configs_stops_only_the_holdings_on_it():
    from gpu_finops.cost.gpu_holdings import _read_or_error
    from gpu_finops.model.holding import NodeGpusError

    torn = _node(
        {"nvidia.com/gpu.count": "1", "nvidia.com/gpu.replicas": "4"}, {"nvidia.com/gpu.shared": "1"}
    )
    read = _read_or_error(torn)
    assert "are worth 1/4 cards, not its 1" in read.problem, "devices not adding up are said, not raised"
    broken = _read_or_error(_node({"nvidia.com/mig.strategy": "sideways"}, {}))
    assert isinstance(broken, NodeGpusError)
    ok = holdings_from_objects([pod("a", "ns-a", node="gpu-a", resource="nvidia.com/gpu.shared")], {},
                               {"gpu-a": read, "gpu-b": broken}, {})  # fmt: skip
    assert [h.physical_gpus for h in ok] == [Fraction(1, 4)]
    with pytest.raises(
        NodeGpusError, match=r"pod ns-a/b: node gpu-a: label nvidia.com/mig.strategy='sideways'"
    ):
        holdings_from_objects([pod("b", "ns-a", node="gpu-b")], {}, {"gpu-b": broken}, {})


def test_the_pod_resources_answer_keeps_mig_slices_of_either_strategy():
    from gpu_finops.cost.gpu_holdings import pod_resources_devices

    def entry(pod: str, resource: str, ids: list[str]) -> dict:
        return {"namespace": "ns", "name": pod, "containers": [{"name": "c", "devices": [{"resourceName": resource, "deviceIds": ids}]}]}  # fmt: skip

    body = {"podResources": [entry("single", "nvidia.com/gpu", ["MIG-aa11"]), entry("mixed", "nvidia.com/mig-3g.40gb", ["MIG-bb22"]),
                             entry("nic", "example.com/nic", ["eth1"])]}  # fmt: skip
    assert pod_resources_devices(body) == {("ns", "single"): ("MIG-aa11",), ("ns", "mixed"): ("MIG-bb22",)}
