"""The code action on an instruction file: ``Wire <agent> to read cairn memory`` (issue 25).

A real server over stdio. An open ``CLAUDE.md`` that does not bring Claude
Code to ``.agents/memory/MEMORY.md`` gets an Information diagnostic and the
quick fix; running it makes a pending ``agents-wire`` proposal (the file
itself is untouched until the proposal is accepted). A ``CLAUDE.md`` that
imports the index gets neither.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.journal.helpers import cairn_json
from tests.server.lsp_harness import command, plain
from tests.server.test_lsp_e2e import _code_action

pytestmark = pytest.mark.asyncio

WIRE = "cairn.wireAgents"


async def _open(client: LanguageClient, path: Path) -> list[lsp.Diagnostic]:
    uri = path.as_uri()
    diags = asyncio.ensure_future(client.wait_for_notification("textDocument/publishDiagnostics"))
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
        uri=uri, language_id="markdown", version=1, text=path.read_text(encoding="utf-8"))))
    await asyncio.wait_for(diags, 30)
    return list(client.diagnostics.get(uri, []))


async def _actions(client: LanguageClient, path: Path) -> list[dict[str, Any]]:
    received = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=path.as_uri()),
        range=lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=0)),
        context=lsp.CodeActionContext(diagnostics=[])))
    return [_code_action(a) for a in received or []]


async def test_an_unwired_claude_md_offers_the_wiring_and_running_it_proposes_it(workspace: Path,
                                                                                  client: LanguageClient) -> None:
    claude = workspace / "CLAUDE.md"
    claude.write_text("# Project\n\nUse tabs.\n", encoding="utf-8")
    before = claude.read_bytes()

    diags = await _open(client, claude)
    unwired = [d for d in diags if d.code == "agent-unwired"]
    assert len(unwired) == 1 and unwired[0].severity == lsp.DiagnosticSeverity.Information, diags
    assert "Claude Code" in unwired[0].message

    wire = [a for a in await _actions(client, claude) if a["command"]["command"] == WIRE]
    assert [a["title"] for a in wire] == ["Wire Claude Code to read cairn memory"]

    answer = plain(await command(client, WIRE, wire[0]["command"]["arguments"][0]))
    proposed = answer["result"]["proposals"]
    assert [(p["target"], p["agents"]) for p in proposed] == [("CLAUDE.md", ["claude-code"])]
    assert claude.read_bytes() == before, "a proposal only: nothing is written before it is accepted"

    listed = cairn_json(workspace, "proposals")
    rows = listed["proposals"] if isinstance(listed, dict) else listed
    pending = [r for r in rows if r["id"] == proposed[0]["id"]]
    assert pending and pending[0]["state"] == "pending", rows


async def test_a_wired_claude_md_offers_no_wiring(workspace: Path, client: LanguageClient) -> None:
    claude = workspace / "CLAUDE.md"
    claude.write_text("# Project\n\n@.agents/memory/MEMORY.md\n", encoding="utf-8")

    diags = await _open(client, claude)
    assert not [d for d in diags if d.code == "agent-unwired"], diags
    assert not [a for a in await _actions(client, claude) if a["command"]["command"] == WIRE]
