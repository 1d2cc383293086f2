"""The language server's service: lifecycle, start gate, workspaces and settings, routing.

:class:`CairnService` is what one editor connection talks to, without the
LSP library. It owns the lifecycle (``configure`` from ``initialize``,
``start`` from ``initialized``, ``shutdown``), the start gate (requests wait
for the start; notifications queue behind it in arrival order), the
workspaces and their settings, and the adapter that runs the coordinator's
workers. Everything a cairn method does lives in a feature module
(:mod:`server.lsp.features`); the three routing tables below
(:data:`NOTIFICATIONS`, :data:`REQUESTS` and
:data:`server.lsp.features.commands.COMMANDS`) name each method's parameter
record and handler, and :mod:`server.lsp.server` registers exactly those names.

Rules it keeps:

- Parameters are structured once (:func:`protocol.lsp.structure`): a wrong
  type is ``E_USAGE``; an unknown method is ``E_METHOD_UNKNOWN``; any refusal
  is a :class:`protocol.errors.CairnError` with a fixed code.
- Nothing blocking on the event loop: snapshot reads run in a thread, every
  mutation in a worker subprocess.
- A turn's text lives only in this process's memory until its ``capture``
  job has frozen it; the durable job store holds ids only.
- Logs carry ids, counts and fixed codes only.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
from collections.abc import Callable, Coroutine
from typing import Any

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.lsp import (
    CHECK_EDITED,
    COCKPIT,
    EVIDENCE,
    IDLE,
    JOBS,
    JOURNAL,
    PROPOSAL,
    SESSION_EVENT,
    STATUS,
    TURN_COMPLETED,
    AcceptEditedParams,
    CockpitParams,
    IdleParams,
    JobsParams,
    JournalParams,
    ProposalParams,
    SessionEventParams,
    StatusParams,
    TurnCompletedParams,
    structure,
)
from cairn.protocol.settings import Settings
from cairn.protocol.worker import WorkerRequest, WorkerStatus
from cairn.server.lsp import memory_docs
from cairn.server.lsp.features import commands
from cairn.server.lsp.features.context import (
    LOG_ERROR,
    LOG_INFO,
    LOG_LOG,
    LOG_WARNING,
    Client,
    Route,
    WorkspaceState,
)
from cairn.server.lsp.features.documents import Documents
from cairn.server.lsp.features.status import Snapshots
from cairn.server.lsp.features.turns import Turns
from cairn.server.lsp.features.watching import Watching
from cairn.server.scheduler.adapter import Adapter, Clock, SystemClock
from cairn.server.scheduler.coordinator import Coordinator
from cairn.server.scheduler.events import CoordinatorConfig, Enqueue, Report, StartWorker
from cairn.server.scheduler.jobstore import JobStoreFiles, merge_stores, read_store
from cairn.server.scheduler.runner import RunResult, WorkerProcess, worker_env
from cairn.state.fsdir import refusal
from cairn.state.layout import too_wide
from cairn.worker.redaction.redact import redact_text
from cairn.worker.settings import config as settings_file

log = logging.getLogger("cairn.server")

SHUTDOWN_GRACE = 5.0
CRASH_ONCE_ENV = "CAIRN_SERVER_CRASH_ONCE"
"""Crash injection for end-to-end tests: ``KIND:N`` gives the first ``KIND`` worker
of this server session ``CAIRN_CRASH_AT=N`` (it dies before its Nth write)."""


NOTIFICATIONS: dict[str, Route] = {
    TURN_COMPLETED: Route(TurnCompletedParams, lambda s, p: s.turns.turn_completed(p)),
    SESSION_EVENT: Route(SessionEventParams, lambda s, p: s.turns.session_event(p)),
    IDLE: Route(IdleParams, lambda s, p: s.turns.idle(p)),
}
REQUESTS: dict[str, Route] = {
    STATUS: Route(StatusParams, lambda s, p: s.status.status(p)),
    JOBS: Route(JobsParams, lambda s, p: s.status.jobs()),
    COCKPIT: Route(CockpitParams, lambda s, p: s.status.cockpit(p)),
    PROPOSAL: Route(ProposalParams, lambda s, p: s.status.proposal(p)),
    JOURNAL: Route(JournalParams, lambda s, p: s.status.journal(p)),
    CHECK_EDITED: Route(AcceptEditedParams, lambda s, p: s.status.check_edited(p)),
    EVIDENCE: Route(ProposalParams, lambda s, p: s.status.evidence(p)),
}


def unknown(name: str) -> CairnError:
    return CairnError(ErrorCode.METHOD_UNKNOWN, f"the server has no method or command {name[:60]!r}")


class CairnService:
    """One per server connection. Call :meth:`configure`, then ``await start()``."""

    def __init__(self, client: Client, *, clock: Clock | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.client = client
        self.clock: Clock = clock or SystemClock()
        self._base_env = env
        self._editor_options: dict[str, Any] = {}
        self._config_lock = asyncio.Lock()
        self.workspaces: dict[str, WorkspaceState] = {}
        self.order: list[str] = []  # workspace paths; the first is the default
        self.store = JobStoreFiles(locked=True)
        self.adapter: Adapter | None = None
        self.turns = Turns(self)
        self.status = Snapshots(self)
        self.documents = Documents(self)
        self.watching = Watching(self)
        self._crash_once = os.environ.get(CRASH_ONCE_ENV, "")
        self._tasks: set[asyncio.Task[Any]] = set()
        self._started = asyncio.Event()
        self._deferred: list[Callable[[], object]] = []  # notifications that arrived before start

    # ------------------------------------------------------------ routing

    def notify(self, method: str, raw: Any) -> None:
        """A notification: structured now, run once started, in arrival order; refusals are logged."""
        route = NOTIFICATIONS.get(method)
        if route is None:
            raise unknown(method)
        try:
            params: Any = structure(raw, route.params, method)
        except CairnError as exc:
            self._refused(method, exc)
            return

        def call() -> None:
            try:
                route.handler(self, params)
            except CairnError as exc:
                self._refused(method, exc)
            except Exception as exc:  # a bug: say so with a code, keep the gate and the loop alive
                log.error("%s failed (%s: %s)", method, ErrorCode.INTERNAL, type(exc).__name__)
                self.client.log(LOG_WARNING, f"cairn: {method} failed ({ErrorCode.INTERNAL})")

        self.when_started(call)

    def _refused(self, method: str, exc: CairnError) -> None:
        self.client.log(LOG_ERROR, f"cairn: {method} refused ({exc.code})")

    async def request(self, method: str, raw: Any) -> Any:
        """A cairn request: its result, or a :class:`CairnError` refusal."""
        route = REQUESTS.get(method)
        if route is None:
            raise unknown(method)
        params: Any = structure(raw, route.params, method)
        await self.wait_started()
        result = route.handler(self, params)
        return await result if inspect.isawaitable(result) else result

    async def execute(self, command: str, arguments: list[Any]) -> Any:
        """``workspace/executeCommand``: see :data:`server.lsp.features.commands.COMMANDS`."""
        route = commands.COMMANDS.get(command)
        if route is None:
            raise unknown(command)
        if len(arguments) > 1:
            raise CairnError(ErrorCode.USAGE, f"{command}: takes at most one argument (an object)")
        params: Any = structure(arguments[0] if arguments else None, route.params, command)
        await self.wait_started()
        return await route.handler(self, params)

    # ------------------------------------------------------------ lifecycle

    def configure(self, folders: list[str], options: dict[str, Any] | None) -> None:
        """From ``initialize``: workspace folders (paths, first is the default) and editor options."""
        self._editor_options = dict(options or {})
        for path in folders:
            self._add_workspace(path)

    async def start(self) -> None:
        """From ``initialized``: settings, durable jobs, first snapshot, recovery pass."""
        for ws in list(self.order):
            await self._load_settings(ws)
            await self._check_state(ws)
        stores = []
        for ws in self.order:
            if self.workspaces[ws].foreign is not None:
                continue
            if not await asyncio.to_thread(self.store.own, ws):
                self.client.log(LOG_INFO, f"cairn: another cairn server owns the job store of {ws}; this one "
                                "keeps its jobs in memory (claims still fence every job)")
                continue
            stored, code = await asyncio.to_thread(read_store, ws)
            if code:
                self.client.log(LOG_WARNING, f"cairn: job store of {ws} unreadable ({code}); kept as jobs.json.bad")
            if stored is not None:
                stores.append(stored)
        first = self.workspaces[self.order[0]].settings if self.order else Settings()
        # idle maintenance also rechecks memory citations (cheap unless a checkout/pull or a new day: verify-idle)
        config = CoordinatorConfig(max_workers=max(1, int(first.maxWorkers)),
                                   idle_kinds=(*CoordinatorConfig().idle_kinds, "verify-idle"))
        self.adapter = Adapter(Coordinator(config), clock=self.clock, listener=self,
                               build_request=self._build_request, spawn=self._spawn, persist=self.store.save)
        self.adapter.restart(self.turns.drop_lost_captures(merge_stores(stores)))
        for ws in self.order:
            self._workspace_started(ws)
        self.watching.start()
        self._started.set()
        deferred, self._deferred = self._deferred, []
        for call in deferred:  # in arrival order, before anything that arrives from now on
            call()

    async def shutdown(self, grace: float = SHUTDOWN_GRACE) -> None:
        self.turns.close()
        self.watching.stop()
        if self.adapter is not None:
            await self.adapter.shutdown(grace)
        for task in list(self._tasks):
            task.cancel()

    def kill_workers(self) -> None:
        """Last resort when the connection vanished: stop every running worker now."""
        if self.adapter is None:
            return
        for job_id in list(self.adapter.running):
            pid = self.adapter.worker_pid(job_id)
            if pid:
                with contextlib.suppress(OSError):
                    os.killpg(pid, 15)

    async def wait_started(self) -> None:
        await self._started.wait()

    def when_started(self, call: Callable[[], object]) -> None:
        """Run ``call`` now if started, else right after start, in arrival order.

        Editor notifications must take effect in the order they were sent: a
        ``session-end`` handled before the turns sent ahead of it would seal
        nothing and strand those turns in an open capture. Awaiting the start
        event does not keep that order (a handler whose first step runs after
        the event is set overtakes handlers still waking up), so notifications
        go through this one ordered gate instead. ``call`` handles its own
        errors.
        """
        if self._started.is_set():
            call()
        else:
            self._deferred.append(call)

    def spawn_task(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Run ``coro`` in the background; cancelled at shutdown."""
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------ workspaces and settings

    def _add_workspace(self, path: str) -> bool:
        """Serve ``path`` (a folder from the editor); whether it is served (a refusal is shown to the user)."""
        path = os.path.normpath(os.path.abspath(path))
        if path in self.workspaces:
            return True
        if too_wide(path):
            # the file system root or the home folder itself: its .cairn/state would collect every project's
            # sessions (and a recovery pass would write at /); an editor opened on it by accident is told so
            log.warning("workspace folder refused (%s)", ErrorCode.WORKSPACE_INVALID)
            self.client.show(LOG_WARNING, f"cairn: {ErrorCode.WORKSPACE_INVALID}: {path} is the file system root "
                             "or the home folder; it is not served (open a project folder)")
            return False
        self.workspaces[path] = WorkspaceState(path)
        self.order.append(path)
        return True

    async def _load_settings(self, ws: str) -> None:
        settings, warnings = await asyncio.to_thread(settings_file.load, ws, self._editor_options)
        self.workspaces[ws].settings = settings
        for w in settings_file.unreported(warnings):
            # shown, not only logged: a setting ignored (an untrusted workspace, a broken config file) changes
            # what cairn does, and an editor keeps logged messages where nobody looks (once per server)
            self.client.show(LOG_WARNING, f"cairn: {ws}: {redact_text(w)}")

    async def _check_state(self, ws: str) -> None:
        """Whether ``ws``'s private state is this user's (:mod:`state.stateroot`); said once if it is not.

        A refused workspace gets no recovery pass, no job store and no jobs; every request naming it
        answers the refusal (:meth:`workspace`), checking it again first: said once per workspace and server,
        served once the user moved the folder aside.
        """
        exc = await asyncio.to_thread(refusal, ws)
        if exc is not None:
            self.workspaces[ws].foreign = exc
            log.warning("workspace state refused (%s)", exc.code)
            self.client.show(LOG_ERROR, f"cairn: {exc.code}: {exc.message}; then refresh (the next request "
                             "serves the workspace)")

    def _workspace_started(self, ws: str) -> None:
        """A workspace joins: one recovery pass (recovery before replacement), then a snapshot;
        digest work is offered only when the snapshot shows some (no debt, no pass)."""
        if self.workspaces[ws].foreign is not None:
            return
        self.submit(Enqueue(ws, "recover"))
        self.spawn_task(self.status.first_snapshot(ws))

    async def change_configuration(self, settings: Any) -> None:
        """Layer changed settings over initializationOptions (an empty change keeps them).

        Editors send ``{"settings": {}}`` right after connecting (eglot, Neovim);
        replacing the options with that would silently drop every
        initializationOption. A key sent as null is unset: the config files'
        value applies again (editors send null for an option set back to
        nothing). Changes apply in arrival order (one at a time).
        """
        opts = settings if isinstance(settings, dict) else {}
        if isinstance(opts.get("cairn"), dict):
            opts = opts["cairn"]
        async with self._config_lock:
            merged = {**self._editor_options, **opts}
            self._editor_options = {k: v for k, v in merged.items() if v is not None}
            for ws in list(self.order):
                await self._load_settings(ws)
            self.turns.arm_seal_timer()
            if self.adapter is not None:
                self.watching.start()

    async def change_folders(self, added: list[str], removed: list[str]) -> None:
        for path in removed:
            path = os.path.normpath(os.path.abspath(path))
            if path in self.workspaces and len(self.order) > 1:
                self.order.remove(path)
                del self.workspaces[path]
        for path in added:
            path = os.path.normpath(os.path.abspath(path))
            if path not in self.workspaces:
                if not self._add_workspace(path):
                    continue
                await self._load_settings(path)
                await self._check_state(path)
                if self.adapter is not None:
                    self._workspace_started(path)
        if self.adapter is not None and (added or removed):
            self.watching.start()

    def workspace(self, given: str | None) -> str:
        """The workspace a request names (path or file URI, or a path inside one); default the first."""
        if not self.order:
            raise CairnError(ErrorCode.WORKSPACE_INVALID, "no workspace folder is open")
        if not given:
            return self._usable(self.order[0])
        path = memory_docs.uri_to_path(given) if given.startswith("file:") else os.path.normpath(os.path.abspath(given))
        if path is not None:
            matches = [ws for ws in self.order if path == ws or path.startswith(ws + os.sep)]
            if matches:
                return self._usable(max(matches, key=len))
        raise CairnError(ErrorCode.WORKSPACE_INVALID, "not one of the server's workspace folders")

    def _usable(self, ws: str) -> str:
        exc = self.workspaces[ws].foreign
        if exc is not None:
            # checked again (a few stats): once the user moved the folder aside as told, the next request (the
            # cockpit's refresh) serves the workspace, with no server restart
            exc = refusal(ws)
            if exc is not None:
                self.workspaces[ws].foreign = exc
                raise CairnError(exc.code, exc.message, **exc.detail)
            self.workspaces[ws].foreign = None
            log.info("workspace state accepted on a later request")
            if self.adapter is not None:
                # as :meth:`start` does for a workspace it accepts: its job store (the state folder is new, so
                # there are no stored jobs to read), then recovery and a snapshot
                if not self.store.own(ws):
                    self.client.log(LOG_INFO, f"cairn: another cairn server owns the job store of {ws}; this one "
                                    "keeps its jobs in memory (claims still fence every job)")
                self._workspace_started(ws)
        return ws

    # ------------------------------------------------------------ workers

    def submit(self, event: Any) -> None:
        ws = getattr(event, "workspace", None)
        if isinstance(ws, str) and ws in self.workspaces and self.workspaces[ws].foreign is not None:
            return  # nothing runs against a refused state folder (said once at its check)
        self.need_adapter().submit(event)

    def need_adapter(self) -> Adapter:
        if self.adapter is None:
            raise CairnError(ErrorCode.USAGE, "the server is not initialized yet")
        return self.adapter

    def worker_config(self, ws: str) -> dict[str, Any]:
        """The resolved settings a worker of ``ws`` runs with."""
        state = self.workspaces.get(ws)
        return settings_file.to_dict(state.settings if state else Settings())

    def worker_env(self, kind: str) -> dict[str, str]:
        extra: dict[str, str] = {}
        if self._crash_once:
            want, _, at = self._crash_once.partition(":")
            if want == kind and at.isdigit():
                extra["CAIRN_CRASH_AT"] = at
                self._crash_once = ""
        return worker_env(extra, base=self._base_env)

    def _build_request(self, start: StartWorker, deadline: float) -> WorkerRequest:
        state = self.workspaces.get(start.workspace)
        settings = state.settings if state else Settings()
        args = self.turns.worker_args(start, settings)
        if args is None:
            args = self.watching.worker_args(start)
        if args is None:
            args = dict(start.args)
            if start.kind == "review":
                # idle-offered reviews are automatic (capped per day); cairn.review is explicit
                args = {"automatic": start.args.get("explicit") != "1"}
            elif start.kind == "process" and "max" in start.args:
                args = {"max": int(start.args["max"])}
        return WorkerRequest(job=start.kind, workspace=start.workspace, args=args, deadline=deadline,
                             job_id=start.job_id, config=settings_file.to_dict(settings))

    async def _spawn(self, request: WorkerRequest) -> WorkerProcess:
        return await WorkerProcess.start(request, env=self.worker_env(request.job))

    # ------------------------------------------------------------ adapter listener

    def worker_started(self, start: StartWorker, pid: int) -> None:
        self.client.log(LOG_LOG, f"cairn: {start.job_id} {start.kind} started (pid {pid})")

    def worker_finished(self, start: StartWorker, result: RunResult) -> None:
        self.turns.worker_finished(start, result)
        self.watching.worker_finished(start, result)
        commands.drain_worker_finished(self, start, result)
        self.spawn_task(self._after_job(start, result))

    async def _after_job(self, start: StartWorker, result: RunResult) -> None:
        """Fresh snapshot first, then tell the editor: a log line means status is current."""
        ws = start.workspace
        if ws in self.workspaces:
            await self.status.refresh_now(ws)
            if start.kind in commands.PROPOSAL_KINDS:
                await self.documents.republish(ws)
            commands.drain_progress(self, start, result)
        self.log_result(start.job_id, start.kind, result)

    def report(self, report: Report) -> None:
        self.client.show(LOG_WARNING, f"cairn: maintenance job {report.job_id} is {report.kind}"
                         + (f" ({report.code})" if report.code else "")
                         + "; run cairn.retry, cairn.discard or cairn.dismiss")

    def log_result(self, job_id: str, kind: str, result: RunResult) -> None:
        counts = " ".join(f"{k}={len(v) if isinstance(v, list) else v}" for k, v in sorted(result.result.items())
                          if isinstance(v, (int, list)) and not isinstance(v, bool))
        code = f" {result.error}" if result.error else ""
        level = LOG_INFO if result.status in (WorkerStatus.OK, WorkerStatus.BUSY) else LOG_WARNING
        self.client.log(level, f"cairn: {job_id} {kind} {result.status}{code}" + (f" {counts}" if counts else ""))
