"""The registry's shape: every type is a declarative row or says why it is code, the registry imports no
type module, and a registration that is neither is refused."""

from __future__ import annotations

import ast
import functools
import inspect
from pathlib import Path

import pytest

import teardown.types
from teardown import registry
from teardown.registry import REGISTRY, ResourceType, register
from teardown.row import Row, list_row

ROOT = Path(__file__).resolve().parents[2]
# The types that keep code, each with the reason it gives. A new one must be added here on purpose.
IRREGULAR = {
    "eks_nodegroup": "listed per cluster",
    "spot_slr": "nominated by our SSM record",
    "s3_bucket": "each one's region is read",
}


def test_every_type_is_a_row_or_says_why_it_is_code():
    types = teardown.types.load()
    assert len(types) == 25
    for name, rtype in types.items():
        if name in IRREGULAR:
            assert rtype.row is None, name
            assert IRREGULAR[name] in rtype.irregular, (name, rtype.irregular)
            continue
        assert isinstance(rtype.row, Row) and not rtype.irregular, name
        row = rtype.row
        assert row.name == name
        assert isinstance(rtype.list, functools.partial) and rtype.list.func is list_row
        assert rtype.list.args == (row,)
        assert rtype.delete.__name__ == f"delete_{name}"
        assert (rtype.depends_on, rtype.why_left, rtype.wait_gone, rtype.gone_states) == (
            row.depends_on, row.why_left, row.wait_gone, row.gone_states,
        )  # fmt: skip


def test_only_the_irregular_types_define_list_or_delete_functions():
    """No list_*/delete_* function of the one shape is left in the type modules: only the irregular
    types' own code (a row's `prepare` steps have other names)."""
    irregular_functions = {
        *("list_nodegroups", "delete_nodegroup"),
        *("list_spot_slr", "delete_spot_slr"),
        *("list_buckets", "delete_bucket"),
    }
    found = set()
    for path in (ROOT / "teardown" / "types").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name.startswith(("list_", "delete_")):
                found.add(node.name)
    assert found == irregular_functions


def test_the_registry_imports_no_type_module():
    """The circle registry <-> types is gone: not at the top, not in a function, not for type checking."""
    imported = set()
    for node in ast.walk(ast.parse(inspect.getsource(registry))):
        if isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
        elif isinstance(node, ast.Import):
            imported.update(a.name for a in node.names)
    assert not {m for m in imported if m.startswith("teardown.types")}, imported


def dummy(*_):
    return []


@pytest.mark.parametrize(
    ("extra", "got"),
    [
        ({}, "neither"),
        ({"irregular": "because", "row": Row("t", "s", "l", "k", "id", "d", "p")}, "both"),
    ],
)
def test_a_registration_neither_row_nor_irregular_is_refused(monkeypatch, extra, got):
    monkeypatch.setattr(registry, "REGISTRY", dict(REGISTRY))
    with pytest.raises(ValueError) as exc:
        register(ResourceType("made_up", dummy, dummy, **extra))
    assert str(exc.value) == (
        "resource type made_up: register a Row (register_row), or code with its reason in `irregular`; "
        f"got {got}"
    )
    register(ResourceType("made_up", dummy, dummy, irregular="a test type"))  # with a reason it registers


def test_an_internet_gateway_is_never_proven_by_the_vpc_it_is_attached_to():
    """Whoever made a gateway can attach it to our VPC: its attachment is no containment."""
    import teardown.types  # noqa: F401  (registers every type)
    from teardown.registry import REGISTRY

    assert not REGISTRY["internet_gateway"].row.inside
    assert REGISTRY["subnet"].row.inside  # near miss: a subnet cannot move to another VPC
