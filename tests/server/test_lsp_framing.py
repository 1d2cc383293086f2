"""The language server's stdio framing and lifecycle edges, as raw bytes on a real server's stdin.

A frame the server cannot read is answered as JSON-RPC asks (an error with
id null and a fixed code) and the session goes on; a request after
``shutdown`` is answered ``InvalidRequest`` (docs/lsp.md, "Framing"). The
body limit is lowered for the test with ``CAIRN_TEST_LSP_BODY_LIMIT``, so no
64 MiB is sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import PYTHON, REPO, child_env

pytestmark = pytest.mark.asyncio

LIMIT = 4096


def frame(msg: dict[str, Any] | bytes) -> bytes:
    body = msg if isinstance(msg, bytes) else json.dumps(msg).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class RawClient:
    """Bytes in, JSON-RPC messages out; server notifications are kept aside, server requests answered null."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.ids = itertools.count(1)
        self.notifications: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)

    def send(self, method: str, params: Any = None, *, msg_id: int | None = None) -> int:
        msg_id = next(self.ids) if msg_id is None else msg_id
        self.write(frame({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params or {}}))
        return msg_id

    def notify(self, method: str, params: Any = None) -> None:
        self.write(frame({"jsonrpc": "2.0", "method": method, "params": params or {}}))

    async def reply(self) -> dict[str, Any]:
        """The next reply to a request of ours (or one with id null)."""
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while (line := await asyncio.wait_for(out.readline(), 60)) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            assert line and length is not None, "the server closed its stdout"
            msg = json.loads(await out.readexactly(length))
            if "method" in msg and "id" in msg:  # a request of the server's own
                self.write(frame({"jsonrpc": "2.0", "id": msg["id"], "result": None}))
            elif "method" in msg:
                self.notifications.append(msg)
            else:
                return msg

    async def initialize(self, ws: Path) -> None:
        msg_id = self.send("initialize", {"processId": None, "rootUri": ws.as_uri(), "capabilities": {},
                                          "workspaceFolders": [{"uri": ws.as_uri(), "name": ws.name}]})
        assert (await self.reply())["id"] == msg_id
        self.notify("initialized")

    async def answered(self, msg_id: int) -> None:
        """The next reply answers ``cairn/status`` request ``msg_id`` with its result."""
        answer = await self.reply()
        assert answer["id"] == msg_id and "error" not in answer, answer
        assert answer["result"]["workspace"]

    async def status(self, ws: Path) -> None:
        await self.answered(self.send("cairn/status", {"workspace": str(ws)}))


def refused(answer: dict[str, Any], rpc_code: int, code: str, msg_id: Any = None) -> None:
    assert answer["id"] == msg_id and "id" in answer, answer
    error = answer["error"]
    assert error["code"] == rpc_code and error["data"]["code"] == code, answer
    assert error["message"].startswith(f"{code}: ") and "Traceback" not in json.dumps(answer)


@contextlib.asynccontextmanager
async def server(**env: str) -> AsyncIterator[RawClient]:
    proc = await asyncio.create_subprocess_exec(
        PYTHON, "-m", "cairn.server", "serve", cwd=str(REPO), env=child_env(**env),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        limit=1 << 24)
    try:
        yield RawClient(proc)
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        await proc.wait()


async def stderr_of(client: RawClient) -> str:
    """Close stdin, wait for the server to leave, and give its stderr."""
    assert client.proc.stdin is not None and client.proc.stderr is not None
    client.proc.stdin.close()
    err = await asyncio.wait_for(client.proc.stderr.read(), 60)
    await asyncio.wait_for(client.proc.wait(), 60)
    return err.decode(errors="replace")


async def test_a_request_after_shutdown_is_answered_invalid_request(workspace: Path) -> None:
    async with server() as client:
        await client.initialize(workspace)
        msg_id = client.send("shutdown")
        answer = await client.reply()
        assert answer["id"] == msg_id and answer.get("result") is None and "error" not in answer
        for method in ("cairn/status", "shutdown", "textDocument/hover"):
            msg_id = client.send(method, {"workspace": str(workspace)})
            refused(await client.reply(), -32600, "E_SHUT_DOWN", msg_id)
        client.notify("exit")
        assert await asyncio.wait_for(client.proc.wait(), 60) == 0


async def test_unreadable_frames_are_answered_with_id_null_and_the_next_request_is_served(
        workspace: Path) -> None:
    async with server() as client:
        await client.initialize(workspace)
        bad_frames: list[tuple[bytes, int]] = [
            (b"Content-Length: -5\r\n\r\n", -32700),  # a negative length: skipped up to the next header
            # the bad frame's own body, glued to the next header, is skipped with it (never run)
            (b'Content-Length: twelve\r\n\r\n{"jsonrpc": "2.0", "id": 77, "method": "shutdown"}', -32700),
            (b"Content-Type: application/json\r\n\r\n", -32700),  # no Content-Length
            (b"hello\r\n\r\n", -32700),  # not a header line
            (frame(b"{not json"), -32700),
            (frame(b"[1, 2]"), -32600),  # JSON, but not a JSON-RPC object
        ]
        for data, rpc_code in bad_frames:
            client.write(data)
            msg_id = client.send("cairn/status", {"workspace": str(workspace)})
            refused(await client.reply(), rpc_code, "E_MESSAGE_MALFORMED")
            await client.answered(msg_id)
        client.write(frame({"jsonrpc": "1.0", "id": 5, "method": "cairn/status"}))  # its id is known
        refused(await client.reply(), -32600, "E_MESSAGE_MALFORMED", 5)
        await client.answered(client.send("cairn/status", {"workspace": str(workspace)}))
        client.send("shutdown")
        assert "error" not in await client.reply()
        client.notify("exit")
        err = await stderr_of(client)
    assert "Traceback" not in err
    assert err.count("E_MESSAGE_MALFORMED") == len(bad_frames) + 1, err


async def test_a_body_over_the_limit_is_discarded_and_the_session_goes_on(workspace: Path) -> None:
    async with server(CAIRN_TEST_LSP_BODY_LIMIT=str(LIMIT)) as client:
        await client.initialize(workspace)
        big = {"jsonrpc": "2.0", "id": 99, "method": "cairn/status",
               "params": {"workspace": str(workspace), "pad": "x" * (3 * LIMIT)}}
        client.write(frame(big))
        refused(await client.reply(), -32600, "E_RECORD_TOO_LARGE")
        await client.status(workspace)  # the big request's own id never gets an answer: it was not read
        client.send("shutdown")
        assert "error" not in await client.reply()
        client.notify("exit")
        err = await stderr_of(client)
    assert "Traceback" not in err and "E_RECORD_TOO_LARGE" in err


async def test_a_stream_without_frames_ends_the_session_with_a_code(workspace: Path) -> None:
    async with server(CAIRN_TEST_LSP_BODY_LIMIT=str(LIMIT)) as client:
        await client.initialize(workspace)
        client.write(b"Content-Length: -5\r\n\r\n")
        refused(await client.reply(), -32700, "E_MESSAGE_MALFORMED")
        client.write(b"garbage line\n" * (LIMIT // 4))  # no header anywhere in more than LIMIT bytes
        assert client.proc.stderr is not None
        err = (await asyncio.wait_for(client.proc.stderr.read(), 60)).decode(errors="replace")
        await asyncio.wait_for(client.proc.wait(), 60)
    assert "Traceback" not in err
    assert "ending the session (E_MESSAGE_MALFORMED)" in err, err
