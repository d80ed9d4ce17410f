""", F10 (a FIFO or /dev/zero as the config), F16 (an unknown
key echoed whole): each a ConfigError naming the file, on one short line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpu_finops.facts.config import load_config
from gpu_finops.facts.errors import ConfigError


def test_a_key_twice_in_one_flow_mapping_is_refused(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("versions: {kueue: v1, kueue: v2}\n")
    with pytest.raises(
        ConfigError, match=r"config key 'kueue': given twice, on line 1 \(columns 12 and 23\)"
    ):
        load_config(path)


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "c.yaml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="a FIFO, not a regular file"):
        load_config(fifo)


def test_dev_zero_is_refused_without_reading_it():
    with pytest.raises(ConfigError, match="a special file, not a regular file"):
        load_config(Path("/dev/zero"))


def test_an_unknown_key_is_cut_to_an_excerpt(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("? " + "x" * 100_000 + "\n: 1\n")  # an explicit key: no 1024-character limit
    with pytest.raises(ConfigError) as err:
        load_config(path)
    text = str(err.value)  # the key cut to an excerpt, then the known keys (which are ours, not the file's)
    assert "… (100000 characters)': not a known key" in text and len(text) < 1000, text[:500]
