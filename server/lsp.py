"""The pygls language server: one registration per LSP method, all state on the server object.

Each handler converts pygls' parameter objects to plain dicts and forwards
to :class:`server.lsp_service.CairnService`, which holds the behaviour (see
``docs/lsp.md`` for the contract). Refusals become JSON-RPC errors whose
message starts with the fixed code and whose ``data`` is ``{"code": …}``.

stdout is the protocol: nothing here prints, and pygls' own loggers are kept
at WARNING (they log every message at INFO).
"""

from __future__ import annotations

import gc
import logging
import uuid
from typing import Any

from cairn.protocol.lsp import (
    COCKPIT,
    COMMANDS,
    CONTRACT_VERSION,
    IDLE,
    JOBS,
    PROPOSAL,
    SESSION_EVENT,
    STATUS,
    TURN_COMPLETED,
)
from cairn.server import memory_docs
from cairn.server.lsp_service import CairnService, ServiceError, to_plain
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer

VERSION = "0.1.0"
_TYPES = {1: lsp.MessageType.Error, 2: lsp.MessageType.Warning, 3: lsp.MessageType.Info, 4: lsp.MessageType.Log}


class CairnError(JsonRpcException):
    """A refused request; ``data.code`` is the fixed cairn error code."""

    CODE = -32602


def _error(exc: ServiceError) -> CairnError:
    return CairnError(message=f"{exc.code}: {exc.message}", data={"code": exc.code})


class CairnLanguageServer(LanguageServer):
    """The server; its :attr:`service` is created per connection in ``initialize``."""

    def __init__(self) -> None:
        super().__init__("cairn", VERSION)
        self.service = CairnService(_PyglsClient(self))


class _PyglsClient:
    """:class:`server.lsp_service.Client` over a pygls server."""

    def __init__(self, server: CairnLanguageServer) -> None:
        self._server = server

    def log(self, level: int, message: str) -> None:
        self._server.window_log_message(lsp.LogMessageParams(type=_TYPES.get(level, lsp.MessageType.Log),
                                                             message=message))

    def show(self, level: int, message: str) -> None:
        self._server.window_show_message(lsp.ShowMessageParams(type=_TYPES.get(level, lsp.MessageType.Info),
                                                               message=message))

    def publish_diagnostics(self, uri: str, diagnostics: list[dict[str, Any]]) -> None:
        items = [
            lsp.Diagnostic(
                range=lsp.Range(start=lsp.Position(**d["range"]["start"]), end=lsp.Position(**d["range"]["end"])),
                severity=lsp.DiagnosticSeverity(d["severity"]),
                source=d["source"], code=d["code"], message=d["message"],
            )
            for d in diagnostics
        ]
        self._server.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=items))

    def _progress_supported(self) -> bool:
        caps = self._server.client_capabilities
        return bool(caps and caps.window and caps.window.work_done_progress)

    async def progress_begin(self, title: str, message: str) -> str | None:
        if not self._progress_supported():
            return None
        token = str(uuid.uuid4())  # tokens are never released: always a fresh one
        try:
            await self._server.work_done_progress.create_async(token)
        except Exception:
            return None
        self._server.work_done_progress.begin(token, lsp.WorkDoneProgressBegin(title=title, message=message,
                                                                               cancellable=False))
        return token

    def progress_report(self, token: str, message: str, percentage: int | None) -> None:
        self._server.work_done_progress.report(token, lsp.WorkDoneProgressReport(message=message,
                                                                                 percentage=percentage))

    def progress_end(self, token: str, message: str) -> None:
        self._server.work_done_progress.end(token, lsp.WorkDoneProgressEnd(message=message))

    def document_text(self, uri: str) -> str | None:
        try:
            doc = self._server.workspace.text_documents.get(uri)
        except RuntimeError:
            return None
        return doc.source if doc is not None else None


def _folders(params: lsp.InitializeParams) -> list[str]:
    paths = []
    for folder in params.workspace_folders or []:
        path = memory_docs.uri_to_path(folder.uri)
        if path:
            paths.append(path)
    if not paths:
        root = params.root_uri and memory_docs.uri_to_path(params.root_uri)
        if root:
            paths.append(root)
        elif params.root_path:
            paths.append(params.root_path)
    return paths


def _plain(params: Any) -> dict[str, Any]:
    value = to_plain(params)
    return value if isinstance(value, dict) else {}


def build_server() -> CairnLanguageServer:
    """A fresh server with every cairn method registered."""
    for name in ("pygls", "pygls.protocol", "pygls.server", "pygls.feature_manager"):
        logging.getLogger(name).setLevel(logging.WARNING)
    server = CairnLanguageServer()

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: CairnLanguageServer, params: lsp.InitializeParams) -> None:
        ls.service.configure(_folders(params), to_plain(params.initialization_options))

    @server.feature(lsp.INITIALIZED)
    async def initialized(ls: CairnLanguageServer, params: lsp.InitializedParams) -> None:
        await ls.service.start()
        gc.collect()
        gc.freeze()  # startup objects leave the collector's view: shorter pauses later
        ls.service.client.log(4, f"cairn: server ready (contract v{CONTRACT_VERSION}, "
                                 f"{len(ls.service.workspaces)} workspace(s))")

    @server.feature(lsp.SHUTDOWN)
    async def shutdown(ls: CairnLanguageServer, params: Any) -> None:
        await ls.service.shutdown()

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: CairnLanguageServer, params: lsp.DidChangeConfigurationParams) -> None:
        await ls.service.wait_started()
        await ls.service.change_configuration(params.settings)

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def did_change_folders(ls: CairnLanguageServer, params: lsp.DidChangeWorkspaceFoldersParams) -> None:
        await ls.service.wait_started()
        added = [p for f in params.event.added if (p := memory_docs.uri_to_path(f.uri))]
        removed = [p for f in params.event.removed if (p := memory_docs.uri_to_path(f.uri))]
        await ls.service.change_folders(added, removed)

    # -- cairn notifications: refusals are logged (a notification has no reply)

    # synchronous handlers: pygls runs them as each message is read, so they take effect in the
    # order the editor sent them (service.when_started keeps that order across startup)

    def _notify(ls: CairnLanguageServer, method: str, fn: Any, params: Any) -> None:
        plain = _plain(params)

        def call() -> None:
            try:
                fn(plain)
            except ServiceError as exc:
                ls.service.client.log(1, f"cairn: {method} refused ({exc.code})")

        ls.service.when_started(call)

    @server.feature(TURN_COMPLETED)
    def turn_completed(ls: CairnLanguageServer, params: Any) -> None:
        _notify(ls, TURN_COMPLETED, ls.service.turn_completed, params)

    @server.feature(SESSION_EVENT)
    def session_event(ls: CairnLanguageServer, params: Any) -> None:
        _notify(ls, SESSION_EVENT, ls.service.session_event, params)

    @server.feature(IDLE)
    def idle(ls: CairnLanguageServer, params: Any) -> None:
        _notify(ls, IDLE, ls.service.idle, params)

    # -- cairn requests

    @server.feature(STATUS)
    async def status(ls: CairnLanguageServer, params: Any) -> dict[str, Any]:
        await ls.service.wait_started()
        try:
            return ls.service.status(_plain(params))
        except ServiceError as exc:
            raise _error(exc) from None

    @server.feature(JOBS)
    async def jobs(ls: CairnLanguageServer, params: Any) -> dict[str, Any]:
        await ls.service.wait_started()
        return ls.service.jobs(_plain(params))

    @server.feature(COCKPIT)
    async def cockpit(ls: CairnLanguageServer, params: Any) -> list[dict[str, Any]]:
        await ls.service.wait_started()
        try:
            return await ls.service.cockpit(_plain(params))
        except ServiceError as exc:
            raise _error(exc) from None

    @server.feature(PROPOSAL)
    async def proposal(ls: CairnLanguageServer, params: Any) -> dict[str, Any]:
        await ls.service.wait_started()
        try:
            return await ls.service.proposal(_plain(params))
        except ServiceError as exc:
            raise _error(exc) from None

    # -- commands

    def _register(name: str) -> None:
        @server.command(name)
        async def run(ls: CairnLanguageServer, *args: Any) -> Any:
            await ls.service.wait_started()
            try:
                return await ls.service.execute(name, [to_plain(a) for a in args])
            except ServiceError as exc:
                raise _error(exc) from None

    for name in (*COMMANDS, memory_docs.CMD_SHOW_PROPOSAL):
        _register(name)

    # -- documents

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: CairnLanguageServer, params: lsp.DidOpenTextDocumentParams) -> None:
        await ls.service.wait_started()
        await ls.service.did_open(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: CairnLanguageServer, params: lsp.DidSaveTextDocumentParams) -> None:
        await ls.service.wait_started()
        await ls.service.did_save(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: CairnLanguageServer, params: lsp.DidCloseTextDocumentParams) -> None:
        ls.service.did_close(params.text_document.uri)

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.Source]),
    )
    async def code_action(ls: CairnLanguageServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        await ls.service.wait_started()
        rows = await ls.service.code_actions(params.text_document.uri, params.range.start.line,
                                             params.range.end.line)
        return [
            lsp.CodeAction(
                title=row["title"],
                kind=lsp.CodeActionKind(row["kind"]),
                command=lsp.Command(title=row["command"]["title"], command=row["command"]["command"],
                                    arguments=row["command"]["arguments"]),
            )
            for row in rows
        ]

    return server
