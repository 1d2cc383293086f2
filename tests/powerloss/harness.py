"""Record a real command, then check every sampled crash state a power loss may leave.

``CAIRN_POWERLOSS=full`` checks every crash state of every crash point;
by default each test checks a deterministic sample (every crash point's
"all kept" and "all lost" states at a stride, plus seeded random
combinations), and prints how many it checked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.powerloss import model
from tests.support import child_env
from tests.support.warm import run_python

FULL = os.environ.get("CAIRN_POWERLOSS") == "full"


def record(ws: Path, log: Path, argv: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m ARGV…`` with every file-system operation below ``ws`` logged to ``log``."""
    log.unlink(missing_ok=True)
    return run_python(["-m", "tests.powerloss.recorder", str(log), str(ws), "--", *argv],
                      env=child_env(**env), timeout=300)


def check_replay_is_faithful(template: Path, before: dict[str, str], ops: list[dict], ws: Path, tmp: Path) -> None:
    """Replaying every recorded operation onto the template gives the real result, byte for byte:
    the recording missed no write the command made below the workspace."""
    cut = model.Cut(ops, len(ops))
    kept = tuple(n - 1 if kind == "dir" else 0 for kind, _, n in cut.dimensions())
    dest = tmp / "replayed"
    model.materialize(template, before, cut, kept, dest)
    real = {str(p.relative_to(ws)): p.read_bytes() for p in ws.rglob("*") if p.is_file()}
    replayed = {str(p.relative_to(dest)): p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    # the storage clock is touched by utime (not a mutation cairn relies on); compare everything else
    assert {k for k in real if not k.endswith(".clock")} == {k for k in replayed if not k.endswith(".clock")}
    missed = sorted(k for k in real if not k.endswith(".clock") and real[k] != replayed[k])
    assert not missed, ("the recording missed a write", missed)
    shutil.rmtree(dest)


def crash_states(template: Path, before: dict[str, str], ops: list[dict], tmp: Path, *,
                 stride: int = 4, sample: int = 1) -> Iterator[tuple[str, bool, Path]]:
    """``(where, at_end, directory)`` for each crash state to check (the directory is reused)."""
    points = model.crash_points(ops)
    chosen = points if FULL else sorted(set(points[::stride]) | {points[-1]})
    dest = tmp / "crashed"
    for k in chosen:
        cut = model.Cut(ops, k)
        for c in model.choices(cut, full=FULL, sample=64 if FULL else sample, seed=k):
            model.materialize(template, before, cut, c, dest)
            nxt = ops[k]["op"] if k < len(ops) else "end"
            yield f"power lost before op {k}/{len(ops)} ({nxt}), choice {c}", k == len(ops), dest


def total(ops: list[dict]) -> int:
    """How many crash states a full sweep checks (counted, not built: see :func:`model.choices`)."""
    n = 0
    for k in model.crash_points(ops):
        product = 1
        for _, _, size in model.Cut(ops, k).dimensions():
            product *= size
        n += product if product <= 100_000 else min(product, 64 + 2)
    return n


def sweep(template: Path, before: dict[str, str], ops: list[dict], tmp: Path,
          check: Callable[[str, bool, Path], None], **kw: int) -> int:
    n = 0
    if FULL:
        print(f"power-loss crash states to check: {total(ops)}", flush=True)
    for where, at_end, dest in crash_states(template, before, ops, tmp, **kw):
        check(where, at_end, dest)
        n += 1
        if FULL and n % 250 == 0:  # a long run shows how far it got
            print(f"power-loss crash states checked so far: {n}", flush=True)
    print(f"power-loss crash states checked: {n} ({'full' if FULL else f'sampled, of {total(ops)}'})")
    return n
