"""Power loss at every barrier of ``cairn run`` (import, seal, digest with the embedded engine).

After each crash state: the command reported nothing yet, so recovery (the
same command again) must complete, ``cairn doctor`` must be clean, the
journal must hold exactly the digest an uninterrupted run publishes, and
evidence must never be lost before its coverage exists. In the state after the
run's last operation (the command has reported its digest published), the
digest and every captured turn must already be on disk, before any recovery.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.journal.test_crash_sweep import _check_evidence_until_coverage, _public
from tests.powerloss import harness, model
from tests.support import REPO, child_env
from tests.support.warm import run_python

pytestmark = [pytest.mark.slow, pytest.mark.timeout(7200 if harness.FULL else 300)]  # a crash sweep: sampled by default, CAIRN_POWERLOSS=full checks every state

SRC = REPO / "tests" / "fixtures" / "sweep" / ".aider.chat.history.md"
RUN = ["-m", "cairn.server", "run", str(SRC), "-w"]


def _doctor(ws: Path) -> subprocess.CompletedProcess[str]:
    return run_python(["-m", "cairn.server", "doctor", "-w", str(ws)], env=child_env())


def test_power_loss_during_import_seal_digest(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    template = tmp_path / "template"
    shutil.copytree(ws, template)
    before = model.inodes_of(ws)
    log = tmp_path / "ops.jsonl"
    r = harness.record(ws, log, [*RUN, str(ws)], CAIRN_CAPTURE_BATCH_TURNS="2")
    assert r.returncode == 0, r.stderr[-800:]
    ops = model.load(log)
    assert {"creat", "write", "fsync", "link", "fsync-dir", "mkdir", "unlink"} <= {o["op"] for o in ops}
    harness.check_replay_is_faithful(template, before, ops, ws, tmp_path)
    (expected,) = _public(ws)

    def check(where: str, at_end: bool, crashed: Path) -> None:
        if at_end:  # reported published: already durable, before anything else runs
            got = _public(crashed)
            assert [(g.id, g.turn_ids) for g in got] == [(expected.id, expected.turn_ids)], where
            assert _doctor(crashed).returncode == 0, where
        _check_evidence_until_coverage(crashed, where)
        again = run_python([*RUN, str(crashed)], env=child_env(CAIRN_CAPTURE_BATCH_TURNS="2",
                                                                CAIRN_TEST_CLOCK_OFFSET="1000"), timeout=120)
        assert again.returncode == 0, (where, again.stderr[-800:])
        doctor = _doctor(crashed)
        assert doctor.returncode == 0, (where, doctor.stdout[-800:])
        got = _public(crashed)
        assert [(g.id, g.notes, g.turn_ids) for g in got] == [(expected.id, expected.notes, expected.turn_ids)], where
        _check_evidence_until_coverage(crashed, where)

    assert harness.sweep(template, before, ops, tmp_path, check) > 20
