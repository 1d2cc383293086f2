"""``cairn agents`` and an instruction file that is a symlink to another file of the workspace.

``CLAUDE.md -> AGENTS.md`` is a common way to give Claude Code the rules
Codex reads: Claude Code opens ``CLAUDE.md`` as the system does, through the
link, and reads ``AGENTS.md``. cairn reads it the same way (one hop, inside
the workspace), shows the agent as wired when that text points to the
memory, proposes nothing for it then, and otherwise edits the file the link
leads to: the link itself is never written through, replaced or removed.
A link that leaves the workspace, leads to another link or climbs through a
folder it does not come from stays refused (``E_PATH_SYMLINK``). Real CLI,
real files, a synthetic home with a real Claude Code session of the
workspace.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.journal.helpers import cairn
from tests.memory.agents_home import env_for, make_home, memory

INDEX = ".agents/memory/MEMORY.md"
POINTER = "# Rules\n\nAt the start of a task read `.agents/memory/MEMORY.md`.\n"


def _run(ws: Path, home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    r = cairn(ws, *argv, env=env_for(home), check=False)
    assert "Traceback" not in r.stderr, r.stderr
    return r


def _json(ws: Path, home: Path, *argv: str) -> Any:
    r = _run(ws, home, *argv, "--json")
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def _rows(ws: Path, home: Path) -> dict[str, dict[str, Any]]:
    r = _run(ws, home, "agents", "--json")
    assert r.returncode == 0, r.stderr
    return {row["agent"]: row for row in json.loads(r.stdout)}


def _visible(ws: Path) -> dict[str, bytes | str]:
    """Every node of the workspace but cairn's records: a link as where it points, a file as its bytes."""
    out: dict[str, bytes | str] = {}
    for p in sorted(ws.rglob("*")):
        rel = str(p.relative_to(ws))
        if rel == ".cairn" or rel.startswith(".cairn/"):
            continue
        out[rel] = f"-> {os.readlink(p)}" if p.is_symlink() else "dir" if p.is_dir() else p.read_bytes()
    return out


def _claude_reads_index(ws: Path, name: str) -> bool:
    """Claude Code opens its memory file as the system does (a link followed) and reads the text."""
    return INDEX in (ws / name).read_text()


LINKS = {  # the link, and what it holds
    "relative": ("CLAUDE.md", "AGENTS.md"),
    "absolute": ("CLAUDE.md", "{ws}/AGENTS.md"),
    "from-a-folder": (".claude/CLAUDE.md", "../AGENTS.md"),
}


@pytest.mark.parametrize("kind", sorted(LINKS))
def test_a_claude_md_linked_to_a_wired_agents_md_is_wired_and_nothing_is_proposed(
        tmp_path: Path, workspace: Path, kind: str) -> None:
    """It showed `would edit CLAUDE.md` with E_PATH_SYMLINK, and `wire` refused it (exit 1)."""
    home = make_home(tmp_path, workspace, ("claude-code",))
    memory(workspace)
    (workspace / "AGENTS.md").write_text(POINTER)
    name, dest = LINKS[kind]
    (workspace / name).parent.mkdir(exist_ok=True)
    (workspace / name).symlink_to(dest.format(ws=workspace))
    assert _claude_reads_index(workspace, name)
    before = _visible(workspace)

    row = _rows(workspace, home)["claude-code"]
    assert row["wired"] is True and row["problems"] == [] and row["target"] is None, row
    assert row["via"] == {"file": name, "mechanism": "pointer", "through": [], "link": "AGENTS.md"}
    listing = _run(workspace, home, "agents").stdout
    assert f"{name} -> AGENTS.md (pointer)" in listing and "would edit" not in listing, listing

    r = _run(workspace, home, "agents", "wire", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["proposals"] == [] and out["refused"] == [] and sorted(out["wired"]) == ["claude-code", "codex"]
    assert _visible(workspace) == before


def test_wiring_through_a_link_edits_the_file_it_leads_to_and_never_the_link(
        tmp_path: Path, workspace: Path) -> None:
    home = make_home(tmp_path, workspace, ("claude-code",))
    memory(workspace)
    rules = b"# Rules\r\n\r\nSmall commits.\r\n"
    (workspace / "AGENTS.md").write_bytes(rules)
    (workspace / "CLAUDE.md").symlink_to("AGENTS.md")
    before = _visible(workspace)

    rows = _rows(workspace, home)
    assert rows["claude-code"]["problems"] == [], rows["claude-code"]  # the link is read, not refused
    assert {n: (r["wired"], r["target"]) for n, r in rows.items()} == {
        "claude-code": (False, "AGENTS.md"), "codex": (False, "AGENTS.md")}  # never the link itself
    assert rows["claude-code"]["targets"] == ["AGENTS.md"]
    wired = _json(workspace, home, "agents", "wire")
    assert [(p["target"], p["agents"]) for p in wired["proposals"]] == [("AGENTS.md", ["claude-code", "codex"])]
    (pid,) = [p["id"] for p in wired["proposals"]]
    assert _run(workspace, home, "accept", pid).returncode == 0

    assert (workspace / "CLAUDE.md").is_symlink() and os.readlink(workspace / "CLAUDE.md") == "AGENTS.md"
    assert (workspace / "AGENTS.md").read_bytes().startswith(rules + b"\r\n## Project memory\r\n")
    assert _claude_reads_index(workspace, "CLAUDE.md")
    rows = _rows(workspace, home)
    assert rows["claude-code"]["via"] == {"file": "CLAUDE.md", "mechanism": "pointer", "through": [],
                                          "link": "AGENTS.md"}
    assert rows["codex"]["wired"] is True

    assert _run(workspace, home, "undo", pid).returncode == 0
    assert _visible(workspace) == before


def test_an_agents_md_linked_to_claude_md_reads_its_import_as_a_pointer(tmp_path: Path, workspace: Path) -> None:
    """The other way round: Codex reads CLAUDE.md's text through AGENTS.md, where the import names the index."""
    home = make_home(tmp_path, workspace, ("claude-code", "codex"))
    memory(workspace)
    (workspace / "CLAUDE.md").write_text("# Rules\n\n@.agents/memory/MEMORY.md\n")
    (workspace / "AGENTS.md").symlink_to("CLAUDE.md")
    rows = _rows(workspace, home)
    assert rows["codex"]["via"] == {"file": "AGENTS.md", "mechanism": "pointer", "through": [], "link": "CLAUDE.md"}
    assert rows["claude-code"]["via"] == {"file": "CLAUDE.md", "mechanism": "import", "through": [], "link": None}


@pytest.mark.parametrize("kind", ["leaves", "chain", "climbs", "linked-folder"])
def test_a_link_that_leaves_the_workspace_chains_or_climbs_is_still_refused(
        tmp_path: Path, workspace: Path, kind: str) -> None:
    home = make_home(tmp_path, workspace, ("claude-code",))
    memory(workspace)
    (workspace / "AGENTS.md").write_text(POINTER)
    (tmp_path / "outside.md").write_text(POINTER)
    claude = workspace / "CLAUDE.md"
    if kind == "leaves":
        claude.symlink_to("../outside.md")
    elif kind == "chain":
        (workspace / "RULES.md").symlink_to("AGENTS.md")
        claude.symlink_to("RULES.md")
    elif kind == "climbs":  # `docs/..` is the workspace only while docs is no link: never taken on trust
        (workspace / "docs").mkdir()
        claude.symlink_to("docs/../AGENTS.md")
    else:
        (tmp_path / "elsewhere").mkdir()
        (tmp_path / "elsewhere" / "AGENTS.md").write_text(POINTER)
        (workspace / "shared").symlink_to(tmp_path / "elsewhere")
        claude.symlink_to("shared/AGENTS.md")
    before = _visible(workspace)

    row = _rows(workspace, home)["claude-code"]
    assert row["wired"] is False and [p["code"] for p in row["problems"]] == ["E_PATH_SYMLINK"], row
    r = _run(workspace, home, "agents", "wire", "claude-code", "--json")
    assert r.returncode == 1 and "cairn: E_PATH_SYMLINK: " in r.stderr, r.stderr
    assert json.loads(r.stdout)["proposals"] == []
    assert _visible(workspace) == before
    assert (tmp_path / "outside.md").read_text() == POINTER


NOT_INSTRUCTIONS = {  # a file a wiring must never append a Markdown section to, and what it holds
    "settings": (".claude/settings.json", b'{\n  "permissions": {"allow": []}\n}\n'),
    "aider-config": (".aider.conf.yml", b"model: sonnet\n"),
    "memory-index": (INDEX, None),
}


@pytest.mark.parametrize("kind", sorted(NOT_INSTRUCTIONS))
def test_a_link_to_a_file_that_is_no_instruction_file_is_refused_and_that_file_never_edited(
        tmp_path: Path, workspace: Path, kind: str) -> None:
    """`ln -s .claude/settings.json CLAUDE.md`: `wire` proposed appending `## Project memory` to the JSON
    settings (any HOOK_FILES path passed the store's check), and the listing said `would edit CLAUDE.md`."""
    home = make_home(tmp_path, workspace, ("claude-code",))
    memory(workspace)
    dest, data = NOT_INSTRUCTIONS[kind]
    if data is not None:
        (workspace / dest).parent.mkdir(exist_ok=True)
        (workspace / dest).write_bytes(data)
    (workspace / "CLAUDE.md").symlink_to(dest)
    before = _visible(workspace)

    row = _rows(workspace, home)["claude-code"]
    assert row["wired"] is False and row["targets"] == ["CLAUDE.md"], row
    assert [(p["file"], p["code"]) for p in row["problems"]] == [("CLAUDE.md", "E_PATH_SYMLINK")], row
    assert f"symlink to {dest}, which is not an instruction file" in row["problems"][0]["message"]
    listing = _run(workspace, home, "agents").stdout
    assert "CLAUDE.md refused (E_PATH_SYMLINK, not edited)" in listing and "would edit CLAUDE.md" not in listing, \
        listing
    r = _run(workspace, home, "agents", "wire", "claude-code", "--json")
    assert r.returncode == 1 and "cairn: E_PATH_SYMLINK: " in r.stderr, r.stderr
    assert json.loads(r.stdout)["proposals"] == []
    assert _visible(workspace) == before


def test_a_link_to_a_configured_instruction_file_is_followed(tmp_path: Path, workspace: Path) -> None:
    """`instruction_files` names the workspace's own instruction files: a link may lead there."""
    home = make_home(tmp_path, workspace, ("claude-code",))
    memory(workspace)
    (workspace / "RULES.md").write_text("# Rules\n\nSmall commits.\n")
    (workspace / "CLAUDE.md").symlink_to("RULES.md")
    assert [p["code"] for p in _rows(workspace, home)["claude-code"]["problems"]] == ["E_PATH_SYMLINK"]
    (workspace / ".cairn").mkdir(exist_ok=True)
    (workspace / ".cairn" / "config.toml").write_text('instruction_files = ["RULES.md"]\n')
    row = _rows(workspace, home)["claude-code"]
    assert row["problems"] == [] and row["targets"] == ["RULES.md"], row
    (p,) = _json(workspace, home, "agents", "wire", "claude-code")["proposals"]
    assert p["target"] == "RULES.md"
    assert _run(workspace, home, "accept", p["id"]).returncode == 0
    assert (workspace / "CLAUDE.md").is_symlink() and INDEX in (workspace / "RULES.md").read_text()
    assert _rows(workspace, home)["claude-code"]["via"] == {"file": "CLAUDE.md", "mechanism": "pointer",
                                                            "through": [], "link": "RULES.md"}


def test_aiders_config_as_a_link_is_refused(tmp_path: Path, workspace: Path) -> None:
    """A link from the config is never read as one: `wire` would have edited what it leads to."""
    home = make_home(tmp_path, workspace, ())
    memory(workspace)
    (workspace / "AGENTS.md").write_text("read: [AGENTS.md]\n")  # YAML, but an instruction file
    (workspace / ".aider.conf.yml").symlink_to("AGENTS.md")
    before = _visible(workspace)
    row = _rows(workspace, home)["aider"]
    assert [(p["file"], p["code"]) for p in row["problems"]] == [(".aider.conf.yml", "E_PATH_SYMLINK")], row
    assert "never through a link" in row["problems"][0]["message"]
    r = _run(workspace, home, "agents", "wire", "aider", "--json")
    assert r.returncode == 1 and "cairn: E_PATH_SYMLINK: " in r.stderr, r.stderr
    assert [f["target"] for f in json.loads(r.stdout)["refused"]] == [".aider.conf.yml"]
    assert _visible(workspace) == before


def test_an_instruction_file_any_wiring_target_names_gets_the_unwired_diagnostic() -> None:
    """aider's second file (`AGENTS.md`, in `targets` after the config) got no diagnostic: only `target`
    was looked at."""
    from cairn.server.lsp.memory_docs import unwired_here

    rows = [{"agent": "aider", "wired": False, "files": [".aider.chat.history.md"], "target": ".aider.conf.yml",
             "targets": [".aider.conf.yml", "AGENTS.md"]},
            {"agent": "codex", "wired": True, "files": ["AGENTS.md"], "target": None, "targets": []}]
    assert unwired_here("AGENTS.md", rows) == ["aider"]
    assert unwired_here(".aider.conf.yml", rows) == ["aider"]
    assert unwired_here("None", rows) == []
