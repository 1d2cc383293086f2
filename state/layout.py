"""Where things live under a workspace (see docs/ARCHITECTURE.md, "Workspace layout").

All private state is under ``.cairn/state/`` (0700, generated, git-ignored);
public records under ``.cairn/journal/``. Paths are relative to the
workspace root and are opened only through pinned handles.
"""

from __future__ import annotations

import os

CAIRN = ".cairn"
CONFIG = ".cairn/config.toml"
PUBLIC_JOURNAL = ".cairn/journal"
STATE = ".cairn/state"
JOURNAL_STATE = ".cairn/state/journal"
JOURNAL_CLAIMS = ".cairn/state/journal/claims"
JOURNAL_BUNDLES = ".cairn/state/journal/bundles"
MEMORY_WRITE = ".cairn/state/memory-write"
MEMORY_WRITE_CLAIMS = ".cairn/state/memory-write/claims"
MEMORY_WRITE_BUNDLES = ".cairn/state/memory-write/bundles"

MEMORY_CLAIMS = ".cairn/state/memory/claims"
MEMORY_BUNDLES = ".cairn/state/memory/bundles"
MEMORY_DECISIONS = ".cairn/state/memory/decisions"  # <proposal>/<seq>: the private decisions (the authority)
PUBLIC_DECISIONS = ".cairn/journal/decisions"  # <proposal>-<seq>.json: their public records
MEMORY_ROOT = ".agents/memory"  # the workspace's own memory root (users commit it)
NOTES_ROOT = ".agents/notes"  # the default folder of shared working notes (disposed of, restored by undo)
#: folders no memory root or instruction file may be in: git's own files (``.git/config`` runs programs)
#: and cairn's (its config, private state and public journal)
RESERVED = (".git", CAIRN)


def reserved(rel: str) -> bool:
    """Whether the '/'-separated relative path ``rel`` lies in a :data:`RESERVED` folder, at any depth."""
    return any(part in RESERVED for part in rel.split("/"))

#: every claims root with the bundle store its outcomes may reference
CLAIM_ROOTS: tuple[tuple[str, str], ...] = (
    (JOURNAL_CLAIMS, JOURNAL_BUNDLES),
    (MEMORY_CLAIMS, MEMORY_BUNDLES),
    (MEMORY_WRITE_CLAIMS, MEMORY_WRITE_BUNDLES),
)


def too_wide(path: str) -> bool:
    """Whether ``path`` (absolute) is the file system root or the user's home folder itself, by name or once
    links are resolved: never a workspace (a folder inside either is fine), since its ``.cairn/`` would collect
    the sessions and memory of every project below it. The language server, ``cairn mcp`` and the agents'
    hooks refuse such a folder with ``E_WORKSPACE_INVALID``."""
    home = os.path.expanduser("~")
    wide = {os.path.abspath(os.sep)}
    if os.path.isabs(home):
        wide |= {os.path.normpath(home), os.path.realpath(home)}
    path = os.path.normpath(path)
    return path in wide or os.path.realpath(path) in wide or os.path.dirname(path) == path
