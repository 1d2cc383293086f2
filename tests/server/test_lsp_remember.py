"""``cairn.remember`` end to end: the real server over stdio, a real worker, a real workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import LanguageClient

from tests.server.lsp_harness import command, plain, request

pytestmark = pytest.mark.asyncio


@pytest.mark.lsp_options({"mode": "propose"})
async def test_remember_answers_with_the_proposal_and_refuses_bad_input(workspace: Path, client: LanguageClient) -> None:
    out = plain(await command(client, "cairn.remember", {"workspace": str(workspace), "type": "feedback",
                                                         "text": "Never force-push to shared branches",
                                                         "source": "emacs"}))
    result = out["result"]
    assert out["status"] == "ok" and result["reviewed"]
    [p] = result["proposals"]
    assert p["state"] == "pending" and "feedback memory" in p["title"]
    detail = plain(await request(client, "cairn/proposal", {"id": p["id"]}))
    assert "Never force-push to shared branches" in detail["diff"]
    cockpit = plain(await request(client, "cairn/cockpit", {"view": "candidates"}))
    assert p["id"] in str(cockpit)
    bad: list[tuple[dict[str, Any], str]] = [({"text": ""}, "E_USAGE"), ({"text": "a b", "type": "opinion"}, "E_USAGE"),
                      ({"text": "x " * 1001}, "E_RECORD_TOO_LARGE"), ({"text": "y" * 20000}, "E_RECORD_TOO_LARGE"),
                      ({}, "E_USAGE"), ({"text": 7}, "E_USAGE"), ({"text": "ok", "source": "Not OK"}, "E_USAGE")]
    for arg, code in bad:
        with pytest.raises(JsonRpcInvalidParams) as info:
            await command(client, "cairn.remember", arg)
        assert code in str(info.value), (arg, str(info.value))
    assert len(list((workspace / ".cairn/state/memory/remember").iterdir())) == 1
    for msg in client.log_messages:  # logs carry ids and codes, never the remembered text
        assert "force-push" not in msg.message


@pytest.mark.lsp_options({"mode": "propose"})
async def test_a_remembered_text_with_escapes_is_cleaned_and_never_wedges(workspace: Path,
                                                                          client: LanguageClient) -> None:
    out = plain(await command(client, "cairn.remember", {"workspace": str(workspace), "type": "project",
                                                         "text": "Use \x1b[31mpnpm\x1b[0m, not npm\x07"}))
    [p] = out["result"]["proposals"]
    assert out["status"] == "ok" and p["title"] == "New project memory: Use pnpm, not npm"
    detail = plain(await request(client, "cairn/proposal", {"id": p["id"]}))
    assert "Use pnpm, not npm" in detail["diff"] and "\x1b" not in detail["diff"] and "\x07" not in detail["diff"]
    out = plain(await command(client, "cairn.remember", {"workspace": str(workspace),
                                                         "text": "Releases are tagged on Mondays"}))
    assert out["status"] == "ok" and out["result"]["proposals"]
