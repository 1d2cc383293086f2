"""Kill a real process at every mutating operation of election, outcome
election, guarded writes and pruning; recover; check the invariants."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from cairn.protocol import codec
from cairn.protocol.claims import OutcomeRecord
from cairn.state.doctor import check_workspace
from cairn.state.fsdir import PinnedDir

from tests import sweep
from tests.state.actor import CLAIMS
from tests.support import child_env
from tests.support.warm import run_python

pytestmark = pytest.mark.slow  # a crash sweep or race: sampled by default, see tests/sweep.py


def _run(ws: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_python(["-m", "tests.state.actor", *args[:1], str(ws), *args[1:]], env=child_env(**env), timeout=120)


def _state(ws: Path) -> dict[str, object]:
    claims = ws / CLAIMS
    out: dict[str, object] = {}
    for sd in sorted(p for p in claims.iterdir() if p.is_dir()):
        for f in sorted(sd.iterdir()):
            if f.name.endswith(".outcome"):
                rec = codec.decode(f.read_bytes(), OutcomeRecord)
                out[f"{sd.name}/{f.name}"] = str(rec.kind)
    return out


def test_crash_at_every_mutating_operation_then_recover(tmp_path: Path) -> None:
    template = tmp_path / "template"
    template.mkdir()
    assert _run(template, "sweep-setup", "x").returncode == 0
    counting = tmp_path / "count"
    shutil.copytree(template, counting)
    log = tmp_path / "points.log"
    r = _run(counting, "sweep", "0", CAIRN_CRASH_LOG=str(log))
    assert r.returncode == 0, r.stderr
    points = log.read_text().splitlines()
    labels = {line.split(" ", 1)[1].split(" ")[0] for line in points}
    # the sweep really covers election/outcome links, temps, fsyncs, renames and prune unlinks
    assert {"write-temp", "fsync-temp", "link", "unlink-temp", "fsync-dir", "rename", "unlink"} <= labels
    assert len(points) > 40
    reference = _state(counting)

    for k, ws, where in sweep.killed_runs(len(points), tmp_path, template, _run, "sweep", "0"):
        # recovery: a fresh process that sees every held claim as expired, then completes the work
        rec = _run(ws, "sweep", "1000")
        assert rec.returncode == 0, (k, rec.stderr)
        with PinnedDir.open_root(ws) as root:
            report = check_workspace(root)
        assert report.violations == (), (k, where, report.violations)
        # no stray temps survive recovery's cleanup
        assert not list(ws.rglob(".tmp-*")), (k, where)
        # the newest generation of each scope is completed, exactly once, and every
        # public write names a bundle that exists and verifies
        state = _state(ws)
        for scope_dir in {key.split("/")[0] for key in reference}:
            newest = max(int(key.split("/")[1].split(".")[0]) for key in state if key.startswith(scope_dir + "/"))
            assert state[f"{scope_dir}/{newest}.outcome"] == "completed", (k, state)
        for pub in (ws / "public").iterdir():
            sha = pub.read_text()
            blob = ws / ".cairn/state/journal/bundles" / sha[:2] / sha
            assert blob.exists(), (k, pub.name)
