"""The language server's stdio transport: stdin read by the event loop itself.

pygls reads stdin through a thread, one round trip per header line and per
body, and parses each body with a Python hook called for every JSON object.
In a burst of notifications (an editor catching up on a thousand turns) that
costs more than handling them, and a request behind the burst waits for all
of it. Here the loop's own pipe reader takes whatever is there in one read,
and a body is parsed once, then structured once at the top (what pygls'
hook does for the outer object; inner objects pass through it unchanged).

Used when stdin is a pipe, socket or terminal (editors start servers so);
any other stdin (a regular file) keeps pygls' reader. Framing errors end
the session as pygls does at end of input; a body that does not parse or
structure is reported to the server's error handler (class name only) and
the next message is read.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import threading
from collections.abc import Callable
from typing import Any, BinaryIO

from pygls.exceptions import JsonRpcException
from pygls.io_ import StdoutWriter
from pygls.protocol import JsonRPCProtocol

LIMIT = 1 << 26  # the longest header line or body accepted


def is_stream(stdin: BinaryIO) -> bool:
    mode = os.fstat(stdin.fileno()).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


async def serve(stdin: BinaryIO, stdout: BinaryIO, protocol: JsonRPCProtocol, stop: threading.Event,
                on_error: Callable[[Exception, Any], None]) -> None:
    """Read, structure and hand each message to ``protocol`` until end of input or ``stop``."""
    protocol.set_writer(StdoutWriter(stdout))
    reader = asyncio.StreamReader(limit=LIMIT)
    loop = asyncio.get_running_loop()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    while not stop.is_set():
        length = await _headers(reader)
        if length is None:
            return
        try:
            body = await reader.readexactly(length)
        except asyncio.IncompleteReadError:
            return
        try:
            protocol.handle_message(protocol.structure_message(json.loads(body)))
        except Exception as exc:  # one bad message; the session goes on
            on_error(exc, JsonRpcException)


async def _headers(reader: asyncio.StreamReader) -> int | None:
    """The Content-Length of the next message; None at end of input or on a broken header."""
    length: int | None = None
    while True:
        try:
            line = await reader.readline()
        except (asyncio.LimitOverrunError, ValueError):
            return None
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            if length is not None:
                return length
            continue  # a blank line before any header: keep reading
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                return None
            if not 0 <= length <= LIMIT:
                return None
