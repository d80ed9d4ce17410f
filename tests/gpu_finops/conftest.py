"""The bad inputs' folder (tests/gpu_finops/bad_inputs.py): the files the cases name, and a closed port."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infra.metrics_csv import MAX_CSV_BYTES
from tests.gpu_finops.bad_inputs import CONFIGS, closed_port


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, str]:
    for name, text in CONFIGS.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "latin1.yaml").write_bytes(b"cluster_name: caf\xe9\n")
    (tmp_path / "config-dir").mkdir()
    (tmp_path / "a-file").write_text("not a directory\n")
    (tmp_path / "big.csv").write_text("#" * (MAX_CSV_BYTES + 1))
    (tmp_path / "bad-row.csv").write_text("DCGM_FI_PROF_SM_ACTIVE, gauge\n")
    (tmp_path / "nodes.json").write_text(json.dumps({"items": []}))
    (tmp_path / "rates.json").write_text(json.dumps({"g6e.xlarge": {"on-demand": 1.86, "spot": 0.6}}))
    port = closed_port()
    (tmp_path / "kubeconfig").write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return {"tmp": str(tmp_path), "closed": str(port)}
