"""The Neovim cockpit's Memories view and ``:CairnVerify``: a headless Neovim against the real server.

editors/nvim/test/memories.lua opens the Memories view of a workspace with
two accepted topics, one citing a Make target the Makefile no longer has;
``V`` verifies (its message counts the stale topic, the proposal and the
stale line of ``AGENTS.md``), the view shows the stale mark and why, ``c``
on the stale topic is refused with ``E_TOPIC_STALE`` and confirms the other,
``r`` asks and proposes its retirement, ``e`` visits its file, and the open
``AGENTS.md`` has a warning on its stale line. Here we check what landed on
disk: the proposals, and no file rewritten. A missing Neovim is a failure,
never a skip.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.editors.test_nvim import run_headless
from tests.journal.helpers import cairn, cairn_json
from tests.support import REPO, child_env

SCRIPT = REPO / "editors" / "nvim" / "test" / "memories.lua"
KEEP_BOTH = REPO / "editors" / "nvim" / "test" / "keep_both.lua"
COLUMNS = REPO / "editors" / "nvim" / "test" / "columns.lua"
AGENTS = "# Agents\n\n- Lint with `make lint`\n"


def _env(workspace: Path, tmp_path: Path, **extra: str) -> dict[str, str]:
    return child_env(CAIRN_TEST_PYTHON=sys.executable, CAIRN_TEST_WS=str(workspace),
                     **{k: str(tmp_path / "xdg" / k) for k in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME",
                                                               "XDG_STATE_HOME", "XDG_DATA_HOME")},
                     **extra)


def _topic(ws: Path, text: str) -> str:
    cairn(ws, "remember", text)
    pending = [p for p in cairn_json(ws, "proposals") if p["state"] == "pending"]
    cairn(ws, "accept", pending[0]["id"])
    return str(pending[0]["target"])


def test_nvim_memories_view_verifies_confirms_and_retires(workspace: Path, tmp_path: Path) -> None:
    (workspace / "Makefile").write_text("check:\n\tpytest\n")
    stale = _topic(workspace, "Run the tests with `make check`")
    fresh = _topic(workspace, "Use pnpm, not npm, to install dependencies")
    (workspace / "AGENTS.md").write_text(AGENTS)
    (workspace / "Makefile").write_text("test:\n\tpytest\n")
    before = {p: (workspace / p).read_bytes() for p in (stale, fresh, "AGENTS.md")}
    returncode, stdout, stderr = run_headless(SCRIPT, _env(workspace, tmp_path), tmp_path)
    assert returncode == 0 and "cairn memories: OK" in stdout, stdout + stderr
    pending = {p["target"]: p for p in cairn_json(workspace, "proposals") if p["state"] == "pending"}
    assert set(pending) == {stale, fresh}, pending
    assert pending[fresh]["kind"] == "delete", pending[fresh]
    assert {p: (workspace / p).read_bytes() for p in before} == before, "nothing is rewritten without a proposal"


def test_nvim_stale_accept_names_the_cockpits_key_to_keep_both(workspace: Path, tmp_path: Path) -> None:
    """editors/nvim/test/keep_both.lua: ``a`` on a proposal that memory now contradicts is refused with
    ``E_PROPOSAL_STALE``, the message naming ``K`` (not the CLI's ``--keep-both``); ``K`` accepts it."""
    npm = cairn_json(workspace, "remember", "Use npm to install dependencies")["proposals"][0]["id"]
    pnpm = cairn_json(workspace, "remember", "Use pnpm, not npm, to install dependencies")["proposals"][0]["id"]
    cairn(workspace, "accept", pnpm)  # memory moves on to pnpm: npm's proposal now contradicts it
    returncode, stdout, stderr = run_headless(KEEP_BOTH, _env(workspace, tmp_path, CAIRN_TEST_PROPOSAL=npm),
                                              tmp_path)
    assert returncode == 0 and "cairn keep-both: OK" in stdout, stdout + stderr
    states = {p["id"]: p["state"] for p in cairn_json(workspace, "proposals")}
    assert states[npm] == "applied", states


def test_nvim_cockpit_at_80_columns_keeps_names_apart_and_columns_aligned(workspace: Path, tmp_path: Path) -> None:
    """editors/nvim/test/columns.lua: at 80 columns, topic names and targets alike at their start (or in their
    middle) are cut to different texts, a name with accented letters is never cut inside a character, the
    columns line up (a refused topic's error too), and the keys lines show every key within 80 columns."""
    memory = workspace / ".agents" / "memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("# Memory\n")
    for stem, name in [("release-process-for-the-web-app-and-the-docs-site", "Docs site release"),
                       ("release-process-for-the-web-app-and-the-api-server", "API server release"),
                       ("release-process-for-the-cli-tool", "CLI release"),
                       ("release-process-for-the-tui-tool", "TUI release"),
                       ("tests", "Tests"),
                       ("übersicht-für-die-benutzeroberfläche-und-größen-der-dialoge", "Größen")]:
        (memory / f"{stem}.md").write_text(f"---\nname: {name}\ndescription: about {stem}\ntype: project\n---\nText.\n")
    for text in ("Build the docker images for the web app with make images",
                 "Build the docker images for the worker with make images-worker"):
        cairn(workspace, "remember", text)
    returncode, stdout, stderr = run_headless(COLUMNS, _env(workspace, tmp_path), tmp_path)
    assert returncode == 0 and "cairn columns: OK" in stdout, stdout + stderr
