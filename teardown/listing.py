"""What every lister shares: paging, the ownership check from tags (a name never decides it), and a
resource that went away between being listed and being read. Each registration is then only list, delete and depends_on."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from botocore.exceptions import ClientError

from teardown.model import Context, Resource, is_gone, tags_of

T = TypeVar("T")
NAME_TAG: Any = object()  # `owned`'s default: the resource's name is its `Name` tag


def pages(ctx: Context, service: str, op: str, key: str, **kwargs: Any) -> Iterator[Any]:
    """Every item under `key` across the pages of a paginated list call."""
    for page in ctx.client(service).get_paginator(op).paginate(**kwargs):
        yield from page.get(key, [])


def token_pages(call: Callable[..., dict[str, Any]], key: str, token: str = "nextToken") -> Iterator[Any]:
    """Every item under `key` of a list call that pages by token but has no boto3 paginator."""
    kwargs: dict[str, Any] = {}
    while True:
        page = call(**kwargs)
        yield from page.get(key, [])
        if not page.get(token):
            return
        kwargs[token] = page[token]


def owned(
    ctx: Context,
    rtype: str,
    rid: str,
    tags: list[dict[str, str]] | Mapping[str, str] | None,
    state: str = "present",
    *,
    name: str | None = NAME_TAG,
    **details: Any,
) -> Resource | None:
    """The resource when its tags make it ours (a `[{Key, Value}]` list or a mapping), or when its name
    looks like ours but its tags do not agree (then `lookalike` says why; never deleted), else None.
    Named `name` when given, else by its `Name` tag."""
    tag_map = dict(tags) if isinstance(tags, Mapping) else tags_of(tags)
    shown = tag_map.get("Name") if name is NAME_TAG else name
    return ctx.config.classify(rtype, rid, tag_map, shown, state, **details)


def unless_gone(read: Callable[[], T]) -> T | None:
    """read(), or None when the resource was deleted between the list call and this read."""
    try:
        return read()
    except ClientError as exc:
        if is_gone(exc):
            return None
        raise
