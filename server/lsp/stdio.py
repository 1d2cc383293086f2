"""The language server's stdio transport: stdin read by the event loop itself.

pygls reads stdin through a thread, one round trip per header line and per
body, and parses each body with a Python hook called for every JSON object.
In a burst of notifications (an editor catching up on a thousand turns) that
costs more than handling them, and a request behind the burst waits for all
of it. Here the loop's own pipe reader takes whatever is there in one read,
and a body is parsed once, then structured once at the top (what pygls'
hook does for the outer object; inner objects pass through it unchanged).

Used when stdin is a pipe, socket or terminal (editors start servers so);
any other stdin (a regular file) keeps pygls' reader.

Framing errors are answered as JSON-RPC asks and the session goes on
(``docs/lsp.md``, "Framing"): a body that is not JSON is a parse error
(-32700, id null, ``E_MESSAGE_MALFORMED``); JSON that is not a JSON-RPC
object is an invalid request (-32600); a header block without a valid
``Content-Length`` is a parse error, after which input is skipped up to the
next line holding a ``Content-Length`` header; a body over :data:`LIMIT` is
answered at once (-32600, ``E_RECORD_TOO_LARGE``), then read and discarded
in bounded chunks, never kept. Only when no header turns up in
:data:`LIMIT` bytes of skipped input does the session end, with one log
line carrying ``E_MESSAGE_MALFORMED``. A body that parses but fails in
structuring or dispatch is reported to the server's error handler (class
name only) and the next message is read. An exception no handler took is
one log line with its class (``E_INTERNAL``), never a traceback.

``SIGHUP`` (an editor quitting: Emacs sends it to its servers), ``SIGTERM``
and ``SIGINT`` end the session as the end of input does: one log line naming
the signal, no further message read, and the caller stops the running
workers on the way out (``docs/lsp.md``, "Scheduling").
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import stat
import threading
from collections.abc import Callable
from typing import Any, BinaryIO

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.server.lsp.protocol import INVALID_REQUEST, PARSE_ERROR, log, unattributed_error
from pygls.exceptions import JsonRpcException
from pygls.io_ import StdoutWriter
from pygls.protocol import JsonRPCProtocol

DEFAULT_LIMIT = 1 << 26  # 64 MiB: the longest body (and header line) accepted
_DISCARD_CHUNK = 1 << 20  # an oversized body is read and dropped this much at a time
#: signals that end the session as the end of input does (the default action would leave the workers running)
STOP_SIGNALS = (signal.SIGHUP, signal.SIGTERM, signal.SIGINT)
_RESYNC = re.compile(rb"(?<![A-Za-z0-9-])content-length:[ \t]*[0-9]{1,18}[ \t]*\r?\n\Z", re.IGNORECASE)


def _limit() -> int:
    """:data:`DEFAULT_LIMIT`; tests lower it with ``CAIRN_TEST_LSP_BODY_LIMIT`` (bytes; never raised)."""
    value = os.environ.get("CAIRN_TEST_LSP_BODY_LIMIT", "")
    return min(int(value), DEFAULT_LIMIT) if value.isdigit() and 0 < len(value) <= 18 and int(value) > 0 else DEFAULT_LIMIT


LIMIT = _limit()


class _Lost:
    """No header in :data:`LIMIT` bytes of skipped input: the stream cannot be resynchronised."""


_LOST = _Lost()


def is_stream(stdin: BinaryIO) -> bool:
    mode = os.fstat(stdin.fileno()).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


async def serve(stdin: BinaryIO, stdout: BinaryIO, protocol: JsonRPCProtocol, stop: threading.Event,
                on_error: Callable[[Exception, Any], None]) -> None:
    """Read, structure and hand each message to ``protocol`` until end of input or ``stop``."""
    protocol.set_writer(StdoutWriter(stdout))
    reader = asyncio.StreamReader(limit=LIMIT)
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(_loop_error)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    stop_on_signals(loop, stop, transport.close)  # closed, stdin reads as ended: nothing more is fed in
    skipping = False
    while not stop.is_set():
        head = await _headers(reader, skipping)
        if head is None or stop.is_set():
            return
        if isinstance(head, _Lost):
            log.error("no message header in %d bytes of input; ending the session (%s)", LIMIT,
                      ErrorCode.MESSAGE_MALFORMED)
            return
        skipping = isinstance(head, str)
        if isinstance(head, str):
            _refuse(protocol, PARSE_ERROR, ErrorCode.MESSAGE_MALFORMED, f"{head}; skipped to the next message")
            continue
        if head > LIMIT:
            _refuse(protocol, INVALID_REQUEST, ErrorCode.RECORD_TOO_LARGE,
                    f"a message body of {head} bytes is over the limit of {LIMIT}; skipped")
            if not await _discard(reader, head):
                return
            continue
        try:
            body = await reader.readexactly(head)
        except asyncio.IncompleteReadError:
            return
        if stop.is_set():
            return
        _dispatch(body, protocol, on_error)


def stop_on_signals(loop: asyncio.AbstractEventLoop, stop: threading.Event, end: Callable[[], None]) -> None:
    """On any of :data:`STOP_SIGNALS`: one log line, ``stop`` set and ``end()`` called (it ends the reading).

    The handlers belong to ``loop`` (they go with it when it closes). Outside the main thread a loop cannot
    take signals: the defaults stay.
    """
    def stopping(signum: int) -> None:
        if not stop.is_set():
            log.warning("%s: ending the session; running workers are stopped", signal.Signals(signum).name)
        stop.set()
        end()

    for signum in STOP_SIGNALS:
        with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
            loop.add_signal_handler(signum, stopping, signum)


def _loop_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """An exception no handler took: one line with its class, never a traceback (``CAIRN_DEBUG=1`` keeps it).

    A handler cut short because the session ended (its task cancelled on the
    way out) is not an error and logs nothing.
    """
    exc = context.get("exception")
    if isinstance(exc, asyncio.CancelledError):
        return
    if os.environ.get("CAIRN_DEBUG") == "1":
        loop.default_exception_handler(context)
        return
    log.error("unhandled error in the event loop (%s: %s)", ErrorCode.INTERNAL,
              type(exc).__name__ if exc is not None else "no exception")


def _dispatch(body: bytes, protocol: JsonRPCProtocol, on_error: Callable[[Exception, Any], None]) -> None:
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the parser's depth
        _refuse(protocol, PARSE_ERROR, ErrorCode.MESSAGE_MALFORMED, "the message body is not JSON")
        return
    if not isinstance(data, dict) or data.get("jsonrpc") != "2.0":
        msg_id = data.get("id") if isinstance(data, dict) and "method" in data else None
        if isinstance(msg_id, bool) or not isinstance(msg_id, (int, str)):
            msg_id = None
        _refuse(protocol, INVALID_REQUEST, ErrorCode.MESSAGE_MALFORMED,
                "the message is not a JSON-RPC 2.0 object", msg_id)
        return
    try:
        protocol.handle_message(protocol.structure_message(data))
    except Exception as exc:  # one bad message; the session goes on
        on_error(exc, JsonRpcException)


def _refuse(protocol: JsonRPCProtocol, rpc_code: int, code: ErrorCode, message: str,
            msg_id: int | str | None = None) -> None:
    """Answer a message that could not be read (one log line with the code; the session goes on)."""
    log.warning("message refused (%s: %s)", code, message)
    reply = unattributed_error(rpc_code, CairnError(code, message))
    reply["id"] = msg_id
    protocol._send_data(reply)


async def _discard(reader: asyncio.StreamReader, length: int) -> bool:
    """Read and drop ``length`` bytes, a bounded chunk at a time; False at end of input."""
    while length:
        chunk = await reader.read(min(length, _DISCARD_CHUNK))
        if not chunk:
            return False
        length -= len(chunk)
    return True


async def _headers(reader: asyncio.StreamReader, skipping: bool) -> int | str | _Lost | None:
    """The Content-Length of the next message; None at end of input.

    A header block that gives none is answered with the reason (a str): the
    caller refuses it and calls again ``skipping``, which passes over input
    up to a line holding a ``Content-Length`` header (a body glued before it
    on the same line included); that line starts the next block. More than
    :data:`LIMIT` bytes skipped without one is :data:`_LOST`.
    """
    length: int | None = None
    started = False
    skipped = 0
    while True:
        try:
            line = await reader.readline()
        except (asyncio.LimitOverrunError, ValueError):  # a line over LIMIT: the reader dropped it
            if not skipping:
                return "a header line over the limit"
            skipped += LIMIT
            if skipped > LIMIT:
                return _LOST
            continue
        if not line:
            return None
        if skipping:
            found = _RESYNC.search(line)
            if found is None:
                skipped += len(line)
                if skipped > LIMIT:
                    return _LOST
                continue
            skipping = False
            line = line[found.start():]
        if line in (b"\r\n", b"\n"):
            if length is not None:
                return length
            if started:
                return "a header without Content-Length"
            continue  # a blank line before any header: keep reading
        started = True
        name, colon, value = line.partition(b":")
        if not colon:
            return "a line that is not a header"
        if name.strip().lower() == b"content-length":
            value = value.strip()
            if not value.isdigit() or len(value) > 18:
                return "an invalid Content-Length"
            length = int(value)
