"""jsii converts snake_case keyword arguments of a struct, but a dict nested inside a list reaches
JavaScript as a plain map and must already use the struct's camelCase keys. `camel` does that, so the
stacks can be written with one (snake_case) style throughout."""

from __future__ import annotations

from typing import Any

# Maps whose keys are data (tags, labels), never struct field names: left exactly as written.
_DATA_KEYS = {"tags", "input"}


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def camel(value: Any, _parent: str | None = None) -> Any:
    if isinstance(value, list):
        return [camel(v) for v in value]
    if isinstance(value, dict):
        if _parent in _DATA_KEYS:
            return dict(value)
        return {_camel(k): camel(v, k) for k, v in value.items()}
    return value
