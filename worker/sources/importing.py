"""``cairn import --all``: pick the discovered sessions to import and import them, source by source.

Selection: by default only sessions whose recorded directory is the
workspace or inside it (a user in a project wants that project's sessions;
sessions of other projects would fill this journal with unrelated
knowledge); ``everywhere`` takes them all, and ``since`` (seconds since the
epoch) keeps sessions active at or after it. Sessions whose store records no
directory are taken only with ``everywhere``.

Import: a store discovery could not read is reported as failed; then one
source (a file, or a database with the selected session ids) at a
time through :func:`imports.import_paths`, with symlinks refused. A source that
fails (unreadable, locked, malformed, replaced by a link, cut short while
read) is reported with its fixed code and skipped; the others go on. Capture
is idempotent by turn id, so a re-run captures only new turns and nothing twice.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from cairn.protocol.digest import ModelPolicy
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.worker.journal.store import Journal

from .model import SessionRef, Store

Progress = Callable[[int, int, str], None]


def belongs(session_dir: str | None, workspace: str) -> bool:
    if not session_dir:
        return False
    ws = os.path.normpath(workspace)
    return session_dir == ws or session_dir.startswith(ws.rstrip(os.sep) + os.sep)


def select(stores: Iterable[Store], workspace: str, *, everywhere: bool = False,
           since: float | None = None) -> list[SessionRef]:
    ws = os.path.realpath(workspace)
    out = []
    for st in stores:
        for ref in st.sessions:
            if since is not None and ref.mtime < since:
                continue
            if everywhere or belongs(ref.workspace, ws) or belongs(ref.workspace, workspace):
                out.append(ref)
    return out


def sources(refs: Iterable[SessionRef]) -> list[tuple[str, str, frozenset[str] | None]]:
    """``(format, path, session ids or None for a whole file)``, one per source, in a stable order."""
    whole: set[tuple[str, str]] = set()
    keyed: dict[tuple[str, str], set[str]] = {}
    for ref in refs:
        slot = (ref.format, ref.path)
        if ref.key is None:
            whole.add(slot)
        else:
            keyed.setdefault(slot, set()).add(ref.key)
    merged: dict[tuple[str, str], set[str] | None] = {**keyed, **{slot: None for slot in whole}}
    return [(fmt, path, None if keys is None else frozenset(keys)) for (fmt, path), keys in sorted(merged.items())]


def import_sources(j: Journal, chosen: list[tuple[str, str, frozenset[str] | None]], policy: ModelPolicy,
                   progress: Progress | None = None) -> dict[str, Any]:
    from cairn.worker.journal.imports import import_paths

    totals: dict[str, Any] = {"sources": 0, "sessions": 0, "captured": 0, "skipped": 0, "session_ids": [],
                              "failed": [], "malformed": []}
    for i, (fmt, path, keys) in enumerate(chosen):
        if progress is not None:
            progress(i, len(chosen), os.path.basename(path))
        try:
            r = import_paths(j, [path], fmt, policy, follow_symlinks=False, only=keys)
        except CairnError as exc:
            totals["failed"].append({"format": fmt, "path": path, "code": str(exc.code), "message": exc.message})
            continue
        except (ValueError, TypeError, KeyError, AttributeError, IndexError, RecursionError) as exc:
            # a record shape no importer check foresaw: that source's problem, never the others'
            totals["failed"].append({"format": fmt, "path": path, "code": str(ErrorCode.IMPORT_MALFORMED),
                                     "message": f"{os.path.basename(path)}: unexpected record shape "
                                                f"({type(exc).__name__})"})
            continue
        totals["sources"] += 1
        for k in ("sessions", "captured", "skipped"):
            totals[k] += r[k]
        totals["session_ids"] += r["session_ids"]
        totals["malformed"] += r.get("malformed", [])  # lines left out of a file whose other lines were read
    if progress is not None:
        progress(len(chosen), len(chosen), "")
    return totals


def import_all(j: Journal, stores: list[Store], workspace: str, policy: ModelPolicy, *, everywhere: bool = False,
               since: float | None = None, progress: Progress | None = None) -> dict[str, Any]:
    """Select from ``stores`` and import; stores that could not be read are listed as failed too."""
    refs = select(stores, workspace, everywhere=everywhere, since=since)
    totals = import_sources(j, sources(refs), policy, progress)
    unread = [{"format": st.format, "path": st.path, "code": st.error, "message": st.message or ""}
              for st in stores if st.error]
    totals["failed"] = unread + totals["failed"]
    totals["selected"] = len(refs)
    return totals
