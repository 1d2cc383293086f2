"""A new directory's entry is durable before anything goes in, even after a failed or killed ``mkdir``.

``PinnedDir.child(create=True)`` fsyncs the parent after ``mkdir``. Two ways
that fsync can be skipped are closed: the fsync fails (the new directory is
dropped, so the next attempt makes it afresh and fsyncs again, never trusting
the failed one), or a process is killed between the ``mkdir`` and the fsync
(the next writer finds the directory empty and fsyncs its parent before
writing into it). Without either, a power loss after a later, reported write
may take the whole directory, and the write with it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.journal.test_crash_sweep import _public
from tests.powerloss import harness, model
from tests.support import REPO, child_env
from tests.support.warm import run_python

pytestmark = pytest.mark.slow

SRC = REPO / "tests" / "fixtures" / "sweep" / ".aider.chat.history.md"


def _run(ws: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_python(["-m", "cairn.server", "run", str(SRC), "-w", str(ws)],
                      env=child_env(CAIRN_CAPTURE_BATCH_TURNS="2", **env), timeout=120)


def test_a_failed_fsync_after_mkdir_drops_the_directory_and_the_rerun_makes_it_durable(tmp_path: Path) -> None:
    ref = tmp_path / "ref"
    ref.mkdir()
    log = tmp_path / "points.log"
    assert _run(ref, CAIRN_CRASH_LOG=str(log)).returncode == 0
    labels = [line.split(" ", 1)[1] for line in log.read_text().splitlines()]
    n = labels.index("mkdir journal") + 2  # 1-based: the fsync of its parent, just after it
    assert labels[n - 1] == "fsync-dir"
    ws = tmp_path / "ws"
    ws.mkdir()
    r = _run(ws, CAIRN_FAULT_AT=str(n), CAIRN_FAULT_ERRNO="EIO")
    assert r.returncode == 2 and "E_IO_FAILED: " in r.stderr + r.stdout, (r.stdout + r.stderr)[-400:]
    assert not (ws / ".cairn/state/journal").exists()  # dropped: not left for a rerun to trust
    assert _run(ws).returncode == 0
    assert [g.id for g in _public(ws)] == [g.id for g in _public(ref)]


def test_an_empty_directory_left_by_a_killed_mkdir_is_made_durable_before_it_is_written(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".cairn").mkdir(parents=True, mode=0o700)  # made by a writer killed before it fsynced the workspace
    oplog = tmp_path / "ops.jsonl"
    r = harness.record(ws, oplog, ["-m", "cairn.server", "run", str(SRC), "-w", str(ws)],
                       CAIRN_CAPTURE_BATCH_TURNS="2")
    assert r.returncode == 0, r.stderr[-400:]
    ops = model.load(oplog)
    first_inside = next(i for i, op in enumerate(ops) if op.get("path", op.get("dst", "")).startswith(".cairn/"))
    assert any(op["op"] == "fsync-dir" and op["path"] == "" for op in ops[:first_inside]), \
        "wrote into .cairn before its entry in the workspace was durable"


@pytest.mark.parametrize("how", ["publish", "create_empty"])
def test_finding_a_name_already_there_makes_it_durable_before_relying_on_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """A name found already there may be one a writer linked and then lost (killed, or its directory
    fsync failed) before its directory's fsync: the caller relies on it from now on, so the directory
    is fsynced as for a name it linked itself."""
    import os

    from cairn.state.fsdir import PinnedDir

    (tmp_path / "x").write_bytes(b"" if how == "create_empty" else b"a")
    synced: list[bool] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.path.samestat(os.fstat(fd), os.stat(tmp_path)))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with PinnedDir.open_root(tmp_path) as d:
        assert (d.publish("x", b"a") if how == "publish" else d.create_empty("x")) is False
    assert True in synced, "relied on a name whose directory entry may not be durable"
