"""A real OpenAI-compatible HTTP endpoint on 127.0.0.1 for provider tests.

It records every request (path, headers, exact body bytes) and answers with
whatever the test configured (or what ``respond`` computes from the request).
With ``context_tokens`` set it behaves like a real server with that context
window: a request whose messages plus ``max_tokens`` exceed it (counted as
real tokenizers roughly count English, 4 characters a token) is refused with
HTTP 400 and an OpenAI-style ``context_length_exceeded`` error. With ``hold`` set it keeps the request open
until :attr:`release` is set (or a long safety delay passes), so timeout
and cancellation tests have a server that is really slow; the fixture
releases and stops it afterwards and joins every handler thread, so no
thread outlives the test. With ``refuse_once`` set (an HTTP status such as
503 or 429) it plays a flaky provider: the first time it sees a request
body it refuses it with that status, and answers the same bytes sent again.
With ``count_usage`` it reports ``usage.prompt_tokens`` (the body's length
/ 4) in every answer, as hosted providers do.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs
import pytest

HOLD_SECONDS = 30.0
_LOCK = threading.Lock()


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
    context_tokens: int | None = None
    respond: Callable[[dict[str, Any]], str] | None = None  # request -> message content
    refused: int = 0
    refuse_once: int | None = None  # a status: the first sending of each distinct body is refused with it
    count_usage: bool = False
    seen: set[bytes] = attrs.Factory(set)
    arrived: threading.Event = attrs.Factory(threading.Event)
    release: threading.Event = attrs.Factory(threading.Event)

    def answer(self, content: str | None, finish_reason: str | None = "stop", **extra: Any) -> None:
        """Reply with a chat completion whose message content is ``content``."""
        self.reply = completion(content, finish_reason, **extra)

    def answer_notes(self, notes: list[dict[str, Any]]) -> None:
        self.answer(json.dumps({"notes": notes}))


def completion(content: str | None, finish_reason: str | None = "stop", **extra: Any) -> bytes:
    choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}
    return json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "choices": [choice], **extra}).encode()


def prompt_tokens(request: dict[str, Any]) -> int:
    """The server's count of a request's prompt: 4 characters a token, plus 4 per message."""
    return sum(len(m.get("content") or "") // 4 + 4 for m in request.get("messages", []))


def context_error(limit: int, asked: int) -> bytes:
    return json.dumps({"error": {
        "message": f"This model's maximum context length is {limit} tokens. However, you requested {asked} tokens. "
                   "Please reduce the length of the messages.",
        "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded",
    }}).encode()


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
            status, reply = endpoint.status, endpoint.reply
            with _LOCK:
                first = body not in endpoint.seen
                endpoint.seen.add(body)
            if endpoint.refuse_once is not None and first:
                status, reply = endpoint.refuse_once, b'{"error": {"message": "try again"}}'
            elif endpoint.context_tokens is not None or endpoint.respond is not None:
                request = json.loads(body)
                asked = prompt_tokens(request) + int(request.get("max_tokens") or 0)
                if endpoint.context_tokens is not None and asked > endpoint.context_tokens:
                    endpoint.refused += 1
                    status, reply = 400, context_error(endpoint.context_tokens, asked)
                elif endpoint.respond is not None:
                    extra: dict[str, Any] = {}
                    if endpoint.count_usage:
                        extra["usage"] = {"prompt_tokens": len(body) // 4, "completion_tokens": 1}
                    status, reply = 200, completion(endpoint.respond(request), **extra)
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)
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
