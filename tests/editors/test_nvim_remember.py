"""``:CairnRemember`` and ``require("cairn").remember``: a headless Neovim against the real server.

editors/nvim/test/remember.lua opens the workspace's AGENTS.md (the client
attaches), remembers one text through the Lua API, one range of lines
through the user command and one text through ``cairn.command`` (its
message names the proposal, never "done"), and checks that a bad type comes back as an
``E_USAGE`` error message. Here we check the proposals landed in the
workspace. A missing Neovim is a failure, never a skip.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.editors.test_nvim import run_headless
from tests.journal.helpers import cairn_json
from tests.support import REPO, child_env

SCRIPT = REPO / "editors" / "nvim" / "test" / "remember.lua"


def test_nvim_remembers_text_and_a_range(workspace: Path, tmp_path: Path) -> None:
    (workspace / "AGENTS.md").write_text("# Agents\n")
    env = child_env(CAIRN_TEST_PYTHON=sys.executable, CAIRN_TEST_WS=str(workspace),
                    **{k: str(tmp_path / "xdg" / k) for k in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME",
                                                              "XDG_STATE_HOME", "XDG_DATA_HOME")})
    returncode, stdout, stderr = run_headless(SCRIPT, env, tmp_path)
    assert returncode == 0 and "cairn remember: OK" in stdout, stdout + stderr
    rows = {r["target"]: r for r in cairn_json(workspace, "proposals")}
    assert rows["AGENTS.md"]["kind"] == "instruction" and rows["AGENTS.md"]["state"] == "pending"
    titles = sorted(r["title"] for t, r in rows.items() if t != "AGENTS.md")
    assert titles == ["New project memory: Release notes are written in CHANGES.md",
                      "New project memory: The CI cache is keyed on"]
