"""Bounded pruning: batch limits, never the newest, never referenced, continuation only at a limit."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from cairn.protocol.claims import Authority
from cairn.protocol.vocab import OutcomeKind
from cairn.state.bundles import BundleStore
from cairn.state.claims import ClaimStore
from cairn.state.fsdir import PinnedDir
from cairn.state.prune import prune

from tests.support import PYTHON, REPO, child_env

CLAIMS = ".cairn/state/journal/claims"
BUNDLES = ".cairn/state/journal/bundles"


def _fill(store: ClaimStore, scope: str, n: int, *, bundles: BundleStore | None = None, ttl: float = 0.0005) -> None:
    for _ in range(n):
        c = store.elect(scope, purpose="fill", ttl=ttl, authority=Authority(workspace="w"))
        sha = bundles.put(f"{scope}:{c.generation}".encode()) if bundles else None
        store.settle(c, OutcomeKind.FAILED, bundle=sha)


def _gens(ws: Path, scope: str) -> list[int]:
    return sorted(int(p.name.split(".")[0]) for p in (ws / CLAIMS / scope).glob("*.claim"))


def test_batches_respect_the_pair_limit_and_keep_the_newest(workspace: Path) -> None:
    root = PinnedDir.open_root(workspace)
    store = ClaimStore(root, CLAIMS)
    _fill(store, "cleanup", 450)
    store.clock_offset = 10  # every deadline has passed
    results = []
    while True:
        r = prune(store)
        results.append((r.pairs, r.more))
        if not r.more:
            break
    assert results == [(200, True), (200, True), (49, False)]
    assert _gens(workspace, "cleanup") == [450]
    assert prune(store).pairs == 0  # nothing left: a further batch does no work


def test_referenced_unexpired_and_unsettled_generations_survive(workspace: Path) -> None:
    root = PinnedDir.open_root(workspace)
    store = ClaimStore(root, CLAIMS)
    _fill(store, "s", 5)
    live = store.elect("s", purpose="live", ttl=3600, authority=Authority(workspace="w"))
    store.settle(live, OutcomeKind.COMPLETED)
    _fill(store, "s", 1)
    store.clock_offset = 10
    r = prune(store, referenced={("s", 2)})
    # gen 2 is referenced, gen 6 has not reached its deadline, gen 7 is the newest
    assert _gens(workspace, "s") == [2, 6, 7]
    assert r.pairs == 4 and not r.more


def test_content_groups_are_bounded_and_referenced_bundles_kept(workspace: Path) -> None:
    root = PinnedDir.open_root(workspace)
    store = ClaimStore(root, CLAIMS)
    bundles = BundleStore(root, BUNDLES)
    _fill(store, "digest/x", 61, bundles=bundles)
    keep = bundles.put(b"digest/x:3")
    store.clock_offset = 10
    r1 = prune(store, bundles=bundles, keep_bundle={keep}.__contains__)
    assert 40 <= r1.groups <= 50 and r1.more  # bounded; the kept bundle still uses budget
    r2 = prune(store, bundles=bundles, keep_bundle={keep}.__contains__)
    assert not r2.more
    remaining = set(bundles.iter_shas())
    # the newest generation's bundle and the externally referenced one remain
    assert keep in remaining and len(remaining) == 2


def test_temps_of_dead_writers_are_collected_and_live_ones_kept(workspace: Path) -> None:
    root = PinnedDir.open_root(workspace)
    store = ClaimStore(root, CLAIMS)
    _fill(store, "s", 2)
    dead = subprocess.run([PYTHON, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          env=child_env(), cwd=REPO)
    sd = workspace / CLAIMS / "s"
    (sd / f".tmp-{dead.stdout.strip()}-abc").write_bytes(b"partial")
    (sd / f".tmp-{os.getpid()}-def").write_bytes(b"mine, in progress")
    r = prune(store)
    assert r.temps == 1
    assert not (sd / f".tmp-{dead.stdout.strip()}-abc").exists()
    assert (sd / f".tmp-{os.getpid()}-def").exists()


def test_doctor_reports_a_successor_without_predecessor_outcome(workspace: Path) -> None:
    root = PinnedDir.open_root(workspace)
    store = ClaimStore(root, CLAIMS)
    _fill(store, "s", 3, ttl=60)
    clean = subprocess.run([PYTHON, "-m", "cairn.server", "doctor", "-w", str(workspace)], cwd=REPO, env=child_env(),
                           capture_output=True, text=True)
    assert clean.returncode == 0 and "ok" in clean.stdout
    (workspace / CLAIMS / "s" / "2.outcome").unlink()
    bad = subprocess.run([PYTHON, "-m", "cairn.server", "doctor", "-w", str(workspace)], cwd=REPO, env=child_env(),
                         capture_output=True, text=True)
    assert bad.returncode == 1
    assert "V_NO_PREDECESSOR_OUTCOME" in bad.stdout and "s/2.claim" in bad.stdout
