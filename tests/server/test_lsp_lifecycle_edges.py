"""Lifecycle and workspace edges of the real ``cairn serve`` over stdio (docs/lsp.md).

- before ``initialize`` every request is answered at once with LSP's
  ServerNotInitialized (-32002, ``E_USAGE``) and nothing runs; notifications
  are dropped;
- a ``textDocument/didChange`` for a document that is not open is ignored,
  never ``E_INTERNAL``;
- the file system root and the home folder itself are refused as workspace
  folders (``E_WORKSPACE_INVALID``), and nothing is written there.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.server.test_lsp_framing import RawClient, refused, server, stderr_of

pytestmark = pytest.mark.asyncio

NOT_INITIALIZED = -32002


def _shown(client: RawClient, code: str) -> list[str]:
    return [n["params"]["message"] for n in client.notifications
            if n.get("method") == "window/showMessage" and code in n["params"]["message"]]


async def _shut_down(client: RawClient) -> str:
    msg_id = client.send("shutdown")
    answer = await client.reply()
    assert answer["id"] == msg_id and "error" not in answer, answer
    client.notify("exit")
    return await stderr_of(client)


async def test_requests_before_initialize_are_refused_at_once_and_nothing_runs(workspace: Path) -> None:
    async with server() as client:
        # notifications before initialize are dropped: not checked, not queued, not run
        client.notify("cairn/idle", {"seconds": "long"})
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": (workspace / "AGENTS.md").as_uri(), "languageId": "markdown", "version": 1, "text": "x"}})
        requests: list[tuple[str, Any]] = [
            ("cairn/status", {}),
            ("workspace/executeCommand", {"command": "cairn.verify", "arguments": []}),
            ("textDocument/codeAction", {"textDocument": {"uri": (workspace / "AGENTS.md").as_uri()},
                                         "range": {"start": {"line": 0, "character": 0},
                                                   "end": {"line": 0, "character": 0}},
                                         "context": {"diagnostics": []}}),
            ("shutdown", None),
        ]
        for method, params in requests:  # each answered before the next is sent: none waits for initialize
            msg_id = client.send(method, params)
            refused(await client.reply(), NOT_INITIALIZED, "E_USAGE", msg_id)
        assert not [n for n in client.notifications if "refused" in json.dumps(n)], client.notifications
        await client.initialize(workspace)
        await client.status(workspace)  # served as usual once initialized
        err = await _shut_down(client)
    logged = json.dumps(client.notifications)
    assert "verify" not in logged and "cairn/idle" not in logged, logged  # the refused command never ran
    assert "E_INTERNAL" not in err and "Traceback" not in err, err


async def test_a_change_to_a_document_that_is_not_open_is_ignored(workspace: Path) -> None:
    async with server() as client:
        await client.initialize(workspace)
        await client.status(workspace)
        uri = (workspace / "NOTOPEN.md").as_uri()
        change = {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": "x"}]}
        client.notify("textDocument/didChange", change)
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "markdown", "version": 1, "text": "a\n"}})
        client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        client.notify("textDocument/didChange", change)  # closed again
        await client.status(workspace)
        err = await _shut_down(client)
    assert "E_INTERNAL" not in err and "KeyError" not in err and "Traceback" not in err, err
    assert err.count("not open; ignored (E_USAGE)") == 2, err


async def test_the_root_and_the_home_folder_are_refused_as_workspace_folders(workspace: Path,
                                                                             tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    root_state_before = os.path.lexists("/.cairn")
    async with server(HOME=str(home)) as client:
        await client.initialize(workspace)
        await client.status(workspace)
        client.notify("workspace/didChangeWorkspaceFolders", {"event": {"removed": [], "added": [
            {"uri": "file:///", "name": "root"}, {"uri": home.as_uri(), "name": "home"}]}})
        await client.status(workspace)  # still serving its workspace; the refusals were said before this reply
        shown = _shown(client, "E_WORKSPACE_INVALID")
        assert len(shown) == 2 and any(str(home) in m for m in shown), client.notifications
        for ws in ("/", str(home), home.as_uri()):
            msg_id = client.send("cairn/status", {"workspace": ws})
            refused(await client.reply(), -32602, "E_WORKSPACE_INVALID", msg_id)
        err = await _shut_down(client)
    assert not (home / ".cairn").exists()
    assert os.path.lexists("/.cairn") == root_state_before
    assert "E_INTERNAL" not in err, err


async def test_an_editor_opened_on_the_home_folder_serves_no_workspace(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    async with server(HOME=str(home)) as client:
        await client.initialize(home)
        msg_id = client.send("cairn/status", {})
        refused(await client.reply(), -32602, "E_WORKSPACE_INVALID", msg_id)
        assert len(_shown(client, "E_WORKSPACE_INVALID")) == 1, client.notifications
        err = await _shut_down(client)
    assert not (home / ".cairn").exists()
    assert "E_INTERNAL" not in err, err
