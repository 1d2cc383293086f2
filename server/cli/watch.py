"""``cairn watch``: follow live sessions without an editor.

Contract: the paths given (files or folders; default: the workspace's
``watch_paths`` setting plus the session stores discovery attributes to the
workspace, :func:`server.watch.files.plan`, and the sessions begun later in
those stores) are followed by the same
:class:`server.watch.files.FileWatcher` and :class:`server.watch.core.WatchCore` as
in ``cairn serve``: woken by the file system, not by a timer. Each batch of
changed files is one ``import`` job, run in this process through the
worker's job functions in a thread (never on the event loop; claims fence it
against a server doing the same); idle and session-end seals are
``seal-idle`` and ``seal`` jobs, and a seal that sealed something is
followed by a digest pass. One line per batch that captured turns; a file
ignored or failed is said on stderr with its fixed code. Ctrl-C (SIGINT) or
SIGTERM stops it after the job under way: a summary line, exit 130. A
stopped watcher loses nothing: the next one imports again, idempotently.

``--once`` is one discovery pass instead (:class:`worker.jobs.watch.Watcher`:
import what changed, seal what went idle, digest), for hooks and cron; it
also covers the stores that are not JSONL files (databases, JSON files).
Each store, source or session of the workspace it could not read (a link,
a FIFO, a malformed file) is one ``cairn: E_…: path: reason`` line on
stderr, with ``--json`` too, and the exit status is 1.
Depends on :mod:`server.cli.support` and the journal command module.

Imports inside functions: ``cairn --help`` cold start, see :mod:`server.cli`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.server.cli.journal import print_process, process_workspace
from cairn.server.cli.support import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PROBLEMS,
    emit_json,
    load_config,
    printable,
    response_error,
    workspace_path,
)
from cairn.server.watch.core import (
    Action,
    FileEvent,
    Ignored,
    Import,
    Imported,
    Seal,
    SealIdle,
    Tick,
    WatchCore,
)
from cairn.server.watch.files import FileWatcher, Plan, plan, watch_roots

if TYPE_CHECKING:
    from cairn.protocol.results import ImportResult

T = TypeVar("T")


def watch_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="session files or folders to follow (default: the workspace's watch_paths and the "
                        "session stores found for it)")
    p.add_argument("--poll", action="store_true", help="poll (with backoff) instead of the native file watcher")
    p.add_argument("--interval", type=float, default=8.0, metavar="SECONDS",
                   help="when polling: the longest pause between two looks (default 8)")
    p.add_argument("--idle", type=float, default=None, metavar="MINUTES",
                   help="seal a session's capture after this many quiet minutes (default: seal_idle_minutes)")
    p.add_argument("--every-workspace", action="store_true", help="sessions of every workspace, not only this one's")
    p.add_argument("--once", action="store_true", help="one discovery pass (import, seal idle, digest), then exit")
    p.add_argument("--json", action="store_true", help="with --once: the pass's counts as JSON")


def cmd_watch(ns: argparse.Namespace) -> int:
    if ns.interval <= 0 or (ns.idle is not None and ns.idle < 0):
        raise CairnError(ErrorCode.USAGE, "--interval must be positive and --idle not negative")
    from cairn.state.fsdir import refusal

    ws = workspace_path(ns)
    foreign = refusal(ws)  # said once, not at every change
    if foreign is not None:
        raise foreign
    config = load_config(ws)
    if ns.idle is not None:
        config = {**config, "sealIdleMinutes": ns.idle}
    if ns.once:
        return _once(ns, ws, config)
    given = [os.path.abspath(p) for p in ns.paths] if ns.paths else config.get("watchPaths") or []
    probes: dict[Any, Any] = {}  # kept between discoveries: an unchanged file is not read again

    def replan() -> Plan:  # the stores again, when a session file appears in one (server.watch.files)
        return plan({ws: given}, everywhere=ns.every_workspace, probes=probes)

    found = Plan(roots={ws: watch_roots(ws, given)}) if ns.paths else replan()
    roots = found.roots[ws]
    if not roots:
        raise CairnError(ErrorCode.USAGE, "nothing to watch: name files or folders, set watch_paths "
                         "in .cairn/config.toml, or start a session of a supported tool here")
    watch = Headless(ws, roots, config, polling=True if ns.poll else None, poll_max=ns.interval,
                     stores=found.stores, foreign=found.foreign, replan=None if ns.paths else replan)
    asyncio.run(watch.run())
    print(watch.summary(), flush=True)
    return EXIT_INTERRUPTED


def _once(ns: argparse.Namespace, ws: str, config: dict[str, Any]) -> int:
    from cairn.worker.jobs.watch import Watcher
    from cairn.worker.journal.capture import policy_from_config
    from cairn.worker.journal.store import Journal

    watcher = Watcher(os.path.expanduser("~"), os.environ, ws, policy_from_config(config),
                      everywhere=ns.every_workspace, idle=float(config.get("sealIdleMinutes", 20.0)) * 60)
    from cairn.protocol.codec import to_body

    with Journal(ws) as j:
        r = watcher.tick(j)
    counts = process_workspace(ws) if r.sealed else None
    failures = sorted({(f.code, f.path, f.message) for f in r.failed})
    if ns.json:
        emit_json({**to_body(r), "process": to_body(counts) if counts is not None else None})
    else:
        stamp = time.strftime("%H:%M:%S")
        if r.captured:
            print(f"{stamp} captured {r.captured} new turn(s) from {r.sessions} session(s)", flush=True)
        if r.sealed:
            print(f"{stamp} sealed {len(r.sealed)} idle capture(s)", flush=True)
        if counts is not None:
            print_process(counts, prefix=f"{stamp} digests: ")
    for code, path, message in failures:  # as `import --all` says them, with --json too
        sys.stderr.write(f"cairn: {code}: {printable(path)}: {printable(message)}\n")
    return EXIT_PROBLEMS if failures else EXIT_OK


class Headless:
    """The watch core driven by files and in-process jobs; runs until :meth:`stop`."""

    def __init__(self, ws: str, roots: list[str], config: dict[str, Any], *, polling: bool | None = None,
                 poll_max: float | None = None,
                 say: Callable[[str], None] | None = None,
                 observe: Callable[[str, Any], None] | None = None,
                 stores: tuple[str, ...] = (), foreign: Mapping[str, int] | None = None,
                 replan: Callable[[], Plan] | None = None) -> None:
        """``say``: where lines go (stdout); ``observe(kind, detail)``: told of every import result
        (``"import"``: its :class:`~protocol.results.ImportResult`, None when it failed) and ignored path
        (``"ignored"``), for tests and benchmarks. ``stores``, ``foreign``, ``replan``: a session begun
        later in a store is followed too (:class:`server.watch.files.FileWatcher`)."""
        self.ws, self.config = ws, config
        self.core = WatchCore(seal_idle=float(config.get("sealIdleMinutes", 20.0)) * 60.0)
        self.watcher = FileWatcher({ws: roots}, self.deliver, polling=polling, poll_max=poll_max,
                                   stores=stores, foreign=foreign, replan=replan)
        self.say = say or (lambda line: print(line, flush=True))
        self.observe = observe or (lambda kind, detail: None)
        self.totals = {"batches": 0, "captured": 0, "sealed": 0}
        self._digest = False
        self._actions: asyncio.Queue[Action] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._stopped: asyncio.Event | None = None

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self._actions, self._stopped = asyncio.Queue(), asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.stop)
        watcher = asyncio.ensure_future(self.watcher.run())
        worker = asyncio.ensure_future(self._work())
        try:
            await self._stopped.wait()
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
            self.watcher.stop()
            if self._timer is not None:
                self._timer.cancel()
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
        from cairn.protocol.results import (
            ImportArgs,
            ImportResult,
            SealArgs,
            SealIdleArgs,
            SealIdleResult,
            SealResult,
        )

        assert self._actions is not None
        while True:
            action = await self._actions.get()
            if isinstance(action, Ignored):
                sys.stderr.write(f"cairn: {action.code}: {printable(os.path.basename(action.path))} ignored\n")
                self.observe("ignored", action)
            elif isinstance(action, Import):
                imported = await self._job("import", ImportArgs(paths=tuple(action.paths), each=True), ImportResult)
                # no importer reports a session as ended yet: the core's session-end seal waits for one
                self._queue(self.core.handle(Imported(action.group, action.paths), time.time()))
                if imported is not None:
                    self._report(imported, len(action.paths))
                self.observe("import", imported)
            elif isinstance(action, SealIdle):
                idle = await self._job("seal-idle", SealIdleArgs(quiet_seconds=action.quiet_seconds,
                                                                 paths=action.paths), SealIdleResult)
                self._sealed(len(idle.captures) if idle else 0, "idle")
                await self._digest_pass()
            elif isinstance(action, Seal):
                sealed = await self._job("seal", SealArgs(session_id=action.session, trigger=action.trigger),
                                         SealResult)
                self._sealed(len(sealed.sealed) if sealed else 0, action.trigger)
                await self._digest_pass()

    async def _job(self, kind: str, args: Any, result: type[T]) -> T | None:
        """Run job ``kind`` with ``args`` (its argument record) in a thread: its ``result`` record, or None
        when it failed (said on stderr, code only; the watch goes on)."""
        from cairn.protocol.codec import to_body
        from cairn.protocol.results import read
        from cairn.protocol.worker import WorkerRequest
        from cairn.worker.entry import run_request

        request = WorkerRequest(job=kind, workspace=self.ws, args=to_body(args), config=self.config)
        resp = await asyncio.to_thread(run_request, request)
        if resp.status != "ok":
            err = response_error(resp)
            sys.stderr.write(f"cairn: {err.code}: {kind} failed; tried again at the next change\n")
            return None
        return read(result, resp.result, job=kind)

    def _report(self, r: ImportResult, files: int) -> None:
        for bad in r.failed or ():
            sys.stderr.write(f"cairn: {bad.code}: {printable(bad.file)} not imported\n")
        for line in r.malformed:
            sys.stderr.write(f"cairn: {line.code}: {printable(line.file)} line {line.line} left out\n")
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
        """A digest pass after a seal (in a thread): sealed captures are what digests are made of."""
        if self._digest:
            self._digest = False
            counts = await asyncio.to_thread(process_workspace, self.ws)
            print_process(counts, prefix=f"{time.strftime('%H:%M:%S')} digests: ")
