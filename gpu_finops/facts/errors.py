"""The command line's error contract: one exit code per meaning, the same for every subcommand.

A subcommand (or a library under it) raises one of these with a message that names the input, what is
wrong and what to do next; `gpu_finops/cli.py` prints it as one line on stderr and exits with its code.
Known errors of the libraries underneath (botocore, kubernetes, YAML, file system) are mapped there too,
so no input ends in a traceback; `-v` prints the traceback as well.

The ground floor holds them so every package can raise them; nothing here imports a third-party library.
"""

from __future__ import annotations

import reprlib

EXIT_OK = 0
EXIT_FALSE = 1  # the claim or check is false, or the operation did not complete (what is left is said)
EXIT_USAGE = 2  # usage or configuration: a bad argument, config key, file or environment variable
EXIT_UNREACHABLE = 3  # an external service (AWS, the Kubernetes API, Prometheus) unreachable or refusing us
EXIT_BUG = 4  # an exception nobody expected: a bug, never a verdict (rerun with -v and report it)
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), after a line saying where things stand

CONTRACT = """exit codes (every subcommand):
  0    ok
  1    the claim or check is false, or the operation did not complete: a bad row, something left
       after teardown, a collection with gaps, a refusal over budget (stdout/stderr say what); output
       cut short because its reader closed the pipe
  2    usage or configuration: a bad argument, config key, file or environment variable, an output that
       cannot be written, a port in use; nothing was done
  3    an external service is unreachable or refuses us: AWS (endpoint, credentials, access denied),
       the Kubernetes API, Prometheus
  4    an unexpected error: a bug in gpu-finops (rerun with -v and report it)
  130  interrupted (Ctrl-C); a line says where things stand and how to finish
Errors are one line on stderr naming the input, what is wrong and what to do next; -v adds the traceback."""


def _short_repr() -> reprlib.Repr:
    short = reprlib.Repr()
    short.maxlevel, short.maxlist, short.maxdict, short.maxtuple, short.maxset = 3, 6, 6, 6, 6
    short.maxstring = short.maxother = short.maxlong = 60
    return short


_SHORT = _short_repr()
EXCERPT_CHARS = 80  # a value quoted in a message: enough to recognise it, never a megabyte line


# every control character but the line breaks (joined to spaces below) as Python escapes it: a quoted
# value must not set a terminal's title or clear its screen (an ESC in a config key would)
# and the bidirectional formatting characters, which reorder what is shown (a name that reads as another)
_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_CONTROLS = {
    c: ascii(chr(c))[1:-1] for c in (*range(0x20), 0x7F, *range(0x80, 0xA0), *_BIDI) if c not in (0x0A, 0x0D)
}


def printable(text: str) -> str:
    """`text` with every control character but line breaks escaped (ESC as \\x1b): for names read from
    files that reach a terminal."""
    return text.translate(_CONTROLS)


def excerpt(value: object, limit: int = EXCERPT_CHARS) -> str:
    """`value` as text on one line, cut to `limit` characters with the length said when it is longer:
    messages quote what they refuse, and what they refuse may be huge (a YAML alias bomb), multi-line, or
    hold terminal control sequences (shown escaped: \\x1b)."""
    text = value if isinstance(value, str) else _SHORT.repr(value)  # bounded, however deep the value
    text = " ".join(text.splitlines()) if "\n" in text or "\r" in text else text
    text = printable(text)
    if len(text) <= limit:
        return text
    return f"{text[: limit - 1]}…" + (f" ({len(text)} characters)" if isinstance(value, str) else "")


def shown(value: object) -> str:
    """`value` as Python writes it (strings quoted), bounded like excerpt: for "found 'banana'"."""
    return excerpt(_SHORT.repr(value))


class GpuFinopsError(Exception):
    """An error with a message for the operator and the exit code of its meaning."""

    exit_code = EXIT_FALSE


class CheckFailed(GpuFinopsError):
    """The claim or check is false (exit 1)."""

    exit_code = EXIT_FALSE


class UsageError(GpuFinopsError):
    """A bad argument, file or environment variable (exit 2)."""

    exit_code = EXIT_USAGE


FILE = "<file>"  # the ConfigError key of a problem with the file itself (missing, a directory, not YAML)


class ConfigError(UsageError, ValueError):
    """A configuration value that cannot work (exit 2). Names the key, and the file once it is known."""

    def __init__(self, key: str, problem: str, source: str | None = None, kind: str = "config file"):
        self.key = key
        self.problem = problem
        self.source = source
        self.kind = kind  # what the file is: "config file", "fleet file", "metrics CSV file", ...
        where = f"{kind} {source}: " if source else ""
        what = "" if key == FILE else f"config key '{key}': " if kind == "config file" else f"key '{key}': "
        super().__init__(f"{where}{what}{problem}")

    def in_file(self, source: str, kind: str | None = None) -> ConfigError:
        """The same error, naming the file it came from (and what kind of file it is)."""
        return ConfigError(self.key, self.problem, source, kind or self.kind)


class Unreachable(GpuFinopsError):
    """An external service did not answer or refused us (exit 3). The message names the service."""

    exit_code = EXIT_UNREACHABLE


def failure_line(exc: BaseException, limit: int = 300) -> str:
    """An exception as one bounded line ("ApiException: (503) ..."): what a long-running server logs per
    failed cycle; the traceback belongs to `-v` (logged at DEBUG beside it)."""
    return excerpt(f"{type(exc).__name__}: {exc}", limit)
