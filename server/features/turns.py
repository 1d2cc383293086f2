"""Turns and sessions: the editor's notifications, capture payloads, idle sealing.

- ``cairn/turnCompleted`` queues a ``capture`` job; the turn's text stays in
  this process's memory (:attr:`Turns.payloads`) until that job has frozen
  it. The durable job store holds ids only, so a capture job found in the
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
from cairn.protocol.jobs import HELD_STATES, Job, JobState, JobStore
from cairn.protocol.lsp import IdleParams, SessionEventParams, Settings, TurnCompletedParams
from cairn.protocol.worker import WorkerStatus
from cairn.server.coordinator_events import Enqueue, Idle, Notify, StartWorker, TurnActive
from cairn.server.features.context import LOG_WARNING, SessionInfo
from cairn.server.runner import RunResult

if TYPE_CHECKING:
    from cairn.server.lsp_service import CairnService


@attrs.frozen
class TurnPayload:
    session_id: str
    turn: dict[str, Any]


class Turns:
    def __init__(self, service: CairnService) -> None:
        self.service = service
        self.payloads: dict[str, TurnPayload] = {}  # job id -> the turn it must capture
        self.reported: set[str] = set()  # exhausted captures already shown
        self._seal_timer: Any = None

    # ------------------------------------------------------------ notifications

    def turn_completed(self, params: TurnCompletedParams) -> str:
        """Queue a capture job; the turn text stays in memory only. Returns the job id."""
        svc = self.service
        ws = svc.workspace(params.workspace)
        turn = {"turn_id": params.turnId, "parent_turn_id": params.parentTurnId, "user": params.user,
                "assistant": params.assistant, "completed_at": params.completedAt}
        adapter = svc.need_adapter()
        svc.submit(TurnActive(ws, True))  # a capture is pending: drains wait for it
        args = {"session": params.sessionId, "turn": params.turnId}
        svc.submit(Enqueue(ws, "capture", args))
        job = adapter.coordinator.lookup(ws, "capture", args)
        if job is not None:
            self.payloads[job.id] = TurnPayload(params.sessionId, turn)
        svc.workspaces[ws].sessions[params.sessionId] = SessionInfo(svc.clock.now())
        self.arm_seal_timer()
        return job.id if job else ""

    def session_event(self, params: SessionEventParams) -> None:
        """Seal the session's capture at this boundary."""
        svc = self.service
        ws = svc.workspace(params.workspace)
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
        due = [ws for ws in svc.order if params.seconds >= svc.workspaces[ws].settings.idleMinutes * 60.0]
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
            return {"session_id": start.args.get("session", ""), "source": "lsp",
                    "turn": payload.turn if payload else {}}
        if start.kind == "seal":
            return {"session_id": start.args.get("session"), "trigger": start.args.get("trigger", "session-end")}
        if start.kind == "seal-idle":
            return {"quiet_seconds": float(start.args.get("quiet_seconds", settings.sealIdleMinutes * 60.0))}
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
        if start.kind in ("seal", "seal-idle") and result.result.get("sealed"):
            svc.submit(Notify(ws, ("process",)))
        exhausted = [c for c in result.result.get("exhausted") or [] if isinstance(c, str)]
        fresh = [c for c in exhausted if c not in self.reported]
        if fresh:
            self.reported.update(fresh)
            svc.client.show(LOG_WARNING, f"cairn: {len(fresh)} capture(s) used all their attempts "
                            f"({', '.join(fresh[:5])}); run cairn.retry or cairn.discard")

    def discarded(self, job: Job) -> None:
        """A capture job the user discarded: forget its turn."""
        self.payloads.pop(job.id, None)
        self.settled(job.workspace)

    def settled(self, ws: str) -> None:
        """No capture of ``ws`` is waiting any more: its turn is no longer active."""
        if self.service.adapter is not None and not self.waiting(ws):
            self.service.submit(TurnActive(ws, False))

    def waiting(self, ws: str) -> int:
        """Completed turns of ``ws`` not yet captured."""
        adapter = self.service.adapter
        if adapter is None:
            return 0
        return sum(1 for j in adapter.coordinator.store.jobs
                   if j.workspace == ws and j.kind == "capture" and j.state not in HELD_STATES
                   and j.state is not JobState.DISMISSED)
