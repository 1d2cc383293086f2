"""Live buffers win for every decision that writes a file, not only for a pending proposal's accept.

A proposal accepted and undone can be accepted again (the cockpit's History
offers it), and an undo writes the file back: neither shows a diagnostic in
the open document, and both used to write under its unsaved changes. Over a
real server on stdio: the editor opens ``AGENTS.md``, types without saving,
an undo, then the accept of the undone proposal, are refused with
``E_PROPOSAL_STALE`` (``… has unsaved changes``), the file untouched; once
the buffer holds what the file holds, the undo goes through.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import LanguageClient

from tests.server.lsp_harness import command
from tests.server.test_accept_edited import _instruction_proposal

pytestmark = pytest.mark.asyncio


@pytest.fixture
def proposal(workspace: Path) -> str:
    """A pending proposal that writes ``AGENTS.md`` (made before the server starts)."""
    return _instruction_proposal(workspace)


def _edit(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)]))


async def _refused(client: LanguageClient, name: str, arg: dict[str, object]) -> str:
    with pytest.raises(JsonRpcInvalidParams) as info:
        await command(client, name, arg)
    return str(info.value)


async def test_undo_and_accepting_an_undone_proposal_keep_unsaved_changes(proposal: str, client: LanguageClient,
                                                                          workspace: Path) -> None:
    agents = workspace / "AGENTS.md"
    original = agents.read_text(encoding="utf-8")
    answer = await command(client, "cairn.accept", {"ids": [proposal]})
    applied = agents.read_text(encoding="utf-8")
    assert applied != original, answer

    uri = agents.as_uri()
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
        uri=uri, language_id="markdown", version=1, text=applied)))
    _edit(client, uri, 2, "my unsaved line\n" + applied)
    refusal = await _refused(client, "cairn.undo", {"id": proposal})
    assert "E_PROPOSAL_STALE" in refusal and "AGENTS.md has unsaved changes" in refusal, refusal
    assert agents.read_text(encoding="utf-8") == applied, "the undo wrote under the unsaved buffer"

    _edit(client, uri, 3, applied)  # the change undone in the buffer: nothing of the user's to lose
    await command(client, "cairn.undo", {"id": proposal})
    assert agents.read_text(encoding="utf-8") == original

    _edit(client, uri, 4, original)  # the editor reloads the file the undo wrote
    _edit(client, uri, 5, "my unsaved line\n" + original)
    refusal = await _refused(client, "cairn.accept", {"ids": [proposal]})
    assert "E_PROPOSAL_STALE" in refusal and "AGENTS.md has unsaved changes" in refusal, refusal
    assert agents.read_text(encoding="utf-8") == original, "the accept wrote under the unsaved buffer"

