"""Without the local cluster: the KwokConfiguration the local target hands kwok sets every option kwok's own
defaults set, since a configuration read from a file gets none of them (an options block naming only the
pod-stage workers left nodeLeaseParallelism at 0 and kwok refused to start). Read against the pinned kwok's
generated defaults, so a kwok upgrade that adds a defaulted option fails here, not at `local up`."""

from __future__ import annotations

import re

import yaml

from local.build import versions
from local.cluster.control_plane import NODE_MONITOR_GRACE
from local.cluster.controllers import KWOK_NODE_LEASE_S, KWOK_OPTIONS
from local.cluster.processes import module_dir

CHANGED = {
    "podPlayStageParallelism": 16,
    "nodeLeaseParallelism": 16,
    "podsOnNodeSyncParallelism": 4,
}  # the rest at kwok's defaults


def _kwok_defaults() -> dict[str, object]:
    root = module_dir(f"sigs.k8s.io/kwok@{versions.KWOK}") / "pkg/apis/config/v1alpha1"
    types = (root / "kwok_configuration_types.go").read_text()
    json_name = dict(re.findall(r"^\s+(\w+)\s+[\w*\[\].]+\s+`json:\"(\w+)", types, re.M))
    fn = re.search(r"func SetObjectDefaults_KwokConfiguration\(.*?\n}\n", (root / "zz_generated.defaults.go")
                   .read_text(), re.S).group(0)  # fmt: skip
    out: dict[str, object] = {}
    for field, body in re.findall(r"if in\.Options\.(\w+) == [^{]+\{(.*?)\n\t}", fn, re.S):
        value = re.search(r"(?:ptrVar1 bool = |in\.Options\.\w+ = )(\S+)\s*$", body.strip().split("\n")[0])
        out[json_name[field]] = yaml.safe_load(value.group(1))
    return out


def test_every_option_kwok_defaults_is_set_and_only_the_stated_ones_differ() -> None:
    defaults = _kwok_defaults()
    assert "nodeLeaseParallelism" in defaults and len(defaults) >= 11, defaults  # the reader read them
    options = yaml.safe_load(KWOK_OPTIONS)["options"]
    assert set(options) == set(defaults), (set(defaults) - set(options), set(options) - set(defaults))
    assert {k: v for k, v in options.items() if v != defaults[k]} == CHANGED


def test_the_node_monitor_grace_outlasts_several_lease_renewals() -> None:
    """kwok renews a lease every quarter of its duration; the node is NotReady only after the grace."""
    grace = int(NODE_MONITOR_GRACE.removesuffix("s"))
    assert grace > KWOK_NODE_LEASE_S and grace >= 4 * (KWOK_NODE_LEASE_S / 4)
