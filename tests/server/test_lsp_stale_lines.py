"""Stale lines of an instruction file, shown in the editor (issue 30).

A real server over stdio. ``cairn verify`` checks the lines of ``AGENTS.md``
(and the other files agents load) and lists the stale ones; an editor with
the file open gets a Warning diagnostic on each such line, with the reason.
The warning follows its line when lines are added above it, goes when the
line is changed or the code catches up, and appears on opening the file
after a verification made by the CLI. Nothing in the file is rewritten.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from tests.journal.helpers import cairn
from tests.server.lsp_harness import command, plain

pytestmark = pytest.mark.asyncio

STALE = "stale-line"
TEXT = "# Agents\n\n- Run the tests with `make test`\n- Lint with `make lint`\n"


def _stale(client: LanguageClient, path: Path) -> list[lsp.Diagnostic]:
    return [d for d in client.diagnostics.get(path.as_uri(), []) if d.code == STALE]


async def _until(client: LanguageClient, path: Path, ok: Callable[[list[lsp.Diagnostic]], bool]) -> list[lsp.Diagnostic]:
    """The file's stale-line warnings once ``ok`` holds of them (each publication looked at; 30 s at most)."""
    async def wait() -> list[lsp.Diagnostic]:
        while not ok(_stale(client, path)):
            await client.wait_for_notification("textDocument/publishDiagnostics")
        return _stale(client, path)
    return await asyncio.wait_for(wait(), 30)


def _open(client: LanguageClient, path: Path) -> None:
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
        uri=path.as_uri(), language_id="markdown", version=1, text=path.read_text(encoding="utf-8"))))


def _save(client: LanguageClient, path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=path.as_uri(), version=2),
        content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)]))
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(
        text_document=lsp.TextDocumentIdentifier(uri=path.as_uri()), text=text))


async def test_a_stale_line_of_agents_md_is_a_warning_on_that_line(workspace: Path, client: LanguageClient) -> None:
    (workspace / "Makefile").write_text("test:\n\tpytest\n")
    agents = workspace / "AGENTS.md"
    agents.write_text(TEXT, encoding="utf-8")
    _open(client, agents)
    await asyncio.wait_for(client.wait_for_notification("textDocument/publishDiagnostics"), 30)
    assert not _stale(client, agents), "nothing is shown before a verification"

    answer = plain(await command(client, "cairn.verify", {"workspace": str(workspace)}))["result"]
    assert answer["staleInstructionLines"] == 1, answer
    warned = await _until(client, agents, bool)
    assert [(d.range.start.line, d.severity) for d in warned] == [(3, lsp.DiagnosticSeverity.Warning)], warned
    assert "lint" in warned[0].message and warned[0].source == "cairn"
    assert agents.read_text(encoding="utf-8") == TEXT, "the user's file is never rewritten"

    # two lines added above it: the warning moves with its line
    _save(client, agents, "# Agents\n\nSee below.\n\n" + TEXT[len("# Agents\n\n"):])
    assert [d.range.start.line for d in await _until(client, agents, lambda ds: bool(ds) and ds[0].range.start.line == 5)] == [5]

    # the code catches up: the next verification clears it
    (workspace / "Makefile").write_text("test:\n\tpytest\nlint:\n\truff check\n")
    answer = plain(await command(client, "cairn.verify", {"workspace": str(workspace)}))["result"]
    assert answer["staleInstructionLines"] == 0, answer
    assert await _until(client, agents, lambda ds: not ds) == []


async def test_a_verification_by_the_cli_shows_on_opening_and_a_changed_line_loses_it(
        workspace: Path, client: LanguageClient) -> None:
    (workspace / "Makefile").write_text("test:\n\tpytest\n")
    claude = workspace / "CLAUDE.md"
    claude.write_text(TEXT, encoding="utf-8")
    cairn(workspace, "verify", check=False)  # exit 1: a stale line was found

    _open(client, claude)
    warned = await _until(client, claude, bool)
    assert [d.range.start.line for d in warned] == [3]

    # the user rewrites that line: its warning goes (the next verification judges the new text)
    _save(client, claude, TEXT.replace("`make lint`", "`ruff check`"))
    assert await _until(client, claude, lambda ds: not ds) == []
