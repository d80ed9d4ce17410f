"""The CLI's error contract for `gpu-finops twin`: a bad trace, fleet or option is exit 2 and one line naming
it, before the local target is started."""

from __future__ import annotations

import json
from pathlib import Path

from tests.gpu_finops.bad_inputs import Case
from twin import fleet as fleet_mod

FLEET = str(Path(fleet_mod.__file__).with_name("examples") / "fleet-borrowing.yaml")
HEAD = {"format": "gpu-finops-twin-trace/v1", "compression": 60, "horizon_s": 100, "tenants": ["team-a"]}
FILES = {
    "bad-gpus.jsonl": [HEAD, {"id": "j", "tenant": "team-a", "submit_s": 0, "gpus": 3, "duration_s": 5}],
    "good.jsonl": [HEAD, {"id": "j", "tenant": "team-a", "submit_s": 0, "gpus": 1, "duration_s": 5}],
}
CASES: dict[str, Case] = {
    "a trace job of 3 GPUs": Case(
        ("twin", "run", "--fleet", FLEET, "--trace", "{tmp}/bad-gpus.jsonl", "--out", "{tmp}/r.json"),
        2,
        "gpu-finops twin: config file {tmp}/bad-gpus.jsonl:2: config key 'gpus': expected one of [1, 2, 4, 8], found 3",
    ),
    "a fleet of an unknown instance type": Case(
        ("twin", "generate", "--fleet", "{tmp}/p9.yaml", "--out", "{tmp}/t.jsonl"),
        2,
        "gpu-finops twin: config file {tmp}/p9.yaml: config key 'instance_type': 'p9.huge' is not in gpu_finops/facts/catalog.py's",
    ),
    "a missing fleet file": Case(
        ("twin", "generate", "--fleet", "{tmp}/nope.yaml", "--out", "{tmp}/t.jsonl"),
        2,
        "gpu-finops twin: config file {tmp}/nope.yaml: config key 'fleet': cannot read it: No such file or directory",
    ),
    "an Erlang load of 1.5": Case(
        ("twin", "erlang-trace", "--out", "{tmp}/t.jsonl", "--load", "1.5"),
        2,
        "argument --load: expected a finite number > 0 and <= 0.99, got '1.5'",
    ),
    "compare with one policy": Case(
        (
            "twin",
            "compare",
            "--fleet",
            FLEET,
            "--trace",
            "{tmp}/good.jsonl",
            "--policy",
            "strict",
            "--out",
            "{tmp}/c.json",
            "--chart",
            "{tmp}/c.png",
        ),
        2,
        "gpu-finops twin: --policy: compare needs two or more policies, got ['strict']",
    ),
    "a policy the fleet does not have": Case(
        (
            "twin",
            "run",
            "--fleet",
            FLEET,
            "--trace",
            "{tmp}/good.jsonl",
            "--policy",
            "nope",
            "--out",
            "{tmp}/r.json",
        ),
        2,
        "--policy nope: not a policy of",
    ),
}


def write_files(inputs: dict[str, str]) -> None:
    """The trace and fleet files the table's cases name, in the case's folder."""
    for file, lines in FILES.items():
        Path(inputs["tmp"], file).write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    Path(inputs["tmp"], "p9.yaml").write_text("instance_type: p9.huge\nstatic_nodes: 1\n")
