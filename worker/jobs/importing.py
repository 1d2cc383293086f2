"""``cairn import --all``: pick the discovered sessions to import and import them, source by source.

Selection: by default only sessions whose recorded directory is the
workspace or inside it (a user in a project wants that project's sessions;
sessions of other projects would fill this journal with unrelated
knowledge); ``everywhere`` takes them all, and ``since`` (seconds since the
epoch) keeps sessions active at or after it. A Claude Code session whose
head names no directory (unreadable, malformed) belongs to the workspace
its project folder is named after; other sessions whose store records no
directory are taken only with ``everywhere``.

What is not selected is counted by reason (:func:`left_out`): sessions of
other workspaces, sessions whose store records no directory, sessions
older than ``since``, and stores listed only in part (more files than
discovery lists).

Import: a store discovery could not read is reported as failed, and so is
each selected entry discovery refused to read (a symlink, a FIFO or a
folder with a session's name: ``E_PATH_SYMLINK``, ``E_PATH_NOT_REGULAR``);
then the sources (files, or databases with the selected session ids) are
imported together through :func:`imports.import_items`, with symlinks
refused on the whole path. A source that fails (unreadable, locked,
malformed, replaced by a link, cut short while read) is reported with its
fixed code and skipped; the others go on. Nothing is skipped without a word.
Capture is idempotent by turn id, so a re-run captures only new turns and
nothing twice.

Imports inside functions: ``cairn discover`` and the watchers (the
language server's included) select sessions here without importing any, so
the import machinery (:mod:`worker.journal.imports`, capture, the helper
process) loads with :func:`import_sources`. Measured with ``python -X
importtime``: 39 ms more for them with it at the top.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from cairn.protocol import codec
from cairn.protocol.digest import ModelPolicy
from cairn.protocol.import_results import ImportTally, SourceFailure, SourcesImport
from cairn.worker.ingest.sources.model import SessionRef, Store
from cairn.worker.ingest.sources.probe import claude_folder
from cairn.worker.journal.store import Journal


def belongs(session_dir: str | None, workspace: str) -> bool:
    if not session_dir:
        return False
    ws = os.path.normpath(workspace)
    return session_dir == ws or session_dir.startswith(ws.rstrip(os.sep) + os.sep)


def mine(ref: SessionRef, workspace: str, real: str | None = None) -> bool:
    """Whether ``ref`` is a session of ``workspace`` (``real``: its resolved path) or below it."""
    real = os.path.realpath(workspace) if real is None else real
    if ref.workspace:
        return belongs(ref.workspace, real) or belongs(ref.workspace, workspace)
    if ref.format == "claude-code":  # no directory read from it: the project folder it is in names one
        return claude_folder(os.path.basename(os.path.dirname(ref.path))) in (claude_folder(real),
                                                                              claude_folder(os.path.normpath(workspace)))
    return False


def select(stores: Iterable[Store], workspace: str, *, everywhere: bool = False,
           since: float | None = None) -> list[SessionRef]:
    """The sessions of ``workspace`` (every one with ``everywhere``), the refused entries among them."""
    ws = os.path.realpath(workspace)
    out = []
    for st in stores:
        for ref in st.sessions + st.refused:
            if since is not None and ref.mtime < since:
                continue
            if everywhere or mine(ref, workspace, ws):
                out.append(ref)
    return out


def left_out(stores: Iterable[Store], workspace: str, *, everywhere: bool = False,
             since: float | None = None) -> dict[str, int]:
    """The sessions found that :func:`select` does not take, counted by reason: ``before-since``,
    ``other-workspace`` (a directory recorded, not this workspace's), ``no-workspace`` (none recorded:
    taken with ``everywhere``); and ``cut-stores``, stores whose listing stopped at discovery's bound."""
    ws = os.path.realpath(workspace)
    out: dict[str, int] = {}
    for st in stores:
        if st.truncated:
            out["cut-stores"] = out.get("cut-stores", 0) + 1
        for ref in st.sessions + st.refused:
            if since is not None and ref.mtime < since:
                reason = "before-since"
            elif everywhere or mine(ref, workspace, ws):
                continue
            else:
                # a Claude Code session with no directory read is placed by its project folder: another's
                reason = "other-workspace" if ref.workspace or ref.format == "claude-code" else "no-workspace"
            out[reason] = out.get(reason, 0) + 1
    return out


def refused(refs: Iterable[SessionRef]) -> tuple[SourceFailure, ...]:
    """The failures of the refs discovery refused to read (each with its code)."""
    return tuple(SourceFailure(format=r.format, path=r.path, code=r.error, message=r.message or "")
                 for r in sorted(refs, key=lambda r: (r.format, r.path)) if r.error)


def sources(refs: Iterable[SessionRef]) -> list[tuple[str, str, frozenset[str] | None]]:
    """``(format, path, session ids or None for a whole file)``, one per source, in a stable order
    (refused entries are no source)."""
    whole: set[tuple[str, str]] = set()
    keyed: dict[tuple[str, str], set[str]] = {}
    for ref in refs:
        if ref.error:
            continue
        slot = (ref.format, ref.path)
        if ref.key is None:
            whole.add(slot)
        else:
            keyed.setdefault(slot, set()).add(ref.key)
    merged: dict[tuple[str, str], set[str] | None] = {**keyed, **{slot: None for slot in whole}}
    return [(fmt, path, None if keys is None else frozenset(keys)) for (fmt, path), keys in sorted(merged.items())]


def import_tally(j: Journal, chosen: list[tuple[str, str, frozenset[str] | None]], policy: ModelPolicy,
                 progress: Callable[[int, int], None] | None = None, *, stop: Callable[[], bool] | None = None,
                 processes: int = 1, sealed_before: float | None = None) -> ImportTally:
    """:func:`import_sources`, its tally as the import made it (``sealed_ids`` included)."""
    # the import machinery loads with an import: module docstring
    from cairn.worker.journal.imports import import_items

    items = [(path, fmt, keys) for fmt, path, keys in chosen]
    return import_items(j, items, policy, follow_symlinks=False, progress=progress, stop=stop, processes=processes,
                        tolerant=True, sealed_before=sealed_before)


def as_sources(chosen: list[tuple[str, str, frozenset[str] | None]], r: ImportTally) -> SourcesImport:
    """The tally of an import of ``chosen`` as its counts, each failed source named by format and path."""
    return SourcesImport(sources=r.files, sessions=r.sessions, captured=r.captured, skipped=r.skipped,
                         session_ids=r.session_ids, malformed=r.malformed, interrupted=r.interrupted,
                         failed=tuple(SourceFailure(format=chosen[f.index][0], path=chosen[f.index][1], code=f.code,
                                                    message=f.message) for f in r.failed),
                         pending=r.pending or None, empty=r.empty or None, formats=r.formats or None)


def import_sources(j: Journal, chosen: list[tuple[str, str, frozenset[str] | None]], policy: ModelPolicy,
                   progress: Callable[[int, int], None] | None = None, *, stop: Callable[[], bool] | None = None,
                   processes: int = 1, sealed_before: float | None = None) -> SourcesImport:
    """Import ``chosen`` sources together (:func:`imports.import_items`: several in flight, with
    ``processes=2`` a helper process for the last ones); ``progress(done, total)`` counts turns.

    A source that fails is listed in ``failed`` and the others go on; ``stop`` ends the import at a
    batch boundary (``interrupted``). A file last modified at or before ``sealed_before`` is sealed
    (:func:`imports.import_paths`): its sessions' last turns are captured even with no completion signal."""
    return as_sources(chosen, import_tally(j, chosen, policy, progress, stop=stop, processes=processes,
                                           sealed_before=sealed_before))


def unread(stores: Iterable[Store]) -> tuple[SourceFailure, ...]:
    """The stores discovery could not read, as failures."""
    return tuple(SourceFailure(format=st.format, path=st.path, code=st.error, message=st.message or "")
                 for st in stores if st.error)


def import_all(j: Journal, stores: list[Store], workspace: str, policy: ModelPolicy, *, everywhere: bool = False,
               since: float | None = None, progress: Callable[[int, int], None] | None = None,
               stop: Callable[[], bool] | None = None, processes: int = 1,
               sealed_before: float | None = None) -> SourcesImport:
    """Select from ``stores`` and import; stores that could not be read and selected entries that
    were refused are listed as failed too, and what was not selected is counted by reason
    (``left_out``). ``sealed_before`` as for :func:`import_sources`."""
    refs = select(stores, workspace, everywhere=everywhere, since=since)
    totals = import_sources(j, sources(refs), policy, progress, stop=stop, processes=processes,
                            sealed_before=sealed_before)
    return codec.evolve(totals, failed=unread(stores) + refused(refs) + totals.failed, selected=len(refs),
                        left_out=left_out(stores, workspace, everywhere=everywhere, since=since) or None)
