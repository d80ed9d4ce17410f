"""Record what the real Kueue on the local target answers to the reads `diagnose` makes of it, for the unit tests
(tests/gpu_finops/diagnose/test_kueue_visibility.py) to replay. Writes tests/gpu_finops/diagnose/recorded/*.json.

Run it with the local target up and nothing else using it (it restarts Kueue twice):

    flock /tmp/gpu-finops-local.lock .venv/bin/gpu-finops local up
    flock /tmp/gpu-finops-local.lock .venv/bin/python -m tests.gpu_finops.diagnose.record_kueue_signals
    flock /tmp/gpu-finops-local.lock .venv/bin/gpu-finops local down

It builds a small world of its own (`build_world`: a namespace, a ResourceFlavor without node labels, a
ClusterQueue with one GPU of nominal quota and no cohort, LocalQueues `main` and `idle`; one Job holding the
quota, two waiting for it, one asking more than the queue can ever give, one deactivated, one naming a
LocalQueue that does not exist), records each path (served, empty, not in the list, forbidden, not served,
gates off, unknown LocalQueue), and deletes the world. Each recording holds, per GET path, the status and body
Kueue (or kube-apiserver) answered, and the Workloads as the API served them at that moment.
"""

from __future__ import annotations

import json
import secrets
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from gpu_finops.facts.kube_keys import GPU_RESOURCE, KUEUE_API, KUEUE_GROUP, KUEUE_VERSION
from harness.jobs import KueueJob

OUT = Path(__file__).with_name("recorded")
# A label no node carries and no NodePool offers: the admitted Job's pods stay Pending and Karpenter launches
# nothing for them (admission is quota, not nodes).
NO_NODE = {"gpu-finops.io/kueue-signals": "no-such-node"}
VISIBILITY = "visibility.kueue.x-k8s.io"
WAIT = 120.0


def gpu_job(name: str, namespace: str, queue: str, gpus: int = 1) -> dict[str, Any]:
    return KueueJob(name, namespace).queue(queue).node_selector(NO_NODE).gpus(gpus).obj()


def world_objects(name: str) -> list[dict[str, Any]]:
    """The queues: a flavor without node labels, a ClusterQueue of one GPU (no cohort, so no borrowing), and
    two LocalQueues on it in namespace `name`."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
        {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": {}},
        {
            "apiVersion": KUEUE_API,
            "kind": "ClusterQueue",
            "metadata": {"name": name},
            "spec": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": name}},
                "queueingStrategy": "BestEffortFIFO",
                "resourceGroups": [
                    {
                        "coveredResources": [GPU_RESOURCE],
                        "flavors": [{"name": name, "resources": [{"name": GPU_RESOURCE, "nominalQuota": 1}]}],
                    }
                ],
            },
        },
        *(
            {
                "apiVersion": KUEUE_API,
                "kind": "LocalQueue",
                "metadata": {"name": lq, "namespace": name},
                "spec": {"clusterQueue": name},
            }
            for lq in ("main", "idle")
        ),
    ]


def workloads(kube: Any, namespace: str) -> list[dict[str, Any]]:
    return kube.custom.list_namespaced_custom_object(KUEUE_GROUP, KUEUE_VERSION, namespace, "workloads")[
        "items"
    ]


def workload_of(kube: Any, namespace: str, job: str) -> dict[str, Any] | None:
    return next(
        (
            w
            for w in workloads(kube, namespace)
            if any(r.get("name") == job for r in w["metadata"].get("ownerReferences") or ())
        ),
        None,
    )


def condition(w: dict[str, Any] | None, ctype: str) -> dict[str, Any]:
    return next(
        (c for c in ((w or {}).get("status") or {}).get("conditions") or () if c["type"] == ctype), {}
    )


def until(observe: Callable[[], Any], ok: Callable[[Any], bool], what: str, timeout: float = WAIT) -> Any:
    from harness.waits import eventually

    return eventually(observe, ok, timeout=timeout, interval=1.0, what=what)


def build_world(kube: Any, name: str) -> dict[str, str]:
    """The world in namespace `name`; returns job -> its Workload's name once each is in the state it is built
    for (holder admitted; second WaitingForQuota; third queued behind it with no QuotaReserved condition, as
    Kueue leaves an equivalent workload; too-big ExceedsMaxQuota; off deactivated; lost naming a LocalQueue
    that does not exist)."""
    kube.apply(world_objects(name))
    jobs = [
        ("holder", "main", 1),
        ("second", "main", 1),
        ("third", "main", 1),
        ("too-big", "main", 2),
        ("off", "main", 1),
        ("lost", "nope", 1),
    ]
    for job, queue, gpus in jobs:
        # one at a time, admitted or evaluated, so Kueue's FIFO order is the order written here
        kube.apply([gpu_job(job, name, queue, gpus)])
        w = until(lambda job=job: workload_of(kube, name, job), lambda w: w is not None, f"{job}'s Workload")
        # Kueue orders equal priorities by creationTimestamp (whole seconds), then by uid: the next Workload
        # must be created in a later second for the positions to be the order written here
        created = datetime.fromisoformat(w["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
        until(
            lambda: datetime.now(UTC),
            lambda now, c=created: now >= c + timedelta(seconds=1.1),
            "the next second",
        )
        if job == "holder":
            until(
                lambda: condition(workload_of(kube, name, "holder"), "Admitted").get("status"),
                lambda s: s == "True",
                "the holder admitted",
            )
    off = workload_of(kube, name, "off")
    assert off is not None
    kube.custom.patch_namespaced_custom_object(
        KUEUE_GROUP, KUEUE_VERSION, name, "workloads", off["metadata"]["name"], {"spec": {"active": False}}
    )
    # third gets no QuotaReserved condition: Kueue v0.19.2 skips a workload equivalent to one that just
    # failed (second) and, without UnadmittedWorkloadsExplicitStatus, writes no condition for it
    want = {"second": "WaitingForQuota", "third": None, "too-big": "ExceedsMaxQuota"}
    until(
        lambda: {j: condition(workload_of(kube, name, j), "QuotaReserved").get("reason") for j in want},
        lambda got: got == want,
        "Kueue's reasons on the waiting workloads",
    )
    return {job: workload_of(kube, name, job)["metadata"]["name"] for job, _, _ in jobs}  # type: ignore[index]


def delete_world(kube: Any, name: str) -> None:
    from kubernetes.client.exceptions import ApiException

    for call in (
        lambda: kube.core.delete_namespace(name),
        lambda: kube.custom.delete_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, "clusterqueues", name),
        lambda: kube.custom.delete_cluster_custom_object(KUEUE_GROUP, KUEUE_VERSION, "resourceflavors", name),
    ):
        try:
            call()
        except ApiException as exc:
            if exc.status != 404:
                raise


def paths(namespace: str, lq: str) -> list[str]:
    from gpu_finops.diagnose.kueue_visibility import VERSIONS, local_queue_path, pending_path

    return [*(pending_path(v, namespace, lq) for v in VERSIONS), local_queue_path(namespace, lq)]


def snapshot(get: Callable[[str], tuple[int, str]], kube: Any, name: str, lqs: list[str], about: str) -> dict:
    answers = {}
    for lq in lqs:
        for path in paths(name, lq):
            status, body = get(path)
            answers[path] = {"status": status, "body": body}
    return {
        "about": about,
        "kueue": _kueue_version(),
        "namespace": name,
        "answers": answers,
        "workloads": workloads(kube, name),
    }


def _kueue_version() -> str:
    from local.build import versions

    return versions.KUEUE


def impersonating(kube: Any, user: str) -> Any:
    """The same connection, as `user` (kube-apiserver's impersonation, which the admin may use)."""
    from kubernetes import client

    from gpu_finops.clients.kube import Kube

    api = client.ApiClient(kube.api_client.configuration, header_name="Impersonate-User", header_value=user)
    return Kube(api)


def record(cluster: Any, out: Path = OUT) -> list[Path]:
    from gpu_finops.diagnose.kueue_visibility import kube_get
    from infra.objects.kueue import KUEUE_FEATURE_GATES

    kube = cluster.kube()
    name = f"kueue-signals-{secrets.token_hex(3)}"
    out.mkdir(parents=True, exist_ok=True)
    written = []

    def save(stem: str, doc: dict) -> None:
        path = out / f"{stem}.json"
        # the run's random name out of the file, so a re-recording differs only where Kueue's answers do
        text = json.dumps(doc, indent=2, sort_keys=True).replace(name, "kueue-signals")
        path.write_text(text + "\n")
        written.append(path)
        print(f"  wrote {path}", file=sys.stderr)

    get = kube_get(kube)
    try:
        build_world(kube, name)
        save("served", snapshot(get, kube, name, ["main", "idle", "nope"], "gates on, visibility API served"))
        nobody = impersonating(kube, f"system:serviceaccount:{name}:nobody")
        save("forbidden", snapshot(kube_get(nobody), kube, name, ["main"], "a user without RBAC on it"))
        apis = kube.dynamic().resources.get(api_version="apiregistration.k8s.io/v1", kind="APIService")
        kept = [apis.get(name=f"{v}.{VISIBILITY}").to_dict() for v in ("v1beta2", "v1beta1")]
        for a in kept:
            apis.delete(name=a["metadata"]["name"])
        until(lambda: get(paths(name, "main")[0])[0], lambda s: s == 404, "the visibility API unregistered")
        save("not_served", snapshot(get, kube, name, ["main"], "no APIService for visibility.kueue.x-k8s.io"))
        for a in kept:
            a["metadata"] = {"name": a["metadata"]["name"]}
            a.pop("status", None)
            kube.apply([a])
        cluster.wait_visibility_available()
        off = {gate: False for gate in KUEUE_FEATURE_GATES}
        cluster.restart_kueue(off)
        until(
            lambda: condition(
                next(w for w in workloads(kube, name) if w["metadata"]["name"].startswith("job-second")),
                "QuotaReserved",
            ).get("reason"),
            lambda r: r == "Pending",
            "Kueue's legacy reason with UnadmittedWorkloadsObservability off",
        )
        until(lambda: get(paths(name, "main")[0])[0], lambda s: s == 503, "the visibility API unavailable")
        save(
            "gates_off",
            snapshot(
                get, kube, name, ["main"], "VisibilityOnDemand and UnadmittedWorkloadsObservability off"
            ),
        )
    finally:
        try:
            cluster.restart_kueue(dict(KUEUE_FEATURE_GATES))
        finally:
            delete_world(kube, name)
    return written


def main() -> int:
    from local.cluster.lifecycle import LocalCluster

    cluster = LocalCluster()
    started = time.monotonic()
    written = record(cluster)
    print(f"recorded {len(written)} files in {time.monotonic() - started:.0f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
