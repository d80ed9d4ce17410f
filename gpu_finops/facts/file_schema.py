"""Typed schemas for the JSON files a command reads that another command wrote (the acts report, a ledger
month, the ladder, the diagnosis, a holdings file): a wrong shape is one ConfigError (exit 2) naming the
file, the place inside it (`acts[2].timings.cold_start`), what was expected and what was found; an unknown
key names the closest known one, as the config's do.

A schema is a pydantic model over `FileModel`: unknown keys refused, values not coerced across kinds (a
string is no number, a number no string, `true` no number; an integer is a number); lists where the
writer wrote tuples. `Number` is a finite JSON number.
"""

from __future__ import annotations

import difflib
import functools
import math
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict, ValidationError

from gpu_finops.facts import timestamps
from gpu_finops.facts.errors import FILE, ConfigError, excerpt, printable, shown


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError("a finite number")
    return value


Number = Annotated[float, Strict(), AfterValidator(_finite)]
Text = Annotated[str, Strict(), Field(max_length=1_000_000)]  # a message, a claim: a megabyte is no message
Flag = Annotated[bool, Strict()]
Count = Annotated[int, Strict()]


class FileModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=False)


class ForeignModel(BaseModel):
    """A file another tool writes (`kubectl get nodes -o json`): only the keys read are checked; the rest
    are that tool's, not a typo of ours."""

    model_config = ConfigDict(extra="ignore", frozen=True, hide_input_in_errors=False)


M = TypeVar("M", bound=BaseModel)

_EXPECTED = {
    "string_type": "a string",
    "float_type": "a number",
    "int_type": "an integer",
    "bool_type": "true or false",
    "list_type": "a list",
    "tuple_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "none_required": "null",
}


def json_kind(value: Any) -> str:
    """What JSON calls a value's type: a message says "found string '12'", not "found str"."""
    if isinstance(value, bool):
        return "boolean"
    names = {dict: "object", list: "list", str: "string", int: "number", float: "number", type(None): "null"}
    return next((n for t, n in names.items() if isinstance(value, t)), type(value).__name__)


MAX_FIGURE = Decimal("1e15")  # GPU-hours, GPUs, dollars: a file's figure past this is a broken file


def _decimal(text: str) -> str:
    try:
        ok = Decimal(text).is_finite() and abs(Decimal(text)) <= MAX_FIGURE
    except InvalidOperation:
        ok = False
    if not ok:
        raise ValueError(f'a decimal number written as a string, like "12.5", within ±{MAX_FIGURE:.0e}')
    return text


def _not_negative(text: str) -> str:
    if Decimal(text) < 0:
        raise ValueError("a decimal number that is not negative")
    return text


Amount = Annotated[str, Strict(), AfterValidator(_decimal), AfterValidator(_not_negative)]  # hours, GPUs
DecimalText = Annotated[str, Strict(), AfterValidator(_decimal)]


def _aware(text: str) -> str:
    if timestamps.parse_or_none(text) is None:
        first, last = timestamps.TIME_YEARS
        raise ValueError(f"an ISO 8601 time with a zone, like 2026-11-01T00:00:00Z, in {first}-{last}")
    return text


def _epoch(value: float) -> float:
    first, last = (datetime(y, 1, 1, tzinfo=UTC).timestamp() for y in timestamps.TIME_YEARS)
    if not first <= value < last:
        raise ValueError(f"epoch seconds in {timestamps.TIME_YEARS[0]}-{timestamps.TIME_YEARS[1] - 1}")
    return value


def _path_text(text: str) -> str:
    if "\0" in text:
        raise ValueError("a path (without a NUL character)")
    return text


def _label(text: str) -> str:
    if not text.strip():
        raise ValueError("a name (not empty)")
    if printable(text) != text:
        raise ValueError("a name without control or bidirectional formatting characters")
    return text


Label = Annotated[str, Strict(), Field(max_length=256), AfterValidator(_label)]  # a heading, a lane, a key
EpochSeconds = Annotated[float, Strict(), AfterValidator(_finite), AfterValidator(_epoch)]
PathText = Annotated[str, Strict(), AfterValidator(_path_text)]
AwareTime = Annotated[str, Strict(), AfterValidator(_aware)]


def validate(model: type[M], data: Any, source: str, kind: str) -> M:  # a FileModel, or a RootModel of them
    """`data` as `model`; the first problem as a ConfigError naming `source` (a `kind` file) and the place."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise problem(model, exc.errors()[0], source, kind) from None


def place(loc: tuple) -> str:
    """`("acts", 2, "timings")` as `acts[3].timings` (items counted from 1, as people count)."""
    text = ""
    for part in loc:
        text += f"[{part + 1}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return excerpt(text, 120) or "<root>"


@functools.cache
def _schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Follow a $ref, and an Optional's anyOf to its member that holds keys or items."""
    while True:
        if "$ref" in node:
            node = defs.get(node["$ref"].rsplit("/", 1)[-1], {})
        elif "anyOf" in node:
            node = next((n for n in node["anyOf"] if n.get("type") != "null"), {})
        else:
            return node


def known_keys(model: type[BaseModel], loc: tuple) -> list[str]:
    """The keys an object may hold at `loc` (the path of an unknown key, the key last)."""
    schema = _schema(model)
    defs = schema.get("$defs", {})
    node = _resolve(schema, defs)
    for part in loc[:-1]:
        if isinstance(part, int):
            items = node.get("prefixItems") or [node.get("items", {})]
            node = items[min(part, len(items) - 1)] if isinstance(items, list) else items
        else:
            node = node.get("properties", {}).get(part) or node.get("additionalProperties") or {}
        node = _resolve(node, defs)
    return sorted(node.get("properties", {}))


def problem(model: type[BaseModel], error: dict[str, Any], source: str, kind: str) -> ConfigError:
    loc = tuple(p for p in error["loc"] if not (isinstance(p, str) and "[" in p))  # union branch names
    where, found, code = place(loc), error.get("input"), error["type"]
    if code == "extra_forbidden":
        known = known_keys(model, loc)
        close = difflib.get_close_matches(str(loc[-1])[:200], known, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"known keys here: {', '.join(known) or 'none'}"
        return ConfigError(FILE, f"{where}: not a known key; {hint}", source, kind)
    if code == "missing":
        return ConfigError(FILE, f"{where}: required, missing", source, kind)
    if code == "literal_error":
        expected = (error.get("ctx") or {}).get("expected", "?")
        return ConfigError(FILE, f"{where}: expected one of {expected}, found {shown(found)}", source, kind)
    if code in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        ctx = error.get("ctx") or {}
        bound = next(
            f"{sign} {ctx[k]}"
            for k, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))
            if k in ctx
        )
        return ConfigError(FILE, f"{where}: expected a value {bound}, found {shown(found)}", source, kind)
    if code == "value_error":
        said = str((error.get("ctx") or {}).get("error", error["msg"]))
        if isinstance(found, dict):  # a rule across an object's keys: the rule says what it found
            return ConfigError(FILE, f"{where}: expected {said}", source, kind)
        return ConfigError(FILE, f"{where}: expected {said}, found {shown(found)}", source, kind)
    if code in _EXPECTED:
        return ConfigError(
            FILE,
            f"{where}: expected {_EXPECTED[code]}, found {json_kind(found)} {shown(found)}",
            source,
            kind,
        )
    return ConfigError(FILE, f"{where}: {excerpt(error['msg'], 160)}, found {shown(found)}", source, kind)
