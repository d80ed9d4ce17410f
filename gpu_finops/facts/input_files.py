"""The one way a command reads a file a user named: every refusal is a ConfigError (exit 2) naming the file,
on one line, before the command does anything else.

A file is read only if it is a regular file (a FIFO would block, /dev/zero never ends, a directory is a
mistake), opened without waiting, and read up to its kind's size limit; its text must be strict UTF-8; YAML
is read as the config is (gpu_finops/facts/config_yaml.py: no aliases, no key twice, nesting bounded,
integers bounded), JSON by gpu_finops/facts/json_text.py (no NaN or infinities, nesting bounded, numbers
in range). Each reader says which kind of input it reads (`what`: "fleet", "trace", ...) for its limits'
messages; a message names the file as the config's do ("config file f.yaml: a FIFO, not a regular file:
refusing to read it"), rather than a traceback or a hang.

`tests/gpu_finops/facts/test_input_files.py` walks the product and the twin for reads of a user's file that
do not come through here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpu_finops.facts import config_yaml, json_text
from gpu_finops.facts.errors import FILE, ConfigError, excerpt
from gpu_finops.facts.private_files import NotAPrivateFile, TooLarge, open_regular, read_regular

DEFAULT_LIMIT = 64 * 1024 * 1024  # a kind without its own limit: far above any input's sane size


def kind(what: str) -> str:
    """How a message names a file of `what` kind: "fleet" -> "fleet file", "owners file" stays."""
    return what if what.endswith("file") else f"{what} file"


def read_bytes(path: Path, what: str, limit: int = DEFAULT_LIMIT) -> bytes:
    """A regular file's bytes, at most `limit`; a ConfigError naming it otherwise."""
    source = str(path)
    try:
        return read_regular(Path(path), limit)
    except FileNotFoundError:
        raise ConfigError(FILE, "does not exist", source, kind(what)) from None
    except IsADirectoryError:
        raise ConfigError(FILE, "is a directory; name a file", source, kind(what)) from None
    except NotAPrivateFile as exc:
        raise ConfigError(FILE, str(exc.strerror), source, kind(what)) from None
    except TooLarge:
        raise ConfigError(
            FILE, f"is larger than {limit:,} bytes, the most a {what} may be", source, kind(what)
        ) from None
    except OSError as exc:
        raise ConfigError(FILE, f"cannot be read ({exc.strerror or exc})", source, kind(what)) from None


def read_head(path: Path, what: str, count: int) -> bytes:
    """A regular file's first `count` bytes (fewer when it is shorter): a header, such as SQLite's."""
    try:
        with open_regular(Path(path)) as f:
            return f.read(count)
    except FileNotFoundError:
        raise ConfigError(FILE, "does not exist", str(path), kind(what)) from None
    except NotAPrivateFile as exc:
        raise ConfigError(FILE, str(exc.strerror), str(path), kind(what)) from None
    except OSError as exc:
        raise ConfigError(FILE, f"cannot be read ({exc.strerror or exc})", str(path), kind(what)) from None


def read_text(path: Path, what: str, limit: int = DEFAULT_LIMIT) -> str:
    """A regular file's text, strict UTF-8 without a byte order mark."""
    raw = read_bytes(path, what, limit)
    if raw.startswith(b"\xef\xbb\xbf"):
        raise ConfigError(
            FILE, "starts with a byte order mark; save it as UTF-8 without one", str(path), kind(what)
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            FILE,
            f"not UTF-8 text (byte {raw[exc.start : exc.start + 1]!r} at offset {exc.start})",
            str(path),
            kind(what),
        ) from None


def read_yaml(path: Path, what: str, limit: int = config_yaml.MAX_CONFIG_BYTES) -> Any:
    """A YAML file's data, read as strictly as the config."""
    text = read_text(path, what, limit)
    try:
        return config_yaml.parse(text, str(path))
    except ConfigError as exc:
        raise exc.in_file(str(path), kind(what)) from None


def read_json(path: Path, what: str, limit: int = DEFAULT_LIMIT) -> Any:
    """A JSON file's data (json_text's rules)."""
    try:
        return json_text.loads(read_bytes(path, what, limit))
    except json_text.JSONTextError as exc:
        raise ConfigError(FILE, str(exc), str(path), kind(what)) from None


def json_line(line: str, where: str, what: str) -> Any:
    """One line of a JSON-lines file of `what` kind (`where`: "<path>:<line>")."""
    try:
        return json_text.loads(line)
    except json_text.JSONTextError as exc:
        raise ConfigError(FILE, f"not JSON: {excerpt(str(exc), 160)}", where, kind(what)) from None
