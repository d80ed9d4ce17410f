"""The product's CLI as a user runs it against the local target: `gpu-finops local env`'s exports (kubeconfig,
Prometheus, the collector's store) in the environment, the entry point in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def env_of(cluster: Any) -> dict[str, str]:
    from local.cluster import product

    env = dict(os.environ)
    for line in product.exports(cluster).splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        env[key] = value
    return {**env, "COLUMNS": "160"}


def cli(cluster: Any, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpu_finops.cli", *args],
        capture_output=True, text=True, timeout=180, env=env_of(cluster), cwd=ROOT,
    )  # fmt: skip
