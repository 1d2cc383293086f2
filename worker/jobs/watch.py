"""One discovery pass over every session store: import what changed, seal what went idle.

A :class:`Watcher` is driven by its caller: ``cairn watch --once`` runs one
tick (databases included), tests and ``bench/discover.py`` call
:meth:`Watcher.tick` with a fake clock. (``cairn watch`` and ``cairn serve``
follow live files woken by the file system: :mod:`server.watch`.) Each tick:

1. discovers the stores again (cheap: a file's workspace probe is cached by
   ``(path, size, mtime_ns)``, so unchanged files cost one ``stat``);
2. imports the selected sessions whose stamp changed since their last
   successful import: ``(mtime, size)`` of a file, the recorded update time of
   a database session. Import is idempotent by turn id, so a grown file adds
   only its new completed turns; a source that fails keeps its old stamp and
   is tried again at the next tick (its fixed code is reported each time),
   and so is an entry discovery refused to read (a symlink, a FIFO);
   A file quiet for ``idle`` seconds is sealed: it is imported once more
   (once per stamp) so that the last turn of each of its sessions is
   captured even when no completion signal closed it (``Session.tail``:
   the last prompt of a finished session is never lost), and its sessions'
   captures are sealed with the others below;
3. seals the open captures whose newest turn is older than ``idle`` seconds
   (trigger ``idle``), so they can be digested.

Nothing is held between ticks but the stamps and probe cache; a watcher that
dies loses nothing (the next one re-imports idempotently).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from cairn.protocol import codec
from cairn.protocol.digest import ModelPolicy
from cairn.protocol.import_results import SourceFailure, SourcesImport
from cairn.protocol.vocab import Trigger
from cairn.worker.ingest.sources.model import SessionRef
from cairn.worker.ingest.sources.scan import Probes, discover
from cairn.worker.jobs.importing import as_sources, import_tally, refused, select, sources, unread
from cairn.worker.journal.capture import open_sessions, seal_session
from cairn.worker.journal.store import Journal

Stamp = tuple[float, int]
IDLE_SECONDS = 20 * 60.0


def _slot(ref: SessionRef) -> tuple[str, str, str | None]:
    return (ref.format, ref.path, ref.key)


class Watcher:
    """Imports, tick by tick, the sessions that changed since it last looked."""

    def __init__(self, home: str, env: Mapping[str, str], workspace: str, policy: ModelPolicy, *,
                 everywhere: bool = False, idle: float = IDLE_SECONDS) -> None:
        self.home, self.env, self.workspace = home, dict(env), os.path.abspath(workspace)
        self.policy, self.everywhere, self.idle = policy, everywhere, idle
        self.stamps: dict[tuple[str, str, str | None], Stamp] = {}
        self.sealed: dict[tuple[str, str, str | None], Stamp] = {}  # files imported as sealed, at that stamp
        self.probes: Probes = {}
        self._refs: list[SessionRef] = []

    def changed(self) -> tuple[list[SessionRef], tuple[SourceFailure, ...]]:
        """(sessions whose stamp moved, stores that could not be read)."""
        stores = discover(self.home, self.env, workspace=self.workspace, probes=self.probes)
        self._refs = select(stores, self.workspace, everywhere=self.everywhere)
        moved = [r for r in self._refs if self.stamps.get(_slot(r)) != (r.mtime, r.size)]
        return moved, unread(stores)

    def tick(self, j: Journal, *, progress: Callable[[int, int], None] | None = None) -> SourcesImport:
        """One pass: import what changed and what went quiet, then seal idle captures. Returns the counts
        and failures."""
        moved, not_read = self.changed()
        cutoff = j.now() - self.idle
        quiet = [r for r in self._refs if r.key is None and not r.error and r.mtime <= cutoff
                 and self.sealed.get(_slot(r)) != (r.mtime, r.size)]
        chosen = sources([*moved, *quiet])
        tally = import_tally(j, chosen, self.policy, progress, sealed_before=cutoff)
        totals = as_sources(chosen, tally)
        failed = {(f.format, f.path) for f in totals.failed}
        for ref in moved:
            if (ref.format, ref.path) not in failed and not ref.error:
                self.stamps[_slot(ref)] = (ref.mtime, ref.size)
        for ref in quiet:
            if (ref.format, ref.path) not in failed:
                self.sealed[_slot(ref)] = (ref.mtime, ref.size)
        ended = set(tally.sealed_ids)  # sessions of sealed files: idle now, whenever their turns were captured
        sealed = [c for c in (seal_session(j, s, Trigger.IDLE, quiet_before=None if s in ended else cutoff)
                              for s in open_sessions(j)) if c]
        return codec.evolve(totals, failed=not_read + refused(moved) + totals.failed, changed=len(moved),
                            sealed=tuple(sealed))
