"""The Neovim plugin layout against the real server: a headless Neovim in a fresh repository.

editors/nvim/test/plugin.lua puts editors/nvim on 'runtimepath' and sources
plugin/cairn.lua (no setup call, the default ``cairn serve`` from PATH); no
memory file is open. It checks that :CairnStatus, :CairnRemember,
:CairnProposals and :CairnDrain start the server for the repository; that
the cockpit lists a pending proposal and ``a`` on its line applies it, and
that a buffer opened before that topic file existed then holds its text
without the W13 dialog; that the statusline, the quickfix list and the
cockpit follow decisions, also one this client did not follow up (the
server's notifications); edit before accept with its live check (the index
line follows the edited name, broken front matter is an
``E_TOPIC_FRONT_MATTER`` diagnostic), a confirmed reject, accept again and a
rejection taken back from the cockpit, its other views; that a review says
it is queued and decisions through the Lua API name their ids; :CairnUndo's completion (by id and by title) and its
titled picker; :checkhealth cairn; :help cairn. Here we check the files on
disk and that no process is left.

editors/nvim/test/settings.lua: an option set back to nil (``set(key, nil)``,
``vim.NIL``, or left out of a second setup) returns to the config files'
value. A missing Neovim is a failure, never a skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import psutil

from tests.editors.test_nvim import _leftovers, run_headless
from tests.support import REPO, child_env

NVIM = REPO / "editors" / "nvim"


def _env(tmp_path: Path, ws: Path, marker: str, **extra: str) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)  # the `cairn` program of this installation
    return child_env(
        PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""),
        CAIRN_TEST_WS=str(ws),
        CAIRN_NVIM_SMOKE=marker,
        **{
            k: str(tmp_path / "xdg" / k)
            for k in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME")
        },
        **extra,
    )


def _run(script: str, env: dict[str, str], ws: Path, marker: str) -> str:
    try:
        returncode, stdout, stderr = run_headless(NVIM / "test" / script, env, ws)
    finally:
        left = _leftovers(marker)
        for p in left:
            p.kill()
        psutil.wait_procs(left, timeout=10)
    assert returncode == 0, (stdout + stderr)[-8000:]
    assert not left, f"processes left behind: {[p.pid for p in left]}"
    return stdout


def _fresh_repo(workspace: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    return workspace.resolve()


def test_nvim_plugin_in_a_fresh_repository(workspace: Path, tmp_path: Path) -> None:
    ws = _fresh_repo(workspace)
    doc = tmp_path / "help" / "doc"
    shutil.copytree(NVIM / "doc", doc)  # helptags write here, not into the source tree
    out = tmp_path / "out"
    out.mkdir()
    marker = uuid.uuid4().hex
    stdout = _run(
        "plugin.lua", _env(tmp_path, ws, marker, CAIRN_TEST_DOC=str(doc), CAIRN_TEST_OUT=str(out)), ws, marker
    )
    assert "cairn plugin: OK" in stdout
    assert "OK" in (out / "checkhealth").read_text()
    # the proposal accepted from the cockpit, undone, then accepted again from History: its topic is there
    target = ws / (out / "accepted-target").read_text()
    assert "rebase" in target.read_text()
    assert not (NVIM / "doc" / "tags").exists()


def test_nvim_unset_option_returns_to_the_config_files(workspace: Path, tmp_path: Path) -> None:
    ws = _fresh_repo(workspace)
    (ws / ".cairn").mkdir()
    (ws / ".cairn" / "config.toml").write_text('mode = "manual"\n')
    user = tmp_path / "xdg" / "XDG_CONFIG_HOME" / "cairn"
    user.mkdir(parents=True)
    (user / "config.toml").write_text(
        'provider = "openai"\nendpoint = "http://127.0.0.1:9/v1"\nmodel = "m"\n'
    )
    marker = uuid.uuid4().hex
    stdout = _run("settings.lua", _env(tmp_path, ws, marker), ws, marker)
    assert "cairn settings: OK" in stdout
