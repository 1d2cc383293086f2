"""The server reads the disk once where once serves: one store discovery per arming of the watchers,
one pass over the proposals per republish, today's usage records only when they changed.

Each reader is counted where it runs; every read runs in a thread, never on the event loop.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from cairn.server.lsp import memory_docs
from cairn.server.lsp.features import status
from cairn.server.lsp.service import CairnService
from cairn.server.testing import FakeClock

from tests.server.test_service import FakeEditor
from tests.server.test_status_first_snapshot import _with_proposals
from tests.support.shipped import own_state

pytestmark = pytest.mark.asyncio


def _service(*workspaces: Path) -> tuple[CairnService, FakeEditor]:
    editor = FakeEditor()
    service = CairnService(editor, clock=FakeClock())
    service.configure([str(ws) for ws in workspaces], {})
    return service, editor


async def test_one_store_discovery_arms_the_watchers_of_every_workspace(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import cairn.worker.ingest.sources as sources

    folders = [tmp_path / name for name in ("a", "b", "c")]
    for folder in folders:
        folder.mkdir()
    calls: list[tuple[bool, list[str]]] = []

    def discover(home: str, env: Any, **kw: Any) -> list[Any]:
        on_loop = threading.current_thread() is threading.main_thread()
        calls.append((on_loop, sorted(kw.get("workspaces") or [kw.get("workspace")])))
        return []

    monkeypatch.setattr(sources, "discover", discover)
    service, _ = _service(*folders)
    service.watching.discover = True
    await service.watching._arm_watchers(service.watching._generation)
    assert calls == [(False, sorted(str(f) for f in folders))]


async def test_a_republish_reads_the_proposals_once_for_all_open_documents(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cairn.worker.memory import views

    _with_proposals(workspace)
    memory = workspace / ".agents" / "memory"
    docs = [workspace / "AGENTS.md", memory / "MEMORY.md", memory / "no-proposal-touches-this.md"]
    service, editor = _service(workspace)
    for doc in docs:
        await service.documents.did_open(doc.as_uri())
    expected = {doc.as_uri(): memory_docs.diagnostics(views.pending_for_file(str(workspace), str(doc)))
                for doc in docs}
    # AGENTS.md alone marks Codex as in use, and nothing wires it yet: its quick fix rides along
    expected[docs[0].as_uri()] += memory_docs.unwired_diagnostics(["codex"])
    assert [len(views.pending_for_file(str(workspace), str(doc))) for doc in docs] == [1, 3, 0]
    assert editor.diagnostics == expected
    passes: list[bool] = []
    rows = views._rows

    def counted(ms: Any) -> Any:
        passes.append(threading.current_thread() is threading.main_thread())
        return rows(ms)

    monkeypatch.setattr(views, "_rows", counted)
    editor.diagnostics.clear()
    await service.documents.republish(str(workspace))
    assert passes == [False]  # one pass, in a thread
    assert editor.diagnostics == expected


def _request(day_dir: Path, rid: str) -> None:
    own_state(day_dir.parents[3])  # <ws>/.cairn/state/usage/<day>
    day_dir.mkdir(parents=True, exist_ok=True)
    (day_dir / f"{rid}.start").write_text(json.dumps({"id": rid, "pid": 0, "provider": "openai", "model": "m1",
                                                      "purpose": "review", "started": 0, "requestChars": 40}))
    (day_dir / f"{rid}.end").write_text(json.dumps({"outcome": "ok", "tokensIn": 100, "tokensOut": 10,
                                                    "estimated": False, "seconds": 1.5}))


async def test_status_reads_todays_usage_records_again_only_when_they_changed(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cairn.state.fsdir import PinnedDir
    from cairn.worker.providers.usage import USAGE, day_of

    monkeypatch.setattr(status, "REFRESH_SPACING", 0.0)
    today = workspace / USAGE / day_of(time.time())
    _request(today, "r0")
    _request(today, "r1")
    reads: list[str] = []
    read = PinnedDir.read

    def counted(self: PinnedDir, name: str, **kw: Any) -> bytes | None:
        if name.endswith((".start", ".end")):
            reads.append(name)
        return read(self, name, **kw)

    monkeypatch.setattr(PinnedDir, "read", counted)
    service, _ = _service(workspace)
    ws = str(workspace)

    async def usage() -> tuple[int, int]:
        await service.status.refresh_now(ws)
        u = service.workspaces[ws].usage
        return u["requests"], u["tokensIn"]

    assert await usage() == (2, 200) and len(reads) == 4
    assert await usage() == (2, 200) and len(reads) == 4  # an unchanged day is not read again
    _request(today, "r2")
    assert await usage() == (3, 300)  # a new record is seen at the next refresh
    assert await usage() == (3, 300)
    reads.clear()
    assert await usage() == (3, 300) and reads == []
