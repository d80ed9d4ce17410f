"""Fixtures and hooks for the acts: the target, a Kubernetes connection, per-run namespaces with
LocalQueues, and the report (acts/report.py: rich table, JSON, PNG timeline; JUnit comes from pytest's
--junitxml)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from acts.namespaces import cleanup_namespaces, create_tenant_namespaces
from acts.report import REPORT_DIR, ActReport, record_outcome, report_for, session_reports
from acts.targets import Target, broken_stack, target, unavailable_reason
from gpu_finops.clients.kube import Kube
from gpu_finops.facts.config import load_config


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
    yield report_for(request.config, request.node.name)


@pytest.fixture
def tenant_namespaces(kube: Kube, config) -> Iterator[dict[str, str]]:
    """One namespace per tenant for this run, each with a LocalQueue into the tenant's ClusterQueue."""
    names = create_tenant_namespaces(kube, config)
    yield names
    cleanup_namespaces(kube, list(names.values()))


MIG_ACT = "test_08_one_card_cut_into_mig_slices_for_two_tenants.py"
MPS_ACT = "test_09_one_card_shared_by_mps_clients_of_two_tenants.py"
# act file -> (its number, the config flag that stands its pool up on AWS, what the pool is)
POOL_ACTS = {MIG_ACT: (8, "mig_on_aws", "MIG"), MPS_ACT: (9, "mps_on_aws", "MPS")}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On AWS, acts 8 and 9 run only where their pool is stood up (`mig_on_aws`, `mps_on_aws`): otherwise the
    claim is about hardware the run did not buy, so the act is deselected, saying why (not skipped: the nightly
    fails a skip)."""
    if config.getoption("--target") != "aws" or not any(i.path.name in POOL_ACTS for i in items):
        return
    try:
        c = load_config()
    except Exception:  # a bad config: the acts' own fixture says what is wrong with it
        return
    off_pools = {name for name, (_, flag, _) in POOL_ACTS.items() if not getattr(c, flag)}
    off = [i for i in items if i.path.name in off_pools]
    if not off:
        return
    items[:] = [i for i in items if i.path.name not in off_pools]
    config.hook.pytest_deselected(items=off)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    for name in sorted({i.path.name for i in off}):
        n, flag, pool = POOL_ACTS[name]
        if reporter is not None:
            reporter.write_line(
                f"act {n} deselected: the {pool} pool is off on AWS ({flag}: false in the config); set "
                f"{flag}: true to run it (`gpu-finops guard estimate` shows what its nodes cost)"
            )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    r = report_for(item.config, item.name)
    if record_outcome(r, outcome.get_result()):
        from acts.evidence import for_failed_act

        r.evidence = for_failed_act(getattr(item, "funcargs", {}), REPORT_DIR / item.name)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    reports = session_reports(session.config)
    if not reports:
        return
    from acts.report import write_reports

    write_reports(reports, REPORT_DIR, session.config.getoption("--target"), datetime.now(UTC))
