"""The maintenance coordinator: a pure, sans-I/O scheduler.

``Coordinator.handle(event, now) -> list[Action]`` is the whole interface to
the world. There is no clock, thread, timer or I/O inside; all state is plain
data (the durable part is a :class:`protocol.jobs.JobStore`). The adapter in
``server/`` owns timers and worker processes, feeds events in and carries
actions out (see :mod:`server.scheduler.events` for its contract). Keeping
the policy pure makes every rule below testable with a fake clock.

Why one module of ~600 lines: the rules below form one state machine over
one store; split across files, the invariants the property tests check
(tests/coordinator/test_properties.py) would no longer read in one place.

Rules, and why:

1. One worker per workspace, at most ``max_workers`` (default 2) overall:
   workers in one workspace would contend for the same claims, and
   maintenance must never crowd out the editor.
2. Runnable jobs keep queue order (``seq``) within a workspace; across
   workspaces the oldest head goes first, so no workspace starves.
3. Only the coordinator counts failures and chooses what follows. A failure
   makes the job ``retry-waiting`` with an eligibility deadline (30 s, then
   120 s; never under 30 s); the third recorded failure makes it
   ``exhausted``; a failure retrying cannot fix makes it ``attention``.
   Both wait for an explicit Retry, Dismiss or Discard and are reported once
   per server session. ``busy`` (someone else holds the claim) waits 30 s
   without consuming an attempt.
4. A delayed retry in workspace W holds back later W work (no overtaking:
   later work may depend on it) but never another workspace's.
5. An attention/exhausted job is not runnable and blocks nothing.
6. Notification-driven jobs coalesce: they do not start within
   ``notify_window`` (1 s) after the workspace's last pass completed, nor
   while a pass is running, so a burst of notifications costs one pass per
   window. Any start in W takes all of W's held notifications with it (one
   burst, one pass). A saved retry deadline is never pushed back by the
   window; when it falls earlier, its pass starts then and releases the held
   work (it preempts the window).
7. A tick while a job runs never starts it again; every completion is
   itself the next opportunity (no timer needed). ``Tick(at=None)`` uses
   ``now``, never an old saved time.
8. No debt, no activity: no starts and no timer. The coordinator never polls;
   its only timer is the earliest saved deadline, window end or worker deadline.
9. Restart: running jobs become idle (an interruption is not an attempt);
   attempts, deadlines, attention, exhaustion and history are kept.
10. Dismissed history: never runs, never counts as pending or attention; at
    most ``history_max`` (500) records, none older than 90 days (pruned on
    every step, which includes startup, ticks and dismissal).
11. The diagnostic report names ids, workspaces, kinds, states, times,
    attempts and error codes; of args and checkpoints only their keys.
12. ``more=True`` (a batch limit was reached) requeues the job at the back of
    its workspace's queue with a fresh attempt budget. Nothing else feeds
    cleanup: automatic cleanup is offered at most hourly per workspace.
13. A ``drain`` job waits while a turn is active in its workspace; other
    kinds may run meanwhile.
14. Shutdown admits and starts nothing. Running workers get CancelWorker at
    their deadline (a failed attempt, ``E_WORKER_TIMEOUT``) or at the
    shutdown grace (an interruption: the job goes back to idle).

Dedupe: enqueueing a job whose key ``(workspace, kind, args)`` equals a
queued, retry-waiting, attention or exhausted job is a no-op. A running job
does not absorb it (the change may have come after the worker's snapshot),
and a dismissed job is never revived by it: a fresh job is queued instead.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from cairn.protocol import codec
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.jobs import HELD_STATES, PENDING_STATES, Job, JobState, JobStore
from cairn.protocol.worker import WorkerStatus
from cairn.server.scheduler.events import (
    Action,
    CancelReason,
    CancelWorker,
    ClearHistory,
    CoordinatorConfig,
    Discard,
    Dismiss,
    Drain,
    Enqueue,
    Event,
    Idle,
    Notify,
    Persist,
    Report,
    Restart,
    Retry,
    SetTimer,
    Shutdown,
    StartWorker,
    Tick,
    TurnActive,
    WorkerFinished,
)

DRAIN = "drain"
CLEANUP = "cleanup"
_KNOWN_CODES = frozenset(str(code) for code in ErrorCode)


class Coordinator:
    """The scheduler. Construct, optionally with a stored job store, then feed events.

    Loading a store here is the same as handling ``Restart(store)`` first;
    reports and starts it implies come out of the first ``handle`` call.
    """

    def __init__(self, config: CoordinatorConfig | None = None, store: JobStore | None = None) -> None:
        self.config = config or CoordinatorConfig()
        # durable
        self._jobs: dict[str, Job] = {}
        self._next_seq = 1
        self._cleanup_offered: dict[str, float] = {}
        # runtime: plain data, rebuilt empty on every server session
        self._deadlines: dict[str, float] = {}  # running job id -> worker deadline
        self._cancelling: dict[str, CancelReason] = {}  # CancelWorker sent, exit not yet reported
        self._held: set[str] = set()  # notification-driven jobs waiting for the window
        self._last_pass_end: dict[str, float] = {}  # workspace -> last completion
        self._turn_active: set[str] = set()
        self._workspaces: set[str] = set()
        self._idle_armed = True
        self._reported: set[str] = set()
        self._shutdown = False
        self._shutdown_cancel_at: float | None = None
        self._timer: float | None = None
        self._dirty = False
        if store is not None:
            self._load(store)

    # ------------------------------------------------------------ public API

    def handle(self, event: Event, now: float) -> list[Action]:
        """Apply one event at time ``now``; return the actions, in order.

        Order: CancelWorker, Persist (before starts, so a started job is
        durable first), StartWorker, Report, SetTimer. An invalid event
        raises :class:`CairnError` and changes nothing.
        """
        t = float(now)
        if isinstance(event, Tick) and event.at is not None:
            t = float(event.at)
        self._dispatch(event, t)
        cancels = self._check_deadlines(t)
        self._prune_history(t)
        starts = self._pump(t)
        reports = self._reports()
        actions: list[Action] = [*cancels]
        if self._dirty:
            actions.append(Persist(self.store))
            self._dirty = False
        actions.extend(starts)
        actions.extend(reports)
        timer = self._compute_timer(t)
        if timer != self._timer:
            self._timer = timer
            actions.append(SetTimer(timer))
        return actions

    @property
    def store(self) -> JobStore:
        """The durable job store as one serialisable record."""
        return JobStore(
            jobs=tuple(sorted(self._jobs.values(), key=lambda j: j.seq)),
            next_seq=self._next_seq,
            cleanup_offered=dict(sorted(self._cleanup_offered.items())),
        )

    def next_wakeup(self) -> float | None:
        """The timer last asked for (``None``: none)."""
        return self._timer

    def job(self, job_id: str) -> Job | None:
        return self._jobs.get(job_id)

    def lookup(self, workspace: str, kind: str, args: dict[str, str] | None = None) -> Job | None:
        """The live (not dismissed) job with this key, running ones first."""
        key = (workspace, kind, tuple(sorted((args or {}).items())))
        live = [j for j in self._jobs.values() if j.key == key and j.state is not JobState.DISMISSED]
        live.sort(key=lambda j: (j.state is not JobState.RUNNING, j.seq))
        return live[0] if live else None

    def snapshot(self, now: float) -> dict[str, Any]:
        """The ``cairn/jobs`` view: counts, active rows and dismissed history."""
        active = [j for j in self._ordered() if j.state is not JobState.DISMISSED]
        dismissed = sorted(
            (j for j in self._jobs.values() if j.state is JobState.DISMISSED),
            key=lambda j: (-j.updated, -j.seq),
        )
        return {
            "counts": self._counts(),
            "shuttingDown": self._shutdown,
            "jobs": [self._row(j, now, with_args=True) for j in active],
            "dismissed": [self._row(j, now, with_args=True) for j in dismissed],
        }

    def diagnostic_report(self, now: float) -> dict[str, Any]:
        """A shareable report: ids, workspaces, kinds, times, attempts, codes, states.

        Args and checkpoints appear only as their sorted keys: their values
        may identify content, and nothing here may carry content.
        """
        return {
            "report": "cairn-jobs-diagnostic",
            "v": 1,
            "generated": float(now),
            "shuttingDown": self._shutdown,
            "counts": self._counts(),
            "config": {
                "maxWorkers": self.config.max_workers,
                "maxAttempts": self.config.max_attempts,
                "retryDelays": list(self.config.retry_delays),
            },
            "cleanupOffered": dict(sorted(self._cleanup_offered.items())),
            "jobs": [self._row(j, now, with_args=False) for j in self._ordered()],
        }

    # ------------------------------------------------------------ events

    def _dispatch(self, event: Event, t: float) -> None:
        match event:
            case Notify(workspace=ws, kinds=kinds):
                self._check_name(ws, "workspace")
                for kind in kinds:
                    self._check_name(kind, "kind")
                self._idle_armed = True
                if self._shutdown:
                    return
                hold = self._in_window(ws, t)
                for kind in kinds:
                    job = self._enqueue(ws, kind, {}, t, automatic=True)
                    if job is not None and hold:
                        self._held.add(job.id)
            case Enqueue(workspace=ws, kind=kind, args=args):
                self._check_name(ws, "workspace")
                self._check_name(kind, "kind")
                if not isinstance(args, dict) or not all(
                    isinstance(k, str) and isinstance(v, str) for k, v in args.items()
                ):
                    raise CairnError(ErrorCode.JOB_INVALID, "job args must map strings to strings")
                self._idle_armed = True
                if not self._shutdown:
                    self._enqueue(ws, kind, dict(args), t, automatic=False)
            case Drain(workspace=ws):
                self._check_name(ws, "workspace")
                self._idle_armed = True
                if not self._shutdown:
                    self._enqueue(ws, DRAIN, {}, t, automatic=False)
            case Idle(workspaces=wss):
                for ws in wss:
                    self._check_name(ws, "workspace")
                if self._shutdown or not self._idle_armed:
                    return
                self._idle_armed = False
                for ws in sorted(wss or self._workspaces):
                    for kind in (*self.config.idle_kinds, CLEANUP):
                        self._enqueue(ws, kind, {}, t, automatic=True)
            case TurnActive(workspace=ws, active=active):
                self._check_name(ws, "workspace")
                self._workspaces.add(ws)
                if active:
                    self._turn_active.add(ws)
                    self._idle_armed = True
                else:
                    self._turn_active.discard(ws)
            case Tick():
                pass  # deadlines, pruning and starts happen for every event
            case WorkerFinished():
                self._finished(event, t)
            case Retry(job_id=job_id):
                self._retry(self._existing(job_id), t)
            case Dismiss(job_id=job_id):
                job = self._existing(job_id, not_running=True)
                if job.state is not JobState.DISMISSED:
                    self._put(codec.evolve(job, state=JobState.DISMISSED, not_before=None, updated=t))
                    self._held.discard(job_id)
            case Discard(job_id=job_id):
                self._existing(job_id, not_running=True)
                del self._jobs[job_id]
                self._held.discard(job_id)
                self._dirty = True
            case ClearHistory():
                for job in [j for j in self._jobs.values() if j.state is JobState.DISMISSED]:
                    del self._jobs[job.id]
                    self._dirty = True
            case Restart(store=store):
                self._load(store)
            case Shutdown(grace=grace):
                if grace is not None and (isinstance(grace, bool) or not isinstance(grace, (int, float)) or grace < 0):
                    raise CairnError(ErrorCode.USAGE, "shutdown grace must be a number >= 0")
                self._shutdown = True
                if grace is not None:
                    at = t + float(grace)
                    if self._shutdown_cancel_at is None or at < self._shutdown_cancel_at:
                        self._shutdown_cancel_at = at
            case _:
                raise CairnError(ErrorCode.USAGE, f"coordinator: unknown event {type(event).__name__}")

    def _enqueue(self, ws: str, kind: str, args: dict[str, str], t: float, *, automatic: bool) -> Job | None:
        """Queue a job unless an equal one is waiting; returns the new job, if any."""
        self._workspaces.add(ws)
        key = (ws, kind, tuple(sorted(args.items())))
        for job in self._jobs.values():
            if job.key == key and (job.state in PENDING_STATES or job.state in HELD_STATES):
                return None  # coalesced into the waiting job
        if automatic and kind == CLEANUP:
            last = self._cleanup_offered.get(ws)
            if last is not None and t - last < self.config.cleanup_interval:
                return None  # hourly throttle; explicit cleanup bypasses it
            self._cleanup_offered[ws] = t
        seq = self._take_seq()
        job = Job(
            id=f"job-{seq}", workspace=ws, kind=kind, args=args, seq=seq,
            state=JobState.IDLE, created=t, updated=t,
        )
        self._put(job)
        return job

    def _finished(self, event: WorkerFinished, t: float) -> None:
        job = self._jobs.get(event.job_id)
        if job is None or job.state is not JobState.RUNNING:
            raise CairnError(ErrorCode.WORKER_UNKNOWN_JOB, f"no running job {event.job_id}"[:120])
        self._deadlines.pop(job.id, None)
        reason = self._cancelling.pop(job.id, None)
        self._last_pass_end[job.workspace] = t
        if event.checkpoint:
            job = codec.evolve(job, checkpoint={**job.checkpoint, **event.checkpoint})
        status = event.status
        if status is WorkerStatus.OK:
            if event.more:  # bounded progress: the next batch goes to the back of the queue
                seq = self._take_seq()
                self._put(codec.evolve(
                    job, state=JobState.IDLE, seq=seq, attempts=0, not_before=None, last_error=None, updated=t,
                ))
            else:
                del self._jobs[job.id]  # done: completed jobs leave the store
                self._dirty = True
        elif reason is CancelReason.SHUTDOWN:
            self._put(codec.evolve(job, state=JobState.IDLE, updated=t))  # interruption: no attempt
        elif reason is CancelReason.DEADLINE:
            self._fail(job, str(ErrorCode.WORKER_TIMEOUT), t)
        elif status is WorkerStatus.BUSY:
            code = self._code(event.error_code) or str(ErrorCode.CLAIM_BUSY)
            self._put(codec.evolve(
                job, state=JobState.RETRY_WAITING, not_before=t + self.config.busy_delay,
                last_error=code, updated=t,
            ))
        else:
            fallback = ErrorCode.CANCELLED if status is WorkerStatus.CANCELLED else ErrorCode.WORKER_BAD_RESPONSE
            self._fail(job, self._code(event.error_code) or str(fallback), t)

    def _fail(self, job: Job, code: str, t: float) -> None:
        """Record one failure and choose what follows (rule 3)."""
        attempts = job.attempts + 1
        if code in self.config.attention_codes:
            state, not_before = JobState.ATTENTION, None
        elif attempts >= self.config.max_attempts:
            state, not_before = JobState.EXHAUSTED, None
        else:
            state, not_before = JobState.RETRY_WAITING, t + self.config.retry_delay(attempts)
        self._put(codec.evolve(
            job, state=state, attempts=attempts, not_before=not_before, last_error=code, updated=t,
        ))

    def _retry(self, job: Job, t: float) -> None:
        """Explicit retry: a fresh attempt budget, eligible now; checkpoints are kept."""
        if job.state is JobState.RUNNING:
            raise CairnError(ErrorCode.JOB_STATE, f"job {job.id} is running")
        if job.state is JobState.IDLE:
            return
        seq = job.seq if job.state is JobState.RETRY_WAITING else self._take_seq()
        self._reported.discard(job.id)  # a new episode may be reported again
        self._put(codec.evolve(job, state=JobState.IDLE, seq=seq, attempts=0, not_before=None, updated=t))

    # ------------------------------------------------------------ scheduling

    def _pump(self, t: float) -> list[StartWorker]:
        """Start every job that is eligible now, within the caps (rules 1, 2, 4, 5, 13)."""
        if self._shutdown:
            return []
        busy = {j.workspace for j in self._jobs.values() if j.state is JobState.RUNNING}
        slots = self.config.max_workers - sum(1 for j in self._jobs.values() if j.state is JobState.RUNNING)
        if slots <= 0:
            return []
        heads: list[Job] = []
        for ws, queue in self._queues().items():
            if ws not in busy:
                head, _ = self._head(ws, queue, t)
                if head is not None:
                    heads.append(head)
        heads.sort(key=lambda j: j.seq)
        starts = []
        for job in heads[:slots]:
            # a pass in W takes W's held notifications with it: a saved deadline that
            # starts before the window ends preempts it, and one burst is one pass
            self._held -= {j.id for j in self._jobs.values() if j.workspace == job.workspace}
            deadline = t + self.config.budget(job.kind)
            self._deadlines[job.id] = deadline
            self._put(codec.evolve(job, state=JobState.RUNNING, not_before=None, updated=t))
            starts.append(StartWorker(job.id, job.workspace, job.kind, dict(job.args), deadline))
        return starts

    def _head(self, ws: str, queue: list[Job], t: float) -> tuple[Job | None, float | None]:
        """The job W may start now, else the time W's blocking job becomes eligible."""
        blocked_until: float | None = None
        for job in queue:
            if job.state is JobState.RETRY_WAITING and job.not_before is not None and job.not_before > t:
                # rule 4: no overtaking a delayed retry, except by independent kinds
                if blocked_until is None:
                    blocked_until = job.not_before
                continue
            if blocked_until is not None and job.kind not in self.config.independent_kinds:
                continue
            if job.id in self._held:
                until = self._hold_until(ws)
                if t < until:
                    return None, until
            if job.kind == DRAIN and ws in self._turn_active:
                continue  # rule 13: waits for the turn, blocks nothing
            return job, None
        return None, blocked_until

    def _queues(self) -> dict[str, list[Job]]:
        queues: dict[str, list[Job]] = {}
        for job in self._ordered():
            if job.state in PENDING_STATES:
                queues.setdefault(job.workspace, []).append(job)
        return queues

    def _in_window(self, ws: str, t: float) -> bool:
        running = any(j.workspace == ws and j.state is JobState.RUNNING for j in self._jobs.values())
        return running or t < self._hold_until(ws)

    def _hold_until(self, ws: str) -> float:
        last = self._last_pass_end.get(ws)
        return -math.inf if last is None else last + self.config.notify_window

    def _check_deadlines(self, t: float) -> list[CancelWorker]:
        cancels = []
        for job_id, deadline in sorted(self._deadlines.items()):
            if job_id in self._cancelling:
                continue
            if deadline <= t:
                reason = CancelReason.DEADLINE
            elif self._shutdown_cancel_at is not None and self._shutdown_cancel_at <= t:
                reason = CancelReason.SHUTDOWN
            else:
                continue
            self._cancelling[job_id] = reason
            cancels.append(CancelWorker(job_id, reason))
        return cancels

    def _compute_timer(self, t: float) -> float | None:
        """The single earliest future moment something could change (rule 8: else None)."""
        times: list[float] = []
        for job_id, deadline in self._deadlines.items():
            if job_id not in self._cancelling:
                times.append(deadline)
                if self._shutdown_cancel_at is not None:
                    times.append(self._shutdown_cancel_at)
        if not self._shutdown:
            busy = {j.workspace for j in self._jobs.values() if j.state is JobState.RUNNING}
            for ws, queue in self._queues().items():
                if ws not in busy:
                    _, until = self._head(ws, queue, t)
                    if until is not None:
                        times.append(until)
        future = [x for x in times if x > t]
        return min(future) if future else None

    # ------------------------------------------------------------ history, restart, reports

    def _prune_history(self, t: float) -> None:
        """Rule 10: at most history_max dismissed records, none older than history_max_age."""
        dismissed = sorted(
            (j for j in self._jobs.values() if j.state is JobState.DISMISSED),
            key=lambda j: (j.updated, j.seq),
            reverse=True,
        )
        cutoff = t - self.config.history_max_age
        for index, job in enumerate(dismissed):
            if index >= self.config.history_max or job.updated < cutoff:
                del self._jobs[job.id]
                self._dirty = True

    def _load(self, store: JobStore) -> None:
        """Rule 9: normalise a durable store for a new server session."""
        if not isinstance(store, JobStore):
            raise CairnError(ErrorCode.USAGE, "restart needs a JobStore")
        ids = [j.id for j in store.jobs]
        if len(set(ids)) != len(ids):
            raise CairnError(ErrorCode.RECORD_INVALID_FIELD, "job store: duplicate job ids")
        jobs: dict[str, Job] = {}
        changed = False
        for job in store.jobs:
            fixed = job
            if job.state is JobState.DONE:
                changed = True
                continue
            if job.state is JobState.RUNNING:
                fixed = codec.evolve(job, state=JobState.IDLE, not_before=None)  # not an attempt
            elif job.state is JobState.RETRY_WAITING and job.not_before is None:
                fixed = codec.evolve(job, state=JobState.IDLE)
            elif job.state is not JobState.RETRY_WAITING and job.not_before is not None:
                fixed = codec.evolve(job, not_before=None)
            changed = changed or fixed != job
            jobs[job.id] = fixed
        self._jobs = jobs
        self._next_seq = max([store.next_seq, *(j.seq + 1 for j in jobs.values())])
        changed = changed or self._next_seq != store.next_seq
        self._cleanup_offered = dict(store.cleanup_offered)
        self._deadlines.clear()
        self._cancelling.clear()
        self._held.clear()
        self._last_pass_end.clear()
        self._turn_active.clear()
        self._reported.clear()
        self._workspaces = {j.workspace for j in jobs.values()} | set(store.cleanup_offered)
        self._idle_armed = True
        self._shutdown = False
        self._shutdown_cancel_at = None
        self._dirty = self._dirty or changed

    def _reports(self) -> list[Report]:
        """Attention and exhaustion, each reported once per server session per job."""
        out = []
        for job in self._ordered():
            if job.state in HELD_STATES and job.id not in self._reported:
                self._reported.add(job.id)
                out.append(Report(str(job.state), job.id, job.last_error))
        return out

    # ------------------------------------------------------------ helpers

    def _counts(self) -> dict[str, int]:
        counts = {"pending": 0, "running": 0, "retryWaiting": 0, "attention": 0, "exhausted": 0, "dismissed": 0}
        names = {
            JobState.IDLE: "pending", JobState.RUNNING: "running", JobState.RETRY_WAITING: "retryWaiting",
            JobState.ATTENTION: "attention", JobState.EXHAUSTED: "exhausted", JobState.DISMISSED: "dismissed",
        }
        for job in self._jobs.values():
            if job.state in names:
                counts[names[job.state]] += 1
        return counts

    def _row(self, job: Job, now: float, *, with_args: bool) -> dict[str, Any]:
        row: dict[str, Any] = {
            "id": job.id,
            "workspace": job.workspace,
            "kind": job.kind,
            "state": str(job.state),
            "attempts": job.attempts,
            "notBefore": job.not_before,
            "lastError": job.last_error,
            "created": job.created,
            "updated": job.updated,
            "waiting": self._waiting(job, now),
        }
        if with_args:
            row["args"] = dict(job.args)
            row["checkpoint"] = dict(job.checkpoint)
        else:
            row["argKeys"] = sorted(job.args)
            row["checkpointKeys"] = sorted(job.checkpoint)
        return row

    def _waiting(self, job: Job, now: float) -> str | None:
        """Why a pending job is not running (for display); ``None`` if it is not waiting."""
        if job.state not in PENDING_STATES:
            return None
        if self._shutdown:
            return "shutdown"
        if job.state is JobState.RETRY_WAITING and job.not_before is not None and job.not_before > now:
            return "retry-delay"
        if job.id in self._held and now < self._hold_until(job.workspace):
            return "coalescing"
        if job.kind == DRAIN and job.workspace in self._turn_active:
            return "turn-active"
        return "queued"

    def _ordered(self) -> Iterable[Job]:
        return sorted(self._jobs.values(), key=lambda j: j.seq)

    def _existing(self, job_id: str, *, not_running: bool = False) -> Job:
        job = self._jobs.get(job_id) if isinstance(job_id, str) else None
        if job is None:
            raise CairnError(ErrorCode.NOT_FOUND, f"no job {job_id!r}"[:120])
        if not_running and job.state is JobState.RUNNING:
            raise CairnError(ErrorCode.JOB_STATE, f"job {job_id} is running")
        return job

    def _put(self, job: Job) -> None:
        self._jobs[job.id] = job
        self._dirty = True

    def _take_seq(self) -> int:
        seq = self._next_seq
        self._next_seq += 1
        return seq

    @staticmethod
    def _check_name(value: object, what: str) -> None:
        if not isinstance(value, str) or not value:
            raise CairnError(ErrorCode.JOB_INVALID, f"job {what} must be a non-empty string")

    @staticmethod
    def _code(code: str | None) -> str | None:
        """Keep only fixed error codes: free text never enters the store or reports."""
        if code is None:
            return None
        return code if code in _KNOWN_CODES else str(ErrorCode.WORKER_BAD_RESPONSE)
