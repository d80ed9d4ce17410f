"""A simple resource type as one declarative row (as cloud-custodian's `resource_type`): which service,
which list call and result key, which field is the id, how tags are read, which delete call takes the id
under which parameter, the states that are terminal or already on their way, and the graph's edges.

`list_row` and `delete_row` do the work for every row: paging, a resource gone between two reads,
ownership from tags (`teardown.listing.owned`; a name never decides it) and `gone_ok`. What a row cannot
say (detach before delete, empty before delete) is its `prepare` step, the only code a row carries.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from gpu_finops.facts.timestamps import iso, parse
from teardown.listing import NAME_TAG, owned, pages, token_pages, unless_gone
from teardown.model import Context, Resource, gone_ok

# A field of the listed item: a dotted path (`State.Name`; None when any step is missing) or a function.
Field = str | Callable[[Mapping[str, Any]], Any]


@dataclass(frozen=True)
class Call:
    """One read per listed item: `service.op(param=<item's field>)[key]`. `field=None` passes the item
    itself (a queue URL, a cluster name)."""

    op: str
    param: str
    field: str | None
    key: str
    # KMS names its tag pairs TagKey/TagValue; everything else Key/Value
    pair: tuple[str, str] = ("Key", "Value")


@dataclass(frozen=True)
class Row:
    """One resource type as data. See the module docstring; `teardown.types` holds the rows."""

    name: str
    service: str
    list_call: str  # a boto3 paginator's name, or with `token` a plain call paged by that token
    result_key: str
    id_field: str | None  # None: the listed item is the id
    delete_call: str
    delete_param: str
    tags: str | tuple[str, ...] | Call = "Tags"  # the item's own field (the first not empty), or a call
    name_field: Field | None = None  # None: the `Name` tag
    state: Field | None = None
    default_state: str = "present"
    list_kwargs: Mapping[str, Any] | Callable[[Context], Mapping[str, Any]] = field(default_factory=dict)
    token: str | None = None  # no boto3 paginator: page by this token
    unnest: str | None = None  # each listed item holds the resources under this key (reservations)
    describe: Call | None = None  # the list call says too little: read each item whole
    skip: Callable[[Mapping[str, Any]], bool] | None = None  # items that are never ours to delete
    only_named_ours: bool = False  # read tags only of items named like ours (the role may read no others)
    terminal: tuple[str, ...] = ()  # states that mean gone: not listed
    on_its_way: tuple[str, ...] = ()  # states in which deletion already runs: no delete call
    details: Mapping[str, Field] = field(default_factory=dict)
    created: Field | None = None  # when AWS says it was created (provenance: born in this run)
    inside: Mapping[str, Field] = field(default_factory=dict)  # type -> the id(s) of what holds it
    delete_kwargs: Mapping[str, Any] = field(default_factory=dict)
    id_as_list: bool = False  # the delete call takes a list of ids (TerminateInstances)
    prepare: Callable[[Context, Resource], None] | None = None  # what must happen before the delete call
    depends_on: tuple[str, ...] = ()
    why_left: str = ""
    wait_gone: float | None = None
    gone_states: tuple[str, ...] = ()


def pick(item: Any, path: Field | None) -> Any:
    """The value `path` names in `item` (see `Field`)."""
    if path is None:
        return None
    if callable(path):
        return path(item)
    for step in path.split("."):
        item = item.get(step) if isinstance(item, Mapping) else None
    return item


def _read(ctx: Context, service: str, call: Call, item: Any) -> Any:
    arg = item if call.field is None else item[call.field]
    return getattr(ctx.client(service), call.op)(**{call.param: arg}).get(call.key)


def _tags(ctx: Context, row: Row, item: Mapping[str, Any]) -> Any:
    """The item's tags, or None when the resource went away before they were read."""
    if not isinstance(row.tags, Call):
        fields = (row.tags,) if isinstance(row.tags, str) else row.tags
        return next((item[f] for f in fields if item.get(f)), None)
    call = row.tags
    found = unless_gone(lambda: _read(ctx, row.service, call, item) or [])
    if found is None or call.pair == ("Key", "Value"):
        return found
    key, value = call.pair
    return [{"Key": t[key], "Value": t[value]} for t in found]


def _items(ctx: Context, row: Row) -> Iterator[Any]:
    kwargs = dict(row.list_kwargs(ctx) if callable(row.list_kwargs) else row.list_kwargs)
    if row.token:
        listed = token_pages(
            functools.partial(getattr(ctx.client(row.service), row.list_call), **kwargs),
            row.result_key,
            row.token,
        )
    else:
        listed = pages(ctx, row.service, row.list_call, row.result_key, **kwargs)
    for item in listed:
        yield from item[row.unnest] if row.unnest else (item,)


def _resource(ctx: Context, row: Row, item: Any) -> Resource | None:
    if row.describe is not None:
        describe = row.describe
        item = unless_gone(lambda: _read(ctx, row.service, describe, item))
        if item is None:
            return None  # deleted between the list call and this read
    if row.skip is not None and row.skip(item):
        return None
    name = NAME_TAG if row.name_field is None else pick(item, row.name_field)
    if row.only_named_ours and not ctx.config.owns_name(name):
        return None
    state = pick(item, row.state) or row.default_state
    if state in row.terminal:
        return None
    tags = _tags(ctx, row, item)
    if tags is None and isinstance(row.tags, Call):
        return None  # deleted before its tags were read
    rid = item if row.id_field is None else item[row.id_field]
    details = {key: pick(item, path) for key, path in row.details.items()}
    details.update(provenance_details(pick(item, row.created), row.inside, item))
    return owned(ctx, row.name, rid, tags, state, name=name, **details)


def as_time(value: Any) -> datetime | None:
    """A creation time as AWS gives it: a datetime, an ISO string, or epoch milliseconds (Logs)."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value / 1000, UTC)
    t = parse(value)
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def provenance_details(created: Any, inside: Mapping[str, Field], item: Any) -> dict[str, Any]:
    """`created` (ISO, whole seconds) and `inside` (the keys of what holds it) for teardown.provenance."""
    out: dict[str, Any] = {}
    t = as_time(created)
    if t is not None:
        out["created"] = iso(t)
    keys = []
    for rtype, path in inside.items():
        value = pick(item, path)
        keys += [f"{rtype}/{v}" for v in (value if isinstance(value, list) else [value]) if v]
    if keys:
        out["inside"] = keys
    return out


def list_row(row: Row, ctx: Context) -> list[Resource]:
    """Every resource of the row's type that is ours or looks like ours, in every non-terminal state."""
    return [r for r in (_resource(ctx, row, item) for item in _items(ctx, row)) if r is not None]


def delete_row(row: Row) -> Callable[[Context, Resource], None]:
    """The row's deletion: nothing when it is already on its way, else `prepare` and the delete call;
    an answer that it is gone is success (resume re-runs what an earlier run finished)."""

    @gone_ok
    def delete(ctx: Context, r: Resource) -> None:
        if r.state in row.on_its_way:
            return
        if row.prepare is not None:
            row.prepare(ctx, r)
        ident = [r.id] if row.id_as_list else r.id
        getattr(ctx.client(row.service), row.delete_call)(**{row.delete_param: ident}, **row.delete_kwargs)

    delete.__name__ = delete.__qualname__ = f"delete_{row.name}"
    return delete
