"""Power loss at every barrier of review, accept, undo and reject of memory proposals.

In every crash state each memory and instruction file is byte for byte one of
its legitimate states (before, or after its accept; never a half write); a
rerun converges to the uninterrupted end state (each accept applied once,
the undo restoring the exact bytes), with no marker or temp left and
``cairn doctor`` clean. The run's final state is what it reported, before any
rerun.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.memory.converge import assert_rerun_converges, digested_template
from tests.memory.test_crash_sweep import _files
from tests.powerloss import harness, model
from tests.support import child_env
from tests.support.warm import run_python

pytestmark = [pytest.mark.slow, pytest.mark.timeout(7200 if harness.FULL else 300)]  # a crash sweep: sampled by default, CAIRN_POWERLOSS=full checks every state

ACTOR = ["-m", "tests.memory.actor"]


def _actor(ws: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_python([*ACTOR, str(ws)], env=child_env(**env), timeout=120)


def test_power_loss_during_review_accept_undo(tmp_path: Path) -> None:
    template = digested_template(tmp_path / "template")
    initial = _files(template)
    ws = tmp_path / "ws"
    shutil.copytree(template, ws)
    before = model.inodes_of(ws)
    log = tmp_path / "ops.jsonl"
    r = harness.record(ws, log, [*ACTOR, str(ws)])
    assert r.returncode == 0, r.stderr[-800:]
    ops = model.load(log)
    harness.check_replay_is_faithful(template, before, ops, ws, tmp_path)
    final = _files(ws)
    legit: dict[str, set[bytes | None]] = {}
    for snap in (initial, final):
        for rel, content in snap.items():
            legit.setdefault(rel, set()).add(content)
    initial_agents = initial["AGENTS.md"]
    assert initial_agents is not None
    applied: dict[str, bytes] = {}

    def check(where: str, at_end: bool, crashed: Path) -> None:
        now = _files(crashed)
        if at_end:
            assert now == final, where  # reported done: durable as reported
        for name, data in now.items():
            if data in legit.get(name, {None}):
                continue
            # AGENTS.md between its accept and its undo: the applied bytes, whole, always the same
            assert name == "AGENTS.md" and data is not None and data.startswith(initial_agents), (where, name)
            assert data == applied.setdefault(name, data), (where, name, "a second applied state")
        assert_rerun_converges(crashed, _actor, _files, final, 0, where)

    assert harness.sweep(template, before, ops, tmp_path, check) > 20

    # the checks have teeth: the same run without its file fsyncs (a writer that renames
    # before its data is durable) leaves a crash state in which they fail
    unsynced = [op for op in ops if op["op"] != "fsync"]
    cut = model.Cut(unsynced, len(unsynced))
    lost = tuple(n - 1 if kind == "dir" else model.DATA_MODES.index("lost") for kind, _, n in cut.dimensions())
    model.materialize(template, before, cut, lost, tmp_path / "unsynced")
    with pytest.raises(AssertionError):
        check("without file fsyncs, all data lost", True, tmp_path / "unsynced")
