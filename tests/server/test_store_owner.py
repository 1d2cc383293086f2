"""Two server processes on one workspace: one persists the job store, the other keeps jobs in memory."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from cairn.server.scheduler.jobstore import JobStoreFiles

from tests.support import PYTHON, REPO, child_env

HOLDER = """
import sys
from cairn.server.scheduler.jobstore import JobStoreFiles
files = JobStoreFiles(locked=True)  # holds the lock while alive
print(files.own(sys.argv[1]), flush=True)
sys.stdin.readline()
"""


def test_only_one_server_process_owns_the_job_store(workspace: Path) -> None:
    holder = subprocess.Popen([PYTHON, "-c", HOLDER, str(workspace)], cwd=REPO, env=child_env(),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdin is not None and holder.stdout is not None  # both are pipes
    try:
        assert holder.stdout.readline().strip() == "True"
        other = JobStoreFiles(locked=True)
        assert other.own(str(workspace)) is False
        other.write(str(workspace), b'{"record":"job-store"}')  # a non-owner never writes
        assert not (workspace / ".cairn/state/server/jobs.json").exists()
    finally:
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(timeout=30)
    # the owner is gone: the store can be taken over
    assert JobStoreFiles(locked=True).own(str(workspace)) is True


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_a_shipped_lock_file_neither_hangs_nor_is_followed(workspace: Path, tmp_path: Path, kind: str) -> None:
    """A cloned repository may ship ``.cairn/state/server/jobs.lock``: a FIFO would block its opener
    forever, a symlink would create and lock a file of the attacker's choosing."""
    d = workspace / ".cairn/state/server"
    d.mkdir(parents=True)
    target = tmp_path / "elsewhere" / "created-by-cairn"
    target.parent.mkdir()
    if kind == "fifo":
        os.mkfifo(d / "jobs.lock")
    else:
        (d / "jobs.lock").symlink_to(target)
    files = JobStoreFiles(locked=True)
    assert files.own(str(workspace)) is False  # returns at once: jobs stay in memory
    assert not target.exists()
    files.write(str(workspace), b'{"record":"job-store"}')
    assert not (d / "jobs.json").exists()


def test_the_lock_file_is_private(workspace: Path) -> None:
    old = os.umask(0o022)
    try:
        assert JobStoreFiles(locked=True).own(str(workspace)) is True
    finally:
        os.umask(old)
    assert (workspace / ".cairn/state/server/jobs.lock").stat().st_mode & 0o777 == 0o600
