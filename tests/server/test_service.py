"""The LSP behaviour without pygls: a fake editor connection, a fake clock, real workers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cairn.protocol.errors import CairnError
from cairn.protocol.lsp import IDLE, SESSION_EVENT, STATUS, TURN_COMPLETED
from cairn.server.lsp.service import CairnService
from cairn.server.scheduler.adapter import Adapter
from cairn.server.testing import FakeClock

from tests.support import until_changed

pytestmark = pytest.mark.asyncio


class FakeEditor:
    def __init__(self) -> None:
        self.logs: list[str] = []
        self.shown: list[str] = []
        self.diagnostics: dict[str, list[dict[str, Any]]] = {}
        self.changed = asyncio.Event()

    def log(self, level: int, message: str) -> None:
        self.logs.append(message)
        self.changed.set()

    def show(self, level: int, message: str) -> None:
        self.shown.append(message)

    def publish_diagnostics(self, uri: str, diagnostics: list[dict[str, Any]]) -> None:
        self.diagnostics[uri] = diagnostics

    async def progress_begin(self, title: str, message: str) -> str | None:
        return None

    def progress_report(self, token: str, message: str, percentage: int | None) -> None:
        pass

    def progress_end(self, token: str, message: str) -> None:
        pass

    def document_text(self, uri: str) -> str | None:
        return None

    async def until(self, pred: Callable[[], object], bound: float = 30.0) -> None:
        """Wait for a condition, re-checked on every event (bounded, not a sleep)."""
        await until_changed(self.changed, pred, bound)


def adapter_of(service: CairnService) -> Adapter:
    """The started service's adapter."""
    adapter = service.adapter
    assert adapter is not None, "the service is not started"
    return adapter


async def started(ws: Path, options: dict[str, Any]) -> tuple[CairnService, FakeEditor, FakeClock]:
    editor, clock = FakeEditor(), FakeClock()
    service = CairnService(editor, clock=clock)
    service.configure([str(ws)], options)
    await service.start()
    await editor.until(lambda: any("recover ok" in m for m in editor.logs))
    return service, editor, clock


def turn(ws: Path, sid: str, tid: str) -> dict[str, Any]:
    return {"workspace": str(ws), "sessionId": sid, "turnId": tid, "user": "u", "assistant": "a",
            "completedAt": "2025-06-12T10:00:00Z"}


def kinds_started(editor: FakeEditor) -> list[str]:
    return [m.split()[2] for m in editor.logs if m.endswith(")") and " started (pid " in m]


async def test_idle_sealing_after_the_quiet_period(workspace: Path) -> None:
    service, editor, clock = await started(workspace, {"sealIdleMinutes": 1})
    try:
        service.notify(TURN_COMPLETED, turn(workspace, "s1", "t1"))
        await editor.until(lambda: any("capture ok" in m for m in editor.logs))
        clock.advance(59.0)
        assert "seal-idle" not in kinds_started(editor)
        clock.advance(1.0)
        await editor.until(lambda: any("seal-idle ok" in m for m in editor.logs))
        # once per quiet period: another hour of quiet enqueues nothing more
        clock.advance(3600.0)
        assert kinds_started(editor).count("seal-idle") == 1
    finally:
        await service.shutdown(0.0)


async def test_idle_opportunity_needs_enough_idleness_and_comes_once(workspace: Path) -> None:
    service, editor, clock = await started(workspace, {"idleMinutes": 10})
    try:
        service.notify(IDLE, {"seconds": 60})
        assert not service.status.jobs()["jobs"]
        service.notify(IDLE, {"seconds": 600})
        jobs = {r["kind"] for r in service.status.jobs()["jobs"]}
        assert {"process", "review", "cleanup"} <= jobs
        await editor.until(lambda: not adapter_of(service).running and not service.status.jobs()["jobs"])
        before = len(kinds_started(editor))
        service.notify(IDLE, {"seconds": 1200})  # the same idle period: nothing new
        await adapter_of(service).flush()
        assert len(kinds_started(editor)) == before and not service.status.jobs()["jobs"]
    finally:
        await service.shutdown(0.0)


async def test_status_counts_turns_waiting_for_capture(workspace: Path) -> None:
    service, editor, clock = await started(workspace, {})
    try:
        service.notify(TURN_COMPLETED, turn(workspace, "s1", "t1"))
        status = await service.request(STATUS, {})
        assert status["pending"] >= 1 and status["turnsWaiting"] == 1
        # the turn text is not in the durable job store
        await adapter_of(service).flush()
        stored = (workspace / ".cairn/state/server/jobs.json").read_text()
        assert '"u"' not in stored and "assistant" not in stored
        # refused notifications are logged with their code
        service.notify(TURN_COMPLETED, {"workspace": str(workspace), "sessionId": "s1"})
        service.notify(SESSION_EVENT, {"workspace": str(workspace), "sessionId": "s1", "kind": "reboot"})
        assert [m for m in editor.logs if "refused (E_USAGE)" in m] == [
            "cairn: cairn/turnCompleted refused (E_USAGE)", "cairn: cairn/sessionEvent refused (E_USAGE)"]
        with pytest.raises(CairnError) as info:
            await service.request(STATUS, {"workspace": 3})
        assert info.value.code == "E_USAGE"
    finally:
        await service.shutdown(0.0)


async def test_notifications_sent_while_starting_take_effect_in_the_order_sent(workspace: Path) -> None:
    """Turns, then session-end, all sent before the service is up: the session-end seals those turns.

    Handled out of order, the seal would run first, find nothing and leave
    the turns in an open capture until idle sealing, 20 minutes later.
    """
    editor, clock = FakeEditor(), FakeClock()
    service = CairnService(editor, clock=clock)
    service.configure([str(workspace)], {})
    for i in range(3):
        service.notify(TURN_COMPLETED, turn(workspace, "s1", f"t{i}"))
    starting = asyncio.ensure_future(service.start())
    await asyncio.sleep(0)  # start() is under way (its first await), not finished
    assert not starting.done() and service.adapter is None
    service.notify(SESSION_EVENT, {"workspace": str(workspace), "sessionId": "s1", "kind": "session-end"})
    await starting
    try:
        order = [(r["kind"], r["args"].get("turn")) for r in service.status.jobs()["jobs"] if r["kind"] != "recover"]
        # the three turns are one batch: one capture job, before the seal
        assert order[:2] == [("capture", "t0"), ("seal", None)]
        await editor.until(lambda: any(" seal ok" in m for m in editor.logs))
        assert any(" capture ok captured=3" in m for m in editor.logs)
        assert any(" seal ok sealed=1" in m for m in editor.logs)  # the turns' capture, sealed
        # arriving after start, a call runs at once
        ran: list[str] = []
        service.when_started(lambda: ran.append("now"))
        assert ran == ["now"]
    finally:
        await service.shutdown(0.0)


async def test_a_burst_of_turns_is_captured_in_batches_in_session_order(workspace: Path) -> None:
    """The first turn's job starts at once; the turns behind it join one waiting job; a session
    boundary closes the batch, so a later turn is captured after the seal."""
    service, editor, _clock = await started(workspace, {})
    try:
        for i in range(40):
            service.notify(TURN_COMPLETED, turn(workspace, "s1", f"t{i}"))
        service.notify(SESSION_EVENT, {"workspace": str(workspace), "sessionId": "s1", "kind": "compaction"})
        service.notify(TURN_COMPLETED, turn(workspace, "s1", "after"))
        rows = [r for r in service.status.jobs()["jobs"] if r["kind"] != "recover"]
        assert [(r["kind"], r["args"].get("turn")) for r in rows] == [
            ("capture", "t0"), ("capture", "t1"), ("seal", None), ("capture", "after")]
        batches = [[t["turn_id"] for t in service.turns.payloads[r["id"]].turns] for r in rows if r["kind"] == "capture"]
        assert batches == [["t0"], [f"t{i}" for i in range(1, 40)], ["after"]]
        await editor.until(lambda: sum(" capture ok" in m for m in editor.logs) == 3 and not service.turns.payloads)
        assert [m.split(" capture ok ")[1].split()[0] for m in editor.logs if " capture ok " in m] == [
            "captured=1", "captured=39", "captured=1"]
    finally:
        await service.shutdown(0.0)
