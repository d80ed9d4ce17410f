"""`gpu-finops`: one entry point, one subcommand per job.

Each subcommand lives with the package that owns it, in a module named `cli_<subcommand>.py` (dashes as
underscores; `gpu_finops/cost/cli_common.py` holds options the cost subcommands share), and registers itself
through `add_arguments`; the modules are imported lazily, only when their subcommand runs, so `--help` stays fast and a missing
optional piece (say, jsii for synthesis) never breaks the commands that do not need it.

Every subcommand keeps one error contract (gpu_finops/facts/errors.py): exceptions end here, in `main`, as one line
on stderr and the exit code of their meaning (gpu_finops/failures.py maps them); `-v` adds the traceback.
A module may define `interrupted(args) -> str`, the line Ctrl-C prints: where things stand, how to finish.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import logging
import sys
import traceback
from collections.abc import Sequence
from types import ModuleType

from gpu_finops.facts.errors import CONTRACT, EXIT_INTERRUPTED, EXIT_USAGE, UsageError
from gpu_finops.facts.names import PROJECT

# subcommand -> (module that implements it, one-line help). Order is the order shown in --help.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "check-metrics-csv": (
        "gpu_finops.dcgm.cli_check_metrics_csv",
        "validate a dcgm-exporter metrics CSV with the exporter's rules",
    ),
    "dcgm-csv": (
        "gpu_finops.dcgm.cli_dcgm_csv",
        "print the dcgm-exporter metrics CSV we ship (with SM_ACTIVE), to deploy to your own exporter",
    ),
    "infra": ("infra.cli_infra", "synthesize the stacks; preflight, up and destroy against AWS"),
    "collect": ("gpu_finops.cost.cli_collect", "run the GPU cost collector (once, or every interval)"),
    "cost": ("gpu_finops.cost.cli_cost", "cost reports from the cost table: per-node table and a PNG chart"),
    "reap": (
        "gpu_finops.cost.cli_reap",
        "rank GPU nodes by idle dollars per hour; with --apply, reclaim them",
    ),
    "diagnose": (
        "gpu_finops.diagnose.cli_diagnose",
        "why a GPU pod or Kueue workload waits: admission, allocation, memory, placement, application",
    ),
    "gpus": (
        "gpu_finops.diagnose.cli_gpus",
        "per GPU who holds it and what it does, beside the ones that look idle but are held",
    ),
    "ledger": ("gpu_finops.ledger.cli_ledger", "a month's GPU-hours in owned buckets; the allocation ladder"),
    "report": (
        "gpu_finops.report.cli_report",
        "one self-contained HTML page of a run: acts, cost, ledger and diagnosis",
    ),
    "local": (
        "local.cli_local",
        "the local rehearsal cluster: up, down, status, env, build, validate-charts",
    ),
    "twin": (
        "twin.cli_twin",
        "the fleet twin: a workload trace replayed on the local target under Kueue policies, compared",
    ),
    "teardown": ("teardown.cli_teardown", "plan, destroy, verify-empty and resume the account teardown"),
    "guard": ("nightly.cli_guard", "the nightly run's cost ceiling, budget refusal and deadline"),
}


# The product is this package; every other subcommand's module is the harness's (infra/, teardown/, local/,
# twin/, nightly/ of a checkout), which a wheel does not carry: `make setup` makes a checkout's harness
# importable in its .venv (a .pth naming the checkout).
PRODUCT = __name__.partition(".")[0]


class HarnessMissing(UsageError):
    """A harness subcommand run where only the product is installed."""


QUIET_LIBRARIES = ("botocore", "boto3", "urllib3", "kubernetes")
VERBOSE = ("-v", "--verbose")


class Parser(argparse.ArgumentParser):
    """argparse, with a usage error as one line naming the option and the value (exit 2)."""

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"{self.prog}: {message}; see `{self.prog} --help`\n")


def _verbose_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="debug logging, and the traceback of an error"
    )


def version() -> str:
    """The installed distribution's version (pyproject.toml's, as pip recorded it)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version(PROJECT)
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "(not installed: `pip install .` records the version)"


def build_parser(parser_class: type[argparse.ArgumentParser] = Parser) -> argparse.ArgumentParser:
    parser = parser_class(
        prog=PROJECT,
        description="Is our GPU money doing work, and does our scheduling stack do what we claim?",
        epilog=CONTRACT,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _verbose_argument(parser)
    parser.add_argument("--version", action="version", version=f"{PROJECT} {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (_module, help_text) in SUBCOMMANDS.items():
        # A placeholder parser keeps --help complete without importing every module.
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def command_parser(
    command: str, parser_class: type[argparse.ArgumentParser] = Parser
) -> tuple[ModuleType, argparse.ArgumentParser]:
    """A subcommand's module and its real parser (the module's `add_arguments`), as a run builds them;
    tests/docs parses every command the docs show with it."""
    module_name, help_text = SUBCOMMANDS[command]
    module = _import_subcommand(command, module_name)
    parser = parser_class(prog=f"{PROJECT} {command}", description=help_text)
    _verbose_argument(parser)
    module.add_arguments(parser)
    with_contract(parser)
    return module, parser


def with_contract(parser: argparse.ArgumentParser) -> None:
    """The exit codes at the end of the parser's --help, and of every nested subcommand's: every command
    keeps the one contract, so every help says it (a parser whose epilog already holds it is left alone)."""
    if CONTRACT not in (parser.epilog or ""):
        parser.epilog = f"{parser.epilog}\n\n{CONTRACT}" if parser.epilog else CONTRACT
        if not issubclass(parser.formatter_class, argparse.RawDescriptionHelpFormatter):
            # the contract is a table: an epilog rewrapped by the default formatter would scramble it
            parser.formatter_class = type(
                "ContractHelpFormatter", (argparse.RawDescriptionHelpFormatter, parser.formatter_class), {}
            )
    # argparse has no public way to walk a parser's subparsers; `_actions` and `_SubParsersAction` have
    # been stable since Python 3.2, and tests/gpu_finops/test_cli_help.py fails if they ever change
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                with_contract(child)


def _import_subcommand(command: str, module_name: str) -> ModuleType:
    """The subcommand's module; a harness module that is not importable is said as such, not as a bug."""
    top = module_name.partition(".")[0]
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if top == PRODUCT or exc.name != top:
            raise
        raise HarnessMissing(
            f"`{PROJECT} {command}` is part of the harness ({top}/ in a checkout of the {PROJECT} repository), "
            f"which installing the {PROJECT} package does not install: run it from a checkout after "
            "`make setup`, which makes that checkout's harness importable in its .venv"
        ) from exc


def strip_verbose(argv: list[str]) -> tuple[list[str], bool]:
    """-v anywhere before `--` (what follows it is another command's), even after a nested action."""
    end = argv.index("--") if "--" in argv else len(argv)
    verbose = any(a in VERBOSE for a in argv[:end])
    return [a for a in argv[:end] if a not in VERBOSE] + argv[end:], verbose


class _Running:
    """What `main` knows so far, for the line an error or an interrupt prints."""

    command: str | None = None
    module: ModuleType | None = None
    args: argparse.Namespace | None = None


def _run(argv: list[str], state: _Running, verbose: bool) -> int:
    top = build_parser()
    # Find the subcommand without parsing its own options, then let its module build the real parser.
    command = next((a for a in argv if not a.startswith("-")), None)
    if command not in SUBCOMMANDS:
        top.parse_args(argv)  # prints help or the usage error and exits
        return EXIT_USAGE
    state.command = command
    module, parser = command_parser(command)
    state.module = module
    index = argv.index(command)
    args = state.args = parser.parse_args(argv[:index] + argv[index + 1 :])
    args.verbose = args.verbose or verbose
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not args.verbose:  # the libraries' INFO lines ("Found credentials...") would bury the one error line
        for library in QUIET_LIBRARIES:
            logging.getLogger(library).setLevel(logging.WARNING)
        # urllib3 warns once per retry ("Retrying ... Connection refused") before the one error line that
        # says the same (the Kubernetes API unreachable): those lines are for -v only.
        logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)
    _broken_pipes_under_the_contract()
    return int(module.run(args) or 0)


def _broken_pipes_under_the_contract() -> None:
    """rich answers a closed standard output by exiting 1 with nothing said (Console.on_broken_pipe); here
    it raises the BrokenPipeError that `main` answers as every other command's: one line, exit 1."""
    from rich.console import Console

    def on_broken_pipe(self: Console) -> None:
        raise BrokenPipeError(errno.EPIPE, "the reader of standard output closed it")

    Console.on_broken_pipe = on_broken_pipe  # type: ignore[method-assign]


def _interrupted(state: _Running) -> str:
    hook = getattr(state.module, "interrupted", None)
    if hook is not None and state.args is not None:
        return hook(state.args)
    return "interrupted before it finished; run it again"


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; every way it can end is an exit code of the contract (gpu_finops/facts/errors.py)."""
    from gpu_finops.failures import classify, settle_stdout, stdout_closed

    argv, verbose = strip_verbose(list(sys.argv[1:] if argv is None else argv))
    state = _Running()
    try:
        code = _run(argv, state, verbose)
        sys.stdout.flush()  # a closed pipe or a full disk is found here, under the contract, not at exit
        return code
    except SystemExit:  # argparse's --help and usage errors: what they printed must reach its reader too
        try:
            sys.stdout.flush()
            if stdout_closed():  # argparse swallows the write's error itself
                raise BrokenPipeError(errno.EPIPE, "the reader of standard output closed it")
        except OSError as exc:
            code, line = classify(exc)
            settle_stdout()
            print(f"{PROJECT}: {line}", file=sys.stderr, flush=True)
            return code
        raise
    except KeyboardInterrupt:
        line, code = _interrupted(state), EXIT_INTERRUPTED
        if verbose:
            traceback.print_exc()
    except Exception as exc:  # the contract: one line, a code by meaning, the traceback only with -v
        code, line = classify(exc)
        settle_stdout()  # stdout may be what failed: the exit's own flush must not fail again
        if verbose:
            traceback.print_exc()
    prog = f"{PROJECT} {state.command}" if state.command else PROJECT
    line = " ".join(line.splitlines())  # the contract's one line, whatever a library's text holds
    print(f"{prog}: {line}", file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
