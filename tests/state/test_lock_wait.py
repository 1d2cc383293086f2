"""Waiting for a target lock is bounded: a stopped holder yields E_CLAIM_BUSY, never a hang.

Clocks and sleeps are injected (no test waits on the real clock); a waiter
that blocks regardless is caught by a thread join with a timeout instead of
hanging the run.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from cairn.protocol.claims import Authority
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.state import program as P
from cairn.state.claims import ClaimStore, scope_dirname
from cairn.state.fsdir import PinnedDir
from cairn.state.locks import LOCK_WAIT_SECONDS, LockWait, TargetLock

from tests.state.actor import CLAIMS, heard, say, spawned


class FakeTime:
    """A clock that only moves when the code under test sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds > 0
        self.sleeps.append(seconds)
        self.now += seconds

    def wait(self, seconds: float) -> LockWait:
        return LockWait(seconds=seconds, clock=self.clock, sleep=self.sleep)


def _within(seconds: float, fn: Callable[[], object]) -> object:
    """Run ``fn`` in a thread; fail (instead of hanging) if it has not returned in ``seconds``."""
    box: dict[str, object] = {}

    def body() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller
            box["error"] = exc

    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "the lock wait did not return: it blocked"
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box.get("value")


def test_a_held_lock_is_waited_for_with_backoff_then_busy(tmp_path: Path) -> None:
    d = PinnedDir.open_root(tmp_path)
    holder = TargetLock(d)
    holder.acquire()  # another open file description: excludes this process's other opens too
    try:
        fake = FakeTime()
        with pytest.raises(CairnError) as ei:
            _within(30, lambda: TargetLock(d, fake.wait(2.0), name="scope").acquire())
        assert ei.value.code is ErrorCode.CLAIM_BUSY
        assert "scope" in ei.value.message and "2 s" in ei.value.message
        assert sum(fake.sleeps) == pytest.approx(2.0)  # waited exactly the bound, not longer
        assert fake.sleeps[0] < 0.01 and max(fake.sleeps) <= 0.05  # short first retry, capped backoff
    finally:
        holder.release()
    fake = FakeTime()
    with TargetLock(d, fake.wait(2.0)):  # free again: taken at once, no sleep
        pass
    assert fake.sleeps == []
    d.close()


def test_the_default_bound_is_below_the_shortest_claim_ttl() -> None:
    from cairn.worker.journal.capture import SESSION_TTL

    assert 0 < LOCK_WAIT_SECONDS < SESSION_TTL


def test_a_stopped_lock_holder_makes_other_writers_busy_not_blocked(workspace: Path) -> None:
    scope = "review/general"
    with spawned("stall", workspace, scope, "60") as proc:
        first = heard(proc)
        assert first["event"] == "locked" and first["generation"] == 1
        os.kill(proc.pid, signal.SIGSTOP)  # stopped inside its program, holding the scope's lock
        fake = FakeTime()
        # this store sees the holder's deadline as passed, so it goes for a takeover, which needs the lock
        store = ClaimStore(PinnedDir.open_root(workspace), CLAIMS, clock_offset=1000.0, lock_wait=fake.wait(5.0))
        with pytest.raises(CairnError) as ei:
            _within(30, lambda: store.elect(scope, purpose="successor", ttl=60,
                                            authority=Authority(workspace=str(workspace))))
        assert ei.value.code is ErrorCode.CLAIM_BUSY and "lock" in ei.value.message
        assert sum(fake.sleeps) == pytest.approx(5.0)
        # any other locked program on the scope is refused the same way, having run nothing
        sd = scope_dirname(scope)
        with pytest.raises(CairnError) as ei:
            _within(30, lambda: store.run([P.Create(f"{sd}/marker")], lock=sd))
        assert ei.value.code is ErrorCode.CLAIM_BUSY
        assert not (workspace / CLAIMS / sd / "marker").exists()
        assert not (workspace / CLAIMS / sd / "2.claim").exists()
        os.kill(proc.pid, signal.SIGCONT)
        say(proc, "go\ndone\n")
        out, err = proc.communicate(timeout=60)
    events = [json.loads(line) for line in out.splitlines()]
    # the holder proved ownership before it stopped, under the lock nobody could take: its write stands
    assert events == [{"event": "wrote", "generation": 1}, {"event": "finished", "kind": "completed", "mine": True}], \
        (events, err)
    # the lock is free again: the successor is elected at once
    fake = FakeTime()
    store.lock_wait = fake.wait(5.0)
    assert store.elect(scope, purpose="successor", ttl=60, authority=Authority(workspace=str(workspace))).generation == 2
    assert fake.sleeps == []
