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
        "gpu-finops twin: trace file {tmp}/bad-gpus.jsonl:2: key 'gpus': expected one of [1, 2, 4, 8], found 3",
    ),
    "a fleet of an unknown instance type": Case(
        ("twin", "generate", "--fleet", "{tmp}/p9.yaml", "--out", "{tmp}/t.jsonl"),
        2,
        "gpu-finops twin: fleet file {tmp}/p9.yaml: key 'instance_type': 'p9.huge' is not in gpu_finops/facts/catalog.py's",
    ),
    "a missing fleet file": Case(
        ("twin", "generate", "--fleet", "{tmp}/nope.yaml", "--out", "{tmp}/t.jsonl"),
        2,
        "gpu-finops twin: fleet file {tmp}/nope.yaml: does not exist",
    ),
    # each class of file the input layer refuses (gpu_finops/facts/input_files.py), on the fleet and the trace
    "the fleet is a FIFO": Case(
        ("twin", "generate", "--fleet", "{tmp}/fifo", "--out", "{tmp}/t.jsonl"),
        2,
        "gpu-finops twin: fleet file {tmp}/fifo: a FIFO, not a regular file: refusing to read it",
    ),
    "the trace is a FIFO": Case(
        ("twin", "run", "--fleet", FLEET, "--trace", "{tmp}/fifo", "--out", "{tmp}/r.json"),
        2,
        "gpu-finops twin: trace file {tmp}/fifo: a FIFO, not a regular file: refusing to read it",
    ),
    "the trace is /dev/zero": Case(
        ("twin", "run", "--fleet", FLEET, "--trace", "/dev/zero", "--out", "{tmp}/r.json"),
        2,
        "gpu-finops twin: trace file /dev/zero: a special file, not a regular file: refusing to read it",
    ),
    "the fleet is a directory": Case(
        ("twin", "generate", "--fleet", "{tmp}", "--out", "{tmp}/t.jsonl"),
        2,
        "gpu-finops twin: fleet file {tmp}: a directory, not a regular file: refusing to read it",
    ),
    "a fleet key misspelt": Case(
        ("twin", "generate", "--fleet", "{tmp}/typo.yaml", "--out", "{tmp}/t.jsonl"),
        2,
        "gpu-finops twin: fleet file {tmp}/typo.yaml: key 'static_node': not a known key; did you mean 'static_nodes'?",
    ),
    "a fleet tenant key misspelt": Case(
        ("twin", "generate", "--fleet", "{tmp}/tenant-typo.yaml", "--out", "{tmp}/t.jsonl"),
        2,
        "gpu-finops twin: fleet file {tmp}/tenant-typo.yaml: key 'tenants.qouta': not a known key; did you mean 'quota'?",
    ),
    "a fleet with a key twice": Case(
        ("twin", "generate", "--fleet", "{tmp}/twice.yaml", "--out", "{tmp}/t.jsonl"),
        2,
        "gpu-finops twin: fleet file {tmp}/twice.yaml: key 'static_nodes': given twice, on line 3 and line 11",
    ),
    "a fleet in UTF-16": Case(
        ("twin", "generate", "--fleet", "{tmp}/utf16.yaml", "--out", "{tmp}/t.jsonl"),
        2,
        "gpu-finops twin: fleet file {tmp}/utf16.yaml: not UTF-8 text (byte b'\\xff' at offset 0)",
    ),
    "a trace line nested 100000 deep": Case(
        ("twin", "run", "--fleet", FLEET, "--trace", "{tmp}/deep.jsonl", "--out", "{tmp}/r.json"),
        2,
        "gpu-finops twin: trace file {tmp}/deep.jsonl:2: not JSON: nested too deep",
    ),
    "a trace with NaN": Case(
        ("twin", "run", "--fleet", FLEET, "--trace", "{tmp}/nan.jsonl", "--out", "{tmp}/r.json"),
        2,
        "gpu-finops twin: trace file {tmp}/nan.jsonl:2: not JSON: NaN is not a JSON number",
    ),
    "a trace whose tenants the fleet lacks": Case(
        (
            "twin",
            "run",
            "--fleet",
            FLEET,
            "--trace",
            "{tmp}/stranger.jsonl",
            "--policy",
            "strict",
            "--out",
            "{tmp}/r.json",
        ),
        2,
        "gpu-finops twin: --trace {tmp}/stranger.jsonl: tenants ['team-z'] are not in --fleet",
    ),
    "a compare chart that is neither PNG nor SVG": Case(
        (
            "twin",
            "compare",
            "--fleet",
            FLEET,
            "--trace",
            "{tmp}/good.jsonl",
            "--policy",
            "a",
            "--policy",
            "b",
            "--out",
            "{tmp}/c.json",
            "--chart",
            "{tmp}/c.pdf",
        ),
        2,
        "argument --chart: expected a path ending in .png or .svg, got '{tmp}/c.pdf'",
    ),
    "a run result over a file that is a directory": Case(
        ("twin", "run", "--fleet", FLEET, "--trace", "{tmp}/good.jsonl", "--out", "{tmp}"),
        2,
        "argument --out: {tmp} is a directory; name a file",
    ),
    "generate --hours 1e305": Case(
        ("twin", "generate", "--fleet", FLEET, "--out", "{tmp}/t.jsonl", "--hours", "1e305"),
        2,
        "argument --hours: expected a finite number >= 0.0166667 and <= 8784, got '1e305'",
    ),
    "erlang-trace --mean-s 1e308": Case(
        ("twin", "erlang-trace", "--out", "{tmp}/t.jsonl", "--mean-s", "1e308"),
        2,
        "argument --mean-s: expected a finite number >= 1 and <= 3.16224e+07, got '1e308'",
    ),
    "erlang-trace --jobs a billion": Case(
        ("twin", "erlang-trace", "--out", "{tmp}/t.jsonl", "--jobs", "1000000000"),
        2,
        "argument --jobs: expected an integer >= 1 and <= 1000000, got '1000000000'",
    ),
    "trace job ids differing by case": Case(
        ("twin", "run", "--fleet", FLEET, "--trace", "{tmp}/case.jsonl", "--out", "{tmp}/r.json"),
        2,
        "gpu-finops twin: trace file {tmp}/case.jsonl:3: key 'id': duplicate job id 'J' (the same Kubernetes name as 'j')",
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
    tmp = Path(inputs["tmp"])
    for file, lines in FILES.items():
        (tmp / file).write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    (tmp / "p9.yaml").write_text("instance_type: p9.huge\nstatic_nodes: 1\n")
    fleet = Path(FLEET).read_text()
    (tmp / "typo.yaml").write_text(fleet.replace("static_nodes:", "static_node:"))
    (tmp / "tenant-typo.yaml").write_text(fleet.replace("quota:", "qouta:", 1))
    (tmp / "twice.yaml").write_text(fleet + "static_nodes: 9\n")
    (tmp / "utf16.yaml").write_bytes(fleet.encode("utf-16"))
    head = json.dumps(HEAD)
    (tmp / "deep.jsonl").write_text(head + "\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    (tmp / "nan.jsonl").write_text(
        head + '\n{"id": "j", "tenant": "team-a", "submit_s": NaN, "gpus": 1, "duration_s": 5}\n'
    )
    job = {"tenant": "team-a", "submit_s": 0, "gpus": 1, "duration_s": 5}
    stranger = {**HEAD, "tenants": ["team-z"]}
    (tmp / "stranger.jsonl").write_text(
        "\n".join(json.dumps(x) for x in (stranger, {"id": "j", **job, "tenant": "team-z"})) + "\n"
    )
    (tmp / "case.jsonl").write_text(
        "\n".join(json.dumps(x) for x in (HEAD, {"id": "j", **job}, {"id": "J", **job})) + "\n"
    )
