"""The live ``cairn watch``: the watch core driven by the file watcher and in-process jobs.

Split from :mod:`server.cli.watch` so that the CLI's other commands (``cairn
import`` above all) do not load asyncio, ssl and the watch modules at start:
about 34 ms of every run, measured with ``python -X importtime``.
:class:`Headless` is still importable from :mod:`server.cli.watch`.

A job refused because another process holds a claim it needs (``E_CLAIM_BUSY``: a watcher killed a
moment ago holds its session's claim until its deadline, 60 s) is reported to the core as such
(:class:`~server.watch.core.Imported` with ``busy``, :class:`~server.watch.core.Busy` for a seal), which
tries it again on its own after a back-off and seals nothing in the meantime (rule 8 of
:mod:`server.watch.core`); said once on stderr until a job of that kind runs. A digest pass that found
sealed captures held by another process (a watcher killed while it digested holds its claim until the
deadline) is run again the same way, after 2 s doubling to 16 s: sealed captures wait for no file change.

Imports inside functions: as they were in :mod:`server.cli.watch` (the job records and the worker
entry, loaded when the first job runs).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from cairn.protocol.errors import ErrorCode
from cairn.server.cli.journal import print_process, process_workspace
from cairn.server.cli.support import printable, response_error
from cairn.server.watch.core import (
    Action,
    Busy,
    FileEvent,
    Ignored,
    Import,
    Imported,
    Seal,
    SealIdle,
    Tick,
    WatchCore,
)
from cairn.server.watch.files import FileWatcher, Plan

if TYPE_CHECKING:
    from cairn.protocol.import_results import ImportResult

T = TypeVar("T")


class _DigestAgain:
    """The moment to run a digest pass again, after one found captures another process held."""


class Headless:
    """The watch core driven by files and in-process jobs; runs until :meth:`stop`."""

    def __init__(self, ws: str, roots: list[str], config: dict[str, Any], *, polling: bool | None = None,
                 poll_max: float | None = None,
                 say: Callable[[str], None] | None = None,
                 observe: Callable[[str, Any], None] | None = None,
                 stores: tuple[str, ...] = (), foreign: Mapping[str, int] | None = None,
                 replan: Callable[[], Plan] | None = None) -> None:
        """``say``: where lines go (stdout); ``observe(kind, detail)``: told of every import result
        (``"import"``: its :class:`~protocol.import_results.ImportResult`, None when it failed), digest pass
        (``"digest"``: its counts) and ignored path (``"ignored"``), for tests and benchmarks. ``stores``, ``foreign``, ``replan``: a session begun
        later in a store is followed too (:class:`server.watch.files.FileWatcher`)."""
        self.ws, self.config = ws, config
        self.core = WatchCore(seal_idle=float(config.get("sealIdleMinutes", 20.0)) * 60.0)
        self.watcher = FileWatcher({ws: roots}, self.deliver, polling=polling, poll_max=poll_max,
                                   stores=stores, foreign=foreign, replan=replan)
        self.say = say or (lambda line: print(line, flush=True))
        self.observe = observe or (lambda kind, detail: None)
        self.totals = {"batches": 0, "captured": 0, "sealed": 0}
        # a first pass digests what was sealed before the watch began (a hook's session end, `cairn seal`)
        self._digest = True
        self._actions: asyncio.Queue[Action | _DigestAgain] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._stopped: asyncio.Event | None = None
        self._waiting: set[str] = set()  # job kinds refused for a busy claim, said once until one runs
        self.digest_retry = (2.0, 16.0)  # a digest pass that met busy captures: first wait, doubled up to the last
        self._digest_wait: float | None = None  # the wait before the next such pass, None when none is owed
        self._digest_timer: asyncio.TimerHandle | None = None

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self._actions, self._stopped = asyncio.Queue(), asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.stop)
        watcher = asyncio.ensure_future(self.watcher.run())
        worker = asyncio.ensure_future(self._work())
        stopped = asyncio.ensure_future(self._stopped.wait())
        try:
            # the work ending on its own is an error it raised (the reader of stdout gone: BrokenPipeError, a
            # full disk): raised here, so the command ends and says it, never a watcher left capturing nothing
            await asyncio.wait({stopped, worker, watcher}, return_when=asyncio.FIRST_COMPLETED)
            for task in (worker, watcher):
                if task.done() and not task.cancelled() and task.exception() is not None:
                    raise task.exception()  # type: ignore[misc]
        finally:
            stopped.cancel()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
            self.watcher.stop()
            for timer in (self._timer, self._digest_timer):
                if timer is not None:
                    timer.cancel()
            for task in (watcher, worker):
                task.cancel()
            await asyncio.gather(watcher, worker, return_exceptions=True)

    def stop(self) -> None:
        if self._stopped is not None:
            self._stopped.set()

    def summary(self) -> str:
        t = self.totals
        return (f"cairn watch: {t['captured']} turn(s) captured in {t['batches']} batch(es), "
                f"{t['sealed']} capture(s) sealed")

    # ------------------------------------------------------------ core

    def deliver(self, events: list[FileEvent]) -> None:
        now = time.time()
        for event in events:
            self._queue(self.core.handle(event, now))

    def _tick(self) -> None:
        self._timer = None
        self._queue(self.core.handle(Tick(), time.time()))

    def _queue(self, actions: list[Action]) -> None:
        assert self._actions is not None
        for action in actions:
            self._actions.put_nowait(action)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        at = self.core.next_wakeup()
        if at is not None:
            self._timer = asyncio.get_running_loop().call_later(max(0.0, at - time.time()), self._tick)

    async def _work(self) -> None:
        from cairn.protocol.import_results import (
            ImportArgs,
            ImportResult,
            SealArgs,
            SealIdleArgs,
            SealIdleResult,
            SealResult,
        )

        assert self._actions is not None
        await self._digest_pass()  # what others sealed before the watch began
        while True:
            action = await self._actions.get()
            if isinstance(action, _DigestAgain):
                self._digest = True
                await self._digest_pass()
            elif isinstance(action, Ignored):
                sys.stderr.write(f"cairn: {action.code}: {printable(os.path.basename(action.path))} ignored\n")
                self.observe("ignored", action)
            elif isinstance(action, Import):
                imported, busy = await self._job("import", ImportArgs(paths=tuple(action.paths), each=True),
                                                 ImportResult)
                # no importer reports a session as ended yet: the core's session-end seal waits for one
                self._queue(self.core.handle(Imported(action.group, action.paths, busy=busy), time.time()))
                if imported is not None:
                    self._report(imported, len(action.paths))
                self.observe("import", imported)
            elif isinstance(action, SealIdle):
                idle, busy = await self._job("seal-idle", SealIdleArgs(quiet_seconds=action.quiet_seconds,
                                                                       paths=action.paths), SealIdleResult)
                if busy:  # tried again after the core's back-off, not at the next change
                    self._queue(self.core.handle(Busy(action), time.time()))
                self._sealed(len(idle.captures) if idle else 0, "idle")
                # captures another process sealed (an agent's session-end hook) are digested here too: the
                # watcher's own seals were the only ones that led to a digest
                self._digest = True
                await self._digest_pass()
            elif isinstance(action, Seal):
                sealed, busy = await self._job("seal", SealArgs(session_id=action.session, trigger=action.trigger),
                                               SealResult)
                if busy:
                    self._queue(self.core.handle(Busy(action), time.time()))
                self._sealed(len(sealed.sealed) if sealed else 0, action.trigger)
                await self._digest_pass()

    async def _job(self, kind: str, args: Any, result: type[T]) -> tuple[T | None, bool]:
        """Run job ``kind`` with ``args`` (its argument record) in a thread: (its ``result`` record, or None
        when it failed; whether it was refused because another process holds a claim it needs).

        A failure is said on stderr, code only, and the watch goes on. A refusal for a busy claim is for the
        core to try again (module docstring): said once until a job of that kind runs, not at every retry;
        any other failure is tried again at the file's next change."""
        from cairn.protocol.codec import to_body
        from cairn.protocol.results import read
        from cairn.protocol.worker import WorkerRequest
        from cairn.worker.entry import run_request

        request = WorkerRequest(job=kind, workspace=self.ws, args=to_body(args), config=self.config)
        resp = await asyncio.to_thread(run_request, request)
        if resp.status != "ok":
            err = response_error(resp)
            busy = resp.status == "busy" or err.code is ErrorCode.CLAIM_BUSY
            if not busy:
                sys.stderr.write(f"cairn: {err.code}: {kind} failed; tried again at the next change\n")
            elif kind not in self._waiting:
                self._waiting.add(kind)
                sys.stderr.write(f"cairn: {err.code}: {kind} waits for a claim another process holds (one that "
                                 "was killed holds it until its deadline); tried again on its own\n")
            return None, busy
        self._waiting.discard(kind)
        return read(result, resp.result, job=kind), False

    def _report(self, r: ImportResult, files: int) -> None:
        for bad in r.failed or ():
            sys.stderr.write(f"cairn: {bad.code}: {printable(bad.file)} not imported\n")
        for line in r.malformed:
            sys.stderr.write(f"cairn: {line.code}: {printable(line.file)} {printable(line.message)}\n")
        captured = r.captured
        if captured:
            self.totals["batches"] += 1
            self.totals["captured"] += captured
            self.say(f"{time.strftime('%H:%M:%S')} captured {captured} turn(s) from {files} file(s)")

    def _sealed(self, n: int, trigger: str) -> None:
        if n:
            self.totals["sealed"] += n
            self.say(f"{time.strftime('%H:%M:%S')} sealed {n} capture(s) ({trigger})")
            self._digest = True

    async def _digest_pass(self) -> None:
        """A digest pass after a seal (in a thread): sealed captures are what digests are made of, whoever
        sealed them; said when it did something."""
        if self._digest:
            self._digest = False
            counts = await asyncio.to_thread(process_workspace, self.ws)
            self.observe("digest", counts)
            if counts.recovered or counts.published or counts.all_none or counts.failed or counts.exhausted:
                print_process(counts, prefix=f"{time.strftime('%H:%M:%S')} digests: ")
            if counts.busy:  # held by another process: run again on its own (module docstring), said once
                first, most = self.digest_retry
                self._digest_wait = first if self._digest_wait is None else min(most, self._digest_wait * 2)
                if "digest" not in self._waiting:
                    self._waiting.add("digest")
                    sys.stderr.write(f"cairn: {ErrorCode.CLAIM_BUSY}: {counts.busy} sealed capture(s) wait for a "
                                     "claim another process holds (one that was killed holds it until its "
                                     "deadline); digested on their own once it is free\n")
                queue = self._actions
                assert queue is not None
                if self._digest_timer is not None:  # one pass owed at a time, whichever seal led to this one
                    self._digest_timer.cancel()
                self._digest_timer = asyncio.get_running_loop().call_later(self._digest_wait, queue.put_nowait,
                                                                           _DigestAgain())
            else:
                self._digest_wait = None
                self._waiting.discard("digest")
