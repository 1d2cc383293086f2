"""A real OpenAI-compatible HTTP endpoint on 127.0.0.1 for provider tests.

It records every request (path, headers, exact body bytes) and answers with
whatever the test configured. With ``hold`` set it keeps the request open
until :attr:`release` is set (or a long safety delay passes), so timeout
and cancellation tests have a server that is really slow; the fixture
releases and stops it afterwards and joins every handler thread, so no
thread outlives the test.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs
import pytest

HOLD_SECONDS = 30.0


@attrs.define
class Recorded:
    path: str
    headers: dict[str, str]
    body: bytes


@attrs.define
class Endpoint:
    base_url: str
    status: int = 200
    reply: bytes = b"{}"
    hold: bool = False
    requests: list[Recorded] = attrs.Factory(list)
    arrived: threading.Event = attrs.Factory(threading.Event)
    release: threading.Event = attrs.Factory(threading.Event)

    def answer(self, content: str | None, finish_reason: str | None = "stop", **extra: Any) -> None:
        """Reply with a chat completion whose message content is ``content``."""
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": finish_reason,
        }
        self.reply = json.dumps(
            {"id": "chatcmpl-1", "object": "chat.completion", "choices": [choice], **extra}
        ).encode()

    def answer_notes(self, notes: list[dict[str, Any]]) -> None:
        self.answer(json.dumps({"notes": notes}))


def _handler(endpoint: Endpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            endpoint.requests.append(
                Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            )
            endpoint.arrived.set()
            if endpoint.hold:
                endpoint.release.wait(HOLD_SECONDS)
            try:
                self.send_response(endpoint.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(endpoint.reply)))
                self.end_headers()
                self.wfile.write(endpoint.reply)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout or cancellation): expected

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    return Handler


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)  # the real handler needs the port
    host, port = server.server_address[:2]
    assert isinstance(host, str)
    ep = Endpoint(base_url=f"http://{host}:{port}/v1")
    server.RequestHandlerClass = _handler(ep)
    server.daemon_threads = False  # so server_close() joins every handler thread
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield ep
    finally:
        ep.release.set()
        server.shutdown()
        server.server_close()
        thread.join(10)
