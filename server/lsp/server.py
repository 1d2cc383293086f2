"""The pygls language server: each LSP method registered once, fanned out to the service.

The cairn methods come from the service's routing tables
(:data:`server.lsp.service.NOTIFICATIONS`, :data:`~server.lsp.service.REQUESTS`
and :data:`server.lsp.features.commands.COMMANDS`): one registration per name,
each handing plain JSON to :class:`server.lsp.service.CairnService`, which
structures and checks it. The standard methods (lifecycle, workspace
folders, configuration, documents, code actions) convert pygls' typed
parameters and call the service or its features. Errors take one shape,
made in :mod:`server.lsp.protocol`.

stdout is the protocol: nothing here prints, and pygls' own loggers are kept
at WARNING without arguments (they log every message at INFO).
"""

from __future__ import annotations

import asyncio
import gc
import sys
import threading
import uuid
from typing import Any, BinaryIO

import attrs
from cairn.protocol.lsp import CONTRACT_VERSION
from cairn.server import __version__
from cairn.server.lsp import memory_docs
from cairn.server.lsp import stdio as lsp_stdio
from cairn.server.lsp.features.commands import COMMANDS
from cairn.server.lsp.protocol import CairnProtocol, quiet_pygls_logs
from cairn.server.lsp.protocol import log as protocol_log
from cairn.server.lsp.service import NOTIFICATIONS, REQUESTS, CairnService
from cairn.worker.redaction.redact import redact_text
from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

VERSION = __version__
_TYPES = {1: lsp.MessageType.Error, 2: lsp.MessageType.Warning, 3: lsp.MessageType.Info, 4: lsp.MessageType.Log}


class CairnLanguageServer(LanguageServer):
    """The server; its :attr:`service` serves the one connection."""

    def __init__(self) -> None:
        super().__init__("cairn", VERSION, protocol_cls=CairnProtocol)
        self.service = CairnService(_PyglsClient(self))
        #: whether SIGHUP, SIGTERM and SIGINT end the session (``stdio.stop_on_signals``) rather than the process
        self.stops_on_signals = False

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """Serve over stdio: :mod:`server.lsp.stdio` when stdin is a stream, else pygls' reader."""
        source = stdin or sys.stdin.buffer
        if not lsp_stdio.is_stream(source):
            super().start_io(stdin, stdout)
            return
        self._stop_event = stop = threading.Event()
        self.stops_on_signals = True  # lsp_stdio.serve takes them: the end of input's path
        try:
            asyncio.run(lsp_stdio.serve(source, stdout or sys.stdout.buffer, self.protocol, stop,
                                        self.report_server_error))
        except BrokenPipeError:
            protocol_log.error("connection to the client lost; shutting down")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()

    def end_session(self) -> None:
        """On pygls' transports: end the session as the client leaving does (a TCP connection closed: its
        reader sees the end of input, then pygls shuts down), else stop pygls' reading loop."""
        transport = getattr(getattr(self.protocol, "writer", None), "transport", None)
        if isinstance(transport, asyncio.BaseTransport):
            transport.close()
        else:
            self.shutdown()

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Errors outside a request (an unreadable message, a failed notification): stderr only."""
        protocol_log.error("server error (%s)", type(error).__name__)


class _PyglsClient:
    """:class:`server.lsp.features.context.Client` over a pygls server."""

    def __init__(self, server: CairnLanguageServer) -> None:
        self._server = server

    def log(self, level: int, message: str) -> None:
        self._server.window_log_message(lsp.LogMessageParams(type=_TYPES.get(level, lsp.MessageType.Log),
                                                             message=redact_text(message)))

    def show(self, level: int, message: str) -> None:
        self._server.window_show_message(lsp.ShowMessageParams(type=_TYPES.get(level, lsp.MessageType.Info),
                                                               message=redact_text(message)))

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


def to_plain(obj: Any) -> Any:
    """Plain JSON values from what pygls hands over (dicts, its attribute objects, attrs records)."""
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


def _object(value: Any) -> dict[str, Any]:
    plain = to_plain(value)
    return plain if isinstance(plain, dict) else {}


def build_server() -> CairnLanguageServer:
    """A fresh server with every cairn method registered."""
    quiet_pygls_logs()
    server = CairnLanguageServer()

    # -- lifecycle, workspaces, settings

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: CairnLanguageServer, params: lsp.InitializeParams) -> None:
        if not ls.stops_on_signals:  # pygls' own transports (--tcp, a regular file as stdin): before any worker
            lsp_stdio.stop_on_signals(asyncio.get_running_loop(), threading.Event(), ls.end_session)
            ls.stops_on_signals = True
        ls.service.configure(_folders(params), _object(params.initialization_options))

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
        await ls.service.change_configuration(_object(params.settings))

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def did_change_folders(ls: CairnLanguageServer, params: lsp.DidChangeWorkspaceFoldersParams) -> None:
        await ls.service.wait_started()
        added = [p for f in params.event.added if (p := memory_docs.uri_to_path(f.uri))]
        removed = [p for f in params.event.removed if (p := memory_docs.uri_to_path(f.uri))]
        await ls.service.change_folders(added, removed)

    # -- cairn notifications: synchronous, so they take effect in the order the editor sent them
    # (the service's start gate keeps that order across startup); refusals are logged

    def _notification(method: str) -> None:
        @server.feature(method)
        def handle(ls: CairnLanguageServer, params: Any) -> None:
            ls.service.notify(method, to_plain(params))

    # -- cairn requests and commands: the result, or an error with a fixed code

    def _request(method: str) -> None:
        @server.feature(method)
        async def handle(ls: CairnLanguageServer, params: Any) -> Any:
            return await ls.service.request(method, to_plain(params))

    def _command(name: str) -> None:
        @server.command(name)
        async def run(ls: CairnLanguageServer, *args: Any) -> Any:
            return await ls.service.execute(name, [to_plain(a) for a in args])

    for method in NOTIFICATIONS:
        _notification(method)
    for method in REQUESTS:
        _request(method)
    for name in COMMANDS:
        _command(name)
    protocol = server.protocol
    assert isinstance(protocol, CairnProtocol)
    protocol.plain_methods = frozenset(NOTIFICATIONS) | frozenset(REQUESTS)
    protocol.notify_plain = server.service.notify  # parameters straight from JSON: plain already

    # -- memory documents

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: CairnLanguageServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.service.documents.opening(params.text_document.uri)  # before any wait: a decision may come next
        await ls.service.wait_started()
        await ls.service.documents.did_open(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: CairnLanguageServer, params: lsp.DidSaveTextDocumentParams) -> None:
        await ls.service.wait_started()
        await ls.service.documents.did_save(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: CairnLanguageServer, params: lsp.DidCloseTextDocumentParams) -> None:
        ls.service.documents.did_close(params.text_document.uri)

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.Source]),
    )
    async def code_action(ls: CairnLanguageServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        await ls.service.wait_started()
        rows = await ls.service.documents.code_actions(params.text_document.uri, params.range.start.line,
                                                       params.range.end.line)
        return [
            lsp.CodeAction(
                title=row["title"],
                kind=lsp.CodeActionKind(row["kind"]),
                command=lsp.Command(title=row["command"]["title"], command=row["command"]["command"],
                                    arguments=row["command"]["arguments"]),
                is_preferred=row.get("isPreferred"),
            )
            for row in rows
        ]

    return server
