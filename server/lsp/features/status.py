"""Snapshots and the read-only requests: ``cairn/status``, ``cairn/jobs``, ``cairn/cockpit``, ``cairn/proposal``,
``cairn/evidence``.

``cairn/status`` answers from memory: the journal counts of the last
snapshot merged with the coordinator's live job counts. A snapshot is
re-read in a thread (never on the event loop), coalesced, and at most every
``REFRESH_SPACING`` seconds per workspace:

- after every job of this server (the log line that follows means fresh);
- when ``cairn/status`` (or a code action request) finds the control
  directories changed since the snapshot was read (a re-read that sees
  proposals or decisions changed republishes the open memory documents'
  diagnostics): the CLI or another editor decided a proposal,
  published a digest or captured a turn. That check is a ``stat`` of the
  :data:`WATCHED` directories (microseconds, on the loop); there is no
  timer, so an idle server does no work. A changed signature with no work
  of this server under way in the workspace makes the request wait for the
  re-read (the answer is current); while its own jobs are queued or
  running, or a re-read is already under way, the answer is the cached one
  and the re-read happens behind it (those jobs' ends refresh anyway), so an
  editor polling during maintenance never waits for a read.

A snapshot also carries today's provider usage; its records are read again
only when the names in today's usage folder changed (a new request, an end),
or while one of its requests is running (see
:func:`worker.providers.usage_report.today`'s ``cache``).

Directory timestamps come from a coarse clock: a change within the same
tick as the last one could keep the signature. A snapshot whose newest
timestamp is younger than ``RACY_SECONDS`` is therefore not trusted to
match (the next request re-reads), like git's racy-clean index entries.

Imports inside functions: the worker's readers (status counts, journal and
memory views) are imported where used, in the snapshot's thread or with the
first request, so the server starts without them. Measured with ``python
-X importtime`` over ``build_server()``: 39 ms more with them at the top.
A broken import fails the request with ``E_INTERNAL``, never an empty answer.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import TYPE_CHECKING, Any

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.jobs import JobState
from cairn.protocol.lsp import (
    STATUS_KEYS,
    AcceptEditedParams,
    CockpitParams,
    JournalParams,
    ProposalParams,
    StatusParams,
)
from cairn.server.lsp.features.context import LOG_WARNING
from cairn.server.scheduler.events import Notify
from cairn.state import layout
from cairn.worker.providers.usage_report import today

if TYPE_CHECKING:
    from cairn.server.lsp.service import CairnService

OVERVIEW_SESSIONS = 10  # followed transcripts the overview lists
REFRESH_SPACING = 0.25  # seconds between two journal snapshot reads of one workspace
RACY_SECONDS = 0.1  # a directory changed this recently may change again within its timestamp tick
WATCHED = (
    layout.PUBLIC_JOURNAL,  # published digests
    f"{layout.PUBLIC_JOURNAL}/decisions",  # every decision on a proposal (accept, reject, undo)
    f"{layout.STATE}/memory/proposals",  # new proposals
    f"{layout.JOURNAL_STATE}/captures",  # new captures
)
_JOB_KEYS = {JobState.IDLE: "pending", JobState.RUNNING: "running", JobState.RETRY_WAITING: "retryWaiting",
             JobState.ATTENTION: "attention", JobState.EXHAUSTED: "exhausted"}


def signature(ws: str) -> tuple[Any, ...]:
    """What the control directories look like now: identity, times, link count of each."""
    out: list[Any] = []
    for rel in WATCHED:
        try:
            st = os.stat(os.path.join(ws, rel), follow_symlinks=False)
        except OSError:
            out.append(None)
            continue
        out.append((st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_nlink, st.st_size))
    return tuple(out)


def _settled(sig: tuple[Any, ...], now: float) -> bool:
    """No watched directory changed within the last RACY_SECONDS (same-tick changes stay visible)."""
    newest = max((entry[2] for entry in sig if entry is not None), default=0)
    return now - newest / 1e9 >= RACY_SECONDS


def _read(ws: str, prices: Any = (), usage_cache: dict[str, Any] | None = None,
          ) -> tuple[tuple[Any, ...] | None, dict[str, int], dict[str, Any]]:
    """The signature (taken first, so a change during the read shows next time), the counts, today's usage.

    ``usage_cache`` (kept per workspace) spares re-reading today's usage records while their folder is unchanged.
    """
    from cairn.worker.jobs.status import read_status  # server start: module docstring

    sig = signature(ws)
    counts = {k: int(v) for k, v in read_status(ws).items() if isinstance(v, int)}
    try:
        usage = today(ws, prices=prices, cache=usage_cache)
    except CairnError as exc:  # unreadable usage records never hide the journal counts
        usage = {"error": str(exc.code)}
    return (sig if _settled(sig, time.time()) else None), counts, usage


class Snapshots:
    def __init__(self, service: CairnService) -> None:
        self.service = service

    # ------------------------------------------------------------ snapshots

    def refresh(self, ws: str) -> asyncio.Task[None]:
        """Re-read journal counts in a thread; concurrent calls coalesce into one more read."""
        state = self.service.workspaces[ws]
        if state.refresh_task is not None and not state.refresh_task.done():
            state.refresh_again = True
            return state.refresh_task

        async def run() -> None:
            while True:
                # spacing: a busy workspace re-reads at most every REFRESH_SPACING seconds, so the
                # snapshot thread cannot keep the interpreter lock away from the event loop
                if state.refreshed_at is not None:
                    wait = state.refreshed_at + REFRESH_SPACING - time.monotonic()
                    if wait > 0:
                        await asyncio.sleep(wait)
                state.refresh_again = False
                before = state.seen
                try:
                    state.seen, state.journal, state.usage = await asyncio.to_thread(
                        _read, ws, state.settings.prices, state.usage_cache)
                    if before is not None and state.seen is not None and before[1:3] != state.seen[1:3]:
                        # decisions or proposals changed (this server's, or the CLI's, another editor's):
                        # open memory documents get fresh diagnostics, so no stale code action stays
                        asyncio.ensure_future(self.service.documents.republish(ws))
                    state.refreshed = self.service.clock.now()
                    state.refreshed_at = time.monotonic()
                except (CairnError, OSError) as exc:
                    code = exc.code if isinstance(exc, CairnError) else ErrorCode.IO_FAILED
                    self.service.client.log(LOG_WARNING, f"cairn: status of {ws} unreadable ({code})")
                if not state.refresh_again:
                    return

        state.refresh_task = asyncio.ensure_future(run())
        return state.refresh_task

    async def refresh_now(self, ws: str) -> None:
        """A refresh that starts after this call (so it sees everything done so far)."""
        task = self.refresh(ws)
        await task
        if self.service.workspaces[ws].refresh_again:
            await self.refresh(ws)

    async def first_snapshot(self, ws: str) -> None:
        await self.refresh_now(ws)
        state = self.service.workspaces.get(ws)
        journal = state.journal if state else {}
        if journal.get("pending", 0) or journal.get("retryWaiting", 0):
            self.service.submit(Notify(ws, ("process",)))

    def changed_since(self, ws: str) -> bool:
        """Whether proposals or decisions changed on disk since the last snapshot (a ``stat`` or two)."""
        state = self.service.workspaces.get(ws)
        if state is None or state.seen is None:
            return False
        return signature(ws)[1:3] != state.seen[1:3]

    async def _current(self, ws: str) -> None:
        """Re-read first if someone else changed the control directories since the snapshot."""
        state = self.service.workspaces[ws]
        if state.refreshed_at is not None and state.seen is not None and signature(ws) == state.seen:
            return
        reading = state.refresh_task is not None and not state.refresh_task.done()
        if state.refreshed_at is None:
            await self.refresh_now(ws)  # no snapshot yet: zero counts would be wrong, not just old
            return
        if reading or self._busy(ws):
            self.refresh(ws)  # a read under way, or our own jobs' ends refresh too: do not make the editor wait
            return
        await self.refresh_now(ws)

    def _busy(self, ws: str) -> bool:
        """This server has work queued or running in ``ws`` (a job, a turn to capture, a decision)."""
        svc = self.service
        if svc.workspaces[ws].foreground.locked():
            return True
        adapter = svc.adapter
        if adapter is None:
            return False
        return (any(s.workspace == ws for s in adapter.running.values())
                or any(j.workspace == ws and j.state in (JobState.IDLE, JobState.RUNNING)
                       for j in adapter.coordinator.store.jobs))

    # ------------------------------------------------------------ requests

    async def status(self, params: StatusParams) -> dict[str, Any]:
        """Integer counts (see docs/lsp.md for the merge)."""
        svc = self.service
        ws = svc.workspace(params.workspace)
        await self._current(ws)
        state = svc.workspaces[ws]
        jobs = {"pending": 0, "running": 0, "retryWaiting": 0, "attention": 0, "exhausted": 0}
        if svc.adapter is not None:
            for job in svc.adapter.coordinator.store.jobs:
                key = _JOB_KEYS.get(job.state) if job.workspace == ws else None
                if key:
                    jobs[key] += 1
        turns = svc.turns.waiting(ws)
        journal = state.journal
        out: dict[str, Any] = {
            "pending": journal.get("pending", 0) + turns,
            "running": jobs["running"],
            "retryWaiting": journal.get("retryWaiting", 0) + jobs["retryWaiting"],
            "attention": jobs["attention"],
            "exhausted": journal.get("exhausted", 0) + jobs["exhausted"],
            "digests": journal.get("digests", 0),
            "proposals": journal.get("proposals", 0),
        }
        assert tuple(out) == STATUS_KEYS
        out.update(workspace=ws, turnsWaiting=turns, journal=dict(journal), jobs=jobs,
                   refreshed=state.refreshed, draining=state.drain is not None, mode=state.settings.mode,
                   provider=state.settings.provider,
                   usage=dict(state.usage), watch=svc.watching.summary(ws),
                   unwiredAgents=journal.get("unwiredAgents", 0))
        return out

    def jobs(self) -> dict[str, Any]:
        svc = self.service
        snap = svc.need_adapter().coordinator.snapshot(svc.clock.now())
        for row in (*snap["jobs"], *snap["dismissed"]):
            row.pop("checkpoint", None)
        return snap

    async def cockpit(self, params: CockpitParams) -> list[dict[str, Any]]:
        from cairn.worker.memory.views import cockpit  # server start: module docstring

        ws = self.service.workspace(params.workspace)
        rows = list(await asyncio.to_thread(cockpit, ws, params.view, self.service.workspaces[ws].settings))
        if params.view == "overview":
            rows += self.overview_rows(ws)
        return rows

    def overview_rows(self, ws: str) -> list[dict[str, Any]]:
        """The overview's ``jobs`` rows (this workspace's jobs that need attention, are exhausted or wait to
        retry, with their error) and ``sessions`` rows (transcripts followed now, newest change first)."""
        svc = self.service
        out: list[dict[str, Any]] = []
        if svc.adapter is not None:
            snap = svc.adapter.coordinator.snapshot(svc.clock.now())
            for row in snap["jobs"]:
                if row["workspace"] == ws and row["state"] in (JobState.ATTENTION, JobState.EXHAUSTED,
                                                                JobState.RETRY_WAITING):
                    out.append({"section": "jobs", **{k: v for k, v in row.items() if k != "checkpoint"}})
        watcher = svc.watching.watcher
        for path, size, mtime_ns in (watcher.followed(ws) if watcher is not None else [])[:OVERVIEW_SESSIONS]:
            out.append({"section": "sessions", "path": path, "size": size, "modified": mtime_ns / 1e9})
        return out

    async def journal(self, params: JournalParams) -> list[dict[str, Any]]:
        """The public digests (what ``cairn journal --json`` lists), newest session first."""
        from cairn.worker.journal.views import digest_json, public_digests  # server start: module docstring

        ws = self.service.workspace(params.workspace)
        digests, _bad = await asyncio.to_thread(public_digests, ws)
        return [digest_json(d) for d in reversed(digests)]  # listed oldest session first

    async def check_edited(self, params: AcceptEditedParams) -> dict[str, Any]:
        from cairn.worker.memory.views import check_edited  # server start: module docstring

        ws = self.service.workspace(params.workspace)
        return dict(await asyncio.to_thread(check_edited, ws, params.id, params.text,
                                            self.service.workspaces[ws].settings))

    async def evidence(self, params: ProposalParams) -> dict[str, Any]:
        """``cairn/evidence``: see :mod:`server.lsp.features.evidence` (the answer is never logged)."""
        from cairn.server.lsp.features.evidence import evidence  # server start: module docstring

        ws = self.service.workspace(params.workspace)
        return await asyncio.to_thread(evidence, ws, params.id, self.service.workspaces[ws].settings)

    async def proposal(self, params: ProposalParams) -> dict[str, Any]:
        from cairn.worker.memory.views import proposal  # server start: module docstring

        ws = self.service.workspace(params.workspace)
        return dict(await asyncio.to_thread(proposal, ws, params.id, self.service.workspaces[ws].settings))
