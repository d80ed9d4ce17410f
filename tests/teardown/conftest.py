"""Every teardown test runs where `make up` would have left its provenance (tests/conftest.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _provenance(teardown_run):
    return teardown_run
