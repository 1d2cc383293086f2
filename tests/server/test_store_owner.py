"""Two server processes on one workspace: one persists the job store, the other keeps jobs in memory."""

from __future__ import annotations

import subprocess
from pathlib import Path

from cairn.server.jobstore import JobStoreFiles

from tests.support import PYTHON, REPO, child_env

HOLDER = """
import sys
from cairn.server.jobstore import JobStoreFiles
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
