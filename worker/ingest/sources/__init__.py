"""Session stores on this machine: find them (:func:`discover`) and import from them (:mod:`.importing`).

Contract:

- Pure over a home directory and an environment (tests use a synthetic home);
  each tool's relocation variable and ``XDG_*`` are honoured (:mod:`.roots`).
- Read-only, and never through a symlink inside a store: a link there is
  neither entered nor read, so a store cannot send the reader elsewhere;
  paths are canonical and every folder below ``/`` is opened without
  following a link (:mod:`cairn.worker.ingest.storefile`), so the importer refuses a
  session file, or a folder on its way, that became a link
  (``E_PATH_SYMLINK``). An entry with a session's name that is not read (a
  link, a FIFO, a folder) is kept with its code (:attr:`Store.refused`) and
  reported by the import of its workspace, never dropped without a word.
- Bounded work per store: a depth limit, a file count limit, a head read per
  file, a count query per database.
- A store that cannot be read carries a fixed ``E_…`` code; the others are
  listed as usual.

Each session names the workspace it ran in when its store records one, so
``cairn import --all`` can take only the current workspace's sessions.
"""

from __future__ import annotations

from .model import SessionRef, Store, workspace_counts
from .scan import discover

__all__ = ["SessionRef", "Store", "discover", "workspace_counts"]
