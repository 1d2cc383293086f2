"""Ctrl-C while the user's own model digests (the ``command`` provider): the user's stop, not a failure.

A Ctrl-C that landed while the provider's program ran reached the user as a Python traceback (trio's
exception group around the KeyboardInterrupt), exit 1. It must end the command like any Ctrl-C (130, no
traceback) and spend none of the capture's three attempts: a user who stops a slow digest three times
would otherwise find the capture exhausted and never digested.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.journal.helpers import DEMO, cairn
from tests.support import PYTHON, REPO, child_env

#: the provider's program: it interrupts the cairn process waiting for it (as a Ctrl-C would), then waits to be
#: stopped; the pid comes from a file the test writes once the process is started
_STOPPER = """
import os, pathlib, signal, sys, time
sys.stdin.read()
os.kill(int(pathlib.Path(sys.argv[1]).read_text()), signal.SIGINT)
time.sleep(60)
"""


def test_ctrl_c_during_a_command_digest_is_no_failed_attempt(workspace: Path, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    (workspace / ".cairn").mkdir()
    (workspace / ".cairn" / "config.toml").write_text(
        f'provider = "command"\ncommand = {json.dumps([sys.executable, "-c", _STOPPER, str(pid_file)])}\n')
    cairn(workspace, "trust")
    cairn(workspace, "import", str(DEMO))
    cairn(workspace, "seal")
    for _ in range(4):  # more than the three attempts a capture has
        proc = subprocess.Popen([PYTHON, "-m", "cairn.server", "process", "-w", str(workspace)], cwd=REPO,
                                env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                stdin=subprocess.DEVNULL)
        pid_file.write_text(str(proc.pid))
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, (out, err)
        assert "Traceback" not in err and "ExceptionGroup" not in err, err
    [job] = json.loads(cairn(workspace, "jobs", "--json").stdout)
    assert job["attempts"] == 0 and job["state"] != "exhausted", job
    # the user's stop left nothing to recover: a provider that answers digests it
    (workspace / ".cairn" / "config.toml").write_text('provider = "extractive"\n')
    cairn(workspace, "process")
    assert len(json.loads(cairn(workspace, "journal", "--json").stdout)) == 1
