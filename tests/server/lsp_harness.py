"""Drive the real ``cairn serve`` over stdio like an editor: requests, commands, waiting on logs.

The server itself is started and stopped by the ``client`` fixture
(``tests/server/conftest.py``, a ``pytest_lsp`` fixture over :class:`ServeConfig`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.client import JsonRPCClient
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.support import PYTHON, child_env

TURNS = [
    ("From now on never use bare except in this codebase: catch the specific exception and log it with context.",
     "Understood: no bare except; specific exceptions with context."),
    ("Heads-up: the staging database is read-only on Fridays for the weekly snapshot, so never schedule "
     "migrations on staging on a Friday.", "Noted: no staging migrations on Fridays."),
    ("We always run the test suite with `make check`, never plain pytest, because it sets the timezone.",
     "Got it: `make check` runs the suite."),
]


class ServeConfig(ClientServerConfig):
    """``cairn serve`` as a pytest-lsp server whose environment is read when it starts.

    The environment must be the test's own (its private ``XDG_CONFIG_HOME``,
    any ``lsp_env`` marker), which exists only once the test's fixtures have
    run, not when the fixture is declared.
    """

    async def start(self, devtools: str | None = None) -> JsonRPCClient:
        client = self.client_factory()
        await client.start_io(*self.get_server_command(devtools), env=child_env())
        return client


SERVE = ServeConfig(server_command=[PYTHON, "-m", "cairn.server", "serve"])


def initialize_params(ws: Path, options: dict[str, Any]) -> lsp.InitializeParams:
    """What an editor (Emacs' capabilities) sends to open ``ws``."""
    return lsp.InitializeParams(
        capabilities=client_capabilities("emacs"),
        root_uri=ws.as_uri(),
        workspace_folders=[lsp.WorkspaceFolder(uri=ws.as_uri(), name=ws.name)],
        initialization_options=options,
    )


async def end_session(client: LanguageClient) -> None:
    """``shutdown`` + ``exit``; a server that does not leave within 30 s is killed (no strays)."""
    with contextlib.suppress(Exception):
        await asyncio.wait_for(client.shutdown_session(), 30)
    server = client._server
    if server is not None and server.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            server.kill()
        await server.wait()


async def request(client: LanguageClient, method: str, params: dict[str, Any] | None = None) -> Any:
    return await asyncio.wait_for(client.protocol.send_request_async(method, params or {}), 30)


async def command(client: LanguageClient, name: str, arg: dict[str, Any] | None = None) -> Any:
    params = lsp.ExecuteCommandParams(command=name, arguments=[arg] if arg is not None else [])
    return await asyncio.wait_for(client.workspace_execute_command_async(params), 60)


def plain(obj: Any) -> Any:
    if hasattr(obj, "_asdict"):
        return {k: plain(v) for k, v in obj._asdict().items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    return obj


WorkDone = lsp.WorkDoneProgressBegin | lsp.WorkDoneProgressReport | lsp.WorkDoneProgressEnd


def work_done(client: LanguageClient, token: lsp.ProgressToken) -> list[WorkDone]:
    """The work-done progress values received for ``token``, in order.

    pytest-lsp stores the structured begin/report/end values, though its
    attribute is annotated as holding ``ProgressParams``.
    """
    out: list[WorkDone] = []
    for report in client.progress_reports.get(token, []):
        value: object = report
        assert isinstance(
            value, (lsp.WorkDoneProgressBegin, lsp.WorkDoneProgressReport, lsp.WorkDoneProgressEnd)
        ), value
        out.append(value)
    return out


async def until(client: LanguageClient, check: Callable[[], Awaitable[Any]], *, events: int = 60,
                per_event: float = 30.0) -> Any:
    """Re-check after every ``window/logMessage`` (the server logs once its snapshot is fresh).

    Bounded by a number of events, each with a timeout: no sleeps. After a
    silent ``per_event`` the condition is checked once more before giving up,
    and a failure shows the server's last log lines (ids and codes only), so
    a slow machine costs time, and a real hang says where it stopped.
    """
    for _ in range(events):
        waiter = asyncio.ensure_future(client.wait_for_notification("window/logMessage"))  # arm first
        value = await check()
        if value:
            return value  # the armed waiter is left to the next notification (cancelling it breaks the client)
        try:
            await asyncio.wait_for(waiter, per_event)
        except TimeoutError:
            value = await check()
            if value:
                return value
            break
    last = [m.message for m in client.log_messages[-15:]]
    raise AssertionError("condition not reached; last server log lines:\n" + "\n".join(last))


def send_turns(client: LanguageClient, ws: Path, session: str, turns: list[tuple[str, str]] = TURNS) -> None:
    parent = None
    for i, (user, assistant) in enumerate(turns):
        tid = f"{session}-t{i}"
        client.protocol.notify("cairn/turnCompleted", {
            "workspace": str(ws), "sessionId": session, "turnId": tid, "parentTurnId": parent,
            "user": user, "assistant": assistant, "completedAt": f"2025-06-12T10:0{i}:00Z",
        })
        parent = tid


async def raw_request(client: LanguageClient, method: str, params: Any) -> Any:
    """A request sent as given, past the client's own typing of standard methods (its answer or error)."""
    msg_id = f"raw-{id(params)}"
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    client.protocol._request_futures[msg_id] = future
    client.protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    return await asyncio.wait_for(asyncio.wrap_future(future), 30)
