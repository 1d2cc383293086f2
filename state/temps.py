"""Collection of stray temps left by writers that died mid-publication.

A temp is never visible under a final name (publication links or renames a
complete, fsynced file), so removing the temp of a dead writer loses nothing.
A temp is collected when its writer's pid is gone, or when it is older than
an hour (pid reuse cannot keep a temp alive forever).
"""

from __future__ import annotations

import stat

from cairn.protocol.errors import CairnError
from cairn.state.fsdir import PinnedDir


def collect_tree(base: PinnedDir, rel: str, *, max_dirs: int = 10_000) -> int:
    """Collect temps in ``rel`` and every directory below it (symlinks are never followed)."""
    try:
        top = base.descend(rel)
    except CairnError:
        return 0
    removed = 0
    stack = [top]
    seen = 0
    while stack and seen < max_dirs:
        d = stack.pop()
        seen += 1
        try:
            removed += d.collect_temps()
            for entry in d.scandir():
                if entry.name.startswith(".tmp-"):
                    continue
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    try:
                        stack.append(d.child(entry.name))
                    except CairnError:
                        continue
        finally:
            d.close()
    for d in stack:
        d.close()
    return removed
