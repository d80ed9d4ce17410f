"""Fixtures for the acts: the target, a Kubernetes connection, per-run namespaces with LocalQueues, and
the report (rich table, JSON, PNG timeline; JUnit comes from pytest's --junitxml)."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from acts.targets import Target, broken_stack, target, unavailable_reason
from assertions.verdict import Verdict
from facts import timeouts
from facts.config import load_config
from facts.kube_keys import KUEUE_API, LABEL_ACT_RUN
from finops.kube import Kube

REPORT_DIR = Path(os.environ.get("GPU_FINOPS_REPORT_DIR", "reports"))


@dataclass
class ActReport:
    act: str
    claim: str = ""
    verdict: dict[str, Any] | None = None
    timings: dict[str, float | None] = field(default_factory=dict)
    phases: list[tuple[str, float, float]] = field(default_factory=list)  # (name, start, end) epoch seconds
    lifecycles: list[tuple[str, float, float | None]] = field(default_factory=list)  # nodes/pods
    outcome: str = "not run"
    message: str = ""
    evidence: str | None = None  # the folder a failing act's evidence was written to

    def phase(self, name: str) -> _Phase:
        return _Phase(self, name)

    def record(self, verdict: Verdict) -> Verdict:
        self.claim = verdict.claim
        self.verdict = verdict.to_dict()
        self.timings.update(
            verdict.evidence.get("timings", {}) if isinstance(verdict.evidence.get("timings"), dict) else {}
        )
        return verdict


class _Phase:
    def __init__(self, report: ActReport, name: str):
        self.report, self.name = report, name

    def __enter__(self) -> None:
        self.start = time.time()

    def __exit__(self, *exc: object) -> None:
        self.report.phases.append((self.name, self.start, time.time()))


REPORTS: list[ActReport] = []


@pytest.fixture(scope="session")
def act_target(pytestconfig: pytest.Config) -> Target:
    return target(pytestconfig.getoption("--target"))


@pytest.fixture(scope="session")
def kube(act_target: Target) -> Kube:
    reason = unavailable_reason(act_target)
    if reason:
        pytest.skip(reason)
    broken = broken_stack(act_target)
    if broken:
        pytest.fail(broken, pytrace=False)
    return Kube.from_kubeconfig(act_target.kubeconfig)


@pytest.fixture(scope="session")
def config():
    return load_config()


@pytest.fixture
def report(request: pytest.FixtureRequest) -> Iterator[ActReport]:
    r = ActReport(act=request.node.name)
    REPORTS.append(r)
    yield r


@pytest.fixture
def tenant_namespaces(kube: Kube, config) -> Iterator[dict[str, str]]:
    """One namespace per tenant for this run, each with a LocalQueue into the tenant's ClusterQueue."""
    run = uuid.uuid4().hex[:6]
    names = {t.name: f"act-{run}-{t.name}" for t in config.tenants}
    objs = []
    for tenant, ns in names.items():
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": ns, "labels": {LABEL_ACT_RUN: run}},
            }
        )
        objs.append(
            {
                "apiVersion": KUEUE_API,
                "kind": "LocalQueue",
                "metadata": {"name": tenant, "namespace": ns},
                "spec": {"clusterQueue": tenant},
            }
        )
    kube.apply(objs)
    yield names
    cleanup_namespaces(kube, list(names.values()))


def cleanup_namespaces(kube: Kube, namespaces: list[str]) -> None:
    """Delete the act's Jobs first and wait for Kueue to let go of their Workloads (so quota is released
    through Kueue's normal path), then the namespaces."""
    from harness.observe import workloads
    from harness.waits import eventually

    for ns in namespaces:
        kube.batch.delete_collection_namespaced_job(ns, propagation_policy="Background")
    eventually(
        lambda: [w["metadata"]["name"] for ns in namespaces for w in workloads(kube, ns)],
        lambda left: not left,
        timeout=timeouts.ADMISSION,
        interval=1,
        what=f"the act's Workloads gone from {namespaces}",
    )
    for ns in namespaces:
        kube.core.delete_namespace(ns, propagation_policy="Background", _request_timeout=30)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    rep = outcome.get_result()
    r = next((x for x in REPORTS if x.act == item.name), None)
    if r is None:
        r = ActReport(act=item.name)
        REPORTS.append(r)
    if rep.when == "setup" and rep.failed:  # a fixture error, or a skip --require-all-acts turned into one
        r.outcome, r.message = "failed", str(rep.longrepr)[-4000:]
    elif rep.when == "setup" and rep.skipped:
        r.outcome, r.message = (
            "skipped",
            str(rep.longrepr[-1]) if isinstance(rep.longrepr, tuple) else str(rep.longrepr),
        )
    elif rep.when == "call":
        r.outcome = rep.outcome
        if rep.skipped:
            r.message = str(rep.longrepr[-1]) if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        elif rep.failed:
            r.message = str(rep.longrepr)[-4000:]
            r.evidence = _evidence(item)


def _evidence(item: pytest.Item) -> str | None:
    """A failing act leaves the cluster's state and the controllers' log tails in reports/<act>/."""
    kube = item.funcargs.get("kube") if hasattr(item, "funcargs") else None
    if kube is None:
        return None
    from acts.evidence import collect
    from acts.targets import ROOT

    namespaces = list((item.funcargs.get("tenant_namespaces") or {}).values())
    target = item.funcargs.get("act_target")
    logs = ROOT / ".local" / "logs" if target is not None and target.name == "local" else None
    try:
        return str(collect(kube, namespaces, REPORT_DIR / item.name, logs))
    except Exception as exc:  # never let evidence hide the act's own failure
        return f"evidence could not be written: {type(exc).__name__}: {exc}"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not REPORTS:
        return
    from acts.report import write_reports

    write_reports(REPORTS, REPORT_DIR, session.config.getoption("--target"), datetime.now(UTC))


def dump(obj: Any) -> str:
    return json.dumps(obj, default=str, indent=2)
