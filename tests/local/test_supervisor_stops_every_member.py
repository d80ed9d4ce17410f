"""`local down` forgot a group member that ignores SIGTERM once its leader obeyed; and `local up`
refuses, naming the port and the pid, when a port it needs is held by a process that is not one of ours (a
stale karpenter-kwok broke a CI run with `bind: address already in use`). No local target is started here."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from local.cluster.processes import LocalError, check_ports_free
from local.cluster.supervisor import Supervisor
from tests.process_table import running, wait_for_file

# The leader obeys SIGTERM; its background child ignores it (and SIGINT, SIGHUP) in the same group.
STUBBORN = "trap '' TERM INT HUP; echo $BASHPID > {pid}; exec sleep 300"


def test_local_down_kills_a_member_that_ignores_sigterm(tmp_path):
    sup = Supervisor(tmp_path / "run")
    pid_file = tmp_path / "child.pid"
    sup.start("x", ["bash", "-c", f'bash -c "{STUBBORN.format(pid=pid_file)}" & sleep 300'])
    child = int(wait_for_file(pid_file))
    try:
        assert sup.stop_all(grace=1.0) == ["x"]
        assert not running(child), "the member that ignores SIGTERM outlived local down"
    finally:
        if running(child):
            os.kill(child, 9)


def test_local_down_finds_the_members_of_a_leader_that_already_died(tmp_path):
    """The leader died (killed, or exited) and left its stubborn child: still ours, still stopped."""
    sup = Supervisor(tmp_path / "run")
    pid_file = tmp_path / "child.pid"
    proc = sup.start("x", ["bash", "-c", f'bash -c "{STUBBORN.format(pid=pid_file)}" & exit 0'])
    child = int(wait_for_file(pid_file))
    try:
        deadline = time.monotonic() + 15
        while sup.alive(proc.pid) and time.monotonic() < deadline:  # the leader exits by itself
            time.sleep(0.05)
        assert not sup.ours(proc)
        assert sup.stop_all(grace=1.0) == ["x"]
        assert not running(child)
    finally:
        if running(child):
            os.kill(child, 9)


def test_up_refuses_a_port_held_by_a_stranger_naming_port_and_pid(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", "import socket,sys,time; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen();"
         "print(s.getsockname()[1], flush=True); time.sleep(300)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        port = int(holder.stdout.readline())
        with pytest.raises(LocalError) as err:
            check_ports_free(Supervisor(tmp_path / "run"), {"karpenter-health": port})
        assert f"port {port} (karpenter-health) is already taken by pid {holder.pid} (" in str(err.value)
        assert "gpu-finops local down" in str(err.value)
    finally:
        holder.kill()
        holder.wait()
    with socket.socket() as s:  # a free port passes
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    check_ports_free(Supervisor(tmp_path / "run"), {"x": free})


def test_up_accepts_a_port_held_by_one_of_its_own_processes(tmp_path):
    sup = Supervisor(tmp_path / "run")
    proc = sup.start("holder", [sys.executable, "-c", "import socket,time; s=socket.socket(); "
                     "s.bind(('127.0.0.1',0)); s.listen(); f=open('port','w'); f.write(str(s.getsockname()[1])+chr(10)); f.close(); "
                     "time.sleep(300)"], cwd=tmp_path)  # fmt: skip
    try:
        port = int(wait_for_file(tmp_path / "port"))
        check_ports_free(sup, {"holder": port})
    finally:
        sup.stop_all(grace=1.0)
    assert not running(proc.pid)
