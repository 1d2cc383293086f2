"""The Neovim client: a headless Neovim drives the real server through editors/nvim/cairn.lua.

The workspace gets a pending proposal from the ``cairn`` command line
(``import`` of the demo session, ``seal``, ``process``, ``review``).  Then
``nvim --headless --clean -u NONE`` runs editors/nvim/test/smoke.lua: it opens
the proposal's target, waits for the client to attach, checks
``cairn/status``, the diagnostic and ``cairn/proposal``, accepts the proposal
with ``cairn.accept``, undoes it with ``cairn.undo`` and shuts the server
down.  Here we check the bytes: after accept exactly the proposal's diff
applied, after undo exactly the original; and that no process of the run is
left.  A missing Neovim is a failure, never a skip: CI installs ``neovim``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import psutil
import pytest

from tests.journal.helpers import DEMO, cairn, cairn_json
from tests.support import REPO, child_env

SMOKE = REPO / "editors" / "nvim" / "test" / "smoke.lua"
TARGET = "AGENTS.md"
ORIGINAL = b"# Agents\n\nKeep pull requests small.\n"
NVIM_TIMEOUT = 300  # seconds for the whole headless run, server start and shutdown included
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")


def run_headless(script: Path, env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    """Run a Lua test script in a clean headless Neovim: (exit code, stdout, stderr).

    A run past :data:`NVIM_TIMEOUT` is killed with its whole process group and fails the test.
    """
    proc = subprocess.Popen([_nvim(), "--headless", "--clean", "-u", "NONE", "-c", f"luafile {script}"],
                            cwd=str(cwd), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=NVIM_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        pytest.fail(f"nvim did not finish within {NVIM_TIMEOUT}s\n{stdout}\n{stderr}")
    return proc.returncode, stdout, stderr


def _nvim() -> str:
    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.fail("Neovim is required for the editor tests: apt-get install neovim")
    return nvim


def apply_unified_diff(original: str, diff: str) -> str:
    """Apply a one-file unified diff strictly: every context and removed line must match."""
    old = original.splitlines(keepends=True)
    out: list[str] = []
    pos = 0
    lines = diff.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        m = HUNK.match(lines[i])
        i += 1
        if not m:
            continue
        start = int(m.group(1)) - (0 if m.group(2) == "0" else 1)
        out += old[pos:start]
        pos = start
        while i < len(lines) and not lines[i].startswith("@@"):
            tag, text = lines[i][:1], lines[i][1:]
            if tag in (" ", "-"):
                assert old[pos] == text, f"diff does not match line {pos + 1}"
                pos += 1
            if tag in (" ", "+"):
                out.append(text)
            if tag == "\\" and out:  # "\ No newline at end of file"
                out[-1] = out[-1].rstrip("\n")
            i += 1
    return "".join(out + old[pos:])


def test_apply_unified_diff() -> None:
    diff = "--- a/x\n+++ b/x\n@@ -1,2 +1,3 @@\n a\n-b\n+B\n+c\n"
    assert apply_unified_diff("a\nb\nz\n", diff) == "a\nB\nc\nz\n"
    with pytest.raises(AssertionError):
        apply_unified_diff("a\nX\n", diff)


@pytest.fixture
def proposal_ws(workspace: Path) -> tuple[Path, str, bytes]:
    """A workspace with memory files and a pending proposal for AGENTS.md: (ws, id, expected bytes)."""
    memory = workspace / ".agents" / "memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_bytes(b"# Memory\n\n- [Release](release.md) - how releases are cut\n")
    (memory / "release.md").write_bytes(
        b"---\nname: Release\ndescription: how releases are cut\ntype: project\n---\nTag from main only.\n")
    (workspace / TARGET).write_bytes(ORIGINAL)
    cairn(workspace, "import", str(DEMO))
    cairn(workspace, "seal")
    cairn(workspace, "process")
    cairn(workspace, "review")
    rows = cairn_json(workspace, "proposals")
    assert isinstance(rows, list)
    pending = [r for r in rows if r["target"] == TARGET and r["state"] == "pending"]
    assert pending, rows
    shown = cairn_json(workspace, "show", pending[0]["id"])
    assert isinstance(shown, dict)
    expected = apply_unified_diff(ORIGINAL.decode(), shown["diff"]).encode()
    assert expected != ORIGINAL
    return workspace, pending[0]["id"], expected


def _leftovers(marker: str) -> list[psutil.Process]:
    """Processes whose environment carries this run's marker (nvim, the server, its workers)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("CAIRN_NVIM_SMOKE") == marker and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def test_nvim_accepts_and_undoes_a_proposal(proposal_ws: tuple[Path, str, bytes], tmp_path: Path) -> None:
    ws, pid, expected = proposal_ws
    out = tmp_path / "out"
    out.mkdir()
    marker = uuid.uuid4().hex
    env = child_env(
        CAIRN_TEST_PYTHON=sys.executable, CAIRN_TEST_WS=str(ws), CAIRN_TEST_FILE=TARGET,
        CAIRN_TEST_PROPOSAL=pid, CAIRN_TEST_OUT=str(out), CAIRN_NVIM_SMOKE=marker,
        # keep Neovim's log, state and data files out of the user's home
        **{k: str(tmp_path / "xdg" / k) for k in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME",
                                                   "XDG_DATA_HOME")},
    )
    try:
        returncode, stdout, stderr = run_headless(SMOKE, env, tmp_path)
    finally:
        left = _leftovers(marker)
        for p in left:
            p.kill()
        psutil.wait_procs(left, timeout=10)
    output = stdout + stderr
    assert returncode == 0, output[-8000:]
    assert "cairn smoke: OK" in output, output[-8000:]
    assert not left, f"processes left behind: {[p.pid for p in left]}"
    # accept wrote exactly the proposal's diff; undo brought back the exact original bytes
    assert (out / "after-accept").read_bytes() == expected
    assert (out / "after-undo").read_bytes() == ORIGINAL
    assert (ws / TARGET).read_bytes() == ORIGINAL
    rows = cairn_json(ws, "proposals")
    assert isinstance(rows, list)
    assert [r["state"] for r in rows if r["id"] == pid] == ["undone"]
