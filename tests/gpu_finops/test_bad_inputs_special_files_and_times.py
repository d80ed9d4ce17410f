"""through the CLI, as the input contract's table (tests/gpu_finops/bad_inputs.py):
each case ended in exit 4 (the "bug" code) or hung on 5b409c9; now the README's code for its class and one
stderr line naming the input."""

from __future__ import annotations

import pytest

from tests.gpu_finops.bad_inputs import AWS_UNREACHABLE, LEDGER, Case, prometheus, synth

STORE = ("cost", "report", "--store", "{tmp}/empty.sqlite")

CASES: dict[str, Case] = {
    "--since in year 1 east of UTC": Case(
        (*STORE, "--since", "0001-01-01T00:00:00+05:00"), 2, "'0001-01-01T00:00:00+05:00' (outside the years"
    ),
    "--until in year 9999 west of UTC": Case(
        (*STORE, "--until", "9999-12-31T23:59:59-05:00"), 2, "'9999-12-31T23:59:59-05:00' (outside the years"
    ),
    "guard estimate --start in year 1": Case(
        ("guard", "estimate", "--rates", "catalog", "--start", "0001-01-01T00:00:00+01:00"),
        2,
        "(outside the years 1970-9998)",
    ),
    "--png out.txt": Case((*STORE, "--png", "{tmp}/out.txt"), 2, "expected a path ending in .png"),
    "guard estimate --max-hours 1e308": Case(
        ("guard", "estimate", "--rates", "catalog", "--max-hours", "1e308"), 2, "got '1e308'"
    ),
    "ledger: Prometheus answers JSON nested 100000 deep": prometheus(
        "deep", LEDGER, "/api/v1/query with something that is not JSON"
    ),
    "the config is a FIFO": Case(
        synth("fifo"), 2, "config file {tmp}/fifo: a FIFO, not a regular file: refusing to read it"
    ),
    "the config is /dev/zero": Case(
        ("infra", "synth", "--config", "/dev/zero", "--outdir", "{tmp}/out"),
        2,
        "config file /dev/zero: a special file, not a regular file",
    ),
    "collect --rates catalog: a FIFO": Case(
        ("collect", "--once", "--rates", "catalog:{tmp}/fifo", "--nodes", "file:{tmp}/nodes.json"),
        2,
        "gpu-finops collect: --rates catalog:{tmp}/fifo: not a readable JSON catalog "
        '{{"instance-type": {{"on-demand": $/h, "spot": $/h}}}}: a FIFO, not a regular file: refusing to read it',
    ),
    "collect --rates catalog: with NaN": Case(
        ("collect", "--once", "--rates", "catalog:{tmp}/nan.json", "--nodes", "file:{tmp}/nodes.json"),
        2,
        "gpu-finops collect: --rates catalog:{tmp}/nan.json: not a readable JSON catalog "
        '{{"instance-type": {{"on-demand": $/h, "spot": $/h}}}}: NaN is not a JSON number',
    ),
    "report --acts is a FIFO": Case(
        ("report", "--acts", "{tmp}/fifo", "--out", "{tmp}/index.html"),
        2,
        "gpu-finops report: acts report file {tmp}/fifo: a FIFO, not a regular file: refusing to read it",
    ),
    "teardown destroy --plan is a FIFO": Case(
        ("teardown", "destroy", "--plan", "{tmp}/fifo", "--journal", "{tmp}/j.jsonl"),
        2,
        "--plan {tmp}/fifo: not a readable JSON plan ([Errno 22] a FIFO, not a regular file",
        env=AWS_UNREACHABLE,
    ),
}


def test_a_nul_in_an_s3_key_is_a_usage_error_naming_it(tmp_path):
    from gpu_finops.cost.s3_access import relative_key
    from gpu_finops.facts.errors import UsageError

    with pytest.raises(UsageError, match=r"s3://b/'exports/a\\x00b': an object key holding a NUL byte"):
        relative_key("b", "exports/a\0b", "exports", tmp_path)


@pytest.mark.parametrize("flag", ["--journal", "--report"])
@pytest.mark.usefixtures("fifo")
def test_teardown_refuses_a_fifo_journal_or_report_before_anything(flag, bad_input):
    """A variant of the same class: refused at the argument, before the first AWS call, not after the
    deletions when the report is written."""
    case = Case(("teardown", "destroy", flag, "{tmp}/fifo"), 2, "{tmp}/fifo is a symlink, FIFO or device",
                env=AWS_UNREACHABLE)  # fmt: skip
    bad_input(case)
