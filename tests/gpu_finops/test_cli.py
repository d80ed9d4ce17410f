"""The one console script: --help lists every subcommand, and each subcommand's module imports."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys

import pytest

from gpu_finops.cli import SUBCOMMANDS, main


def test_help_lists_every_subcommand(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for name in SUBCOMMANDS:
        assert name in out


def test_installed_console_script_runs():
    exe = shutil.which("gpu-finops") or str(sys.prefix + "/bin/gpu-finops")
    out = subprocess.run([exe, "--help"], capture_output=True, text=True, check=True).stdout
    assert "check-metrics-csv" in out and "collect" in out


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_each_subcommand_has_help(name, capsys):
    module = importlib.import_module(SUBCOMMANDS[name][0])
    assert callable(module.add_arguments) and callable(module.run)
    with pytest.raises(SystemExit) as exit_info:
        main([name, "--help"])
    assert exit_info.value.code == 0
    assert f"gpu-finops {name}" in capsys.readouterr().out


def test_unknown_subcommand_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["frobnicate"])
    assert exit_info.value.code == 2


def test_each_subcommand_lives_in_a_module_named_after_it():
    misnamed = {
        name: module
        for name, (module, _) in SUBCOMMANDS.items()
        if module.rsplit(".", 1)[-1] != f"cli_{name.replace('-', '_')}"
    }
    assert not misnamed, f"name each subcommand's module cli_<subcommand>.py: {misnamed}"


def test_help_documents_the_error_contract(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for line in (
        "0    ok",
        "1    the claim or check is false",
        "2    usage or configuration",
        "3    an external",
    ):
        assert line in out
    assert "130  interrupted (Ctrl-C)" in out and "-v adds the traceback" in out


def test_a_usage_error_is_one_line_naming_the_option(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["teardown", "verify", "--wait", "soon"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err == (
        "gpu-finops teardown verify: argument --wait: expected a finite number >= 0, got 'soon'; "
        "see `gpu-finops teardown verify --help`\n"
    )
