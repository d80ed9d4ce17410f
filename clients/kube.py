"""Kubernetes access for the harness: clients from a kubeconfig, and server-side apply of plain dicts."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from facts.names import PROJECT


@dataclass
class Kube:
    api_client: Any

    @classmethod
    def from_kubeconfig(cls, path: str | None = None) -> Kube:
        from kubernetes import config

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
