"""The one way a command writes a file a user named (a page, a chart, a JSON result, a trace): whole or not
at all, and every failure a UsageError (exit 2) naming the file.

The bytes go to a temporary file beside the target, which then replaces it (`os.replace`): a full disk, a
quota, or an interrupt leaves the earlier file as it was and no half-written one. A target that exists and
is not a regular file (a FIFO would block, /dev/full never takes a byte, a directory is a mistake) is
refused before anything is written; missing folders are made. Charts are rendered into memory first
(`figure_bytes`) for the same reason.
"""

from __future__ import annotations

import io
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from gpu_finops.facts.errors import UsageError


def _refuse_special(path: Path, what: str) -> None:
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UsageError(f"{what} {path}: cannot be examined ({exc.strerror or exc})") from None
    if stat.S_ISDIR(mode):
        raise UsageError(f"{what} {path}: is a directory; name a file")
    if not stat.S_ISREG(mode):
        raise UsageError(
            f"{what} {path}: is a symlink, FIFO or device, not a regular file; name a file to write"
        )


def write_output(path: Path, content: str | bytes, what: str = "output") -> Path:
    """Write `content` (text as UTF-8) to `path` whole, replacing what was there; exit 2 naming the file
    when it cannot be (no space, no permission, a folder that is a file)."""
    path = Path(path)
    _refuse_special(path, what)
    data = content.encode("utf-8") if isinstance(content, str) else content
    temp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=f".{path.name[:100]}.", suffix=".partial", dir=path.parent)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, 0o644 & ~_umask())
        os.replace(temp, path)
        temp = None
    except OSError as exc:
        raise UsageError(
            f"{what} {path}: cannot be written ({exc.strerror or exc}); nothing was written there, free "
            "space or name another path"
        ) from None
    finally:
        if temp is not None:
            Path(temp).unlink(missing_ok=True)
    return path


def figure_bytes(fig: Any, fmt: str, **savefig: Any) -> bytes:
    """A matplotlib figure rendered in memory (`fmt`: "png" or "svg"), to be written by `write_output`."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt, **savefig)
    return buffer.getvalue()


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
