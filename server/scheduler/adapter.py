"""The asyncio adapter around the pure coordinator.

The coordinator (:mod:`server.scheduler.coordinator`) decides; this module does. It
owns the clock, the single coordinator timer, the worker processes and the
durable job store, and feeds every outcome back as an event:

- ``SetTimer(at)`` → one timer on the clock (replacing any earlier one) that
  sends ``Tick()`` when it fires.
- ``StartWorker`` → a :class:`server.scheduler.runner.WorkerProcess`; exactly one
  ``WorkerFinished`` is reported when it has exited (also after a cancel).
- ``CancelWorker`` → stop that worker (terminate, then kill).
- ``Persist(store)`` → handed to ``persist`` (by default
  :meth:`server.scheduler.jobstore.JobStoreFiles.save`, which owns the files), before
  any worker that the same step started is spawned (the coordinator orders
  Persist before StartWorker so a started job is durable first).
- ``Report`` → handed to the listener (the LSP layer shows it once).

Actions are carried out strictly in order by one consumer task; ``submit``
itself is synchronous and cheap (it never touches the disk), so LSP handlers
can call it on the event loop.

Time: :class:`Clock` gives ``now()`` (wall-clock seconds, the unit the job
store's eligibility deadlines use) and ``call_at``. :class:`SystemClock` is
the real one; tests pass :class:`server.testing.FakeClock` and move time
explicitly.
Worker processes are real either way; their hard backstop timeout is the
budget plus a margin, measured in real time.

Shutdown: ``Shutdown(grace)`` stops admission; running workers finish or
are cancelled at their deadline / the grace; everything else is already
durable and resumes on the next start (``load_stores`` + ``Restart``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import attrs
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.jobs import JobStore
from cairn.protocol.worker import WorkerRequest, WorkerStatus
from cairn.server.scheduler.coordinator import Coordinator
from cairn.server.scheduler.events import (
    Action,
    CancelWorker,
    Event,
    Persist,
    Report,
    Restart,
    SetTimer,
    Shutdown,
    StartWorker,
    Tick,
    WorkerFinished,
)
from cairn.server.scheduler.jobstore import JobStoreFiles
from cairn.server.scheduler.runner import RunResult, WorkerProcess

log = logging.getLogger("cairn.server.scheduler.adapter")

BACKSTOP_MARGIN = 30.0  # real seconds past the coordinator's deadline before the runner kills on its own


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    def now(self) -> float: ...

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle: ...


class SystemClock:
    """Wall-clock time; timers on the running loop (delays measured from ``now()``)."""

    def now(self) -> float:
        return time.time()

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        loop = asyncio.get_running_loop()
        return loop.call_later(max(0.0, when - self.now()), callback)


class Listener(Protocol):
    """What the adapter tells the layer above (all called on the event loop)."""

    def worker_started(self, start: StartWorker, pid: int) -> None: ...

    def worker_finished(self, start: StartWorker, result: RunResult) -> None: ...

    def report(self, report: Report) -> None: ...


class NullListener:
    def worker_started(self, start: StartWorker, pid: int) -> None:
        pass

    def worker_finished(self, start: StartWorker, result: RunResult) -> None:
        pass

    def report(self, report: Report) -> None:
        pass


RequestBuilder = Callable[[StartWorker, float], WorkerRequest]
"""(start, wall-clock deadline) -> the worker request (args, settings) for that job."""

Spawner = Callable[[WorkerRequest], "asyncio.Future[WorkerProcess] | Any"]


def default_request(start: StartWorker, deadline: float) -> WorkerRequest:
    return WorkerRequest(job=start.kind, workspace=start.workspace, args=dict(start.args),
                         deadline=deadline, job_id=start.job_id)


# ---------------------------------------------------------------- the adapter


class Adapter:
    """Drive one :class:`Coordinator`. Create on a running loop; call :meth:`close` at the end."""

    def __init__(
        self,
        coordinator: Coordinator,
        *,
        clock: Clock | None = None,
        listener: Listener | None = None,
        build_request: RequestBuilder = default_request,
        spawn: Callable[[WorkerRequest], Any] | None = None,
        persist: Callable[[JobStore], Awaitable[None]] | None = None,
    ) -> None:
        self.coordinator = coordinator
        self.clock: Clock = clock or SystemClock()
        self.listener: Listener = listener or NullListener()
        self._build_request = build_request
        self._spawn = spawn or (lambda request: WorkerProcess.start(request))
        self._persist = persist or JobStoreFiles().save
        self._queue: asyncio.Queue[Action | _Flush | None] = asyncio.Queue()
        self._timer: TimerHandle | None = None
        self._workers: dict[str, WorkerProcess] = {}
        self._starting: dict[str, StartWorker] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._latest_store: JobStore | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self._consumer = asyncio.ensure_future(self._consume())

    # ------------------------------------------------------------ events in

    def submit(self, event: Event) -> list[Action]:
        """Feed one event at ``clock.now()``; queue its actions; return them (for tests/logs)."""
        actions = self.coordinator.handle(event, self.clock.now())
        for action in actions:
            if isinstance(action, SetTimer):
                self._set_timer(action.at)  # timers are immediate: no I/O
            elif isinstance(action, Report):
                self.listener.report(action)
            else:
                if isinstance(action, StartWorker):
                    self._starting[action.job_id] = action
                    self._idle.clear()
                self._queue.put_nowait(action)
        return actions

    def restart(self, store: JobStore) -> list[Action]:
        return self.submit(Restart(store))

    @property
    def running(self) -> dict[str, StartWorker]:
        """Job id -> the start of every worker that has not reported back yet."""
        return dict(self._starting)

    def worker_pid(self, job_id: str) -> int | None:
        proc = self._workers.get(job_id)
        return proc.pid if proc else None

    async def wait_idle(self) -> None:
        """Until no worker is running or starting."""
        await self._idle.wait()

    async def flush(self) -> None:
        """Until every queued action (including persistence) has been carried out."""
        marker = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Flush(marker))
        await marker

    async def shutdown(self, grace: float, *, bound: float | None = None) -> None:
        """Stop admitting; let running workers finish or cancel them; persist; stop the consumer.

        ``bound`` caps the real time spent waiting (default: grace + 10 s);
        workers still alive then are cancelled (an interruption, no attempt).
        """
        self.submit(Shutdown(grace))
        try:
            await asyncio.wait_for(self.wait_idle(), timeout=grace + 10.0 if bound is None else bound)
        except TimeoutError:
            for proc in list(self._workers.values()):
                proc.cancel()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wait_idle(), timeout=10.0)
        await self.flush()
        await self.close()

    async def close(self) -> None:
        """Stop the consumer and timer; cancel any worker still running (no wait for reports)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for proc in list(self._workers.values()):
            proc.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=15.0)
        self._queue.put_nowait(None)
        with contextlib.suppress(asyncio.CancelledError):
            await self._consumer

    # ------------------------------------------------------------ actions out

    def _set_timer(self, at: float | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if at is not None:
            self._timer = self.clock.call_at(at, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self.submit(Tick())

    async def _consume(self) -> None:
        while True:
            action = await self._queue.get()
            if action is None:
                return
            try:
                if isinstance(action, _Flush):
                    await self._write_latest()
                    if not action.future.done():
                        action.future.set_result(None)
                elif isinstance(action, Persist):
                    self._latest_store = action.store
                    if not self._queue_has_persist():
                        await self._write_latest()
                elif isinstance(action, StartWorker):
                    await self._write_latest()  # a started job is durable first
                    await self._start(action)
                elif isinstance(action, CancelWorker):
                    proc = self._workers.get(action.job_id)
                    if proc is not None:
                        proc.cancel()
            except Exception:  # keep the loop alive; the failure is reported as a code
                log.exception("adapter: action %s failed", type(action).__name__)

    def _queue_has_persist(self) -> bool:
        return any(isinstance(a, Persist) for a in self._queue._queue)  # type: ignore[attr-defined]

    async def _write_latest(self) -> None:
        store, self._latest_store = self._latest_store, None
        if store is not None:
            await self._persist(store)

    async def _start(self, start: StartWorker) -> None:
        now = self.clock.now()
        budget = max(0.0, start.deadline - now)
        request = self._build_request(start, time.time() + budget)
        try:
            proc = await self._spawn(request)
        except CairnError as exc:
            self._finish(start, RunResult(status=WorkerStatus.FAILED, error=str(exc.code), message=exc.message))
            return
        self._workers[start.job_id] = proc
        self.listener.worker_started(start, proc.pid)
        task = asyncio.ensure_future(self._wait(start, proc, budget + BACKSTOP_MARGIN))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _wait(self, start: StartWorker, proc: WorkerProcess, backstop: float) -> None:
        try:
            result = await proc.wait(backstop)
        except Exception:
            log.exception("adapter: waiting for worker of %s failed", start.job_id)
            result = RunResult(status=WorkerStatus.FAILED, error=str(ErrorCode.WORKER_CRASHED))
        self._workers.pop(start.job_id, None)
        self._finish(start, result)

    def _finish(self, start: StartWorker, result: RunResult) -> None:
        self._starting.pop(start.job_id, None)
        checkpoint = result.result.get("checkpoint") if isinstance(result.result, dict) else None
        if not (isinstance(checkpoint, dict) and all(isinstance(k, str) and isinstance(v, str)
                                                     for k, v in checkpoint.items())):
            checkpoint = {}
        event = WorkerFinished(start.job_id, str(result.status), result.error, bool(result.more), checkpoint)
        try:
            self.submit(event)
        except CairnError as exc:  # e.g. the job was discarded meanwhile
            log.warning("adapter: finish of %s refused (%s)", start.job_id, exc.code)
        try:
            self.listener.worker_finished(start, result)
        finally:
            if not self._starting:
                self._idle.set()


@attrs.define
class _Flush:
    future: asyncio.Future[None]
