"""How refusals and failures reach the editor: one error shape, never a traceback.

Every error reply of the server is a JSON-RPC error whose ``message`` starts
with a fixed cairn code and whose ``data`` is ``{"code": "E_…", "message":
"…"}`` (see ``docs/lsp.md``). The JSON-RPC ``code`` follows the code:
``E_METHOD_UNKNOWN`` is -32601 (method not found), ``E_INTERNAL`` -32603
(internal error), ``E_SHUT_DOWN`` -32600 (invalid request), every other
refusal -32602 (invalid params). Messages that cannot be read at all get
:func:`unattributed_error` from :mod:`server.lsp.stdio` (id ``null``).

:class:`CairnProtocol` is pygls' protocol with these points changed:

- a handler's exception becomes that shape (:func:`response_error`): a
  :class:`protocol.errors.CairnError` keeps its code; anything else is
  ``E_INTERNAL`` and only the request id and the exception's class name are
  logged (stderr), never its text or a traceback;
- a request before ``initialize`` answers ``ServerNotInitialized``
  (-32002, ``E_USAGE``) at once and runs nothing; a notification before it
  is dropped (``exit`` still ends the server), as LSP asks;
- a ``textDocument/didChange`` for a document that is not open is ignored
  (one stderr warning with ``E_USAGE``), not a ``KeyError``;
- a request after ``shutdown`` answers ``E_SHUT_DOWN`` at once, as LSP
  asks, instead of going unanswered (``exit``, a notification, still ends
  the server; other notifications are ignored);
- a request for a method the server does not have, and
  ``workspace/executeCommand`` of a command it does not have, answer
  ``E_METHOD_UNKNOWN`` (unknown notifications are ignored, as LSP allows);
- a request whose parameters do not fit the LSP type of its method answers
  ``E_USAGE`` instead of going unanswered;
- pygls' own error log lines keep their fixed text only (no arguments, no
  traceback): its arguments can hold request parameters, i.e. turn text;
- a cairn method's message (:attr:`CairnProtocol.plain_methods`) keeps its
  parameters as the plain JSON object the service structures anyway: pygls
  would turn every object into a freshly made named-tuple class first, which
  costs more than the handler itself in a burst of ``cairn/turnCompleted``;
  such a notification goes straight to :attr:`CairnProtocol.notify_plain`
  (pygls' dispatch checks each message against runtime protocols, which
  costs more again).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator
from typing import Any
from urllib.parse import unquote

import attrs
import pygls.io_  # noqa: F401  (creates the logger quiet_pygls_logs quiets)
from cairn.protocol.errors import CairnError, ErrorCode
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcMethodNotFound
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage, RPCRequest
from pygls.protocol.language_server import lsp_method

log = logging.getLogger("cairn.server.lsp.server")

_RPC_CODES = {ErrorCode.METHOD_UNKNOWN: -32601, ErrorCode.INTERNAL: -32603, ErrorCode.SHUT_DOWN: -32600}
PARSE_ERROR, INVALID_REQUEST = -32700, -32600
SERVER_NOT_INITIALIZED = -32002  # LSP's ServerNotInitialized: a request before ``initialize``


def response_error(exc: BaseException, where: object = "", *, rpc_code: int | None = None) -> lsp.ResponseError:
    """The JSON-RPC error for a handler's exception (see the module docstring); ``rpc_code`` overrides
    the JSON-RPC code the cairn code would give (``data.code`` stays the cairn code)."""
    if isinstance(exc, JsonRpcInvalidParams):
        exc = CairnError(ErrorCode.USAGE, "invalid parameters")
    elif isinstance(exc, JsonRpcMethodNotFound):
        exc = CairnError(ErrorCode.METHOD_UNKNOWN, "unknown method")
    if not isinstance(exc, CairnError):
        log.error("request %s failed (%s: %s)", where, ErrorCode.INTERNAL, type(exc).__name__)
        exc = CairnError(ErrorCode.INTERNAL, "internal error; the server log has the request id")
    code = rpc_code if rpc_code is not None else _RPC_CODES.get(exc.code, -32602)
    return lsp.ResponseError(code=code, message=f"{exc.code}: {exc.message}",
                             data={"code": str(exc.code), "message": exc.message})


def unattributed_error(rpc_code: int, error: CairnError) -> dict[str, Any]:
    """The reply to a message whose id cannot be known (JSON-RPC: id null), in the one error shape."""
    return {"jsonrpc": "2.0", "id": None,
            "error": {"code": rpc_code, "message": f"{error.code}: {error.message}",
                      "data": {"code": str(error.code), "message": error.message}}}


class _Quiet(logging.Filter):
    """Keep a pygls error line's fixed text; drop its arguments and traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING and (record.args or record.exc_info):
            record.msg = str(record.msg).split("\n", 1)[0].replace("%r", "…").replace("%s", "…")
            record.args, record.exc_info, record.exc_text = (), None, None
        return True


def quiet_pygls_logs() -> None:
    """pygls' loggers at WARNING (they log every message at INFO) and without arguments."""
    names = [n for n in logging.root.manager.loggerDict if n == "pygls" or n.startswith("pygls.")]
    for name in names:
        logger = logging.getLogger(name)
        logger.setLevel(logging.WARNING)
        if not any(isinstance(f, _Quiet) for f in logger.filters):
            logger.addFilter(_Quiet())


@attrs.frozen
class _Malformed:
    """A message whose parameters did not fit its method's LSP type."""

    id: Any
    method: str


def _is_request(message: Any) -> bool:
    """A request from the client (a method and an id; a malformed one included), not a notification or reply."""
    return isinstance(message, (_Malformed, RPCRequest)) and message.id is not None


class CairnProtocol(LanguageServerProtocol):
    plain_methods: frozenset[str] = frozenset()
    """Methods whose parameters reach their handler as plain JSON (set by :func:`server.lsp.server.build_server`)."""
    notify_plain: Callable[[str, Any], None] | None = None
    """Where a plain method's notification goes, past pygls' dispatch."""
    initialize_seen: bool = False
    """Whether ``initialize`` arrived: before it, requests are refused and notifications dropped."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        if "jsonrpc" not in data:
            return data
        method = data.get("method")
        if method in self.plain_methods and isinstance(data["jsonrpc"], str):
            if "id" not in data:
                return JsonRPCNotification(method=method, jsonrpc=data["jsonrpc"], params=data.get("params"))
            if isinstance(data["id"], (int, str)) and not isinstance(data["id"], bool):
                return JsonRPCRequestMessage(id=data["id"], method=method, jsonrpc=data["jsonrpc"],
                                             params=data.get("params"))
        try:
            return super().structure_message(data)
        except JsonRpcException:
            return _Malformed(id=data.get("id") if "method" in data else None, method=str(data.get("method", "")))

    def handle_message(self, message: Any) -> None:
        if not self.initialize_seen and not self._before_initialize(message):
            return
        if self._shutdown and _is_request(message) and message.method != lsp.EXIT:
            error = CairnError(ErrorCode.SHUT_DOWN, "the server is shut down; only exit is accepted")
            self._send_response(message.id, None, response_error(error))
            return
        if (type(message) is JsonRPCNotification and message.method in self.plain_methods
                and self.notify_plain is not None):
            if not self._shutdown:
                try:
                    self.notify_plain(message.method, message.params)
                except Exception as exc:  # the service handles its own; anything else: a code, no text
                    code = exc.code if isinstance(exc, CairnError) else ErrorCode.INTERNAL
                    log.error("notification failed (%s: %s)", code, type(exc).__name__)
            return
        if isinstance(message, _Malformed):
            log.warning("%s: malformed parameters (%s)", message.method[:60], ErrorCode.USAGE)
            if message.id is not None:
                error = CairnError(ErrorCode.USAGE, f"{message.method[:60]}: malformed parameters")
                self._send_response(message.id, None, response_error(error))
            return
        super().handle_message(message)

    def _before_initialize(self, message: Any) -> bool:
        """A message before ``initialize``: whether to handle it (LSP: a request is answered -32002 and
        nothing runs, a notification other than ``exit`` is dropped)."""
        method = getattr(message, "method", None)
        if method is None or method == lsp.EXIT:
            return True  # a reply (the server sends no request before initialize), or exit: as always
        if method == lsp.INITIALIZE and _is_request(message):
            self.initialize_seen = not isinstance(message, _Malformed)  # a malformed one is answered E_USAGE
            return True
        if _is_request(message):
            error = CairnError(ErrorCode.USAGE, "the server is not initialized; send initialize first")
            self._send_response(message.id, None, response_error(error, rpc_code=SERVER_NOT_INITIALIZED))
        return False

    def _handle_request(self, msg_id: Any, method_name: str, params: Any) -> None:
        if method_name not in self.fm.builtin_features and method_name not in self.fm.features:
            error = CairnError(ErrorCode.METHOD_UNKNOWN, f"the server has no method {method_name[:60]!r}")
            self._send_response(msg_id, None, response_error(error))
            return
        super()._handle_request(msg_id, method_name, params)

    def _send_handler_result(self, future: Any, *, msg_id: Any) -> None:
        if future.cancelled() or future.exception() is None:
            super()._send_handler_result(future, msg_id=msg_id)
            return
        self._request_futures.pop(msg_id, None)
        self._send_response(msg_id, None, response_error(future.exception(), msg_id))

    def _check_handler_result(self, future: Any) -> None:
        if not future.cancelled() and (exc := future.exception()) is not None:
            code = exc.code if isinstance(exc, CairnError) else ErrorCode.INTERNAL
            log.error("notification failed (%s: %s)", code, type(exc).__name__)

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: lsp.DidChangeTextDocumentParams) -> Generator[Any, Any, Any]:
        if unquote(params.text_document.uri) not in self.workspace.text_documents:
            # pygls would fail with a KeyError: a change to a document never opened (or closed) has nothing to
            # apply to; the server keeps no text of its own, so it is ignored
            log.warning("textDocument/didChange for a document that is not open; ignored (%s)", ErrorCode.USAGE)
            return None
        return (yield from super().lsp_text_document__did_change(params))

    @lsp_method(lsp.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(self, params: lsp.ExecuteCommandParams) -> Generator[Any, Any, Any]:
        if params.command not in self.fm.commands:
            raise CairnError(ErrorCode.METHOD_UNKNOWN, f"the server has no command {params.command[:60]!r}")
        return (yield from super().lsp_workspace__execute_command(params))
