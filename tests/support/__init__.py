"""Helpers shared by the test suite: paths, the interpreter, subprocess environments.

Test modules import these from here (``from tests.support import ...``);
``tests/conftest.py`` holds only fixtures. Nothing in production imports this
package: fakes the production code must know of live in the ``testing``
modules of their layer (``cairn.server.testing``, ``cairn.worker.testing``).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
PYTHON = sys.executable


def child_env(**extra: str) -> dict[str, str]:
    """Environment for subprocesses: crash injection off unless asked.

    ``cairn`` is importable through the installation; ``tests`` (for actors run
    with ``-m tests...``) through the working directory, which callers set to REPO.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_CRASH")}
    env.update(extra)
    return env


def users_auto_mode() -> None:
    """``mode = "auto"`` in the user's own ``config.toml`` (this test's ``$XDG_CONFIG_HOME``, which every
    subprocess inherits): auto mode is the user's to choose, a workspace's own file sets it only once the
    user trusted the workspace."""
    folder = Path(os.environ["XDG_CONFIG_HOME"], "cairn")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text('mode = "auto"\n')


async def until_changed(changed: asyncio.Event, pred: Callable[[], object], bound: float = 30.0) -> None:
    """Wait for ``pred``, re-checked each time ``changed`` is set (bounded, not a sleep)."""
    async def loop() -> None:
        while not pred():
            changed.clear()
            await changed.wait()
    await asyncio.wait_for(loop(), bound)
