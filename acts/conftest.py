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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On AWS, act 8 runs only where the MIG pool is stood up (`mig_on_aws`): otherwise its claim is about
    hardware the run did not buy, so it is deselected, saying why (not skipped: the nightly fails a skip)."""
    if config.getoption("--target") != "aws" or not any(i.path.name == MIG_ACT for i in items):
        return
    try:
        if load_config().mig_on_aws:
            return
    except Exception:  # a bad config: the acts' own fixture says what is wrong with it
        return
    off = [i for i in items if i.path.name == MIG_ACT]
    items[:] = [i for i in items if i.path.name != MIG_ACT]
    config.hook.pytest_deselected(items=off)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(
            "act 8 deselected: the MIG pool is off on AWS (mig_on_aws: false in the config); set "
            "mig_on_aws: true to run it (`gpu-finops guard estimate` shows what its nodes cost)"
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
