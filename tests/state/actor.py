"""A claim actor run as a real subprocess by the race, SIGSTOP and crash tests.

Usage: python -m tests.state.actor MODE ROOT SCOPE [ARGS...]; prints one JSON
line per event on stdout so the parent can check invariants.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

from cairn.protocol.claims import Authority
from cairn.protocol.errors import CairnError
from cairn.protocol.vocab import OutcomeKind
from cairn.state import program as P
from cairn.state.claims import ClaimStore
from cairn.state.fsdir import PinnedDir

CLAIMS = ".cairn/state/journal/claims"


@contextlib.contextmanager
def spawned(mode: str, root: object, scope: str, *args: str) -> Iterator[subprocess.Popen[str]]:
    """(Parent side) run this actor as a child with text pipes; however the test ends, a
    stopped child is continued and killed, so no stopped process outlives the test."""
    from tests.support import PYTHON, REPO, child_env

    proc = subprocess.Popen([PYTHON, "-m", "tests.state.actor", mode, str(root), scope, *args], cwd=REPO,
                            env=child_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdin is not None and proc.stdout is not None  # both are pipes
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
            proc.communicate()


def say(proc: subprocess.Popen[str], text: str) -> None:
    """(Parent side) write lines to the child."""
    assert proc.stdin is not None
    proc.stdin.write(text)
    proc.stdin.flush()


def heard(proc: subprocess.Popen[str]) -> dict[str, Any]:
    """(Parent side) the child's next event."""
    assert proc.stdout is not None
    event: dict[str, Any] = json.loads(proc.stdout.readline())
    return event


def out(**kw: object) -> None:
    sys.stdout.write(json.dumps(kw) + "\n")
    sys.stdout.flush()


def elect_loop(root: str, scope: str, rounds: int, ttl: float) -> None:
    """Elect and complete repeatedly; report every generation won."""
    store = ClaimStore(PinnedDir.open_root(root), CLAIMS)
    won = 0
    busy = 0
    while won < rounds:
        try:
            c = store.elect(scope, purpose="race", ttl=ttl, authority=Authority(workspace=root))
        except CairnError as exc:
            busy += 1
            if busy > 200000:
                out(event="gave-up", code=str(exc.code))
                return
            continue
        o = store.settle(c, OutcomeKind.COMPLETED, payload={"pid": os.getpid()})
        out(event="won", generation=c.generation, nonce=c.record.nonce, outcome=str(o.kind), by=o.nonce)
        won += 1


def hold_and_write(root: str, scope: str, ttl: float) -> None:
    """Elect, announce, then (after being stopped and continued) try a guarded write."""
    store = ClaimStore(PinnedDir.open_root(root), CLAIMS)
    c = store.elect(scope, purpose="stopped-owner", ttl=ttl, authority=Authority(workspace=root))
    out(event="elected", generation=c.generation, deadline=c.deadline)
    line = sys.stdin.readline()  # parent writes a line after SIGCONT
    assert line
    try:
        store.guarded(c, [P.EnsureDir("public"), P.Write("public/result", f"from {c.generation}".encode())])
        out(event="wrote", generation=c.generation)
    except CairnError as exc:
        out(event="rejected", generation=c.generation, code=str(exc.code))
    try:
        o = store.settle(c, OutcomeKind.COMPLETED)
        out(event="settled", kind=str(o.kind))
    except CairnError as exc:
        out(event="settle-refused", code=str(exc.code))


def stall_in_lock(root: str, scope: str, ttl: float) -> None:
    """Elect, then stall *inside* a guarded program, holding the scope's target lock.

    The program's ownership proof has passed; the write's bytes are produced
    only after the parent writes a line ("go [OFFSET]": OFFSET seconds passed
    meanwhile on this process's view of the target clock). A second line lets
    it complete the generation (:meth:`ClaimStore.finish`). Reports what the
    write and the completion did.
    """
    store = ClaimStore(PinnedDir.open_root(root), CLAIMS)
    c = store.elect(scope, purpose="stalled-writer", ttl=ttl, authority=Authority(workspace=root))

    def late_bytes(now: float | None) -> bytes:
        out(event="locked", generation=c.generation, deadline=c.deadline)
        words = sys.stdin.readline().split()
        if len(words) > 1:
            store.clock_offset = float(words[1])
        return f"from {c.generation}".encode()

    try:
        res = store.guarded(c, [P.EnsureDir("public"), P.Link("public/result", late_bytes)])
        out(event="wrote" if res.ok else "not-written", generation=c.generation)
    except CairnError as exc:
        out(event="rejected", generation=c.generation, code=str(exc.code))
    assert sys.stdin.readline()
    try:
        o = store.finish(c)
        out(event="finished", kind=str(o.kind) if o else None, mine=o is not None and o.nonce == c.record.nonce)
    except CairnError as exc:
        out(event="finish-refused", code=str(exc.code))


def settle_race(root: str, scope: str, role: str, start_at: float) -> None:
    """Race completion (owner) against takeover (successor) for one outcome."""
    from cairn.protocol import codec
    from cairn.protocol.claims import ClaimRecord

    store = ClaimStore(PinnedDir.open_root(root), CLAIMS)
    # the owner holds generation 1 (elected by the parent), however late this process started
    raw = store.run([P.Read(f"{store.scope_dir(scope)}/1.claim")])[0].value
    claim1 = codec.decode(raw, ClaimRecord)
    while time.time() < start_at:
        pass
    if role == "owner":
        from cairn.state.claims import Claim

        c = Claim(scope, store.scope_dir(scope), claim1)
        try:
            o = store.settle(c, OutcomeKind.COMPLETED, payload={"who": "owner"})
            out(event="settle", kind=str(o.kind), mine=o.nonce == claim1.nonce)
        except CairnError as exc:
            out(event="settle", code=str(exc.code))
    else:
        store.clock_offset = 1000.0  # this process sees the deadline as passed
        try:
            c = store.elect(scope, purpose="takeover", ttl=5, authority=Authority(workspace=root))
            out(event="takeover", generation=c.generation)
        except CairnError as exc:
            out(event="takeover", code=str(exc.code))


def sweep_setup(root: str) -> None:
    store = ClaimStore(PinnedDir.open_root(root), CLAIMS)
    for _ in range(5):
        c = store.elect("digest/s", purpose="setup", ttl=0.001, authority=Authority(workspace=root))
        store.settle(c, OutcomeKind.FAILED, error="E_PROVIDER_FAILED")


def sweep_workload(root: str, offset: float) -> None:
    """Election, guarded write, outcome election, a second scope, and pruning."""
    from cairn.state.bundles import BundleStore
    from cairn.state.prune import prune

    base = PinnedDir.open_root(root)
    store = ClaimStore(base, CLAIMS, clock_offset=offset)
    bundles = BundleStore(base, ".cairn/state/journal/bundles")
    for scope in ("digest/s", "review/general"):
        n = store.newest(scope)
        if n.claim is not None and n.outcome is None and n.now < n.claim.deadline:
            continue  # a live owner (only possible without the recovery offset)
        c = store.elect(scope, purpose="sweep", ttl=60, authority=Authority(workspace=root))
        sha, put = bundles.put_ops(f"result of {scope} {c.generation}".encode())
        store.guarded(c, [*put, P.EnsureDir("public"), P.Write(f"public/{c.generation}-{len(scope)}", sha.encode())])
        store.settle(c, OutcomeKind.COMPLETED, bundle=sha)
    # public records that name a bundle are retained references: pruning must keep those bundles
    pub = os.path.join(root, "public")
    named = {open(os.path.join(pub, n)).read() for n in os.listdir(pub) if not n.startswith(".")}
    while prune(store, bundles=bundles, max_pairs=2, keep_bundle=named.__contains__).more:
        pass
    from cairn.state.temps import collect_tree

    collect_tree(base, ".cairn")
    collect_tree(base, "public")
    out(event="done")



if __name__ == "__main__":
    mode, root, scope, *rest = sys.argv[1:]
    if mode == "elect":
        elect_loop(root, scope, int(rest[0]), float(rest[1]))
    elif mode == "hold":
        hold_and_write(root, scope, float(rest[0]))
    elif mode == "stall":
        stall_in_lock(root, scope, float(rest[0]))
    elif mode == "race":
        settle_race(root, scope, rest[0], float(rest[1]))
    elif mode == "sweep-setup":
        sweep_setup(root)
    elif mode == "sweep":
        sweep_workload(root, float(scope))
    else:
        raise SystemExit(f"unknown mode {mode}")
