"""The Neovim client's messages, the wire quick fix and idle maintenance: headless Neovim runs.

editors/nvim/test/messages.lua (no server): with Neovim's own ``vim.notify``
a long accept message is one echo-area line that fits (cut with ``…``; the
full text in a float and ``:CairnMessages``), never "Press ENTER"; a missing
server program is said once for three memory files, without "Error detected
while processing"; a server that dies at start is reported with its last
stderr line.

editors/nvim/test/wire.lua: the "Wire AGENT to read cairn memory" quick fix
on a non-UTF-8 AGENTS.md says ``refused E_MEMORY_NOT_TEXT: …``; on a UTF-8
one it names the proposal it made.

editors/nvim/test/idle.lua: with ``idleMinutes`` of 0.02 and no key typed,
the server gets ``cairn/idle`` once and runs its idle cleanup.

A missing Neovim is a failure, never a skip; no process of a run is left.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import psutil

from tests.editors.test_nvim import _leftovers, run_headless
from tests.support import REPO, child_env

TESTS = REPO / "editors" / "nvim" / "test"


def _run(script: str, ws: Path, tmp_path: Path) -> str:
    marker = uuid.uuid4().hex
    env = child_env(
        CAIRN_TEST_PYTHON=sys.executable,
        CAIRN_TEST_WS=str(ws),
        CAIRN_NVIM_SMOKE=marker,
        **{
            k: str(tmp_path / "xdg" / k)
            for k in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME")
        },
    )
    try:
        returncode, stdout, stderr = run_headless(TESTS / script, env, tmp_path)
    finally:
        left = _leftovers(marker)
        for p in left:
            p.kill()
        psutil.wait_procs(left, timeout=10)
    assert returncode == 0, (stdout + stderr)[-8000:]
    assert not left, f"processes left behind: {[p.pid for p in left]}"
    return stdout


def test_nvim_messages_fit_one_line_and_start_failures_say_why(workspace: Path, tmp_path: Path) -> None:
    (workspace / ".agents" / "memory").mkdir(parents=True)
    stdout = _run("messages.lua", workspace, tmp_path)
    assert "cairn messages: OK" in stdout
    assert not (workspace / ".cairn").exists()


def test_nvim_wire_quick_fix_says_what_it_proposed_or_why_not(workspace: Path, tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    (workspace / "AGENTS.md").write_bytes(b"Caf\xe9: Codex runs make test\n")
    stdout = _run("wire.lua", workspace.resolve(), tmp_path)
    assert "cairn wire: OK" in stdout
    # a proposal only: the file is as the test wrote it
    assert (workspace / "AGENTS.md").read_bytes() == b"# Agents\n\nCodex runs make test\n"


def test_nvim_sends_idle_after_idle_minutes(workspace: Path, tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    stdout = _run("idle.lua", workspace.resolve(), tmp_path)
    assert "cairn idle: OK" in stdout
