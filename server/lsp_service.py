"""What the language server does, without the LSP library.

:class:`CairnService` implements every method of the cairn LSP contract
(:mod:`protocol.lsp`) on plain dicts. :mod:`server.lsp` registers one pygls
handler per method and forwards to it; the editor connection is reached only
through :class:`Client` (log, show, diagnostics, progress), so the service is
testable without pygls.

Rules it keeps:

- Nothing blocking on the event loop: file-system reads for snapshots
  (journal counts, cockpit rows, proposals) run in a thread
  (``asyncio.to_thread``); every mutation runs in a worker subprocess.
- ``cairn/status`` answers from memory: the journal counts cached after the
  last job (refreshed in a thread, coalesced) merged with the coordinator's
  live job counts. It never spawns a worker or scans on the loop.
- A turn's text lives only in this process's memory until its ``capture``
  job has frozen it; the durable job store holds ids only. A capture job
  found in the store after a restart has lost its turn and is discarded.
- Logs carry ids, counts and fixed codes only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import uuid
from collections.abc import Callable
from typing import Any, Protocol

import attrs
from cairn.protocol import codec
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.jobs import HELD_STATES, JobState, JobStore
from cairn.protocol.lsp import (
    CMD_ACCEPT,
    CMD_CLEANUP,
    CMD_DIAGNOSTIC_REPORT,
    CMD_DISCARD,
    CMD_DISMISS,
    CMD_DRAIN,
    CMD_REJECT,
    CMD_RETRY,
    CMD_REVIEW,
    CMD_UNDO,
    COCKPIT_VIEWS,
    SESSION_EVENT_KINDS,
    STATUS_KEYS,
    Settings,
)
from cairn.protocol.worker import WorkerRequest, WorkerStatus
from cairn.server import memory_docs
from cairn.server.adapter import Adapter, Clock, SystemClock, merge_stores, read_store, write_store
from cairn.server.coordinator import Coordinator
from cairn.server.coordinator_events import (
    ClearHistory,
    CoordinatorConfig,
    Discard,
    Dismiss,
    Drain,
    Enqueue,
    Idle,
    Notify,
    Report,
    Retry,
    StartWorker,
    TurnActive,
)
from cairn.server.runner import RunResult, WorkerProcess, run_worker, worker_env
from cairn.state.fsdir import PinnedDir

log = logging.getLogger("cairn.server")

LOG_ERROR, LOG_WARNING, LOG_INFO, LOG_LOG = 1, 2, 3, 4
FOREGROUND_BUDGET = 60.0  # seconds for accept/reject/undo/retry/discard workers
SHUTDOWN_GRACE = 5.0
REFRESH_SPACING = 0.25  # seconds between two journal snapshot reads of one workspace
CRASH_ONCE_ENV = "CAIRN_SERVER_CRASH_ONCE"
"""Crash injection for end-to-end tests: ``KIND:N`` gives the first ``KIND`` worker
of this server session ``CAIRN_CRASH_AT=N`` (it dies before its Nth write)."""

PROCESS_KINDS = ("process",)
DRAIN_KINDS = ("process", "drain")
PROPOSAL_KINDS = ("review", "drain", "accept", "reject", "undo")


class ServiceError(Exception):
    """A refused request: a fixed code and a message for a person (ids only)."""

    def __init__(self, code: ErrorCode | str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = str(code)
        self.message = message


class Client(Protocol):
    """The editor connection, as the service needs it."""

    def log(self, level: int, message: str) -> None: ...

    def show(self, level: int, message: str) -> None: ...

    def publish_diagnostics(self, uri: str, diagnostics: list[dict[str, Any]]) -> None: ...

    async def progress_begin(self, title: str, message: str) -> str | None: ...

    def progress_report(self, token: str, message: str, percentage: int | None) -> None: ...

    def progress_end(self, token: str, message: str) -> None: ...

    def document_text(self, uri: str) -> str | None: ...


# ---------------------------------------------------------------- optional read views


def _journal_status(workspace: str) -> dict[str, int]:
    try:
        from cairn.worker.journal.views import read_status
    except ImportError:
        return {}
    return {k: int(v) for k, v in read_status(workspace).items() if isinstance(v, int)}


def _memory_view(name: str) -> Callable[..., Any] | None:
    try:
        from cairn.worker.memory import views
    except ImportError:
        return None
    return getattr(views, name, None)


# ---------------------------------------------------------------- per-workspace state


@attrs.define
class SessionInfo:
    last_turn: float  # clock time of the last completed turn
    idle_sealed: bool = False


@attrs.define
class DrainRun:
    token: str | None
    jobs: int = 0
    published: int = 0
    proposals: int = 0


@attrs.define
class WorkspaceState:
    path: str
    settings: Settings = attrs.field(factory=Settings)
    journal: dict[str, int] = attrs.field(factory=dict)
    refreshed: float | None = None
    refreshed_at: float | None = None  # monotonic, for refresh spacing
    refresh_task: asyncio.Task[None] | None = None
    refresh_again: bool = False
    sessions: dict[str, SessionInfo] = attrs.field(factory=dict)
    foreground: asyncio.Lock = attrs.field(factory=asyncio.Lock)
    drain: DrainRun | None = None


@attrs.frozen
class TurnPayload:
    session_id: str
    turn: dict[str, Any]


# ---------------------------------------------------------------- the service


class CairnService:
    """One per server connection. Call :meth:`configure`, then ``await start()``."""

    def __init__(self, client: Client, *, clock: Clock | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.client = client
        self.clock: Clock = clock or SystemClock()
        self._base_env = env
        self._editor_options: dict[str, Any] = {}
        self._config_lock = asyncio.Lock()
        self._store_locks: dict[str, Any] = {}  # workspace -> the job-store lock this process holds
        self.workspaces: dict[str, WorkspaceState] = {}
        self._order: list[str] = []
        self._payloads: dict[str, TurnPayload] = {}  # job id -> the turn it must capture
        self._reported_captures: set[str] = set()
        self._open_docs: dict[str, tuple[str, list[dict[str, Any]]]] = {}  # uri -> (workspace, proposals)
        self._crash_once = os.environ.get(CRASH_ONCE_ENV, "")
        self._seal_timer: Any = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.adapter: Adapter | None = None
        self._started = asyncio.Event()
        self._deferred: list[Callable[[], object]] = []  # notifications that arrived before start

    # ------------------------------------------------------------ lifecycle

    def configure(self, folders: list[str], options: dict[str, Any] | None) -> None:
        """From ``initialize``: workspace folders (paths, first is the default) and editor options."""
        self._editor_options = _options(options)
        for path in folders:
            self._add_workspace(path)

    async def start(self) -> None:
        """From ``initialized``: settings, durable jobs, first snapshot, recovery pass."""
        for ws in list(self._order):
            await self._load_settings(ws)
        stores = []
        for ws in self._order:
            if not await asyncio.to_thread(self._own_store, ws):
                self.client.log(LOG_INFO, f"cairn: another cairn server owns the job store of {ws}; this one "
                                "keeps its jobs in memory (claims still fence every job)")
                continue
            store, code = await asyncio.to_thread(read_store, ws)
            if code:
                self.client.log(LOG_WARNING, f"cairn: job store of {ws} unreadable ({code}); kept as jobs.json.bad")
            if store is not None:
                stores.append(store)
        first = self.workspaces[self._order[0]].settings if self._order else Settings()
        config = CoordinatorConfig(max_workers=max(1, int(first.maxWorkers)))
        self.adapter = Adapter(Coordinator(config), clock=self.clock, listener=self,
                               build_request=self._build_request, spawn=self._spawn, persist=self._persist)
        merged = merge_stores(stores)
        lost = [j for j in merged.jobs if j.kind == "capture"]  # their turns lived in a dead process
        for job in lost:
            self.client.log(LOG_WARNING, f"cairn: {job.id} capture lost its turn on restart ({ErrorCode.CAPTURE_STATE})")
        merged = codec.evolve(merged, jobs=tuple(j for j in merged.jobs if j.kind != "capture"))
        self.adapter.restart(merged)
        for ws in self._order:
            self._workspace_started(ws)
        self._started.set()
        deferred, self._deferred = self._deferred, []
        for call in deferred:  # in arrival order, before anything that arrives from now on
            call()

    def _own_store(self, ws: str) -> bool:
        """Take the per-workspace job-store lock (blocking I/O: call in a thread).

        One server process at a time persists a workspace's job store; a
        second editor's server on the same workspace runs with an in-memory
        store. fasteners' process-level lock is exactly the semantics wanted
        here: ownership belongs to the server process and ends with it.
        """
        import fasteners
        from cairn.server.adapter import STORE_DIR

        try:
            with PinnedDir.open_root(ws) as root, root.descend(STORE_DIR, create=True):
                pass
        except CairnError:
            return False
        lock = fasteners.InterProcessLock(os.path.join(ws, STORE_DIR, "jobs.lock"))
        if not lock.acquire(blocking=False):
            return False
        self._store_locks[ws] = lock
        return True

    def _persist(self, ws: str, data: bytes) -> None:
        if ws in self._store_locks:
            write_store(ws, data)

    async def shutdown(self, grace: float = SHUTDOWN_GRACE) -> None:
        if self._seal_timer is not None:
            self._seal_timer.cancel()
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

    # ------------------------------------------------------------ workspaces and settings

    def _add_workspace(self, path: str) -> None:
        path = os.path.normpath(os.path.abspath(path))
        if path not in self.workspaces:
            self.workspaces[path] = WorkspaceState(path)
            self._order.append(path)

    async def _load_settings(self, ws: str) -> None:
        from cairn.worker.config import load, unreported

        settings, warnings = await asyncio.to_thread(load, ws, self._editor_options)
        self.workspaces[ws].settings = settings
        for w in unreported(warnings):
            self.client.log(LOG_WARNING, f"cairn: {ws}: {w}")

    def _workspace_started(self, ws: str) -> None:
        """A workspace joins: one recovery pass (recovery before replacement), then a snapshot;
        digest work is offered only when the snapshot shows some (no debt, no pass)."""
        self._submit(Enqueue(ws, "recover"))
        task = asyncio.ensure_future(self._first_snapshot(ws))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _first_snapshot(self, ws: str) -> None:
        await self._refresh_now(ws)
        journal = self.workspaces[ws].journal if ws in self.workspaces else {}
        if journal.get("pending", 0) or journal.get("retryWaiting", 0):
            self._submit(Notify(ws, ("process",)))

    async def change_configuration(self, settings: Any) -> None:
        """Layer changed settings over initializationOptions (an empty change keeps them).

        Editors send ``{"settings": {}}`` right after connecting (eglot, Neovim);
        replacing the options with that would silently drop every
        initializationOption. Changes apply in arrival order (one at a time).
        """
        opts = _options(settings)
        if isinstance(opts.get("cairn"), dict):
            opts = opts["cairn"]
        async with self._config_lock:
            self._editor_options = {**self._editor_options, **opts}
            for ws in list(self._order):
                await self._load_settings(ws)
            self._arm_seal_timer()

    async def change_folders(self, added: list[str], removed: list[str]) -> None:
        for path in removed:
            path = os.path.normpath(os.path.abspath(path))
            if path in self.workspaces and len(self._order) > 1:
                self._order.remove(path)
                del self.workspaces[path]
        for path in added:
            path = os.path.normpath(os.path.abspath(path))
            if path not in self.workspaces:
                self._add_workspace(path)
                await self._load_settings(path)
                if self.adapter is not None:
                    self._workspace_started(path)

    def workspace(self, given: Any) -> str:
        """The workspace a request names (path or file URI, or a path inside one); default the first."""
        if not self._order:
            raise ServiceError(ErrorCode.WORKSPACE_INVALID, "no workspace folder is open")
        if given in (None, ""):
            return self._order[0]
        if not isinstance(given, str):
            raise ServiceError(ErrorCode.WORKSPACE_INVALID, "workspace must be a path or file URI")
        path = memory_docs.uri_to_path(given) if given.startswith("file:") else os.path.normpath(os.path.abspath(given))
        if path is not None:
            matches = [ws for ws in self._order if path == ws or path.startswith(ws + os.sep)]
            if matches:
                return max(matches, key=len)
        raise ServiceError(ErrorCode.WORKSPACE_INVALID, "not one of the server's workspace folders")

    # ------------------------------------------------------------ editor notifications

    def turn_completed(self, params: dict[str, Any]) -> str:
        """``cairn/turnCompleted``: queue a capture job; the turn text stays in memory only."""
        ws = self.workspace(params.get("workspace"))
        try:
            sid, tid = _text(params, "sessionId"), _text(params, "turnId")
            turn = {
                "turn_id": tid,
                "parent_turn_id": params.get("parentTurnId"),
                "user": _text(params, "user", allow_empty=True),
                "assistant": _text(params, "assistant", allow_empty=True),
                "completed_at": _text(params, "completedAt"),
            }
        except ValueError as exc:
            raise ServiceError(ErrorCode.USAGE, f"cairn/turnCompleted: {exc}") from None
        adapter = self._need_adapter()
        self._submit(TurnActive(ws, True))  # a capture is pending: drains wait for it
        args = {"session": sid, "turn": tid}
        self._submit(Enqueue(ws, "capture", args))
        job = adapter.coordinator.lookup(ws, "capture", args)
        if job is not None:
            self._payloads[job.id] = TurnPayload(sid, turn)
        state = self.workspaces[ws]
        state.sessions[sid] = SessionInfo(self.clock.now())
        self._arm_seal_timer()
        return job.id if job else ""

    def session_event(self, params: dict[str, Any]) -> None:
        """``cairn/sessionEvent``: seal the session's capture at this boundary."""
        ws = self.workspace(params.get("workspace"))
        try:
            sid, kind = _text(params, "sessionId"), _text(params, "kind")
        except ValueError as exc:
            raise ServiceError(ErrorCode.USAGE, f"cairn/sessionEvent: {exc}") from None
        if kind not in SESSION_EVENT_KINDS:
            raise ServiceError(ErrorCode.USAGE, f"cairn/sessionEvent: kind must be one of {', '.join(SESSION_EVENT_KINDS)}")
        self._submit(Enqueue(ws, "seal", {"session": sid, "trigger": kind}))
        if kind == "session-end":
            self.workspaces[ws].sessions.pop(sid, None)
        else:
            info = self.workspaces[ws].sessions.get(sid)
            if info is not None:
                info.idle_sealed = True  # sealed now; a new turn opens a new capture
        self._arm_seal_timer()

    def idle(self, params: dict[str, Any]) -> bool:
        """``cairn/idle``: one maintenance opportunity once the editor has been idle long enough."""
        seconds = params.get("seconds", 0)
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
            raise ServiceError(ErrorCode.USAGE, "cairn/idle: seconds must be a number >= 0")
        due = [ws for ws in self._order if seconds >= self.workspaces[ws].settings.idleMinutes * 60.0]
        if not due:
            return False
        self._submit(Idle(float(seconds), tuple(due)))
        return True

    # ------------------------------------------------------------ idle sealing

    def _arm_seal_timer(self) -> None:
        if self._seal_timer is not None:
            self._seal_timer.cancel()
            self._seal_timer = None
        due = [info.last_turn + self.workspaces[ws].settings.sealIdleMinutes * 60.0
               for ws in self._order for info in self.workspaces[ws].sessions.values() if not info.idle_sealed]
        if due:
            self._seal_timer = self.clock.call_at(min(due), self._seal_idle)

    def _seal_idle(self) -> None:
        """Quiet long enough after a session's last completed turn: enqueue ``seal-idle`` for its workspace."""
        self._seal_timer = None
        now = self.clock.now()
        for ws in self._order:
            state = self.workspaces[ws]
            quiet = state.settings.sealIdleMinutes * 60.0
            ripe = [info for info in state.sessions.values() if not info.idle_sealed and now - info.last_turn >= quiet]
            if ripe:
                for info in ripe:
                    info.idle_sealed = True
                self._submit(Enqueue(ws, "seal-idle", {"quiet_seconds": f"{quiet:g}"}))
        self._arm_seal_timer()

    # ------------------------------------------------------------ requests

    def status(self, params: dict[str, Any]) -> dict[str, Any]:
        """``cairn/status``: integer counts from memory (see docs/lsp.md for the merge)."""
        ws = self.workspace(params.get("workspace"))
        state = self.workspaces[ws]
        jobs = {"pending": 0, "running": 0, "retryWaiting": 0, "attention": 0, "exhausted": 0}
        turns = 0
        if self.adapter is not None:
            for job in self.adapter.coordinator.store.jobs:
                if job.workspace != ws:
                    continue
                key = {JobState.IDLE: "pending", JobState.RUNNING: "running",
                       JobState.RETRY_WAITING: "retryWaiting", JobState.ATTENTION: "attention",
                       JobState.EXHAUSTED: "exhausted"}.get(job.state)
                if key:
                    jobs[key] += 1
                if job.kind == "capture" and job.state not in HELD_STATES and job.state is not JobState.DISMISSED:
                    turns += 1
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
                   refreshed=state.refreshed, draining=state.drain is not None)
        return out

    def jobs(self, params: dict[str, Any] | None = None) -> dict[str, Any]:
        adapter = self._need_adapter()
        snap = adapter.coordinator.snapshot(self.clock.now())
        for row in (*snap["jobs"], *snap["dismissed"]):
            row.pop("checkpoint", None)
        return snap

    async def cockpit(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        ws = self.workspace(params.get("workspace"))
        view = params.get("view")
        if view not in COCKPIT_VIEWS:
            raise ServiceError(ErrorCode.USAGE, f"cairn/cockpit: view must be one of {', '.join(COCKPIT_VIEWS)}")
        fn = _memory_view("cockpit")
        if fn is None:
            return []
        return list(await asyncio.to_thread(fn, ws, view, self.workspaces[ws].settings))

    async def proposal(self, params: dict[str, Any]) -> dict[str, Any]:
        ws = self.workspace(params.get("workspace"))
        pid = params.get("id")
        if not isinstance(pid, str) or not pid:
            raise ServiceError(ErrorCode.USAGE, "cairn/proposal: id is required")
        fn = _memory_view("proposal")
        if fn is None:
            raise ServiceError(ErrorCode.NOT_FOUND, f"no proposal {pid[:40]}")
        try:
            return dict(await asyncio.to_thread(fn, ws, pid, self.workspaces[ws].settings))
        except CairnError as exc:
            raise ServiceError(exc.code, exc.message) from None

    # ------------------------------------------------------------ commands

    async def execute(self, command: str, arguments: list[Any]) -> Any:
        arg = _options(arguments[0]) if arguments else {}
        if command == CMD_DIAGNOSTIC_REPORT:
            return self._need_adapter().coordinator.diagnostic_report(self.clock.now())
        if command == CMD_DISMISS and arg.get("clearHistory") is True:
            self._submit(ClearHistory())
            return {"cleared": True}
        job_id = arg.get("jobId")
        if command in (CMD_RETRY, CMD_DISCARD, CMD_DISMISS) and job_id is not None:
            event = {CMD_RETRY: Retry, CMD_DISCARD: Discard, CMD_DISMISS: Dismiss}[command](str(job_id))
            job = self._need_adapter().coordinator.job(str(job_id))
            self._submit(event)
            if command == CMD_DISCARD and job is not None:
                self._payloads.pop(job.id, None)
                self._turn_settled(job.workspace)
            if job is not None:
                self._refresh(job.workspace)
            return {"jobId": job_id, "done": True}
        ws = self.workspace(arg.get("workspace"))
        if command == CMD_DRAIN:
            return await self._drain(ws)
        if command in (CMD_REVIEW, CMD_CLEANUP):
            kind = "review" if command == CMD_REVIEW else "cleanup"
            args = {"explicit": "1"} if kind == "review" else {}
            self._submit(Enqueue(ws, kind, args))
            job = self._need_adapter().coordinator.lookup(ws, kind, args)
            return {"workspace": ws, "jobId": job.id if job else None}
        if command in (CMD_ACCEPT, CMD_REJECT):
            ids = arg.get("ids") or ([arg["id"]] if isinstance(arg.get("id"), str) else [])
            if not ids or not all(isinstance(i, str) and i for i in ids):
                raise ServiceError(ErrorCode.USAGE, f"{command}: ids (a list of proposal ids) is required")
            if command == CMD_ACCEPT:
                await self._check_live_buffers(ws, ids)
            kind = "accept" if command == CMD_ACCEPT else "reject"
            return await self._foreground(ws, kind, {"ids": list(ids)})
        if command == CMD_UNDO:
            pid = arg.get("id")
            if not isinstance(pid, str) or not pid:
                raise ServiceError(ErrorCode.USAGE, f"{command}: id is required")
            return await self._foreground(ws, "undo", {"id": pid})
        if command in (CMD_RETRY, CMD_DISCARD):
            capture = arg.get("capture")
            if not isinstance(capture, str) or not capture:
                raise ServiceError(ErrorCode.USAGE, f"{command}: jobId or capture is required")
            kind = "retry" if command == CMD_RETRY else "discard"
            result = await self._foreground(ws, kind, {"capture": capture})
            self._reported_captures.discard(capture)
            if kind == "retry":
                self._submit(Notify(ws, ("process",)))
            return result
        if command == memory_docs.CMD_SHOW_PROPOSAL:
            return await self.proposal({"workspace": ws, "id": arg.get("id")})
        raise ServiceError(ErrorCode.USAGE, f"unknown or incomplete command {command[:60]}")

    async def _foreground(self, ws: str, kind: str, args: dict[str, Any]) -> dict[str, Any]:
        """An editor decision: one worker now (serialised per workspace), then fresh views."""
        state = self.workspaces[ws]
        request = WorkerRequest(job=kind, workspace=ws, args=args, deadline=time.time() + FOREGROUND_BUDGET,
                                job_id=f"fg-{uuid.uuid4().hex[:12]}", config=_config(state.settings))
        async with state.foreground:
            result = await run_worker(request, timeout=FOREGROUND_BUDGET + 5.0, env=self._env(kind))
        self._log_result(request.job_id, kind, result)
        await self._refresh_now(ws)
        if kind in PROPOSAL_KINDS:
            await self.republish(ws)
        if result.status is not WorkerStatus.OK:
            raise ServiceError(result.error or ErrorCode.INTERNAL, f"{kind} {result.status}: {result.message}"[:200])
        return {"workspace": ws, "status": str(result.status), "result": result.result}

    async def _check_live_buffers(self, ws: str, ids: list[str]) -> None:
        """Live buffers win: never write under an open document with unsaved changes."""
        for uri, (doc_ws, proposals) in self._open_docs.items():
            if doc_ws != ws or not any(p.get("id") in ids for p in proposals):
                continue
            text = self.client.document_text(uri)
            path = memory_docs.uri_to_path(uri)
            if text is None or path is None:
                continue
            on_disk = await asyncio.to_thread(_read_text, path)
            if on_disk is not None and text != on_disk:
                raise ServiceError(ErrorCode.PROPOSAL_STALE,
                                   f"{os.path.basename(path)} has unsaved changes; save it, then accept again")

    async def _drain(self, ws: str) -> dict[str, Any]:
        """Process every sealed capture, then drain the review backlog, with work-done progress."""
        state = self.workspaces[ws]
        if state.drain is None:
            state.drain = DrainRun(token=None)
            self._submit(Enqueue(ws, "process"))
            self._submit(Drain(ws))
            state.drain.token = await self.client.progress_begin("cairn: draining backlog",
                                                                 f"{state.journal.get('pending', 0)} pending")
            self._check_drain_done(ws)
        adapter = self._need_adapter()
        jobs = [j.id for k in DRAIN_KINDS if (j := adapter.coordinator.lookup(ws, k)) is not None]
        return {"workspace": ws, "jobIds": jobs, "progress": state.drain.token if state.drain else None}

    def _check_drain_done(self, ws: str) -> None:
        state = self.workspaces[ws]
        run = state.drain
        if run is None or self.adapter is None:
            return
        live = [j for k in DRAIN_KINDS if (j := self.adapter.coordinator.lookup(ws, k)) is not None]
        failed = [j for j in live if j.state in (JobState.RETRY_WAITING, *HELD_STATES)]
        if not failed and any(j.state in (JobState.IDLE, JobState.RUNNING) for j in live):
            return
        # done, or a part failed (its retry runs later, without this progress): say which job waits
        state.drain = None
        message = f"published {run.published}, proposals {run.proposals}"
        if failed:
            message += "; not finished: " + ", ".join(f"{j.id} {j.kind} {j.state} {j.last_error or ''}".rstrip()
                                                        for j in failed)
        if run.token:
            self.client.progress_end(run.token, message)

    # ------------------------------------------------------------ documents

    async def did_open(self, uri: str) -> None:
        await self._document_changed(uri)

    async def did_save(self, uri: str) -> None:
        await self._document_changed(uri)

    def did_close(self, uri: str) -> None:
        if self._open_docs.pop(uri, None) is not None:
            self.client.publish_diagnostics(uri, [])

    async def _document_changed(self, uri: str) -> None:
        found = self._memory_document(uri)
        if found is None:
            return
        ws, path = found
        proposals = await self._pending_for(ws, path)
        self._open_docs[uri] = (ws, proposals)
        self._publish(uri, proposals)

    def _memory_document(self, uri: str) -> tuple[str, str] | None:
        path = memory_docs.uri_to_path(uri)
        if path is None:
            return None
        for ws in sorted(self._order, key=len, reverse=True):
            if memory_docs.is_memory_document(path, ws, self.workspaces[ws].settings):
                return ws, path
        return None

    async def _pending_for(self, ws: str, path: str) -> list[dict[str, Any]]:
        fn = _memory_view("pending_for_file")
        if fn is None:
            return []
        try:
            return list(await asyncio.to_thread(fn, ws, path, self.workspaces[ws].settings))
        except CairnError as exc:
            self.client.log(LOG_WARNING, f"cairn: pending proposals unreadable ({exc.code})")
            return []

    def _publish(self, uri: str, proposals: list[dict[str, Any]]) -> None:
        text = self.client.document_text(uri)
        lines = len(text.splitlines()) if text else 0
        self.client.publish_diagnostics(uri, memory_docs.diagnostics(proposals, lines))

    async def republish(self, ws: str | None = None) -> None:
        """Proposals changed: refresh diagnostics of every open memory document (of ``ws``)."""
        for uri, (doc_ws, _) in list(self._open_docs.items()):
            if ws is None or doc_ws == ws:
                await self._document_changed(uri)

    async def code_actions(self, uri: str, start_line: int, end_line: int) -> list[dict[str, Any]]:
        found = self._memory_document(uri)
        if found is None:
            return []
        ws, path = found
        cached = self._open_docs.get(uri)
        proposals = cached[1] if cached else await self._pending_for(ws, path)
        return memory_docs.code_actions(ws, memory_docs.overlapping(proposals, start_line, end_line))

    # ------------------------------------------------------------ adapter listener

    def worker_started(self, start: StartWorker, pid: int) -> None:
        self.client.log(LOG_LOG, f"cairn: {start.job_id} {start.kind} started (pid {pid})")

    def worker_finished(self, start: StartWorker, result: RunResult) -> None:
        ws = start.workspace
        if start.kind == "capture":
            if result.status is WorkerStatus.OK:
                self._payloads.pop(start.job_id, None)
            self._turn_settled(ws)
        if result.status is WorkerStatus.OK:
            sealed = result.result.get("sealed")
            if start.kind in ("seal", "seal-idle") and sealed:
                self._submit(Notify(ws, ("process",)))
            exhausted = [c for c in result.result.get("exhausted") or [] if isinstance(c, str)]
            fresh = [c for c in exhausted if c not in self._reported_captures]
            if fresh:
                self._reported_captures.update(fresh)
                self.client.show(LOG_WARNING, f"cairn: {len(fresh)} capture(s) used all their attempts "
                                 f"({', '.join(fresh[:5])}); run cairn.retry or cairn.discard")
        state = self.workspaces.get(ws)
        if state is not None and state.drain is not None and start.kind in DRAIN_KINDS:
            run = state.drain
            run.jobs += 1
            run.published += int(result.result.get("published", 0) or 0) if result.status is WorkerStatus.OK else 0
            run.proposals += int(result.result.get("proposals", 0) or 0) if result.status is WorkerStatus.OK else 0
        task = asyncio.ensure_future(self._after_job(start, result))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _after_job(self, start: StartWorker, result: RunResult) -> None:
        """Fresh snapshot first, then tell the editor: a log line means status is current."""
        ws = start.workspace
        if ws in self.workspaces:
            await self._refresh_now(ws)
            if start.kind in PROPOSAL_KINDS:
                await self.republish(ws)
            state = self.workspaces[ws]
            if state.drain is not None and start.kind in DRAIN_KINDS and state.drain.token:
                remaining = result.result.get("remaining")
                pending = state.journal.get("pending", 0)
                msg = f"{start.kind}: published {state.drain.published}, {pending} pending"
                pct = None
                if isinstance(remaining, int) and state.drain.published + remaining > 0:
                    pct = int(100 * state.drain.published / (state.drain.published + remaining))
                self.client.progress_report(state.drain.token, msg, pct)
            self._check_drain_done(ws)
        self._log_result(start.job_id, start.kind, result)

    def report(self, report: Report) -> None:
        self.client.show(LOG_WARNING, f"cairn: maintenance job {report.job_id} is {report.kind}"
                         + (f" ({report.code})" if report.code else "")
                         + "; run cairn.retry, cairn.discard or cairn.dismiss")

    def _turn_settled(self, ws: str) -> None:
        if self.adapter is None:
            return
        waiting = [j for j in self.adapter.coordinator.store.jobs
                   if j.workspace == ws and j.kind == "capture" and j.state not in HELD_STATES
                   and j.state is not JobState.DISMISSED]
        if not waiting:
            self._submit(TurnActive(ws, False))

    def _log_result(self, job_id: str, kind: str, result: RunResult) -> None:
        counts = " ".join(f"{k}={len(v) if isinstance(v, list) else v}" for k, v in sorted(result.result.items())
                          if isinstance(v, (int, list)) and not isinstance(v, bool))
        code = f" {result.error}" if result.error else ""
        level = LOG_INFO if result.status in (WorkerStatus.OK, WorkerStatus.BUSY) else LOG_WARNING
        self.client.log(level, f"cairn: {job_id} {kind} {result.status}{code}" + (f" {counts}" if counts else ""))

    # ------------------------------------------------------------ snapshots

    def _refresh(self, ws: str) -> asyncio.Task[None]:
        """Re-read journal counts in a thread; concurrent calls coalesce into one more read."""
        state = self.workspaces[ws]
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
                try:
                    state.journal = await asyncio.to_thread(_journal_status, ws)
                    state.refreshed = self.clock.now()
                    state.refreshed_at = time.monotonic()
                except (CairnError, OSError) as exc:
                    code = exc.code if isinstance(exc, CairnError) else ErrorCode.IO_FAILED
                    self.client.log(LOG_WARNING, f"cairn: status of {ws} unreadable ({code})")
                if not state.refresh_again:
                    return

        state.refresh_task = asyncio.ensure_future(run())
        return state.refresh_task

    async def _refresh_now(self, ws: str) -> None:
        """A refresh that starts after this call (so it sees everything done so far)."""
        task = self._refresh(ws)
        await task
        if self.workspaces[ws].refresh_again:
            await self._refresh(ws)

    # ------------------------------------------------------------ workers

    def _build_request(self, start: StartWorker, deadline: float) -> WorkerRequest:
        state = self.workspaces.get(start.workspace)
        settings = state.settings if state else Settings()
        args: dict[str, Any] = dict(start.args)
        if start.kind == "capture":
            payload = self._payloads.get(start.job_id)
            args = {"session_id": start.args.get("session", ""), "source": "lsp",
                    "turn": payload.turn if payload else {}}
        elif start.kind == "seal":
            args = {"session_id": start.args.get("session"), "trigger": start.args.get("trigger", "session-end")}
        elif start.kind == "seal-idle":
            args = {"quiet_seconds": float(start.args.get("quiet_seconds", settings.sealIdleMinutes * 60.0))}
        elif start.kind == "review":
            # idle-offered reviews are automatic (capped per day); cairn.review is explicit
            args = {"automatic": start.args.get("explicit") != "1"}
        elif start.kind == "process" and "max" in start.args:
            args = {"max": int(start.args["max"])}
        return WorkerRequest(job=start.kind, workspace=start.workspace, args=args, deadline=deadline,
                             job_id=start.job_id, config=_config(settings))

    def _env(self, kind: str) -> dict[str, str]:
        extra: dict[str, str] = {}
        if self._crash_once:
            want, _, at = self._crash_once.partition(":")
            if want == kind and at.isdigit():
                extra["CAIRN_CRASH_AT"] = at
                self._crash_once = ""
        return worker_env(extra, base=self._base_env)

    async def _spawn(self, request: WorkerRequest) -> WorkerProcess:
        return await WorkerProcess.start(request, env=self._env(request.job))

    def _submit(self, event: Any) -> None:
        adapter = self._need_adapter()
        try:
            adapter.submit(event)
        except CairnError as exc:
            raise ServiceError(exc.code, exc.message) from None

    def _need_adapter(self) -> Adapter:
        if self.adapter is None:
            raise ServiceError(ErrorCode.USAGE, "the server is not initialized yet")
        return self.adapter

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

    def stored_store(self) -> JobStore | None:
        return self.adapter.coordinator.store if self.adapter else None


# ---------------------------------------------------------------- helpers


def _options(obj: Any) -> dict[str, Any]:
    """Plain dicts from whatever the LSP library handed over (dict, namedtuple, attrs)."""
    plain = to_plain(obj)
    return plain if isinstance(plain, dict) else {}


def to_plain(obj: Any) -> Any:
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    if isinstance(obj, dict):
        return {str(k): to_plain(v) for k, v in obj.items()}
    if hasattr(obj, "_asdict"):
        return {k: to_plain(v) for k, v in obj._asdict().items()}
    if attrs.has(type(obj)):
        return {k: to_plain(v) for k, v in attrs.asdict(obj, recurse=False).items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    return obj


def _text(params: dict[str, Any], name: str, *, allow_empty: bool = False) -> str:
    value = params.get(name)
    if not isinstance(value, str) or (not value and not allow_empty):
        raise ValueError(f"{name} must be a {'string' if allow_empty else 'non-empty string'}")
    return value


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError):
        return None


def _config(settings: Settings) -> dict[str, Any]:
    from cairn.worker.config import to_dict

    return to_dict(settings)
