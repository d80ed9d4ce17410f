"""Regenerate gpu_finops/dcgm/dcgm_field_names.json: the DCGM field names the pinned dcgm-exporter knows.

dcgm-exporter accepts a CSV row's field name when go-dcgm's `GetFieldID` finds it (the `dcgmFields` map,
then `legacyDCGMFields`) or when it is one of the exporter's own counters (`DCGMFields` in
internal/pkg/counters/exporter_counters.go, names in const.go). This reads those maps from checkouts of
both repositories at the pinned versions and writes the list, with where it came from:

    python -m tools.refresh_dcgm_fields GO_DCGM_CHECKOUT DCGM_EXPORTER_CHECKOUT > gpu_finops/dcgm/dcgm_field_names.json

(go-dcgm at the version dcgm-exporter's go.mod requires; dcgm-exporter at the tag in
`gpu_finops/facts/config.py`'s `dcgm_exporter_image`).

How the checked-in file was made (4.6.0-4.8.3): go-dcgm v1.4601.1 is the version go.mod requires at
the tag's commit; its module zip came from the Go module proxy (proxy.golang.org, by exact version).
dcgm-exporter's own module is refused by the proxy here, so the two exporter files this reads
(internal/pkg/counters/exporter_counters.go and const.go) were copied from the tag's commit
(EXPORTER_COMMIT, the commit release PR NVIDIA/dcgm-exporter#711 links) into a scratch checkout.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

EXPORTER_TAG = "4.6.0-4.8.3"
EXPORTER_COMMIT = "7ad58324b4447b64dc3dedf946b889b648b7f476"
GO_DCGM_VERSION = "v1.4601.1"


def _map_block(source: str, var: str) -> str:
    start = source.index(f"var {var} = map[string]Short{{")
    return source[start : source.index("\n}\n", start)]


def field_maps(const_fields_go: str) -> tuple[dict[str, int], dict[str, int]]:
    """(current, legacy): name -> field id, as go-dcgm's two maps hold them."""
    consts: dict[str, int] = {}
    # Constants are numbers or earlier constants (deprecated aliases such as CLOCK_THROTTLE_REASONS).
    for name, expr in re.findall(r"^\s*(DCGM_\w+)\s+Short\s*=\s*(\w+)\s*$", const_fields_go, re.M):
        consts[name] = int(expr) if expr.isdigit() else consts[expr]

    def value(expr: str) -> int:
        if m := re.fullmatch(r"Short\('(.)'\)", expr):  # the DCGM_FT_* type tags
            return ord(m[1])
        return int(expr) if expr.isdigit() else consts[expr]

    def entries(var: str) -> dict[str, int]:
        pairs = re.findall(r'^\s*"([^"]+)":\s*([^,]+),', _map_block(const_fields_go, var), re.M)
        return {name: value(expr.strip()) for name, expr in pairs}

    return entries("dcgmFields"), entries("legacyDCGMFields")


def exporter_fields(exporter_counters_go: str, const_go: str) -> list[str]:
    """The names in the exporter's DCGMFields map (its own counters, and DCGM_FI_UNKNOWN)."""
    names = dict(re.findall(r'^\s*(DCGMExp\w+)\s*=\s*"([^"]+)"', const_go, re.M))
    block = exporter_counters_go[exporter_counters_go.index("var DCGMFields = map[string]ExporterCounter{") :]
    block = block[: block.index("\n}\n")]
    found = []
    for enum in re.findall(r"^\s*(\w+)\.String\(\):", block, re.M):
        m = re.search(rf"case {enum}:\s*return (\w+)", exporter_counters_go)
        if m:
            found.append(names[m[1]])
        else:  # the default branch: DCGMFIUnknown.String() is "DCGM_FI_UNKNOWN"
            found.append(re.search(r'default:\s*return "([^"]+)"', exporter_counters_go)[1])
    return sorted(found)


def main(argv: list[str]) -> int:
    go_dcgm, exporter = (Path(a) for a in argv)
    current, legacy = field_maps((go_dcgm / "pkg/dcgm/const_fields.go").read_text())
    counters = exporter / "internal/pkg/counters"
    document = {
        "source": {
            "fields": f"github.com/NVIDIA/go-dcgm@{GO_DCGM_VERSION} pkg/dcgm/const_fields.go: dcgmFields",
            "legacy_fields": f"github.com/NVIDIA/go-dcgm@{GO_DCGM_VERSION} pkg/dcgm/const_fields.go: "
            "legacyDCGMFields",
            "exporter_fields": f"github.com/NVIDIA/dcgm-exporter@{EXPORTER_TAG} ({EXPORTER_COMMIT}) "
            "internal/pkg/counters/exporter_counters.go: DCGMFields",
            "pinned_by": f"github.com/NVIDIA/dcgm-exporter@{EXPORTER_TAG} ({EXPORTER_COMMIT}) go.mod",
            "regenerate": "python -m tools.refresh_dcgm_fields GO_DCGM_CHECKOUT DCGM_EXPORTER_CHECKOUT",
        },
        "dcgm_exporter": EXPORTER_TAG,
        "go_dcgm": GO_DCGM_VERSION,
        "fields": dict(sorted(current.items(), key=lambda kv: (kv[1], kv[0]))),
        "legacy_fields": dict(sorted(legacy.items(), key=lambda kv: (kv[1], kv[0]))),
        "exporter_fields": exporter_fields(
            (counters / "exporter_counters.go").read_text(), (counters / "const.go").read_text()
        ),
    }
    json.dump(document, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
