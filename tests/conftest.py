from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


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


def child_env(**extra: str) -> dict[str, str]:
    """Environment for subprocesses: crash injection off unless asked.

    ``cairn`` is importable through the installation; ``tests`` (for actors run
    with ``-m tests...``) through the working directory, which callers set to REPO.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_CRASH")}
    env.update(extra)
    return env


PYTHON = sys.executable
