"""/metrics and /healthz on a background thread: what the collector and the diagnosis exporter serve.

Written once here, below both (gpu_finops/cost/ and gpu_finops/diagnose/ share a floor and import neither each other).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from gpu_finops.facts.errors import UsageError


def serve(
    registry: CollectorRegistry, problems: Callable[[], list[str]], port: int, host: str = "0.0.0.0"
) -> ThreadingHTTPServer:
    """Serve `registry` on /metrics and /healthz (200 when `problems()` is empty, else 503 with them)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/metrics":
                body, ctype, code = generate_latest(registry), CONTENT_TYPE_LATEST, 200
            elif self.path == "/healthz":
                found = list(problems())
                body = json.dumps({"healthy": not found, "problems": found}).encode()
                ctype, code = "application/json", 503 if found else 200
            else:
                body, ctype, code = b"not found\n", "text/plain", 404
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # quiet: the caller logs its own way
            pass

    try:
        server = ThreadingHTTPServer((host, port), Handler)
    except OSError as exc:  # in use, a privileged port, an address not this host's: the operator's choice
        raise UsageError(
            f"--port {port}: cannot listen on {host}:{port}: {exc.strerror or exc}; choose a free port or stop "
            "what listens there"
        ) from None
    threading.Thread(target=server.serve_forever, name="metrics-http", daemon=True).start()
    return server
