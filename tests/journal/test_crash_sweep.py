"""Kill `cairn run` at every mutating operation, run it again, and check the journal converges.

Invariants after recovery: `cairn doctor` is clean; each capture is published
at most once (here: exactly once, with the same digest as an uninterrupted
run); no evidence or pin is lost before its coverage exists.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from cairn.protocol import codec
from cairn.protocol.journal import CaptureTurn, Coverage, PublicDigest

from tests import sweep
from tests.support import PYTHON, REPO, child_env

pytestmark = pytest.mark.slow  # a crash sweep or race: sampled by default, see tests/sweep.py

SRC = REPO / "tests" / "fixtures" / "sweep" / ".aider.chat.history.md"
J = ".cairn/state/journal"


def _run(ws: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYTHON, "-m", "cairn.server", "run", str(SRC), "-w", str(ws)], cwd=REPO, env=child_env(**env),
                          capture_output=True, text=True, timeout=120)


def _public(ws: Path) -> list[PublicDigest]:
    d = ws / ".cairn/journal"
    return sorted((codec.decode(p.read_bytes(), PublicDigest) for p in d.glob("*.json")), key=lambda x: x.id) \
        if d.exists() else []


def _check_evidence_until_coverage(ws: Path, where: str) -> None:
    caps = ws / J / "captures"
    if not caps.exists():
        return
    cov_dir = ws / J / "coverage"
    covered = {codec.decode(p.read_bytes(), Coverage).turn_id for p in cov_dir.iterdir()} if cov_dir.exists() else set()
    for cap in caps.iterdir():
        entries = [codec.decode(p.read_bytes(), CaptureTurn) for p in cap.glob("t-*")]
        if (cap / "retired").exists():
            assert {e.turn_id for e in entries} <= covered, (where, "retired before coverage")
            continue
        for e in entries:
            if e.turn_id in covered:
                continue  # pins may be released once coverage exists
            assert (cap / f"pin-{e.bundle}").exists(), (where, "pin lost before coverage")
            assert (ws / J / "evidence" / e.bundle[:2] / e.bundle).exists(), (where, "evidence lost")


def test_killing_run_at_every_point_converges(tmp_path: Path) -> None:
    ref = tmp_path / "reference"
    ref.mkdir()
    log = tmp_path / "points.log"
    assert _run(ref, CAIRN_CRASH_LOG=str(log)).returncode == 0
    points = log.read_text().splitlines()
    assert len(points) > 60
    (expected,) = _public(ref)
    for k, ws, killed_at in sweep.killed_runs(len(points), tmp_path, None, _run):
        _check_evidence_until_coverage(ws, f"after crash at {killed_at}")
        # time passes (held claims expire), the user runs the same command again
        again = _run(ws, CAIRN_TEST_CLOCK_OFFSET="1000")
        assert again.returncode == 0, (k, killed_at, again.stderr[-800:])
        where = f"crash at {killed_at}"
        doctor = subprocess.run([PYTHON, "-m", "cairn.server", "doctor", "-w", str(ws)], cwd=REPO, env=child_env(),
                                capture_output=True, text=True)
        assert doctor.returncode == 0, (where, doctor.stdout)
        got = _public(ws)
        assert len(got) == 1, (where, [g.id for g in got])
        assert (got[0].id, got[0].notes, got[0].turn_ids) == (expected.id, expected.notes, expected.turn_ids), where
        _check_evidence_until_coverage(ws, where)
        shutil.rmtree(ws)
