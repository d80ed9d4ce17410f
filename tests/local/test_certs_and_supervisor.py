"""Without the local cluster: the local PKI's private keys are 0600 from their creation, and the
supervisor signals a stored pid only while it still names the process it started (same start time,
/proc/<pid>/stat field 22); a reused pid is left alone and reported as not running."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from harness.process_group import start_time
from local.cluster.certs import Pki
from local.cluster.supervisor import Proc, Supervisor
from tests.process_table import running


def test_every_private_key_is_created_0600_and_no_chmod_follows(tmp_path, private_files_only):
    pki = Pki(tmp_path / "pki").ensure()  # the fixture refuses any chmod: 0600 must come from creation
    keys = sorted(p.name for p in pki.dir.glob("*.key"))
    assert keys == [
        "admin.key",
        "apiserver.key",
        "ca.key",
        "front-proxy-ca.key",
        "front-proxy-client.key",
        "sa.key",
        "webhook.key",
    ]
    assert {k: (pki.dir / k).stat().st_mode & 0o777 for k in keys} == dict.fromkeys(keys, 0o600)
    assert (pki.ca_crt.stat().st_mode & 0o777) == 0o644  # certificates are public


def test_the_aggregation_layers_certs_chain_to_their_own_ca_and_name_what_the_aggregator_checks(tmp_path):
    """The front proxy's client cert is signed by the front-proxy CA (not the client CA, so it cannot pass as
    a user), named as --requestheader-allowed-names admits; Kueue's visibility serving cert is signed by the
    run's CA (the APIService's caBundle) for `<service>.<namespace>.svc`, the name the aggregator checks."""
    from cryptography import x509
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    from local.cluster.certs import FRONT_PROXY_CA, FRONT_PROXY_CLIENT

    pki = Pki(tmp_path / "pki").ensure()
    load = lambda p: x509.load_pem_x509_certificate(p.read_bytes())  # noqa: E731
    ca, front_ca = load(pki.ca_crt), load(pki.front_proxy_ca)
    client = load(pki.pair(FRONT_PROXY_CLIENT)[0])
    assert pki.front_proxy_ca == pki.pair(FRONT_PROXY_CA)[0]
    assert client.issuer == front_ca.subject != ca.subject
    client.verify_directly_issued_by(front_ca)
    assert client.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == FRONT_PROXY_CLIENT
    assert (
        ExtendedKeyUsageOID.CLIENT_AUTH
        in client.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    )
    serving = load(pki.visibility_serving("visibility-server", "kueue-system")[0])
    serving.verify_directly_issued_by(ca)
    names = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "visibility-server.kueue-system.svc" in names.get_values_for_type(x509.DNSName)


@pytest.fixture
def stranger():
    """A live process of the test's own, unrelated to any supervisor, leading its own process group (as
    the supervisor's processes do, so a killpg by its pid would reach it)."""
    p = subprocess.Popen(["sleep", "60"], start_new_session=True)
    yield p
    p.kill()
    p.wait()


def record(sup: Supervisor, **procs: dict) -> None:
    sup.run_dir.mkdir(parents=True, exist_ok=True)
    sup.state.write_text(json.dumps(procs))


def gone_or_running_after(p: subprocess.Popen, seconds: float = 0.5) -> bool:
    time.sleep(seconds)
    return running(p.pid) and p.poll() is None


def test_a_reused_pid_with_another_start_time_is_not_signalled(tmp_path, stranger):
    sup = Supervisor(tmp_path / "run")
    real = start_time(stranger.pid)
    record(sup, apiserver={"name": "apiserver", "pid": stranger.pid, "argv": ["sleep", "60"],
                           "log": str(tmp_path / "a.log"), "start_time": real - 1})  # fmt: skip
    assert sup.status() == {"apiserver": (Proc("apiserver", stranger.pid, ["sleep", "60"],
                                               str(tmp_path / "a.log"), real - 1), False)}  # fmt: skip
    assert sup.stop("apiserver", grace=0.2) is False
    assert sup.stop_all(grace=0.2) == []
    assert gone_or_running_after(stranger), "the supervisor killed a process it did not start"


def test_an_old_record_without_a_start_time_is_checked_by_its_command_line(tmp_path, stranger):
    """A processes.json from before start times were kept: the pid now runs `sleep`, not the apiserver."""
    sup = Supervisor(tmp_path / "run")
    record(sup, apiserver={"name": "apiserver", "pid": stranger.pid, "argv": ["kube-apiserver", "--x"],
                           "log": str(tmp_path / "a.log")})  # fmt: skip
    assert sup.stop_all(grace=0.2) == []
    assert gone_or_running_after(stranger), "the supervisor killed a process it did not start"


def test_its_own_processes_are_recorded_with_their_start_time_and_stopped(tmp_path):
    sup = Supervisor(tmp_path / "run")
    proc = sup.start("sleeper", ["sleep", "60"])
    assert proc.start_time == start_time(proc.pid) is not None
    assert json.loads(sup.state.read_text())["sleeper"]["start_time"] == proc.start_time
    assert sup.status()["sleeper"][1] is True
    assert sup.stop_all(grace=2) == ["sleeper"]
    deadline = time.monotonic() + 5
    while running(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not running(proc.pid)


def test_an_old_record_that_matches_its_command_line_is_still_stopped(tmp_path):
    """Upgrading does not strand what an older supervisor started."""
    p = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        sup = Supervisor(tmp_path / "run")
        record(sup, sleeper={"name": "sleeper", "pid": p.pid, "argv": ["sleep", "60"], "log": "x.log"})
        assert sup.stop_all(grace=2) == ["sleeper"]
        assert p.wait(timeout=5) is not None
    finally:
        p.kill()
