"""The Memories view's keys over a real language server (issue 30): ``cairn.verify`` rechecks citations and
proposes, ``cairn.retireTopic`` proposes one topic's retirement, ``cairn.confirmTopic`` says it is still true;
a bad topic is a fixed code, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tests.journal.helpers import cairn, cairn_json
from tests.server.lsp_harness import command, plain, request

pytestmark = pytest.mark.asyncio


def _topic(ws: Path, text: str) -> str:
    cairn(ws, "remember", text)
    pending = [p for p in cairn_json(ws, "proposals") if p["state"] == "pending"]
    cairn(ws, "accept", pending[0]["id"])
    return pending[0]["target"]


async def test_verify_retire_and_confirm_from_the_memories_view(workspace: Path, client: LanguageClient) -> None:
    (workspace / "Makefile").write_text("check:\n\tpytest\n")
    stale = _topic(workspace, "Run the tests with `make check`")
    fresh = _topic(workspace, "Use pnpm, not npm, to install dependencies")
    (workspace / "AGENTS.md").write_text("# Agents\n\n- Lint with `make lint`\n")
    (workspace / "Makefile").write_text("test:\n\tpytest\n")
    ws = str(workspace)

    answer = plain(await command(client, "cairn.verify", {"workspace": ws}))["result"]
    assert answer["checked"] == 2 and answer["stale"] == 1 and len(answer["proposals"]) == 1, answer
    assert answer["staleInstructionLines"] == 1, answer  # AGENTS.md's `make lint`: counted, listed by the CLI
    rows = {r["file"]: r for r in plain(await request(client, "cairn/cockpit", {"workspace": ws, "view": "memories"}))}
    assert rows[stale]["stale"] is True and rows[stale]["why"] and rows[fresh]["stale"] is False
    candidates = plain(await request(client, "cairn/cockpit", {"workspace": ws, "view": "candidates"}))
    assert [c["id"] for c in candidates] == answer["proposals"]

    retired = plain(await command(client, "cairn.retireTopic", {"workspace": ws, "file": fresh}))["result"]
    assert retired["file"] == fresh and retired["new"] is True
    assert (workspace / fresh).exists()
    confirmed = plain(await command(client, "cairn.confirmTopic", {"workspace": ws, "file": fresh}))["result"]
    assert confirmed["file"] == fresh and confirmed["confirmed"]
    # a bare file name is looked up in the memory roots, as `cairn memory retire NAME` does
    again = plain(await command(client, "cairn.retireTopic", {"workspace": ws, "file": Path(fresh).name}))["result"]
    assert again == {"file": fresh, "proposal": retired["proposal"], "new": False}

    with pytest.raises(JsonRpcException) as info:
        await command(client, "cairn.confirmTopic", {"workspace": ws, "file": stale})
    assert "E_TOPIC_STALE" in str(info.value) and "Traceback" not in str(info.value)
    with pytest.raises(JsonRpcException) as info:
        await command(client, "cairn.retireTopic", {"workspace": ws, "file": "../outside.md"})
    assert "E_NOT_FOUND" in str(info.value)
    with pytest.raises(JsonRpcException) as info:
        await command(client, "cairn.retireTopic", {"workspace": ws})
    assert "E_USAGE" in str(info.value)
