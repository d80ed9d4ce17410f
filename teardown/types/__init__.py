"""Every AWS resource type teardown knows, one module per service family (ec2, eks, iam, misc, storage).

Importing this package registers them all in `teardown.registry.REGISTRY`: the registry itself imports
no type module (as cloud-custodian keeps `load_resources` apart from `c7n/registry.py`), so the types
lean on the registry and never the other way round. Whoever needs the loaded registry (the engine, the
CLI, tests) imports this package.
"""

from __future__ import annotations

from teardown.registry import REGISTRY, ResourceType
from teardown.types import ec2, eks, iam, misc, storage  # noqa: F401  (each module registers its types)


def load() -> dict[str, ResourceType]:
    """The registry with every type registered (importing this package did the registering)."""
    return REGISTRY
