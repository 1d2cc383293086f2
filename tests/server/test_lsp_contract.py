"""The LSP contract at its edges, over real stdio: wrong parameters, unknown names, other writers.

Every refusal is a JSON-RPC error whose ``data`` is ``{"code": "E_…", "message": …}``
(docs/lsp.md); nothing an editor receives is a Python traceback.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.server.lsp.protocol import response_error
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tests.journal.helpers import DEMO, cairn, cairn_json
from tests.server.lsp_harness import command, plain, raw_request, request, until

pytestmark = pytest.mark.asyncio


async def refusal(call: Any) -> dict[str, Any]:
    """The ``data`` of the error a request or command is refused with."""
    with pytest.raises(JsonRpcException) as info:
        await call
    data = info.value.data
    assert isinstance(data, dict) and set(data) == {"code", "message"}, data
    assert str(info.value.message).startswith(f"{data['code']}: ")
    assert "Traceback" not in json.dumps(data) and "traceback" not in json.dumps(data)
    return data


async def test_wrong_argument_types_unknown_names_and_malformed_params(client: LanguageClient,
                                                                     workspace: Path) -> None:
    # a string where a list of ids belongs is refused, not iterated character by character
    data = await refusal(command(client, "cairn.accept", {"workspace": str(workspace), "ids": "p1"}))
    assert data["code"] == "E_USAGE" and "ids" in data["message"]
    data = await refusal(command(client, "cairn.dismiss", {"jobId": 7}))
    assert data["code"] == "E_USAGE" and "jobId" in data["message"]
    data = await refusal(request(client, "cairn/status", {"workspace": ["a"]}))
    assert data["code"] == "E_USAGE"
    # unknown command, unknown cairn request
    data = await refusal(command(client, "cairn.frobnicate", {}))
    assert data["code"] == "E_METHOD_UNKNOWN"
    data = await refusal(request(client, "cairn/frobnicate", {}))
    assert data["code"] == "E_METHOD_UNKNOWN"
    # a standard request whose params do not fit its LSP type is answered (not left hanging)
    data = await refusal(raw_request(client, "textDocument/codeAction", {"textDocument": 3}))
    assert data["code"] == "E_USAGE"
    # a refused notification is logged with its code; the server goes on
    client.protocol.notify("cairn/idle", {"seconds": "long"})
    await until(client, _logged(client, "cairn/idle refused (E_USAGE)"))
    status = plain(await request(client, "cairn/status"))
    assert status["workspace"] == str(workspace)  # still serving the workspace after every refusal


def _logged(client: Any, text: str) -> Any:
    async def check() -> bool:
        return any(text in m.message for m in client.log_messages)
    return check


async def test_an_unexpected_exception_becomes_e_internal_without_its_text() -> None:
    error = response_error(ValueError("turn text: never bare except"), "42")
    assert error.code == -32603 and error.data == {"code": "E_INTERNAL", "message": error.message[12:]}
    assert "bare except" not in error.message and "Traceback" not in error.message
    refused = response_error(CairnError(ErrorCode.NOT_FOUND, "no proposal p9"))
    assert refused.code == -32602 and refused.data == {"code": "E_NOT_FOUND", "message": "no proposal p9"}


@pytest.fixture
def proposals(workspace: Path) -> list[dict[str, Any]]:
    """The demo transcript run through the CLI before the server starts: its pending proposals."""
    (workspace / "AGENTS.md").write_text("# Agents\n\nBe terse.\n", encoding="utf-8")
    made: list[dict[str, Any]] = cairn_json(workspace, "run", str(DEMO))["proposals"]
    assert len(made) >= 2
    return made


async def test_status_follows_decisions_made_outside_the_server(proposals: list[dict[str, Any]],
                                                                client: LanguageClient, workspace: Path) -> None:
    """The CLI accepts a proposal while the server runs: the next cairn/status counts one fewer."""
    async def settled() -> int:  # the startup recovery pass has finished and refreshed the snapshot
        if not any(" recover ok" in m.message for m in client.log_messages):
            return 0
        st = plain(await request(client, "cairn/status"))
        return st["proposals"] if st["running"] == 0 else 0

    before = await until(client, settled)
    assert before == len(proposals)
    cairn(workspace, "accept", proposals[0]["id"])
    status = plain(await asyncio.wait_for(request(client, "cairn/status"), 30))
    assert status["proposals"] == before - 1


async def test_registration_and_dispatch_share_one_table() -> None:
    from cairn.server.lsp.features.commands import COMMANDS
    from cairn.server.lsp.server import build_server
    from cairn.server.lsp.service import NOTIFICATIONS, REQUESTS

    fm = build_server().protocol.fm
    assert set(fm.commands) == set(COMMANDS)
    cairn_methods = {name for name in fm.features if name.startswith("cairn/")}
    assert cairn_methods == set(NOTIFICATIONS) | set(REQUESTS)


async def test_parameters_are_structured_strictly_in_one_place() -> None:
    from cairn.protocol.lsp import DecisionParams, IdleParams, StatusParams, structure

    assert structure(None, StatusParams, "m") == structure([], StatusParams, "m") == StatusParams()
    assert structure({"ids": ["p1"], "id": "p1", "extra": 1}, DecisionParams, "m").proposal_ids == ("p1",)
    for raw, cls in (({"ids": "p1"}, DecisionParams), ({"seconds": "600"}, IdleParams),
                     ({"seconds": -1}, IdleParams), ("p1", StatusParams), ({"workspace": 1}, StatusParams)):
        with pytest.raises(CairnError) as info:
            structure(raw, cls, "m")
        assert info.value.code is ErrorCode.USAGE
