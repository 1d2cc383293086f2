"""End to end: the real server over stdio, real workers, a real workspace."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import LanguageClient

from tests.server.lsp_harness import (
    command,
    plain,
    request,
    send_turns,
    until,
    work_done,
)

pytestmark = pytest.mark.asyncio


@pytest.mark.lsp_options({"mode": "propose", "sealIdleMinutes": 30})
async def test_turns_then_session_end_publish_digests(client: LanguageClient, workspace: Path) -> None:
    status = plain(await request(client, "cairn/status"))
    assert set(status) >= {"pending", "running", "retryWaiting", "attention", "exhausted", "digests", "proposals"}
    send_turns(client, workspace, "s1")
    client.protocol.notify("cairn/sessionEvent", {"workspace": str(workspace), "sessionId": "s1",
                                                  "kind": "session-end"})

    async def digests() -> int:
        st = plain(await request(client, "cairn/status", {"workspace": str(workspace)}))
        return st["digests"] if st["pending"] == 0 and st["running"] == 0 else 0

    assert await until(client, digests) > 0
    assert list((workspace / ".cairn" / "journal").rglob("*.json"))
    # logs carry ids and codes, never the turn text
    for msg in client.log_messages:
        assert "bare except" not in msg.message and "staging" not in msg.message
    jobs = plain(await request(client, "cairn/jobs"))
    assert jobs["counts"]["running"] == 0


@pytest.mark.lsp_options({"mode": "sometimes", "idleMinutes": "soon"})
async def test_bad_options_are_reported_and_defaults_kept(client: LanguageClient) -> None:
    await request(client, "cairn/status")  # answered: initialization finished
    warnings = [m.message for m in client.messages if "E_CONFIG_INVALID" in m.message]  # shown, not only logged
    assert len(warnings) == 2, warnings
    assert all(m.type == lsp.MessageType.Warning for m in client.messages if "E_CONFIG_INVALID" in m.message)


async def test_unknown_workspace_is_refused_with_a_code(client: LanguageClient, tmp_path: Path) -> None:
    with pytest.raises(JsonRpcInvalidParams) as info:
        await request(client, "cairn/status", {"workspace": str(tmp_path / "elsewhere")})
    assert "E_WORKSPACE_INVALID" in str(info.value)
    with pytest.raises(JsonRpcInvalidParams) as info:
        await request(client, "cairn/cockpit", {"view": "everything"})
    assert "E_USAGE" in str(info.value)


async def test_drain_reports_work_done_progress(client: LanguageClient, workspace: Path) -> None:
    for s in ("a", "b"):
        send_turns(client, workspace, s)
        client.protocol.notify("cairn/sessionEvent", {"workspace": str(workspace), "sessionId": s,
                                                      "kind": "compaction"})
    result = plain(await command(client, "cairn.drainBacklog", {"workspace": str(workspace)}))
    token = result["progress"]
    assert token

    async def ended() -> bool:
        reports = work_done(client, token)
        return bool(reports) and reports[-1].kind == "end"

    await until(client, ended)
    reports = work_done(client, token)
    kinds = [r.kind for r in reports]
    assert kinds[0] == "begin" and kinds[-1] == "end" and "report" in kinds
    last = reports[-1]
    assert isinstance(last, lsp.WorkDoneProgressEnd)
    assert "not finished" not in (last.message or ""), last.message
    # a second drain gets a fresh token
    again = plain(await command(client, "cairn.drainBacklog", {"workspace": str(workspace)}))
    assert again["progress"] != token
    status = plain(await request(client, "cairn/status"))
    assert status["pending"] == 0 and status["digests"] > 0


@pytest.mark.lsp_env(CAIRN_SERVER_CRASH_ONCE="process:1")  # its first `process` worker dies at its first write
async def test_worker_killed_mid_job_is_retried_and_converges(client: LanguageClient, workspace: Path) -> None:
    send_turns(client, workspace, "s1")
    client.protocol.notify("cairn/sessionEvent", {"workspace": str(workspace), "sessionId": "s1",
                                                  "kind": "session-end"})

    async def crashed() -> dict | None:
        jobs = plain(await request(client, "cairn/jobs"))
        rows = [r for r in jobs["jobs"] if r["kind"] == "process" and r["lastError"] == "E_WORKER_CRASHED"]
        return rows[0] if rows else None

    row = await until(client, crashed)
    assert row["state"] == "retry-waiting" and row["attempts"] == 1
    # the user retries now instead of waiting for the eligibility deadline
    await command(client, "cairn.retry", {"jobId": row["id"]})

    async def converged() -> int:
        st = plain(await request(client, "cairn/status"))
        return st["digests"] if st["pending"] == 0 and st["running"] == 0 and st["retryWaiting"] == 0 else 0

    assert await until(client, converged) > 0
    jobs = plain(await request(client, "cairn/jobs"))
    assert not [r for r in jobs["jobs"] if r["kind"] == "process"]


@pytest.fixture
def memory(workspace: Path) -> Path:
    """A curated memory folder with an index and one entry, written before the server starts."""
    memory = workspace / ".agents" / "memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("# Memory\n\n- [Release](release.md) - how releases are cut\n",
                                      encoding="utf-8")
    (memory / "release.md").write_text(
        "---\nname: Release\ndescription: how releases are cut\ntype: project\n---\nTag from main only.\n",
        encoding="utf-8")
    return memory


@pytest.mark.lsp_options({"mode": "propose"})
async def test_code_actions_on_a_memory_file_apply_a_proposal(memory: Path, client: LanguageClient,
                                                              workspace: Path) -> None:
    index = memory / "MEMORY.md"
    send_turns(client, workspace, "s1")
    client.protocol.notify("cairn/sessionEvent", {"workspace": str(workspace), "sessionId": "s1",
                                                  "kind": "session-end"})

    async def digested() -> int:
        st = plain(await request(client, "cairn/status"))
        return st["digests"] if st["pending"] == 0 and st["running"] == 0 else 0

    await until(client, digested)
    await command(client, "cairn.review", {"workspace": str(workspace)})

    async def proposed() -> int:
        st = plain(await request(client, "cairn/status"))
        return st["proposals"] if st["running"] == 0 else 0

    await until(client, proposed)
    touched = [p for p in sorted(memory.glob("*.md")) + [workspace / "AGENTS.md"] if p.exists()]
    before = {p: p.read_text(encoding="utf-8") for p in touched}

    uri = index.as_uri()
    diags = asyncio.ensure_future(client.wait_for_notification("textDocument/publishDiagnostics"))
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
        uri=uri, language_id="markdown", version=1, text=before[index])))
    await asyncio.wait_for(diags, 30)
    assert client.diagnostics[uri], "a pending proposal touches MEMORY.md"
    assert all(d.severity == lsp.DiagnosticSeverity.Information for d in client.diagnostics[uri])

    received = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri),
        range=lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=0)),
        context=lsp.CodeActionContext(diagnostics=[])))
    assert received is not None
    actions = [_code_action(a) for a in received]
    titles = [a["title"] for a in actions]
    assert any("Accept" in t for t in titles) and any("Reject" in t for t in titles)
    accept = next(a for a in actions if a["command"]["command"] == "cairn.accept")
    show = next(a for a in actions if a["command"]["command"] == "cairn.showProposal")
    detail = plain(await command(client, show["command"]["command"], show["command"]["arguments"][0]))
    assert "diff" in detail and detail["diff"]

    # live buffers win: an unsaved edit blocks the write
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=before[index] + "unsaved\n")]))
    with pytest.raises(JsonRpcInvalidParams) as info:
        await command(client, "cairn.accept", accept["command"]["arguments"][0])
    assert "E_PROPOSAL_STALE" in str(info.value)
    assert index.read_text(encoding="utf-8") == before[index]
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=3),
        content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=before[index])]))

    republished = asyncio.ensure_future(client.wait_for_notification("textDocument/publishDiagnostics"))
    await command(client, "cairn.accept", accept["command"]["arguments"][0])
    await asyncio.wait_for(republished, 30)
    after = {p: p.read_text(encoding="utf-8") for p in sorted(memory.glob("*.md")) if p.exists()}
    assert after != {p: t for p, t in before.items() if p.parent == memory}, "accepting changed the memory"


def _code_action(item: lsp.Command | lsp.CodeAction) -> dict[str, Any]:
    """A code action as the server sent it.

    lsprotocol's client-side hook reads every item that has a ``command`` key
    as a bare ``Command`` and turns the nested command object into its repr;
    the server sends proper ``CodeAction`` objects, so undo that here.
    """
    import ast

    command = item.command
    if isinstance(command, str):
        assert command.startswith("{"), "a bare command, not a code action"
        return {"title": item.title, "command": ast.literal_eval(command)}
    assert command is not None, "a code action without a command"
    return {"title": item.title, "command": {"command": command.command, "arguments": command.arguments}}


@pytest.mark.lsp_options({"mode": "propose"})
async def test_an_unmodified_buffer_older_than_its_file_does_not_block_accept(
        memory: Path, client: LanguageClient, workspace: Path) -> None:
    """MEMORY.md open and unmodified, changed on disk elsewhere: accept writes, no "unsaved changes"."""
    index = memory / "MEMORY.md"
    send_turns(client, workspace, "s1")
    client.protocol.notify("cairn/sessionEvent", {"workspace": str(workspace), "sessionId": "s1",
                                                  "kind": "session-end"})

    async def digested() -> int:
        st = plain(await request(client, "cairn/status"))
        return st["digests"] if st["pending"] == 0 and st["running"] == 0 else 0

    await until(client, digested)
    await command(client, "cairn.review", {"workspace": str(workspace)})

    async def proposed() -> int:
        st = plain(await request(client, "cairn/status"))
        return st["proposals"] if st["running"] == 0 else 0

    await until(client, proposed)
    opened = index.read_text(encoding="utf-8")
    uri = index.as_uri()
    diags = asyncio.ensure_future(client.wait_for_notification("textDocument/publishDiagnostics"))
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
        uri=uri, language_id="markdown", version=1, text=opened)))
    await asyncio.wait_for(diags, 30)
    received = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri),
        range=lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=0)),
        context=lsp.CodeActionContext(diagnostics=[])))
    assert received
    accept = next(a for a in map(_code_action, received) if a["command"]["command"] == "cairn.accept")

    # the CLI (or the other editor) adds an unrelated entry; the buffer stays as opened, unmodified
    index.write_text(opened + "- [Other](other.md) - written elsewhere\n", encoding="utf-8")
    pending = await proposed()
    await command(client, "cairn.accept", accept["command"]["arguments"][0])
    assert "written elsewhere" in index.read_text(encoding="utf-8"), "the change made elsewhere is kept"
    assert await proposed() == pending - 1, "the proposal was applied"


@pytest.mark.lsp_options({"mode": "propose"})
async def test_proposals_added_by_the_cli_refresh_diagnostics_and_code_actions(
        memory: Path, client: LanguageClient, workspace: Path) -> None:
    """`cairn run` in a terminal while MEMORY.md is open: the next code action request offers the new
    proposals and the document's diagnostics follow (before, both stayed as they were at didOpen)."""
    from tests.journal.helpers import DEMO, cairn

    index = memory / "MEMORY.md"
    uri = index.as_uri()
    opened = asyncio.ensure_future(client.wait_for_notification("textDocument/publishDiagnostics"))
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
        uri=uri, language_id="markdown", version=1, text=index.read_text(encoding="utf-8"))))
    await asyncio.wait_for(opened, 30)
    assert not client.diagnostics.get(uri)
    await request(client, "cairn/status")  # the server's snapshot, before the terminal's run
    await asyncio.to_thread(cairn, workspace, "run", str(DEMO))
    republished = asyncio.ensure_future(client.wait_for_notification("textDocument/publishDiagnostics"))
    received = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri),
        range=lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=99, character=0)),
        context=lsp.CodeActionContext(diagnostics=[])))
    assert received, "the proposals the run made touch MEMORY.md"
    assert any(_code_action(a)["command"]["command"] == "cairn.accept" for a in received)
    await asyncio.wait_for(republished, 30)
    assert client.diagnostics[uri]


async def test_accept_keeping_both_over_the_server(client: LanguageClient, workspace: Path) -> None:
    """A proposal stale only because memory now says otherwise on its subject (ADR 0025): ``cairn.accept``
    refuses it with its code; with ``keepBoth`` the person's call is applied."""
    from tests.journal.helpers import cairn, cairn_json

    npm = cairn_json(workspace, "remember", "Use npm to install dependencies")["proposals"][0]["id"]
    pnpm = cairn_json(workspace, "remember", "Use pnpm, not npm, to install dependencies")["proposals"][0]["id"]
    await asyncio.to_thread(cairn, workspace, "accept", npm)
    with pytest.raises(JsonRpcInvalidParams) as info:
        await command(client, "cairn.accept", {"workspace": str(workspace), "ids": [pnpm]})
    assert "E_PROPOSAL_STALE" in str(info.value) and "without replacing it" in str(info.value)
    done = plain(await command(client, "cairn.accept", {"workspace": str(workspace), "ids": [pnpm],
                                                        "keepBoth": True}))
    assert done["result"]["decisions"][0]["state"] == "applied"
