"""A workspace as a clone leaves it when the repository shipped ``.cairn/state`` (see ADR 0011)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def clone_like(src: Path, dst: Path, *, dirs: int = 0o755, files: int = 0o644) -> Path:
    """Copy ``src``'s ``.cairn`` and ``.agents`` into ``dst`` as git would check them out (new inodes,
    the cloner's umask: ``dirs``/``files`` modes); ``dst`` must not exist."""
    dst.mkdir()
    for top in (".cairn", ".agents"):
        if (src / top).exists():
            shutil.copytree(src / top, dst / top, symlinks=True)
    for base, dnames, fnames in os.walk(dst / ".cairn"):
        for d in dnames:
            os.chmod(os.path.join(base, d), dirs)
        for f in fnames:
            os.chmod(os.path.join(base, f), files)
    os.chmod(dst / ".cairn", dirs)
    return dst


def own_state(ws: Path) -> Path:
    """``ws/.cairn/state`` as cairn creates it (0700), for tests that plant records in it by hand: a
    folder made with the test's umask (0755) is what a clone leaves and is refused (``E_STATE_FOREIGN``)."""
    state = ws / ".cairn" / "state"
    state.mkdir(parents=True, exist_ok=True)
    os.chmod(state, 0o700)
    return state
