"""The language server over stdio and a workspace whose ``.cairn/state`` came with the repository (ADR 0011).

It says so once (``window/showMessage`` with ``E_STATE_FOREIGN``), answers
requests on that workspace with the code, and serves no forged proposal: an
open memory file gets no diagnostic from it. Never a traceback.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tests.journal.helpers import DEMO, cairn_json
from tests.server.lsp_harness import command, request
from tests.support.shipped import clone_like

pytestmark = pytest.mark.asyncio


@pytest.fixture
def shipped(workspace: Path, tmp_path: Path) -> list[dict[str, Any]]:
    """``workspace`` (the server's folder) as cloned from a repository that committed pending proposals."""
    src = tmp_path / "source"
    src.mkdir()
    (src / "AGENTS.md").write_text("# Agents\n")
    proposals: list[dict[str, Any]] = cairn_json(src, "run", str(DEMO))["proposals"]
    assert proposals
    workspace.rmdir()
    clone_like(src, workspace)
    shutil.copy(src / "AGENTS.md", workspace / "AGENTS.md")
    (workspace / ".agents/memory").mkdir(parents=True, exist_ok=True)
    (workspace / ".agents/memory/MEMORY.md").write_text("# Memory\n")
    return proposals


async def test_a_shipped_state_folder_is_reported_once_and_serves_nothing(
        shipped: list[dict[str, Any]], client: LanguageClient, workspace: Path) -> None:
    with pytest.raises(JsonRpcException) as info:
        await request(client, "cairn/status")
    assert "E_STATE_FOREIGN" in str(info.value)
    with pytest.raises(JsonRpcException) as info:
        await request(client, "cairn/cockpit", {"workspace": str(workspace), "view": "candidates"})
    assert "E_STATE_FOREIGN" in str(info.value)
    create = next(p for p in shipped if p["kind"] == "create")
    with pytest.raises(JsonRpcException) as info:
        await command(client, "cairn.accept", {"workspace": str(workspace), "ids": [create["id"]]})
    assert "E_STATE_FOREIGN" in str(info.value)

    for name in ("AGENTS.md", ".agents/memory/MEMORY.md"):
        uri = (workspace / name).as_uri()
        published = asyncio.ensure_future(client.wait_for_notification("textDocument/publishDiagnostics"))
        client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
            uri=uri, language_id="markdown", version=1, text=(workspace / name).read_text())))
        await asyncio.wait_for(published, 30)
        assert not list(client.diagnostics.get(uri, [])), "a forged proposal was served as a diagnostic"

    shown = [m.message for m in client.messages if "E_STATE_FOREIGN" in m.message]
    assert len(shown) == 1, [m.message for m in client.messages]
    assert "move it aside" in shown[0].lower()
    everything = [m.message for m in client.messages] + [m.message for m in client.log_messages]
    assert not any("Traceback" in m or "E_INTERNAL" in m for m in everything), everything
    assert not (workspace / ".cairn/state/server").exists()  # no job store, no recovery pass in it
    assert not (workspace / create["target"]).exists()


async def test_once_the_state_folder_is_moved_aside_the_next_request_serves_the_workspace(
        shipped: list[dict[str, Any]], client: LanguageClient, workspace: Path) -> None:
    """The cockpit said "g tries again" and the message "move it aside", but only a server restart helped."""
    with pytest.raises(JsonRpcException):
        await request(client, "cairn/status")
    (workspace / ".cairn" / "state").rename(workspace / ".cairn" / "state.foreign")
    await request(client, "cairn/status")
    rows = await request(client, "cairn/cockpit", {"workspace": str(workspace), "view": "candidates"})
    assert not any(r.get("id") in {p["id"] for p in shipped} for r in (rows or [])), "no shipped proposal served"
