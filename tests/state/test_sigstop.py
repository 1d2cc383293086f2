"""A stopped owner resumes after a successor's election: its write is rejected at the target."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from cairn.protocol.claims import Authority
from cairn.state import program as P
from cairn.state.claims import ClaimStore, scope_dirname
from cairn.state.fsdir import PinnedDir

from tests.state.actor import CLAIMS, heard, say, spawned


def test_stopped_owner_write_is_rejected_after_takeover(workspace: Path) -> None:
    scope = "review/general"
    with spawned("hold", workspace, scope, "1.0") as proc:
        first = heard(proc)
        assert first["event"] == "elected" and first["generation"] == 1
        os.kill(proc.pid, signal.SIGSTOP)
        store = ClaimStore(PinnedDir.open_root(workspace), CLAIMS)
        # wait on the *target* clock (not a sleep of guessed length) until the deadline has passed
        while store.newest(scope).now < first["deadline"]:
            time.sleep(0.05)
        successor = store.elect(scope, purpose="successor", ttl=60, authority=Authority(workspace=str(workspace)))
        assert successor.generation == 2
        store.guarded(successor, [P.EnsureDir("public"), P.Write("public/result", b"from 2")])
        os.kill(proc.pid, signal.SIGCONT)
        say(proc, "go\n")
        out, err = proc.communicate(timeout=30)
    events = [json.loads(line) for line in out.splitlines()]
    assert events[0] == {"event": "rejected", "generation": 1, "code": "E_CLAIM_LOST"}
    assert events[1]["event"] == "settle-refused"
    # the successor's write survives, and generation 1 is settled as expired exactly once
    assert (workspace / "public/result").read_bytes() == b"from 2"
    newest = store.newest(scope)
    assert newest.generation == 2 and newest.outcome is None
    assert b'"kind":"expired"' in (workspace / CLAIMS / scope_dirname(scope) / "1.outcome").read_bytes()


def test_a_stopped_writer_whose_write_landed_reports_it_after_takeover(workspace: Path) -> None:
    """Stopped inside its guarded program (ownership proven, lock held) until past its deadline:
    the write lands when it continues, a successor then takes over, and the late process reports
    the write it made and the outcome that settled its generation — never a lost claim."""
    from cairn.state.locks import LockWait

    scope = "review/general"
    with spawned("stall", workspace, scope, "60") as proc:
        assert heard(proc)["event"] == "locked"
        os.kill(proc.pid, signal.SIGSTOP)
        os.kill(proc.pid, signal.SIGCONT)
        say(proc, "go 1000\n")  # 1000 s passed while it was stopped
        wrote = heard(proc)
        later = ClaimStore(PinnedDir.open_root(workspace), CLAIMS, clock_offset=1000.0,
                           lock_wait=LockWait(seconds=0.0))  # the lock is free by now: no waiting at all
        successor = later.elect(scope, purpose="successor", ttl=60, authority=Authority(workspace=str(workspace)))
        say(proc, "done\n")
        out, err = proc.communicate(timeout=30)
    finished = json.loads(out.splitlines()[0])
    assert wrote == {"event": "wrote", "generation": 1}
    assert (workspace / "public/result").read_bytes() == b"from 1"  # what it reported is what the file holds
    assert finished == {"event": "finished", "kind": "expired", "mine": False}, err
    assert successor.generation == 2
    assert b'"kind":"expired"' in (workspace / CLAIMS / scope_dirname(scope) / "1.outcome").read_bytes()
