"""The Neovim client sends only the settings the user set, and restarts by itself after a crash.

editors/nvim/test/config.lua sets the client up without settings in a
workspace whose ``.cairn/config.toml`` says ``mode = "manual"``: the server's
status must report that mode (an editor default would override it). Then
it kills the server: the client must come back for the open memory file
without any command. A missing Neovim is a failure, never a skip.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.editors.test_nvim import run_headless
from tests.support import REPO, child_env

SCRIPT = REPO / "editors" / "nvim" / "test" / "config.lua"


def test_nvim_keeps_the_config_file_and_restarts_after_a_crash(workspace: Path, tmp_path: Path) -> None:
    (workspace / ".cairn").mkdir(exist_ok=True)
    (workspace / ".cairn" / "config.toml").write_text('mode = "manual"\n')
    (workspace / "AGENTS.md").write_text("# Agents\n")
    env = child_env(CAIRN_TEST_PYTHON=sys.executable, CAIRN_TEST_WS=str(workspace),
                    **{k: str(tmp_path / "xdg" / k) for k in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME",
                                                              "XDG_STATE_HOME", "XDG_DATA_HOME")})
    returncode, stdout, stderr = run_headless(SCRIPT, env, tmp_path)
    assert returncode == 0 and "cairn config: OK" in stdout, stdout + stderr
