"""`acts.targets.mps_daemon` reads the simulated MPS control daemon's commands from the pod-resources server:
the commands as the daemon set them, None where no daemon runs (404), and an answer of another shape refused
naming the URL and what came back."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from acts import targets

ANSWERS = {
    "/v1/nodes/mps-node/mps-control-daemon": {"commands": ["set_default_device_pinned_mem_limit 0 11517M"]},
    "/v1/nodes/odd-node/mps-control-daemon": {"cmds": []},
}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        answer = ANSWERS.get(self.path)
        body = json.dumps(answer).encode()
        self.send_response(200 if answer is not None else 404)
        self.end_headers()
        self.wfile.write(body if answer is not None else b"{}")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def pod_resources(monkeypatch) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setattr(targets, "local_description", lambda: {"pod_resources_url": url})
    try:
        yield url
    finally:
        server.shutdown()


def test_the_daemons_commands_are_read_as_it_set_them(pod_resources):
    got = targets.mps_daemon(targets.local_target(), "mps-node")
    assert got == ("set_default_device_pinned_mem_limit 0 11517M",)


def test_a_node_without_a_daemon_reads_none(pod_resources):
    assert targets.mps_daemon(targets.local_target(), "whole-node") is None


def test_an_answer_without_commands_is_refused_naming_the_url_and_the_answer(pod_resources):
    with pytest.raises(ValueError) as refused:
        targets.mps_daemon(targets.local_target(), "odd-node")
    assert str(refused.value).startswith(
        f"{pod_resources}/v1/nodes/odd-node/mps-control-daemon answered {{'cmds': []}}: expected "
        "{'commands': [the daemon's commands, each a string]}"
    )
