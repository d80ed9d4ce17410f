"""Every exception that can end a subcommand, as (exit code, one line): the contract in gpu_finops/facts/errors.py.

Our own errors carry their code. The libraries' are recognised here by type, without importing a library
that has not been loaded already (so `--help` and `collect` stay light): botocore, kubernetes and urllib3,
YAML, the file system, SQLite, JSON. Anything else is a bug: it says so, and `-v` shows where.
"""

from __future__ import annotations

import errno
import json
import os
import select
import sqlite3
import sys
from types import TracebackType

from gpu_finops.facts.errors import (
    EXIT_BUG,
    EXIT_FALSE,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    GpuFinopsError,
    excerpt,
)

AWS_DENIED = {
    "AccessDenied",
    "AccessDeniedException",
    "UnauthorizedOperation",
    "UnauthorizedAccess",
    "ExpiredToken",
    "ExpiredTokenException",
    "InvalidClientTokenId",
    "UnrecognizedClientException",
    "SignatureDoesNotMatch",
    "AuthFailure",
}


def _loaded(module: str):
    return sys.modules.get(module)


def _aws_service(tb: TracebackType | None) -> str:
    """The botocore client the call went through, read from the traceback (ClientError does not say)."""
    service = "AWS"
    while tb is not None:
        meta = getattr(tb.tb_frame.f_locals.get("self"), "meta", None)
        model = getattr(meta, "service_model", None)
        if model is not None:
            service = f"AWS {model.service_name}"
        tb = tb.tb_next
    return service


def _botocore(exc: BaseException) -> tuple[int, str] | None:
    botocore = _loaded("botocore.exceptions")
    if botocore is None or not isinstance(exc, botocore.BotoCoreError | botocore.ClientError):
        return None
    if isinstance(exc, botocore.ClientError):
        error = exc.response.get("Error", {})
        code, message = error.get("Code", "?"), error.get("Message", "")
        where = f"{_aws_service(exc.__traceback__)} {exc.operation_name}"
        if code in AWS_DENIED:
            return EXIT_UNREACHABLE, (
                f"{where} refused: {code}: {message}; check that the credentials are current and the "
                "role allows this action (docs/runbook.md lists what it needs)"
            )
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", "?")
        return EXIT_UNREACHABLE, f"{where} failed: {code} (HTTP {status}): {message}"
    if isinstance(exc, botocore.NoCredentialsError | botocore.PartialCredentialsError):
        return EXIT_UNREACHABLE, (
            f"AWS: {exc}; set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (or run where a role is "
            "available)"
        )
    if isinstance(exc, botocore.NoRegionError | botocore.ProfileNotFound):
        return EXIT_USAGE, f"AWS configuration: {exc}; set AWS_REGION or AWS_PROFILE to one that exists"
    if isinstance(exc, botocore.EndpointConnectionError | botocore.ConnectTimeoutError):
        return EXIT_UNREACHABLE, f"AWS unreachable: {exc}; check the network, and AWS_ENDPOINT_URL if set"
    return EXIT_UNREACHABLE, f"AWS: {type(exc).__name__}: {exc}"


def _kubernetes(exc: BaseException) -> tuple[int, str] | None:
    config = _loaded("kubernetes.config.config_exception")
    if config is not None and isinstance(exc, config.ConfigException):
        return EXIT_USAGE, (
            f"no Kubernetes configuration: {exc}; set KUBECONFIG or --kubeconfig, or run in a cluster"
        )
    api = _loaded("kubernetes.client.exceptions")
    if api is not None and isinstance(exc, api.ApiException):
        return EXIT_UNREACHABLE, (
            f"the Kubernetes API answered {exc.status} {exc.reason}"
            + ("; check the kubeconfig's credentials and RBAC" if exc.status in (401, 403) else "")
        )
    urllib3 = _loaded("urllib3.exceptions")
    if urllib3 is not None and isinstance(exc, urllib3.HTTPError):
        reason = getattr(exc, "reason", None) or exc
        return EXIT_UNREACHABLE, (
            f"the Kubernetes API is unreachable: {reason}; check that the cluster is up and the kubeconfig "
            "points at it"
        )
    return None


def _files(exc: BaseException) -> tuple[int, str] | None:
    yaml = _loaded("yaml")
    if yaml is not None and isinstance(exc, yaml.YAMLError):
        mark = getattr(exc, "problem_mark", None)
        where = f"{mark.name} line {mark.line + 1} column {mark.column + 1}" if mark else "input"
        # one line: str(exc) of a YAML error spans lines ("...\n  in <file>, line 3")
        return (
            EXIT_USAGE,
            f"{where}: not valid YAML: {excerpt(getattr(exc, 'problem', None) or str(exc), 200)}",
        )
    if isinstance(exc, UnicodeDecodeError):
        return EXIT_USAGE, (
            f"an input is not UTF-8 text: byte {exc.object[exc.start : exc.start + 1]!r} at offset {exc.start}; "
            "save it as UTF-8"
        )
    if isinstance(exc, json.JSONDecodeError):
        return EXIT_USAGE, f"an input is not valid JSON: {exc}"
    if isinstance(exc, sqlite3.Error):
        return EXIT_USAGE, f"the SQLite cost store: {exc}; check the --store path"
    if isinstance(exc, BrokenPipeError) and stdout_closed():
        return EXIT_FALSE, (
            "stopped: the reader of standard output closed it (a pipe such as `| head`) before the output "
            "ended; nothing else went wrong"
        )
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        where = exc.filename or "standard output"
        return EXIT_USAGE, f"{where}: {exc.strerror}; free space or write the output elsewhere"
    if isinstance(exc, ConnectionError | TimeoutError):
        return EXIT_UNREACHABLE, f"a connection failed: {exc}"
    if isinstance(exc, OSError) and exc.filename is not None:
        return EXIT_USAGE, f"{exc.filename}: {exc.strerror or exc}"
    return None


def stdout_closed() -> bool:
    """True when standard output is a pipe whose reader has gone (poll says POLLERR): a BrokenPipeError
    from there is the reader's choice, not a service failing (BrokenPipeError is a ConnectionError)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # stdout closed, replaced, or without a descriptor
        return False


def settle_stdout() -> None:
    """Flush standard output; where that fails (a closed pipe, a full disk), point it at /dev/null so the
    interpreter's own flush at exit cannot fail a second time with a message outside the contract."""
    try:
        sys.stdout.flush()
        return
    except (OSError, ValueError):
        pass
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def classify(exc: BaseException) -> tuple[int, str]:
    """The exit code and the one line for an exception that ended a subcommand."""
    if isinstance(exc, GpuFinopsError):
        return exc.exit_code, str(exc)
    for known in (_botocore, _kubernetes, _files):
        found = known(exc)
        if found is not None:
            return found
    return EXIT_BUG, (
        f"unexpected error: {type(exc).__name__}: {exc} (a bug in gpu-finops: rerun with -v for the "
        "traceback and report it)"
    )
