"""The config file's YAML, read strictly: size and nesting depth are checked before anything is built,
aliases are refused, and a key given twice is refused naming both lines.

YAML's aliases let 500 bytes expand to gigabytes (the "billion laughs"), and a config has no use for
them; PyYAML takes the last of two equal keys silently (`allowed_accounts` twice: the second wins).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from gpu_finops.facts.errors import FILE, ConfigError, excerpt

MAX_CONFIG_BYTES = 256 * 1024  # the shipped config is ~3 KB; a config this large is a mistake
MAX_DEPTH = 16  # levels of mappings and lists; the schema's deepest is 3
# No count, quota or id in the config has more digits (a 12-digit account id quoted or not); a longer
# integer would be echoed whole in messages, overflow a float in the estimates, or (past 4,300 digits)
# fail Python's int conversion inside PyYAML with a ValueError.
MAX_INT_DIGITS = 18
_INT = re.compile(r"[-+]?(?:0b[01_]+|0x[0-9a-fA-F_]+|0o?[0-7_]+|[0-9][0-9_]*(?::[0-5]?[0-9])*)")


def check_size(size: int, source: str) -> None:
    """Refuse a file over MAX_CONFIG_BYTES before reading it."""
    if size > MAX_CONFIG_BYTES:
        raise ConfigError(
            FILE,
            f"is {size} bytes, more than the {MAX_CONFIG_BYTES} a config may be; is it the right file?",
            source,
        )


def _check_events(text: str, source: str) -> None:
    """One pass over the event stream (no objects built): no alias, no nesting deeper than MAX_DEPTH."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.AliasEvent):
            raise ConfigError(
                FILE,
                f"line {event.start_mark.line + 1}: an alias (*{excerpt(event.anchor, 40)}); aliases are not "
                "allowed in the config: write the value out",
                source,
            )
        if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise ConfigError(
                    FILE,
                    f"line {event.start_mark.line + 1}: nested deeper than {MAX_DEPTH} levels; the config's "
                    "keys are at most 3 deep",
                    source,
                )
        elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            depth -= 1
        elif isinstance(event, yaml.ScalarEvent) and event.style is None and event.tag is None:
            digits = len(event.value.lstrip("+-").replace("_", ""))  # a hex 0x... counts its prefix
            if digits > MAX_INT_DIGITS and _INT.fullmatch(event.value):
                raise ConfigError(
                    FILE,
                    f"line {event.start_mark.line + 1}: an integer {digits} characters long ({excerpt(event.value, 24)}); "
                    f"no value in the config has more than {MAX_INT_DIGITS} digits: is it the right number?",
                    source,
                )


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a mapping key given twice, naming both lines."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, tuple[int, int]] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            at = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            try:
                first = seen.setdefault(key, at)
            except TypeError:  # an unhashable key: the base class says so with its own error
                break
            if first != at:  # by place, not by line: `{a: 1, a: 2}` is one line
                where = (
                    f"on line {first[0]} and line {at[0]}"
                    if first[0] != at[0]
                    else f"twice on line {at[0]} (columns {first[1]} and {at[1]})"
                )
                raise ConfigError(
                    excerpt(str(key), 60),
                    f"given twice, {where.removeprefix('twice ')}; keep one (YAML would silently take the last)",
                )
        return super().construct_mapping(node, deep=deep)


def parse(text: str, source: str) -> Any:
    """The config's YAML as data; every problem a ConfigError naming the file, on one line."""
    try:
        _check_events(text, source)
        return yaml.load(text, Loader=_UniqueKeyLoader)
    except ConfigError as exc:
        raise exc.in_file(source) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1} column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(FILE, f"not valid YAML: {where}{excerpt(problem, 160)}", source) from None
