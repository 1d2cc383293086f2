"""``cairn serve``: the language server on stdio (default) or ``--tcp HOST:PORT``.

stdout belongs to the protocol, so logging goes to stderr at WARNING, and
pygls' own loggers are held at WARNING too (they log every message at INFO).
If the connection ends without a ``shutdown`` request, or SIGHUP, SIGTERM or
SIGINT arrives (:func:`server.lsp.stdio.stop_on_signals`: the session ends as
at the end of input), running workers are stopped on the way out (they are
bounded jobs; anything unfinished stays durable for the next start).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.server.lsp.server import build_server
from cairn.worker.redaction.redact import RedactingFilter


def parse_tcp(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise CairnError(ErrorCode.USAGE, f"--tcp expects HOST:PORT, got {value[:60]!r}")
    return host, int(port)


def _patch_slow(seconds: float) -> None:
    policy = asyncio.get_event_loop_policy()
    original = policy.new_event_loop

    def new_loop() -> asyncio.AbstractEventLoop:
        loop = original()
        loop.slow_callback_duration = seconds
        loop.set_debug(True)
        return loop

    policy.new_event_loop = new_loop  # type: ignore[method-assign]


def serve(tcp: str | None = None) -> int:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="cairn: %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(RedactingFilter())  # every log line passes the redaction gate
    address = parse_tcp(tcp) if tcp else None
    # snapshot reads run in threads; a short switch interval hands the interpreter lock back to
    # the event loop within half a millisecond when an editor request arrives
    sys.setswitchinterval(0.0005)
    slow = os.environ.get("CAIRN_SERVER_SLOW_MS")
    if slow:  # diagnose event-loop stalls: asyncio logs every callback slower than this
        _patch_slow(float(slow) / 1000.0)
    server = build_server()
    try:
        if address is None:
            server.start_io()
        else:
            server.start_tcp(*address)
    finally:
        server.service.kill_workers()
    return 0
