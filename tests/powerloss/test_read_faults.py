"""EIO on read: evidence, segments, the source manifest, claims, proposals and memory files.

One read of a file below the workspace fails with ``EIO``
(:mod:`tests.powerloss.readfault`, in the command's own process) at a
sampled point of ``cairn run`` over an imported session and of ``cairn accept``
of every pending proposal (every point with ``CAIRN_POWERLOSS=full``). The
command either fails with ``E_IO_FAILED`` and no traceback, or completes
whole; nothing is written from a read that failed (a file that could not be
read is never taken for an absent one and overwritten): the rerun with the
fault gone reaches exactly the undisturbed end state and ``cairn doctor`` is
clean.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.journal.test_crash_sweep import _check_evidence_until_coverage, _public
from tests.memory.converge import digested_template
from tests.powerloss import harness
from tests.support import REPO, child_env
from tests.support.warm import run_python

pytestmark = [pytest.mark.slow, pytest.mark.timeout(7200 if harness.FULL else 300)]

SRC = REPO / "tests" / "fixtures" / "sweep" / ".aider.chat.history.md"
ENV = {"CAIRN_CAPTURE_BATCH_TURNS": "2"}


def _faulted(log: Path, ws: Path, n: int, argv: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return run_python(["-m", "tests.powerloss.readfault", str(log), str(ws), str(n), "--", *argv],
                      env=child_env(**ENV, **env), timeout=120)


def _state(ws: Path) -> dict[str, object]:
    """What a user sees: the journal's digests, the memory and instruction files."""
    out: dict[str, object] = {g.id: (g.notes, g.turn_ids) for g in _public(ws)}
    out.update({str(p.relative_to(ws)): p.read_bytes() for p in ws.rglob("*.md")
                if ".cairn" not in p.parts and not p.name.startswith(".tmp-")})
    return out


def _sweep(tmp_path: Path, template: Path, argv: list[str], stride: int) -> int:
    ref = tmp_path / "ref"
    shutil.copytree(template, ref)
    log = tmp_path / "reads.log"
    r = _faulted(log, ref, 0, [*argv, str(ref)])
    assert r.returncode == 0, r.stderr[-400:]
    expected = _state(ref)
    reads = log.read_text().splitlines()
    assert len(reads) > 10
    chosen = range(1, len(reads) + 1) if harness.FULL else range(1, len(reads) + 1, stride)
    failed = 0
    for n in chosen:
        ws = tmp_path / f"r{n}"
        shutil.copytree(template, ws)
        where = f"EIO at read {n}: {reads[n - 1]}"
        r = _faulted(tmp_path / "discard.log", ws, n, [*argv, str(ws)])
        said = r.stdout + r.stderr
        assert "Traceback" not in said, (where, said[-800:])
        if r.returncode != 0:
            assert r.returncode in (1, 2) and "E_IO_FAILED: " in said, (where, said[-400:])
            failed += 1
        _check_evidence_until_coverage(ws, where)
        again = run_python([*argv, str(ws)], env=child_env(**ENV, CAIRN_TEST_CLOCK_OFFSET="1000"), timeout=120)
        assert again.returncode == 0 or "E_PROPOSAL_STATE" in again.stderr, (where, again.stderr[-400:])
        assert _state(ws) == expected, where  # nothing written wrongly: the undisturbed end state
        doctor = run_python(["-m", "cairn.server", "doctor", "-w", str(ws)], env=child_env())
        assert doctor.returncode == 0, (where, doctor.stdout[-400:])
        shutil.rmtree(ws)
    print(f"EIO on read injected: {len(chosen)} of {len(reads)} reads ({failed} reported E_IO_FAILED)")
    assert failed > 0
    return len(chosen)


def test_eio_reading_evidence_segments_and_the_manifest(tmp_path: Path) -> None:
    template = tmp_path / "template"
    template.mkdir()
    r = run_python(["-m", "cairn.server", "import", str(SRC), "-w", str(template)], env=child_env(**ENV))
    assert r.returncode == 0, r.stderr[-400:]
    _sweep(tmp_path, template, ["-m", "cairn.server", "run", str(SRC), "-w"], stride=3)
    assert _public(tmp_path / "ref")


def test_eio_reading_memory_files_and_proposals_during_accept(tmp_path: Path) -> None:
    template = digested_template(tmp_path / "template")
    assert run_python(["-m", "cairn.server", "review", "-w", str(template)], env=child_env()).returncode == 0
    listed = run_python(["-m", "cairn.server", "proposals", "--json", "-w", str(template)], env=child_env())
    ids = [p["id"] for p in json.loads(listed.stdout)]
    assert len(ids) >= 2
    _sweep(tmp_path, template, ["-m", "cairn.server", "accept", *ids, "-w"], stride=3)
