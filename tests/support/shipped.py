"""A workspace as a clone leaves it when the repository shipped ``.cairn/state`` (see ADR 0010)."""

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
