"""I/O faults during ``cairn run``: EIO and EROFS on fsync, a disk that fills between a file's
data and its name (ENOSPC at the link).

Each fault is injected once (:mod:`state.crash` fault injection) at a
sampled point (every point with ``CAIRN_POWERLOSS=full``). The command either
fails (exit 2, or 1 when ``run`` reports one failed step in its
summary) with a fixed code naming the system's reason (``E_IO_FAILED`` /
``E_NO_SPACE``) and no traceback, or completes whole; a rerun with the fault
gone publishes exactly the digest an undisturbed run publishes and
``cairn doctor`` is clean. A failed fsync is fatal for that write: the temp is
dropped and the write is made afresh by the rerun, never fsynced again on
the same descriptor (whose error the kernel reports only once).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.journal.test_crash_sweep import _check_evidence_until_coverage, _public
from tests.powerloss import harness
from tests.support import REPO, child_env
from tests.support.warm import run_python

pytestmark = [pytest.mark.slow, pytest.mark.timeout(7200 if harness.FULL else 300)]  # a fault sweep: sampled by default, CAIRN_POWERLOSS=full injects at every point

SRC = REPO / "tests" / "fixtures" / "sweep" / ".aider.chat.history.md"


def _run(ws: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_python(["-m", "cairn.server", "run", str(SRC), "-w", str(ws)],
                      env=child_env(CAIRN_CAPTURE_BATCH_TURNS="2", **env), timeout=120)


def test_io_faults_are_reported_with_a_code_and_recoverable(tmp_path: Path) -> None:
    ref = tmp_path / "ref"
    ref.mkdir()
    log = tmp_path / "points.log"
    assert _run(ref, CAIRN_CRASH_LOG=str(log)).returncode == 0
    (expected,) = _public(ref)
    points = [line.split(" ", 1) for line in log.read_text().splitlines()]
    faults = [(int(n), label, err) for n, label in points
              for err in (("EIO", "EROFS") if label.startswith("fsync") else ("ENOSPC",) if label.startswith("link") else ())]
    # sampled: every fifth fsync fault, every fourth full disk at a link
    chosen = faults if harness.FULL else [f for f in faults if f[2] != "ENOSPC"][::5] + [f for f in faults if f[2] == "ENOSPC"][::4]
    codes: set[str] = set()
    for n, label, err in chosen:
        ws = tmp_path / f"w{n}-{err}"
        ws.mkdir()
        where = f"{err} at point {n} ({label})"
        r = _run(ws, CAIRN_FAULT_AT=str(n), CAIRN_FAULT_ERRNO=err)
        assert "Traceback" not in r.stderr + r.stdout, where
        if r.returncode == 0:  # the fault hit a write that is redone on the next open (the state-root marker)
            assert [g.id for g in _public(ws)] == [expected.id], where
        else:
            code = "E_NO_SPACE" if err == "ENOSPC" else "E_IO_FAILED"
            said = r.stderr + r.stdout  # a failed step of ``run`` is reported in its summary (exit 1)
            assert r.returncode in (1, 2) and f"{code}: " in said and f"({err})" in said, (where, said[-400:])
            codes.add(code)
        assert not [p for p in ws.rglob(".tmp-*") if p.parent.name != "state"], (where, "a temp left beside a record")
        _check_evidence_until_coverage(ws, where)
        again = _run(ws, CAIRN_TEST_CLOCK_OFFSET="1000")
        assert again.returncode == 0, (where, again.stderr[-400:])
        got = _public(ws)
        assert [(g.id, g.notes, g.turn_ids) for g in got] == [(expected.id, expected.notes, expected.turn_ids)], where
        doctor = run_python(["-m", "cairn.server", "doctor", "-w", str(ws)], env=child_env())
        assert doctor.returncode == 0, (where, doctor.stdout[-400:])
    print(f"I/O faults injected: {len(chosen)} of {len(faults)}")
    assert codes == {"E_NO_SPACE", "E_IO_FAILED"} or harness.FULL
