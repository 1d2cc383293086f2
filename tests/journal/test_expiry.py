"""Public digests expire only when fully reviewed and past the history window."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cairn.protocol.worker import WorkerRequest
from cairn.worker.entry import run_request

from tests import sweep
from tests.journal.helpers import DEMO, cairn, cairn_json
from tests.support import child_env
from tests.support.warm import run_python

pytestmark = pytest.mark.slow  # a crash sweep or race: sampled by default, see tests/sweep.py


def _cleanup(ws: Path, offset_days: float = 0) -> dict:
    os.environ["CAIRN_TEST_CLOCK_OFFSET"] = str(offset_days * 86400)
    try:
        return run_request(WorkerRequest(job="cleanup", workspace=str(ws))).result
    finally:
        del os.environ["CAIRN_TEST_CLOCK_OFFSET"]


def test_digests_retire_only_when_every_proposal_is_decided_and_the_window_passed(workspace: Path) -> None:
    out = cairn_json(workspace, "run", str(DEMO))
    (digest,) = out["digests"]
    entry = workspace / ".cairn/journal" / f"{digest['id']}.json"
    # unreviewed or undecided work stays, whatever its age
    assert _cleanup(workspace, 400)["expired"] == 0 and entry.exists()
    ids = [p["id"] for p in out["proposals"]]
    cairn(workspace, "accept", ids[0])
    cairn(workspace, "reject", *ids[1:])
    # decided, but inside the 14-day history window
    assert _cleanup(workspace, 13)["expired"] == 0 and entry.exists()
    assert _cleanup(workspace, 15)["expired"] == 1
    assert not entry.exists() and cairn_json(workspace, "journal") == []
    assert not list((workspace / ".cairn/journal").glob(".expired-*"))
    # coverage survives: importing the same transcript again captures nothing and digests nothing
    again = cairn_json(workspace, "run", str(DEMO))
    assert again["import"]["captured"] == 0 and again["digests"] == []
    # history and undo keep working after public expiry
    assert {r["state"] for r in cairn_json(workspace, "proposals")} == {"applied", "rejected"}
    assert cairn(workspace, "doctor").returncode == 0


def test_expiry_killed_at_every_point_finishes_from_its_manifest(workspace: Path, tmp_path: Path) -> None:
    out = cairn_json(workspace, "run", str(DEMO))
    cairn(workspace, "reject", *[p["id"] for p in out["proposals"]])
    (digest,) = out["digests"]
    name = f"{digest['id']}.json"

    def cleanup(ws: Path, later: float = 0, **env: str) -> subprocess.CompletedProcess[str]:
        offset = str(15 * 86400 + later)
        return run_python(["-m", "cairn.server", "cleanup", "-w", str(ws)], env=child_env(CAIRN_TEST_CLOCK_OFFSET=offset, **env))

    count = tmp_path / "count"
    shutil.copytree(workspace, count)
    log = tmp_path / "points.log"
    assert cleanup(count, CAIRN_CRASH_LOG=str(log)).returncode == 0
    points = log.read_text().splitlines()
    assert any("expired" in p for p in points)
    for k, ws, where in sweep.killed_runs(len(points), tmp_path, workspace, cleanup):
        # the entry is visible (whole) or gone; never torn
        entry = ws / ".cairn/journal" / name
        assert not entry.exists() or entry.read_bytes() == (workspace / ".cairn/journal" / name).read_bytes()
        rerun = cleanup(ws, later=1000)  # after the killed cleanup's claim deadline
        assert rerun.returncode == 0, (k, where, rerun.stderr)
        assert not entry.exists(), (k, where)
        assert not list((ws / ".cairn/journal").glob(".expired-*")), (k, where)
        assert cairn(ws, "doctor").returncode == 0
        shutil.rmtree(ws)
