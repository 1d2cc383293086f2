"""Turns and sessions: the editor's notifications, capture payloads, idle sealing.

- ``cairn/turnCompleted`` joins the session's waiting ``capture`` job, or
  queues one: a job takes every turn of its session that arrived before it
  started (a batch, in arrival order), so a burst of notifications costs a
  few dictionary steps each on the event loop and one job per batch, not
  one coordinator step and one worker per turn. The turns' text stays in
  this process's memory (:attr:`Turns.payloads`) until that job has frozen
  them. Per session, batches run in order (one worker per workspace, jobs
  in queue order; a turn never joins a running job). The durable job store holds ids only, so a capture job found in the
  store after a restart has lost its turn and is dropped
  (:meth:`Turns.drop_lost_captures`, ``E_CAPTURE_STATE`` in the log).
- While a turn waits for its capture the workspace counts as having an
  active turn (``TurnActive``): an explicit drain waits for it.
- ``cairn/sessionEvent`` queues a ``seal``; a successful seal offers digest
  processing.
- Idle sealing: after ``sealIdleMinutes`` without a completed turn in an open
  session, ``seal-idle`` is queued once per quiet period (one clock timer).
- ``cairn/idle`` offers one maintenance opportunity per idle period.
- Captures a processing pass reports exhausted are shown once per server
  session (:attr:`Turns.reported`), until retried or discarded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs
from cairn.protocol import codec
from cairn.protocol.errors import ErrorCode
from cairn.protocol.import_results import SealArgs, SealIdleArgs, SealIdleResult, SealResult
from cairn.protocol.jobs import HELD_STATES, Job, JobState, JobStore
from cairn.protocol.lsp import IdleParams, SessionEventParams, TurnCompletedParams
from cairn.protocol.results import ProcessResult
from cairn.protocol.settings import Settings
from cairn.protocol.worker import WorkerStatus
from cairn.server.lsp.features.context import LOG_WARNING, SessionInfo, finished
from cairn.server.scheduler.events import Enqueue, Idle, Notify, StartWorker, TurnActive
from cairn.server.scheduler.runner import RunResult

if TYPE_CHECKING:
    from cairn.server.lsp.service import CairnService


@attrs.define
class TurnPayload:
    """The turns one capture job will freeze (appended to until it starts)."""

    session_id: str
    turns: list[dict[str, Any]]


class Turns:
    def __init__(self, service: CairnService) -> None:
        self.service = service
        self.payloads: dict[str, TurnPayload] = {}  # job id -> the turn it must capture
        self.reported: set[str] = set()  # exhausted captures already shown
        self._open: dict[tuple[str, str], str] = {}  # (workspace, session) -> capture job still taking turns
        self._active: set[str] = set()  # workspaces told TurnActive(True) and not yet settled
        self._seal_timer: Any = None

    # ------------------------------------------------------------ notifications

    def turn_completed(self, params: TurnCompletedParams) -> str:
        """Add the turn to its session's waiting capture job, or queue one. Returns the job id.

        The turn text stays in memory only. Joining a waiting job costs no
        coordinator step: only the first turn of a batch does.
        """
        svc = self.service
        ws = svc.workspace(params.workspace)
        turn = {"turn_id": params.turnId, "parent_turn_id": params.parentTurnId, "user": params.user,
                "assistant": params.assistant, "completed_at": params.completedAt}
        adapter = svc.need_adapter()
        job_id = self._open.get((ws, params.sessionId))
        job = adapter.coordinator.job(job_id) if job_id else None
        if job is not None and job.state in (JobState.IDLE, JobState.RETRY_WAITING) and job_id in self.payloads:
            self.payloads[job.id].turns.append(turn)
        else:
            if ws not in self._active:
                self._active.add(ws)
                svc.submit(TurnActive(ws, True))  # a capture is pending: drains wait for it
            args = {"session": params.sessionId, "turn": params.turnId}
            svc.submit(Enqueue(ws, "capture", args))
            job = adapter.coordinator.lookup(ws, "capture", args)
            if job is not None:
                if job.id in self.payloads:  # the same turn sent again: coalesced into its waiting job
                    self.payloads[job.id].turns.append(turn)
                else:
                    self.payloads[job.id] = TurnPayload(params.sessionId, [turn])
                self._open[(ws, params.sessionId)] = job.id
        info = svc.workspaces[ws].sessions.get(params.sessionId)
        if info is None or info.idle_sealed:
            svc.workspaces[ws].sessions[params.sessionId] = SessionInfo(svc.clock.now())
            self.arm_seal_timer()
        else:
            info.last_turn = svc.clock.now()  # the armed timer fires no later than due; it re-arms then
            if self._seal_timer is None:
                self.arm_seal_timer()
        return job.id if job else ""

    def session_event(self, params: SessionEventParams) -> None:
        """Seal the session's capture at this boundary."""
        svc = self.service
        ws = svc.workspace(params.workspace)
        self._open.pop((ws, params.sessionId), None)  # turns after the boundary go to a batch after the seal
        svc.submit(Enqueue(ws, "seal", {"session": params.sessionId, "trigger": params.kind}))
        sessions = svc.workspaces[ws].sessions
        if params.kind == "session-end":
            sessions.pop(params.sessionId, None)
        elif (info := sessions.get(params.sessionId)) is not None:
            info.idle_sealed = True  # sealed now; a new turn opens a new capture
        self.arm_seal_timer()

    def idle(self, params: IdleParams) -> bool:
        """One maintenance opportunity once the editor has been idle long enough."""
        svc = self.service
        due = [ws for ws in svc.order if params.seconds >= svc.workspaces[ws].settings.idleMinutes * 60.0
               and svc.workspaces[ws].foreign is None]
        if not due:
            return False
        svc.submit(Idle(params.seconds, tuple(due)))
        return True

    # ------------------------------------------------------------ idle sealing

    def arm_seal_timer(self) -> None:
        svc = self.service
        self.close()
        due = [info.last_turn + svc.workspaces[ws].settings.sealIdleMinutes * 60.0
               for ws in svc.order for info in svc.workspaces[ws].sessions.values() if not info.idle_sealed]
        if due:
            self._seal_timer = svc.clock.call_at(min(due), self._seal_idle)

    def close(self) -> None:
        if self._seal_timer is not None:
            self._seal_timer.cancel()
            self._seal_timer = None

    def _seal_idle(self) -> None:
        """Quiet long enough after a session's last completed turn: enqueue ``seal-idle`` for its workspace."""
        svc = self.service
        self._seal_timer = None
        now = svc.clock.now()
        for ws in svc.order:
            state = svc.workspaces[ws]
            quiet = state.settings.sealIdleMinutes * 60.0
            ripe = [info for info in state.sessions.values() if not info.idle_sealed and now - info.last_turn >= quiet]
            if ripe:
                for info in ripe:
                    info.idle_sealed = True
                svc.submit(Enqueue(ws, "seal-idle", {"quiet_seconds": f"{quiet:g}"}))
        self.arm_seal_timer()

    # ------------------------------------------------------------ jobs

    def drop_lost_captures(self, store: JobStore) -> JobStore:
        """Capture jobs from a stored job store: their turns lived in a dead process."""
        for job in store.jobs:
            if job.kind == "capture":
                self.service.client.log(LOG_WARNING, f"cairn: {job.id} capture lost its turn on restart "
                                                     f"({ErrorCode.CAPTURE_STATE})")
        return codec.evolve(store, jobs=tuple(j for j in store.jobs if j.kind != "capture"))

    def worker_args(self, start: StartWorker, settings: Settings) -> dict[str, Any] | None:
        """The worker args of a turn or session job; None for other kinds."""
        if start.kind == "capture":
            payload = self.payloads.get(start.job_id)
            key = (start.workspace, start.args.get("session", ""))
            if self._open.get(key) == start.job_id:  # started: later turns make the next batch
                del self._open[key]
            return {"session_id": start.args.get("session", ""), "source": "lsp",
                    "turns": list(payload.turns) if payload else []}
        if start.kind == "seal":
            return codec.to_body(SealArgs(session_id=start.args.get("session"),
                                          trigger=start.args.get("trigger", "session-end")))
        if start.kind == "seal-idle":
            quiet = float(start.args.get("quiet_seconds", settings.sealIdleMinutes * 60.0))
            paths = tuple(p for p in start.args.get("paths", "").split("\n") if p)  # watched files, to read again
            return codec.to_body(SealIdleArgs(quiet_seconds=quiet, paths=paths))
        return None

    def worker_finished(self, start: StartWorker, result: RunResult) -> None:
        svc = self.service
        ws = start.workspace
        if start.kind == "capture":
            if result.status is WorkerStatus.OK:
                self.payloads.pop(start.job_id, None)
            self.settled(ws)
        if result.status is not WorkerStatus.OK:
            return
        sealed = (finished(svc.client, start, result, SealResult) if start.kind == "seal"
                  else finished(svc.client, start, result, SealIdleResult) if start.kind == "seal-idle" else None)
        if sealed is not None and sealed.sealed:
            svc.submit(Notify(ws, ("process",)))
        counts = finished(svc.client, start, result, ProcessResult) if start.kind == "process" else None
        if counts is None:
            return
        fresh = [c for c in counts.exhausted if c not in self.reported]
        if fresh:
            self.reported.update(fresh)
            svc.client.show(LOG_WARNING, f"cairn: {len(fresh)} capture(s) used all their attempts "
                            f"({', '.join(fresh[:5])}); run cairn.retry or cairn.discard")

    def discarded(self, job: Job) -> None:
        """A capture job the user discarded: forget its turns."""
        self.payloads.pop(job.id, None)
        self._open = {k: v for k, v in self._open.items() if v != job.id}
        self.settled(job.workspace)

    def settled(self, ws: str) -> None:
        """No capture of ``ws`` is waiting any more: its turn is no longer active."""
        if self.service.adapter is not None and not self.waiting(ws):
            self._active.discard(ws)
            self.service.submit(TurnActive(ws, False))

    def waiting(self, ws: str) -> int:
        """Completed turns of ``ws`` not yet captured."""
        adapter = self.service.adapter
        if adapter is None:
            return 0
        return sum(1 for j in adapter.coordinator.store.jobs
                   if j.workspace == ws and j.kind == "capture" and j.state not in HELD_STATES
                   and j.state is not JobState.DISMISSED)
