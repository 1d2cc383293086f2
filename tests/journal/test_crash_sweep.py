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
from cairn.protocol.journal import Coverage, GroupCoverage, PublicDigest

from tests import sweep
from tests.journal.helpers import batches, segment_path
from tests.support import REPO, child_env
from tests.support.warm import run_python

pytestmark = pytest.mark.slow  # a crash sweep or race: sampled by default, see tests/sweep.py

SRC = REPO / "tests" / "fixtures" / "sweep" / ".aider.chat.history.md"
J = ".cairn/state/journal"


def _run(ws: Path, **env: str) -> subprocess.CompletedProcess[str]:
    # batches of two turns: the sweep kills between batches as well as inside one
    env.setdefault("CAIRN_CAPTURE_BATCH_TURNS", "2")
    return run_python(["-m", "cairn.server", "run", str(SRC), "-w", str(ws)], env=child_env(**env), timeout=120)


def _public(ws: Path) -> list[PublicDigest]:
    d = ws / ".cairn/journal"
    return sorted((codec.decode(p.read_bytes(), PublicDigest) for p in d.glob("*.json")), key=lambda x: x.id) \
        if d.exists() else []


def _check_evidence_until_coverage(ws: Path, where: str) -> None:
    caps = ws / J / "captures"
    if not caps.exists():
        return
    cov_dir = ws / J / "coverage"
    covered: set[str] = set()
    for p in cov_dir.iterdir() if cov_dir.exists() else ():
        if p.name.startswith("g-"):
            covered.update(t for c in codec.decode(p.read_bytes(), GroupCoverage).captures for t in c.turn_ids)
        elif not p.name.startswith("."):
            covered.add(codec.decode(p.read_bytes(), Coverage).turn_id)
    seen: list[str] = []
    for cap in caps.iterdir():
        entries = batches(cap)
        seen += [t for b in entries for t in b.turn_ids]
        # ready batches are contiguous in session order
        assert [b.seq for b in entries] == [sum(len(x.turn_ids) for x in entries[:i]) for i in range(len(entries))], where
        if (cap / "retired").exists():
            assert {t for b in entries for t in b.turn_ids} <= covered, (where, "retired before coverage")
            continue
        for b in entries:
            if set(b.turn_ids) <= covered:
                continue  # pins may be released once coverage exists
            assert (cap / f"pin-{b.segment}").exists(), (where, "pin lost before coverage")
            assert segment_path(ws, b.segment).exists(), (where, "evidence lost")
    assert len(seen) == len(set(seen)), (where, "a turn captured twice")


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
        _doctor_clean(ws, where)
        got = _public(ws)
        assert len(got) == 1, (where, [g.id for g in got])
        assert (got[0].id, got[0].notes, got[0].turn_ids) == (expected.id, expected.notes, expected.turn_ids), where
        _check_evidence_until_coverage(ws, where)
        shutil.rmtree(ws)


def _import(ws: Path, src: Path, **env: str) -> subprocess.CompletedProcess[str]:
    env.setdefault("CAIRN_CAPTURE_BATCH_TURNS", "2")
    return run_python(["-m", "cairn.server", "import", str(src), "-w", str(ws), "--json"], env=child_env(**env), timeout=120)


def _doctor_clean(ws: Path, where: str) -> None:
    doctor = run_python(["-m", "cairn.server", "doctor", "-w", str(ws)], env=child_env())
    assert doctor.returncode == 0, (where, doctor.stdout)


def _ready(ws: Path) -> list[str]:
    return [t for cap in sorted((ws / J / "captures").iterdir()) for b in batches(cap) for t in b.turn_ids]


def test_killing_a_batched_import_at_every_point_converges(tmp_path: Path) -> None:
    from tests.support.generated import write_session

    src = write_session(tmp_path / "s.jsonl", 9, 7, words=8)
    ref = tmp_path / "reference"
    ref.mkdir()
    log = tmp_path / "points.log"
    assert _import(ref, src, CAIRN_CRASH_LOG=str(log)).returncode == 0
    expected = _ready(ref)
    assert len(expected) == 7
    for _, ws, killed_at in sweep.killed_runs(len(log.read_text().splitlines()), tmp_path, None, _import, src):
        where = f"crash at {killed_at}"
        _check_evidence_until_coverage(ws, where)
        again = _import(ws, src, CAIRN_TEST_CLOCK_OFFSET="1000")
        assert again.returncode == 0, (where, again.stderr[-800:])
        assert _ready(ws) == expected, where  # every turn once, in session order
        _check_evidence_until_coverage(ws, where)
        _doctor_clean(ws, where)
        # no segment left behind unpinned: every stored segment is named by a pin
        pins = {p.name[4:] for p in (ws / J / "captures").glob("*/pin-*")}
        stored = {p.name for p in (ws / J / "segments").glob("*/*") if not p.name.startswith(".")}
        assert stored <= pins, where
        shutil.rmtree(ws)


def _process(ws: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_python(["-m", "cairn.server", "process", "-w", str(ws), "--json"], env=child_env(**env), timeout=120)


def test_killing_grouped_processing_at_every_point_converges(tmp_path: Path) -> None:
    from tests.journal.helpers import FIXTURES, cairn

    prepared = tmp_path / "prepared"
    prepared.mkdir()
    # three captures of three sessions, digested as one group
    for src in (SRC, REPO / "server" / "examples" / "demo-session.jsonl", FIXTURES / "claude-code" / "session.jsonl"):
        cairn(prepared, "import", str(src))
    cairn(prepared, "seal")
    ref = tmp_path / "reference"
    shutil.copytree(prepared, ref, symlinks=True)
    log = tmp_path / "points.log"
    assert _process(ref, CAIRN_CRASH_LOG=str(log)).returncode == 0
    expected = sorted((d.capture, d.id, d.notes, d.turn_ids) for d in _public(ref))
    retired = sorted(p.parent.name for p in (ref / J / "captures").glob("*/retired"))
    assert len(retired) == 3 and expected
    for _, ws, killed_at in sweep.killed_runs(len(log.read_text().splitlines()), tmp_path, prepared, _process):
        where = f"crash at {killed_at}"
        _check_evidence_until_coverage(ws, where)
        again = _process(ws, CAIRN_TEST_CLOCK_OFFSET="1000")
        assert again.returncode == 0, (where, again.stderr[-800:])
        assert sorted((d.capture, d.id, d.notes, d.turn_ids) for d in _public(ws)) == expected, where
        assert sorted(p.parent.name for p in (ws / J / "captures").glob("*/retired")) == retired, where
        _check_evidence_until_coverage(ws, where)
        _doctor_clean(ws, where)
        shutil.rmtree(ws)
