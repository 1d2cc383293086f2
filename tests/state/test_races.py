"""Races between real processes on a real file system."""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from cairn.protocol import codec
from cairn.protocol.claims import ClaimRecord, OutcomeRecord
from cairn.state.claims import scope_dirname

from tests.state.actor import CLAIMS
from tests.support import PYTHON, REPO, child_env

pytestmark = pytest.mark.slow  # a crash sweep or race: sampled by default, see tests/sweep.py


def _events(proc: subprocess.Popen[str]) -> list[dict]:
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_eight_processes_electing_in_one_scope_never_share_a_generation(workspace: Path) -> None:
    procs, rounds = 8, 40
    children = [
        subprocess.Popen([PYTHON, "-m", "tests.state.actor", "elect", str(workspace), "digest/shared", str(rounds), "30"],
                         cwd=REPO, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(procs)
    ]
    wins = [e for p in children for e in _events(p)]
    assert all(e["event"] == "won" for e in wins)
    gens = Counter(e["generation"] for e in wins)
    # exactly one winner per generation, and generations are contiguous 1..N
    assert max(gens.values()) == 1
    assert sorted(gens) == list(range(1, procs * rounds + 1))
    # every winner's outcome is its own completed outcome: zero double outcomes
    assert all(e["outcome"] == "completed" and e["by"] == e["nonce"] for e in wins)
    sd = workspace / CLAIMS / scope_dirname("digest/shared")
    for g in range(1, procs * rounds + 1):
        claim = codec.decode((sd / f"{g}.claim").read_bytes(), ClaimRecord)
        outcome = codec.decode((sd / f"{g}.outcome").read_bytes(), OutcomeRecord)
        assert outcome.claim_nonce == claim.nonce
    assert not [p for p in sd.iterdir() if p.name.startswith(".tmp-")]


def test_completion_and_takeover_race_for_one_outcome(workspace: Path) -> None:
    from cairn.protocol.claims import Authority
    from cairn.state.claims import ClaimStore
    from cairn.state.fsdir import PinnedDir

    kinds: Counter[str] = Counter()
    for i in range(12):
        scope = f"race-{i}"
        store = ClaimStore(PinnedDir.open_root(workspace), CLAIMS)
        store.elect(scope, purpose="race", ttl=60, authority=Authority(workspace=str(workspace)))
        start = time.time() + 1.0
        owner = subprocess.Popen([PYTHON, "-m", "tests.state.actor", "race", str(workspace), scope, "owner", str(start)],
                                 cwd=REPO, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        taker = subprocess.Popen([PYTHON, "-m", "tests.state.actor", "race", str(workspace), scope, "taker", str(start)],
                                 cwd=REPO, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        (o,), (t,) = _events(owner), _events(taker)
        outcome = codec.decode((workspace / CLAIMS / scope / "1.outcome").read_bytes(), OutcomeRecord)
        kinds[str(outcome.kind)] += 1
        if outcome.kind == "completed":
            # the owner won: it knows it, and the taker elected generation 2 after it
            assert o.get("mine") is True
            assert t.get("generation") == 2
        else:
            # takeover won: the owner's completion was refused, never silently accepted
            assert outcome.kind == "expired"
            assert o.get("code") == "E_CLAIM_LOST" or o.get("mine") is False, (o, t)
            assert t.get("generation") == 2
        assert not (workspace / CLAIMS / scope / "3.claim").exists()
    assert sum(kinds.values()) == 12
