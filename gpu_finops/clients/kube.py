"""Kubernetes access for the harness: clients from a kubeconfig, and server-side apply of plain dicts."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_finops.facts.errors import UsageError
from gpu_finops.facts.names import PROJECT

# (connect, read) seconds for get_raw: an aggregated API server that accepts and never answers would
# otherwise hang `diagnose` for as long as the socket lives. Kueue's visibility answers in well under one.
RAW_TIMEOUT = (10.0, 30.0)


def check_kubeconfig(path: str | None) -> None:
    """Before the Kubernetes client reads a kubeconfig: `path`, or each file $KUBECONFIG lists, or
    ~/.kube/config, is a regular file where it exists (the client would wait on a FIFO for ever and read
    /dev/zero without end); exit 2 naming it otherwise. Every loader of a kubeconfig calls this first."""
    named = [path] if path else [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    for candidate in named or [os.path.expanduser("~/.kube/config")]:
        where = Path(candidate)
        if where.exists() and not where.is_file():
            source = "--kubeconfig" if path else "$KUBECONFIG" if named else "the default kubeconfig"
            raise UsageError(
                f"{source} {candidate}: not a regular file (a directory, FIFO or device); name a kubeconfig file"
            )


@dataclass
class Kube:
    api_client: Any

    @classmethod
    def from_kubeconfig(cls, path: str | None = None) -> Kube:
        from kubernetes import config

        check_kubeconfig(path)
        return cls(config.new_client_from_config(config_file=path))

    @property
    def core(self) -> Any:
        from kubernetes import client

        return client.CoreV1Api(self.api_client)

    @property
    def batch(self) -> Any:
        from kubernetes import client

        return client.BatchV1Api(self.api_client)

    @property
    def custom(self) -> Any:
        from kubernetes import client

        return client.CustomObjectsApi(self.api_client)

    @property
    def events(self) -> Any:
        from kubernetes import client

        return client.EventsV1Api(self.api_client)

    def get_raw(self, path: str, query: dict[str, str] | None = None) -> tuple[int, str]:
        """GET a path of the API server (an aggregated API's subresource, say) as (HTTP status, body text).

        Never raises for an HTTP status: a 403, 404 or 503 is an answer the caller reads. Connection failures
        still raise (urllib3's errors), as every other read here does, and so does an answer slower than
        RAW_TIMEOUT (urllib3's ReadTimeoutError)."""
        from kubernetes.client.exceptions import ApiException

        try:
            resp = self.api_client.call_api(
                path,
                "GET",
                query_params=list((query or {}).items()),
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
                _preload_content=False,
                _return_http_data_only=True,
                _request_timeout=RAW_TIMEOUT,
            )
        except ApiException as exc:
            body = exc.body
            # errors="replace": a proxy's page in another charset is still an answer, not a traceback
            text = body.decode(errors="replace") if isinstance(body, bytes) else str(body or "")
            return int(exc.status or 0), text
        return int(resp.status), resp.data.decode(errors="replace")

    def dynamic(self) -> Any:
        from kubernetes.dynamic import DynamicClient

        return DynamicClient(self.api_client)

    def apply(self, objs: Iterable[dict[str, Any]], manager: str = PROJECT) -> list[str]:
        """Server-side apply each object; returns kind/name of each."""
        dyn = self.dynamic()
        done = []
        for obj in objs:
            res = dyn.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
            ns = obj["metadata"].get("namespace")
            res.server_side_apply(
                body=obj,
                name=obj["metadata"]["name"],
                namespace=ns,
                field_manager=manager,
                force_conflicts=True,
            )
            done.append(f"{obj['kind']}/{obj['metadata']['name']}")
        return done
