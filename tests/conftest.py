"""Fixtures shared by the whole suite; plain helpers live in :mod:`tests.support`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import PYTHON, REPO, child_env  # noqa: F401  (re-exported for older imports)


@pytest.fixture(autouse=True)
def user_config_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test (and every subprocess it starts) gets its own empty user config home:
    the real ``~/.config/cairn`` (settings, trusted workspaces) is never read or written."""
    home = tmp_path_factory.mktemp("xdg-config")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws
