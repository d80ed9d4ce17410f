"""The registry: one small registration per AWS resource type, and the order derived from it.

Each registration says how to list the type in every non-terminal state (only what is ours), how to
delete one, and `depends_on`: the types whose resources must be gone before this type can be deleted
(as in libnuke). The deletion order is a topological sort of that graph, never a hand-kept list.
The registrations live in `teardown.types`, which imports this module; this module imports none of them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from graphlib import TopologicalSorter

from teardown.model import Context, Resource
from teardown.row import Row, delete_row, list_row


@dataclass(frozen=True)
class ResourceType:
    """One registered type. A simple one is a `Row` (`register_row`); one whose listing or deletion no
    row can say keeps its own code and says why in `irregular`."""

    name: str
    list: Callable[[Context], list[Resource]]
    delete: Callable[[Context, Resource], None]
    depends_on: tuple[str, ...] = ()
    why_left: str = ""  # the usual reason one is still there, for verify's table
    wait_gone: float | None = None  # seconds deletion may take, when it is slow (NAT gateways, clusters)
    # States in which a resource counts as gone (a KMS key pending deletion): verify names it, not as left
    gone_states: tuple[str, ...] = ()
    row: Row | None = None  # the declarative row it was built from
    irregular: str = ""  # why it is code, not a row


REGISTRY: dict[str, ResourceType] = {}


def register(rtype: ResourceType) -> ResourceType:
    """Add a type; one that is neither a row nor says why it is irregular is refused."""
    if rtype.name in REGISTRY:
        raise ValueError(f"resource type {rtype.name} registered twice")
    if (rtype.row is None) == (not rtype.irregular):
        raise ValueError(
            f"resource type {rtype.name}: register a Row (register_row), or code with its reason in "
            f"`irregular`; got {'both' if rtype.row is not None else 'neither'}"
        )
    REGISTRY[rtype.name] = rtype
    return rtype


def register_row(row: Row) -> ResourceType:
    """Register a declarative row: its list and delete are the generic ones (`teardown.row`)."""
    return register(
        ResourceType(
            row.name,
            functools.partial(list_row, row),
            delete_row(row),
            depends_on=row.depends_on,
            why_left=row.why_left,
            wait_gone=row.wait_gone,
            gone_states=row.gone_states,
            row=row,
        )
    )


def deletion_order(types: Iterable[str] | None = None) -> list[str]:
    """Types in an order where every type comes after all types it depends on (its blockers)."""
    selected = set(types) if types is not None else set(REGISTRY)
    graph = {}
    for name in selected:
        missing = [d for d in REGISTRY[name].depends_on if d not in REGISTRY]
        if missing:
            raise ValueError(f"{name} depends on unregistered type(s) {missing}")
        graph[name] = {d for d in REGISTRY[name].depends_on if d in selected}
    # static_order raises CycleError naming the cycle if the graph has one.
    return list(TopologicalSorter(graph).static_order())
