"""A stopped owner resumes after a successor's election: its write is rejected at the target."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from cairn.protocol.claims import Authority
from cairn.state import program as P
from cairn.state.claims import ClaimStore, scope_dirname
from cairn.state.fsdir import PinnedDir

from tests.conftest import PYTHON, REPO, child_env
from tests.state.actor import CLAIMS


def test_stopped_owner_write_is_rejected_after_takeover(workspace: Path) -> None:
    scope = "review/general"
    proc = subprocess.Popen([PYTHON, "-m", "tests.state.actor", "hold", str(workspace), scope, "1.0"], cwd=REPO,
                            env=child_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdin is not None and proc.stdout is not None  # both are pipes
    try:
        first = json.loads(proc.stdout.readline())
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
        proc.stdin.write("go\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
            proc.wait()
    events = [json.loads(line) for line in out.splitlines()]
    assert events[0] == {"event": "rejected", "generation": 1, "code": "E_CLAIM_LOST"}
    assert events[1]["event"] == "settle-refused"
    # the successor's write survives, and generation 1 is settled as expired exactly once
    assert (workspace / "public/result").read_bytes() == b"from 2"
    newest = store.newest(scope)
    assert newest.generation == 2 and newest.outcome is None
    assert b'"kind":"expired"' in (workspace / CLAIMS / scope_dirname(scope) / "1.outcome").read_bytes()
