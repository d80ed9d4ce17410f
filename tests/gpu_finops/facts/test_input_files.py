"""The input layer: each way a file a user named can be wrong is one ConfigError naming it; and no command
reads a user's file except through the layer (a walk of the code, with the reads still to be moved listed by
name, so a new one fails)."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from gpu_finops.facts import input_files
from gpu_finops.facts.errors import ConfigError

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def files(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "big.yaml").write_bytes(b"a: 1\n" * 100)
    (tmp_path / "bom.yaml").write_bytes(b"\xef\xbb\xbfa: 1\n")
    (tmp_path / "latin1.yaml").write_bytes(b"a: \xe9\n")
    (tmp_path / "twice.yaml").write_text("a: 1\na: 2\n")
    (tmp_path / "nan.json").write_text('{"a": NaN}')
    (tmp_path / "ok.json").write_text('{"a": [1, 2]}')
    return tmp_path


@pytest.mark.parametrize(
    ("name", "read", "says"),
    [
        ("fifo", input_files.read_yaml, "a FIFO, not a regular file: refusing to read it"),
        ("missing", input_files.read_json, "does not exist"),
        (".", input_files.read_text, "a directory, not a regular file: refusing to read it"),
        (
            "big.yaml",
            lambda p, w: input_files.read_text(p, w, 100),
            "is larger than 100 bytes, the most a fleet may be",
        ),
        ("bom.yaml", input_files.read_yaml, "starts with a byte order mark; save it as UTF-8 without one"),
        ("latin1.yaml", input_files.read_yaml, "not UTF-8 text (byte b'\\xe9' at offset 3)"),
        ("twice.yaml", input_files.read_yaml, "key 'a': given twice, on line 1 and line 2"),
        ("nan.json", input_files.read_json, "NaN is not a JSON number"),
    ],
)
def test_each_bad_file_is_one_error_naming_it(files, name, read, says):
    path = files / name
    with pytest.raises(ConfigError) as err:
        read(path, "fleet")
    assert str(err.value).startswith(f"fleet file {path}: ") and says in str(err.value), str(err.value)


def test_dev_zero_is_refused_without_reading_it():
    with pytest.raises(ConfigError, match=r"trace file /dev/zero: a special file, not a regular file"):
        input_files.read_bytes(Path("/dev/zero"), "trace")


def test_a_good_file_reads(files):
    assert input_files.read_json(files / "ok.json", "report") == {"a": [1, 2]}


# Reads of a file outside the layer, by (module, function): each says why it may, or that it is still to move.
OUTSIDE_THE_LAYER = {
    ("gpu_finops/facts/config_yaml.py", "parse"): "the layer's own YAML reader (text already read)",
    ("gpu_finops/dcgm/metrics_csv.py", "<module>"): "a file of the package (dcgm_field_names.json)",
    ("gpu_finops/ledger/alerts.py", "load"): "a file of the package (the committed alert rules)",
    ("gpu_finops/ledger/rules.py", "load"): "a file of the package (the committed recording rules)",
}
READS = {"open", "read_text", "read_bytes", "json.load", "yaml.safe_load", "yaml.load", "yaml.full_load"}


def _writes(call: ast.Call) -> bool:
    """An open() whose mode (first literal argument of Path.open, second of open(), or mode=) writes, or
    an os.open() whose flags say O_WRONLY."""
    if any(isinstance(a, ast.Attribute) and a.attr == "O_WRONLY" for arg in call.args for a in ast.walk(arg)):
        return True
    modes = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    modes += [k.value.value for k in call.keywords if k.arg == "mode" and isinstance(k.value, ast.Constant)]
    return any(isinstance(m, str) and set(m) & set("wax") for m in modes)


def file_reads(source: str) -> list[tuple[str, str, int]]:
    """(function, call, line) for each call that reads a file, outside the input layer's own functions."""
    tree = ast.parse(source)
    owner: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for inner in ast.walk(node):
                owner.setdefault(id(inner), node.name)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f, name = node.func, None
        if isinstance(f, ast.Name) and f.id == "open":
            name = "open"
        elif isinstance(f, ast.Attribute):
            base = f.value.id if isinstance(f.value, ast.Name) else ""
            if base == "input_files":
                continue
            name = f"{base}.{f.attr}" if base in ("json", "yaml") else f.attr
        if name == "open" and _writes(node):
            continue
        if name in READS:
            found.append((owner.get(id(node), "<module>"), name, node.lineno))
    return found


def test_no_command_reads_a_users_file_except_through_the_layer():
    seen, unlisted = set(), []
    for root in ("gpu_finops", "twin", "nightly"):
        for path in sorted((ROOT / root).rglob("*.py")):
            rel = str(path.relative_to(ROOT))
            if rel in ("gpu_finops/facts/input_files.py", "gpu_finops/facts/private_files.py"):
                continue
            for func, call, line in file_reads(path.read_text()):
                seen.add((rel, func))
                if (rel, func) not in OUTSIDE_THE_LAYER:
                    unlisted.append(
                        f"{rel}:{line} {func}() calls {call}(): read it with gpu_finops.facts.input_files"
                    )
    assert unlisted == []
    assert set(OUTSIDE_THE_LAYER) <= seen, f"listed but gone (remove them): {set(OUTSIDE_THE_LAYER) - seen}"


@pytest.mark.parametrize(
    "source",
    [
        "def f(p):\n    return open(p).read()\n",
        "import os\ndef f(p):\n    return os.read(os.open(p, os.O_RDONLY), 9)\n",
        "def f(p):\n    return p.open('rb').read()\n",
        "def f(p):\n    return p.read_text()\n",
        "import json\ndef f(h):\n    return json.load(h)\n",
        "import yaml\ndef f(p):\n    return yaml.safe_load(p)\n",
    ],
)
def test_the_walk_finds_each_kind_of_read(source):
    assert [call for _, call, _ in file_reads(source)] in (
        ["open"],
        ["read_text"],
        ["json.load"],
        ["yaml.safe_load"],
    )


def test_the_walk_lets_a_write_only_descriptor_through():
    assert file_reads("import os\ndef f(p):\n    return os.open(p, os.O_WRONLY | os.O_CREAT)\n") == []


def test_the_walk_lets_the_layer_through():
    assert (
        file_reads(
            "from gpu_finops.facts import input_files\ndef f(p):\n    return input_files.read_text(p, 'x')\n"
        )
        == []
    )
