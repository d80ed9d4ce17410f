"""The chart releases' inputs, read from the synthesized addons stack (Terraform references replaced by
stand-ins), and our values keys checked against the chart's (moved from validate_charts.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpu_finops.facts.config import Config

TF_REF = re.compile(r"\$\{([^}]*)\}")


class ValidationError(RuntimeError):
    """The check itself could not run (a chart or module missing, helm failing): not a rejection."""


def stand_ins(c: Config) -> dict[tuple[str, str], str]:
    """(Terraform resource type, attribute) -> a plausible literal for a value known only at apply."""
    account = "123456789012"
    return {
        ("aws_sqs_queue", "name"): f"{c.cluster_name}-interruption",
        ("aws_eks_cluster", "endpoint"): (
            f"https://0123456789ABCDEF0123456789ABCDEF.gr7.{c.region}.eks.amazonaws.com"
        ),
        ("aws_ecr_repository", "repository_url"): (
            f"{account}.dkr.ecr.{c.region}.amazonaws.com/{c.cluster_name}-collector"
        ),
        ("aws_dynamodb_table", "name"): f"{c.cluster_name}-costs",
    }


def substitute(text: str, c: Config, used: list[str] | None = None) -> str:
    """Replace each `${...}` with its stand-in; an unknown reference is an error naming it."""
    table = stand_ins(c)

    def one(m: re.Match[str]) -> str:
        ref = m.group(1)
        # cross-stack outputs read `...outputs.cross-stack-output-<type><id><attr>`; direct ones `<type>.<id>.<attr>`
        tail = ref.rsplit("outputs.", 1)[-1].removeprefix("cross-stack-output-")
        for (rtype, attr), literal in table.items():
            if tail.startswith(rtype) and tail.endswith(attr):
                if used is not None:
                    used.append(f"${{{ref}}} -> {literal}")
                return literal
        raise ValidationError(f"no stand-in for the Terraform reference ${{{ref}}}: add one to stand_ins()")

    return TF_REF.sub(one, text)


@dataclass(frozen=True)
class Release:
    name: str
    chart: str
    version: str | None
    namespace: str
    values: tuple[str, ...]
    sets: tuple[tuple[str, str], ...]


def releases(addons: dict[str, Any], c: Config, used: list[str] | None = None) -> dict[str, Release]:
    """The addons stack's helm_release resources, Terraform references replaced by stand-ins."""
    out = {}
    for rid, r in addons["resource"]["helm_release"].items():
        out[rid] = Release(
            name=r["name"],
            chart=r["chart"],
            version=r.get("version"),
            namespace=r.get("namespace", "default"),
            values=tuple(substitute(v, c, used) for v in r.get("values", [])),
            sets=tuple((s["name"], substitute(str(s["value"]), c, used)) for s in r.get("set", [])),
        )
    return out


# --- values keys: ours against the chart's ---------------------------------------------------------------
RECORDED_VALUES_KEYS = Path(__file__).with_name("chart_values_keys.yaml")


def release_values(release: Release) -> dict[str, Any]:
    """The release's values files merged, with each `set` entry as the nested key helm makes of it."""
    merged: dict[str, Any] = {}
    for text in release.values:
        merged.update(yaml.safe_load(text) or {})
    for name, value in release.sets:
        node = merged
        *parents, leaf = name.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return merged


def unknown_values_keys(ours: dict[str, Any], allowed: dict[str, Any], prefix: str = "") -> list[str]:
    """Keys we set that the chart does not have. `allowed` is the chart's values.yaml (or a recorded tree):
    below a key whose default is not a non-empty map (a list, a scalar, `{}`), anything goes."""
    out = []
    for key, value in ours.items():
        path = f"{prefix}{key}"
        if key not in allowed:
            out.append(path)
        elif isinstance(value, dict) and isinstance(allowed[key], dict) and allowed[key]:
            out += unknown_values_keys(value, allowed[key], f"{path}.")
    return out


def recorded_values_keys() -> dict[str, dict[str, Any]]:
    """The recorded keys of the charts not served here (name -> version, source, keys)."""
    return yaml.safe_load(RECORDED_VALUES_KEYS.read_text())
