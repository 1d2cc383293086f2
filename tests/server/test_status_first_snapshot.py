"""``cairn/status`` right after start: counts from the first snapshot, and the mode in effect.

An editor that connects to a workspace with pending proposals asks for
status at once; the answer must not be the empty counts of a snapshot that
has not been read yet. ``mode`` is the setting in effect (editor options over
the workspace's ``.cairn/config.toml``), so an editor can show it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cairn.protocol.lsp import JOURNAL, STATUS
from cairn.server.lsp.service import CairnService
from cairn.server.testing import FakeClock

from tests.journal.helpers import DEMO, cairn, cairn_json
from tests.server.test_service import FakeEditor

pytestmark = pytest.mark.asyncio


def _with_proposals(ws: Path) -> int:
    (ws / "AGENTS.md").write_bytes(b"# Agents\n\nKeep pull requests small.\n")
    for argv in (("import", str(DEMO)), ("seal",), ("process",), ("review",)):
        cairn(ws, *argv)
    rows = cairn_json(ws, "proposals")
    assert isinstance(rows, list)
    pending = sum(1 for r in rows if r["state"] == "pending")
    assert pending > 0
    return pending


async def test_the_first_status_waits_for_the_first_snapshot(workspace: Path) -> None:
    pending = _with_proposals(workspace)
    (workspace / ".cairn" / "config.toml").write_text('mode = "manual"\n')
    editor = FakeEditor()
    service = CairnService(editor, clock=FakeClock())
    service.configure([str(workspace)], {})
    await service.start()
    try:
        status = await service.request(STATUS, {})
        assert status["proposals"] == pending
        assert status["refreshed"] is not None
        assert status["mode"] == "manual"  # the workspace file applies when the editor sets nothing
        await service.change_configuration({"cairn": {"mode": "auto"}})  # the editor's are the user's
        assert (await service.request(STATUS, {}))["mode"] == "auto"
    finally:
        await service.shutdown(0.0)


async def test_the_journal_request_lists_public_digests_newest_first(workspace: Path) -> None:
    _with_proposals(workspace)
    editor = FakeEditor()
    service = CairnService(editor, clock=FakeClock())
    service.configure([str(workspace)], {})
    await service.start()
    try:
        rows = await service.request(JOURNAL, {})
        assert rows and all(r["turn_ids"] and r["notes"] for r in rows)
        assert [r["created"] for r in rows] == sorted((r["created"] for r in rows), reverse=True)
    finally:
        await service.shutdown(0.0)
