"""Fixtures of the server tests (the ``client`` language-server fixture is in ``tests/conftest.py``)."""

from __future__ import annotations

import pytest

from tests.support import child_env


@pytest.fixture
def test_env() -> dict[str, str]:
    """Worker environment with the test-only job kinds enabled."""
    return child_env(CAIRN_TEST_JOBS="1")
