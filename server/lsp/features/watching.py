"""Following live session files in the language server: the watch core's adapter.

Each workspace's ``watchPaths`` setting (TOML ``watch_paths``; relative to
the workspace) plus what store discovery finds for it
(:func:`server.watch.files.plan`: one discovery per arming serves every
workspace; it runs in a thread, and again when a session file appears in a
store, so a session begun later is followed too) are followed by one
:class:`server.watch.files.FileWatcher`; its events go into one
:class:`server.watch.core.WatchCore` (group = workspace), whose actions
become coordinator jobs, never work on the event loop:

- ``Import(paths)`` → one ``import`` job for every changed file of the
  workspace (args ``paths``: the paths, one per line; ``source: watch``);
  its end (whatever its status: the coordinator retries a failed job itself)
  is reported back as ``Imported``;
- ``SealIdle`` → a ``seal-idle`` job, ``Seal`` → a ``seal`` job (a sealed
  capture then offers digest processing, as for editor sessions);
- ``Ignored`` → one log line with the file name and its fixed code.

A job refused because another process holds a claim it needs
(``E_CLAIM_BUSY``: a watcher killed a moment ago holds its session's claim
until its deadline, 60 s) is the core's to try again, as in ``cairn watch``
(:mod:`server.cli.headless`): an import is reported as ``Imported`` with
``busy``, a seal as ``Busy``, and the core imports again after its back-off
(2 s, doubling to 16 s) and seals nothing of the workspace before that
import went through (rule 8 of :mod:`server.watch.core`). The coordinator's
own copy of the refused job (``retry-waiting``, 30 s) is discarded at once,
so the same import never runs twice and no seal runs behind the core's back
(this also lifts the hold that waiting copy put on the workspace's later
jobs, coordinator rule 4: the core holds the watched files' seals instead).
Said once in the log until a job of that kind runs.

The core's one timer lives on the service clock. Settings changes restart
the watchers; the core keeps what it knew, so nothing is imported again.
:meth:`Watching.summary` is the ``watch`` record of ``cairn/status``.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

from cairn.protocol import codec
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.import_results import ImportArgs, ImportResult
from cairn.protocol.jobs import PENDING_STATES, JobState
from cairn.protocol.worker import WorkerStatus
from cairn.server.lsp.features.context import LOG_INFO, LOG_WARNING, finished
from cairn.server.scheduler.events import Discard, Enqueue, StartWorker
from cairn.server.scheduler.runner import RunResult
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
from cairn.server.watch.files import FileWatcher, Plan, plan, watch_roots

if TYPE_CHECKING:
    from cairn.server.lsp.service import CairnService

SOURCE = "watch"
NO_STORES_ENV = "CAIRN_WATCH_NO_STORES"
"""Set to ``1`` to follow only ``watchPaths`` (no store discovery): tests, or a home too large to scan."""


def import_args(paths: tuple[str, ...]) -> dict[str, str]:
    return {"paths": "\n".join(paths), "source": SOURCE}


class Watching:
    def __init__(self, service: CairnService) -> None:
        self.service = service
        self.core = WatchCore()
        self.watcher: FileWatcher | None = None
        self._timer: Any = None
        self._jobs: dict[str, Import | SealIdle | Seal] = {}  # job id -> the core's action it carries out
        self._waiting: set[str] = set()  # job kinds refused for a busy claim: said once until one runs
        self.counts: dict[str, dict[str, int]] = {}  # workspace -> batches, captured
        self._generation = 0
        self.discover = os.environ.get(NO_STORES_ENV) != "1"

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """(Re)arm the watchers from the current settings (store discovery runs in a thread)."""
        self.stop()
        self._generation += 1
        self.service.spawn_task(self._arm_watchers(self._generation))

    async def _arm_watchers(self, generation: int) -> None:
        svc = self.service
        roots: dict[str, list[str]] = {}
        given = {ws: list(svc.workspaces[ws].settings.watchPaths) for ws in svc.order if ws in svc.workspaces}
        probes: dict[Any, Any] = {}  # kept between discoveries: an unchanged file is not read again

        def replan() -> Plan:  # the stores again, when a session file appears in one (server.watch.files)
            return plan(given, probes=probes)

        discover = self.discover and bool(given)
        found = await asyncio.to_thread(replan) if discover else Plan(
            roots={ws: watch_roots(ws, paths) for ws, paths in given.items()})
        for ws in given:
            if ws not in svc.workspaces:  # removed while discovery ran (a re-arm follows)
                continue
            self.core.configure(ws, seal_idle=svc.workspaces[ws].settings.sealIdleMinutes * 60.0)
            if found.roots.get(ws):
                roots[ws] = found.roots[ws]
        if not roots or generation != self._generation:  # nothing to follow, or re-armed meanwhile
            return
        self.watcher = FileWatcher(roots, self.deliver, stores=found.stores, foreign=found.foreign,
                                   replan=replan if discover else None)
        svc.spawn_task(self.watcher.run())
        svc.client.log(LOG_INFO, f"cairn: watching {sum(len(r) for r in roots.values())} path(s) "
                       f"in {len(roots)} workspace(s)")

    def stop(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()
            self.watcher = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    # ------------------------------------------------------------ events in

    def deliver(self, events: list[FileEvent]) -> None:
        now = self.service.clock.now()
        actions: list[Action] = []
        for event in events:
            actions += self.core.handle(event, now)
        self._act(actions)

    def _tick(self) -> None:
        self._timer = None
        self._act(self.core.handle(Tick(), self.service.clock.now()))

    def _act(self, actions: list[Action]) -> None:
        svc = self.service
        for action in actions:
            if isinstance(action, Import):
                self._enqueue(action, "import", import_args(action.paths))
            elif isinstance(action, SealIdle):
                self._enqueue(action, "seal-idle", {"quiet_seconds": f"{action.quiet_seconds:g}",
                                                    "paths": "\n".join(action.paths)})
            elif isinstance(action, Seal):
                self._enqueue(action, "seal", {"session": action.session, "trigger": action.trigger})
            elif isinstance(action, Ignored):
                svc.client.log(LOG_WARNING, f"cairn: watched file {os.path.basename(action.path)} ignored "
                               f"({action.code})")
        self._arm()

    def _enqueue(self, action: Import | SealIdle | Seal, kind: str, args: dict[str, str]) -> None:
        """Queue the job of ``action`` and remember which job carries it out (its end goes to the core)."""
        self.service.submit(Enqueue(action.group, kind, args))
        coordinator = self.service.need_adapter().coordinator
        job = coordinator.lookup(action.group, kind, args)
        if job is not None and job.state is JobState.RUNNING:  # an equal job under way: ours is the queued one
            job = next((j for j in coordinator.store.jobs if j.key == job.key and j.state in PENDING_STATES), job)
        if job is not None:
            self._jobs[job.id] = action

    def _arm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        at = self.core.next_wakeup()
        if at is not None:
            self._timer = self.service.clock.call_at(at, self._tick)

    # ------------------------------------------------------------ jobs

    @staticmethod
    def worker_args(start: StartWorker) -> dict[str, Any] | None:
        """The worker args of a watch import; None for other jobs."""
        if start.kind == "import" and start.args.get("source") == SOURCE:
            paths = tuple(p for p in start.args.get("paths", "").split("\n") if p)
            return codec.to_body(ImportArgs(paths=paths, each=True))
        return None

    def worker_finished(self, start: StartWorker, result: RunResult) -> None:
        action = self._jobs.pop(start.job_id, None)
        if action is None:
            return
        busy = result.status is WorkerStatus.BUSY or result.error == str(ErrorCode.CLAIM_BUSY)
        if busy:
            self._leave_to_core(start)
        elif result.status is WorkerStatus.OK:
            self._waiting.discard(start.kind)
        now = self.service.clock.now()
        if isinstance(action, Import):
            counts = self.counts.setdefault(action.group, {"batches": 0, "captured": 0})
            imported = finished(self.service.client, start, result, ImportResult)
            if imported is not None:
                counts["batches"] += 1
                counts["captured"] += imported.captured
            # no importer reports a session as ended yet: the core's session-end seal waits for one
            self._act(self.core.handle(Imported(action.group, action.paths, busy=busy), now))
        elif busy:  # a seal that ran is not reported: nothing waits for it
            self._act(self.core.handle(Busy(action), now))

    def _leave_to_core(self, start: StartWorker) -> None:
        """A job refused for a busy claim: the core tries it again (module docstring), so the coordinator's
        copy, waiting for its own retry, is discarded; said once until a job of that kind runs."""
        svc = self.service
        job = svc.need_adapter().coordinator.job(start.job_id)
        if job is not None and job.state is JobState.RETRY_WAITING:
            try:
                svc.submit(Discard(job.id))
            except CairnError as exc:  # not expected: the core's retry then only comes first
                svc.client.log(LOG_WARNING, f"cairn: {job.id} {start.kind}: not discarded ({exc.code})")
        if start.kind not in self._waiting:
            self._waiting.add(start.kind)
            svc.client.log(LOG_INFO, f"cairn: {ErrorCode.CLAIM_BUSY}: watched {start.kind} waits for a claim another "
                           "process holds (one that was killed holds it until its deadline); tried again on its own")

    def summary(self, ws: str) -> dict[str, Any]:
        counts = self.counts.get(ws, {"batches": 0, "captured": 0})
        return {"mode": self.watcher.mode if self.watcher else "off",
                "files": self.watcher.files(ws) if self.watcher else 0, **counts}
