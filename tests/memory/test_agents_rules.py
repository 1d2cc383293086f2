"""The rules a user accepts into ``AGENTS.md`` reach every agent ``cairn agents`` calls wired, within what each
reads; the pointer tells the truth about the index; a hook runs the cairn that proposed it.

Real CLI processes on real files, each agent's reading rule written out on its own (tests.memory.test_agents).
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

from tests.journal.helpers import cairn
from tests.memory.agents_home import env_for, make_home, memory
from tests.memory.test_agents import _claude_imports, _codex_reads_index, _gemini_imports, _json, _rows, _run

RULE = "Never push directly to main"
CODEX_WINDOW = 32 * 1024  # Codex's project_doc_max_bytes default


def _resolved(file: str, imports: list[str]) -> list[str]:
    return [posixpath.normpath(posixpath.join(posixpath.dirname(file), p)) for p in imports]


def _claude_sees(ws: Path, text: str) -> bool:
    """Whether Claude Code, reading CLAUDE.md and following its imports (5 hops, files that exist), reads ``text``."""
    todo, seen = [("CLAUDE.md", 0)], set()
    while todo:
        rel, hops = todo.pop()
        if rel in seen or not (ws / rel).is_file():
            continue
        seen.add(rel)
        content = (ws / rel).read_text()
        if text in content:
            return True
        if hops < 5:
            todo += [(r, hops + 1) for r in _resolved(rel, _claude_imports(content))]
    return False


def _gemini_sees(ws: Path, text: str) -> bool:
    todo, seen = [("GEMINI.md", 0)], set()
    while todo:
        rel, hops = todo.pop()
        if rel in seen or not (ws / rel).is_file():
            continue
        seen.add(rel)
        content = (ws / rel).read_text()
        if text in content:
            return True
        if hops < 5:
            todo += [(r, hops + 1) for r in _resolved(rel, _gemini_imports(content))]
    return False


def _remember(ws: Path, home: Path, text: str) -> dict[str, Any]:
    """``cairn remember TEXT`` and the acceptance of the proposal it made; that proposal."""
    out = _json(ws, home, "remember", text)
    (p,) = out["proposals"]
    r = _run(ws, home, "accept", p["id"])
    assert r.returncode == 0, r.stderr
    return p


def test_a_rule_accepted_into_agents_md_reaches_claude_code_and_gemini_cli(tmp_path: Path, workspace: Path) -> None:
    """The wiring imported only the index: a rule accepted into AGENTS.md never reached Claude Code or Gemini
    CLI, while `cairn agents` said both were wired."""
    home = make_home(tmp_path, workspace, ("claude-code", "gemini-cli"))
    memory(workspace)
    (workspace / "AGENTS.md").write_text("# Team rules\n\n- Run make check before a commit\n")
    (workspace / "CLAUDE.md").write_text("# Project\n\n@.agents/memory/MEMORY.md\n")  # an earlier wiring
    (workspace / "GEMINI.md").write_text("# Project\n\n@.agents/memory/MEMORY.md\n")
    p = _remember(workspace, home, RULE)
    assert p["target"] == "AGENTS.md" and RULE in (workspace / "AGENTS.md").read_text()
    assert not _claude_sees(workspace, RULE) and not _gemini_sees(workspace, RULE)
    rows = _rows(workspace, home)  # (AGENTS.md marks Codex as in use too)
    assert {n: (r["wired"], r["targets"]) for n, r in rows.items() if n != "codex"} == {
        "claude-code": (False, ["CLAUDE.md"]), "gemini-cli": (False, ["GEMINI.md"])}

    before = {f: (workspace / f).read_bytes() for f in ("CLAUDE.md", "GEMINI.md", "AGENTS.md")}
    wired = _json(workspace, home, "agents", "wire", "claude-code", "gemini-cli")
    assert wired["refused"] == [] and {p["target"] for p in wired["proposals"]} == {"CLAUDE.md", "GEMINI.md"}
    ids = [p["id"] for p in wired["proposals"]]
    assert _run(workspace, home, "accept", *ids).returncode == 0
    assert _claude_sees(workspace, RULE) and _gemini_sees(workspace, RULE)
    claude = (workspace / "CLAUDE.md").read_text()
    assert claude.startswith("# Project\n\n@.agents/memory/MEMORY.md\n") and claude.count("@.agents/memory") == 1
    rows = _rows(workspace, home)
    assert (rows["claude-code"]["wired"], rows["gemini-cli"]["wired"]) == (True, True)
    assert _json(workspace, home, "agents", "wire", "claude-code", "gemini-cli")["proposals"] == []
    _remember(workspace, home, "Never commit generated files")
    assert _claude_sees(workspace, "Never commit generated files")
    assert _gemini_sees(workspace, "Never commit generated files")
    for pid in ids:
        assert _run(workspace, home, "undo", pid).returncode == 0
    assert {f: (workspace / f).read_bytes() for f in ("CLAUDE.md", "GEMINI.md")} == {
        f: before[f] for f in ("CLAUDE.md", "GEMINI.md")}


def test_a_wiring_with_the_rules_file_proposed_beside_it_imports_it(tmp_path: Path, workspace: Path) -> None:
    """No AGENTS.md yet, Codex's wiring creates it: Claude Code's imports it too, so the first rule accepted
    there reaches Claude Code with no second wiring."""
    home = make_home(tmp_path, workspace, ("claude-code", "codex"))
    memory(workspace)
    wired = _json(workspace, home, "agents", "wire")
    assert {p["target"] for p in wired["proposals"]} == {"AGENTS.md", "CLAUDE.md"}
    assert _run(workspace, home, "accept", *[p["id"] for p in wired["proposals"]]).returncode == 0
    assert _claude_sees(workspace, "amounts are integer cents")
    _remember(workspace, home, RULE)
    assert _claude_sees(workspace, RULE) and _codex_reads_index(workspace)
    assert {n: r["wired"] for n, r in _rows(workspace, home).items()} == {"claude-code": True, "codex": True}


def test_no_rules_file_no_import_of_it(tmp_path: Path, workspace: Path) -> None:
    home = make_home(tmp_path, workspace, ("claude-code",))
    memory(workspace)
    (p,) = _json(workspace, home, "agents", "wire")["proposals"]
    assert _run(workspace, home, "accept", p["id"]).returncode == 0
    assert "@AGENTS.md" not in (workspace / "CLAUDE.md").read_text()
    assert _rows(workspace, home)["claude-code"]["wired"] is True
    (workspace / "AGENTS.md").write_text("# Rules\n\n- Use make check\n")  # written by hand later
    row = _rows(workspace, home)["claude-code"]
    assert (row["wired"], row["targets"]) == (False, ["CLAUDE.md"])
    (q,) = _json(workspace, home, "agents", "wire", "claude-code")["proposals"]
    assert _run(workspace, home, "accept", q["id"]).returncode == 0
    assert _claude_sees(workspace, "Use make check") and _rows(workspace, home)["claude-code"]["wired"] is True


def test_a_claude_md_linked_to_agents_md_or_importing_it_sees_the_rules(tmp_path: Path, workspace: Path) -> None:
    home = make_home(tmp_path, workspace, ("claude-code",))
    memory(workspace)
    agents = workspace / "AGENTS.md"
    agents.write_text("# Rules\n\n- Use make check\n\nRead .agents/memory/MEMORY.md first.\n")
    (workspace / "CLAUDE.md").write_text("@AGENTS.md\n")
    assert _rows(workspace, home)["claude-code"]["wired"] is True
    (workspace / "CLAUDE.md").unlink()
    (workspace / "CLAUDE.md").symlink_to("AGENTS.md")
    assert _rows(workspace, home)["claude-code"]["wired"] is True


def _big_agents_md() -> str:
    return "# Rules\n\n" + "".join(f"- rule number {i}: keep the code tidy and documented\n" for i in range(800))


def test_a_rule_for_a_long_agents_md_lands_where_codex_reads_it(tmp_path: Path, workspace: Path) -> None:
    """A rule was appended past byte 43,000 of a 43 KB AGENTS.md: Codex reads its first 32 KiB only."""
    home = make_home(tmp_path, workspace, ("codex",))
    agents = workspace / "AGENTS.md"
    original = _big_agents_md()
    assert len(original.encode()) > 40_000
    agents.write_text(original)
    _remember(workspace, home, RULE)
    data = agents.read_bytes()
    at = data.find(RULE.encode())
    assert 0 < at and at + len(RULE) <= CODEX_WINDOW, at
    assert data.startswith(b"# Rules\n\n## Working agreements\n\n- " + RULE.encode() + b"\n\n- rule number 0")
    assert data.replace(b"## Working agreements\n\n- " + RULE.encode() + b"\n\n", b"") == original.encode()
    # the next rule joins that section, where Codex reads it too
    _remember(workspace, home, "Never commit generated files")
    data = agents.read_bytes()
    assert data.count(b"## Working agreements") == 1 and 0 < data.find(b"Never commit generated files") < CODEX_WINDOW


def test_a_working_agreements_section_past_32_kib_gets_the_rule_near_the_top(tmp_path: Path, workspace: Path) -> None:
    home = make_home(tmp_path, workspace, ("codex",))
    agents = workspace / "AGENTS.md"
    original = _big_agents_md() + "\n## Working agreements\n\n- Keep the changelog\n"
    agents.write_text(original)
    _remember(workspace, home, RULE)
    data = agents.read_bytes()
    assert 0 < data.find(RULE.encode()) < CODEX_WINDOW
    assert data.endswith(b"## Working agreements\n\n- Keep the changelog\n")  # the user's section is left as it was
    assert data.replace(b"## Working agreements\n\n- " + RULE.encode() + b"\n\n", b"", 1) == original.encode()


def test_the_pointer_describes_the_index_lines_as_they_are(tmp_path: Path, workspace: Path) -> None:
    """The pointer said `- [Title](file.md) - hook`; accepted topics read `- [Title](file.md) (confirmed DAY)`."""
    home = make_home(tmp_path, workspace, ("codex",))
    (workspace / "AGENTS.md").write_text("# Rules\n")
    (p,) = _json(workspace, home, "agents", "wire", "codex")["proposals"]
    assert _run(workspace, home, "accept", p["id"]).returncode == 0
    _remember(workspace, home, "We deploy with make release")
    assert _codex_reads_index(workspace)
    pointer = (workspace / "AGENTS.md").read_text()
    index = (workspace / ".agents/memory/MEMORY.md").read_text()
    entries = [ln for ln in index.splitlines() if ln.startswith("- [")]
    assert entries, index
    # the shape the pointer describes, as a reader of it would take it
    described = "`- [Title](file.md)`, maybe\nfollowed by ` - hook` and by `(confirmed YYYY-MM-DD)`"
    assert described in pointer, pointer
    shape = re.compile(r"- \[[^\]]+\]\([^)]+\.md\)( - .+?)?( \(confirmed \d{4}-\d{2}-\d{2}\))?")
    assert all(shape.fullmatch(ln) for ln in entries), entries
    assert any("(confirmed " in ln for ln in entries), entries  # what the old text left unexplained


# -- finding: the hook runs the cairn that proposed it --------------------------------------------------------

def _settings_command(ws: Path) -> str:
    data = json.loads((ws / ".claude" / "settings.local.json").read_text())
    (group,) = data["hooks"]["SessionEnd"]
    return str(group["hooks"][0]["command"])


def test_the_hook_command_runs_when_cairn_is_not_on_path(tmp_path: Path, workspace: Path) -> None:
    """README installs cairn into a .venv: a hook naming `cairn` would never run, silently."""
    from tests.server.test_hook import SESSION, _payload, _seals, _store

    home, transcript = _store(tmp_path, workspace)
    bare = "/usr/bin:/bin"  # an agent's PATH without the venv
    env = {**env_for(home), "PATH": bare}
    made = json.loads(cairn(workspace, "agents", "hooks", "claude-code", "--json", env=env).stdout)
    assert made["command"] != "cairn hook claude-code"
    assert cairn(workspace, "accept", made["proposal"]["id"], env=env).returncode == 0
    command = _settings_command(workspace)
    assert command == made["command"] and os.path.isabs(shlex.split(command)[0])
    assert _rows(workspace, home)["claude-code"]["hooks"] is True
    # run as Claude Code runs a command hook: a shell, the payload on stdin, the agent's PATH
    r = subprocess.run(["sh", "-c", command], input=_payload(transcript, workspace), cwd=workspace,
                       env={"HOME": str(home), "PATH": bare}, capture_output=True, timeout=120)
    assert (r.returncode, r.stderr) == (0, b""), r.stderr
    assert [s.session_id for s in _seals(workspace)] == [SESSION]


def test_the_hook_command_names_cairn_when_path_has_this_cairn(tmp_path: Path, workspace: Path) -> None:
    from tests.support import PYTHON

    mine = Path(PYTHON).parent / "cairn"
    assert mine.is_file()
    env = {**env_for(tmp_path / "home"), "PATH": f"{mine.parent}:/usr/bin:/bin"}
    made = json.loads(cairn(workspace, "agents", "hooks", "claude-code", "--json", env=env).stdout)
    assert made["command"] == "cairn hook claude-code"
    # another program called cairn first on PATH is not this one: the path of this one is used
    other = tmp_path / "bin"
    other.mkdir()
    (other / "cairn").write_text("#!/bin/sh\nexit 0\n")
    (other / "cairn").chmod(0o755)
    env["PATH"] = f"{other}:{mine.parent}:/usr/bin:/bin"
    made = json.loads(cairn(workspace, "agents", "hooks", "claude-code", "--json", env=env).stdout)
    assert shlex.split(made["command"])[1:] == ["hook", "claude-code"]
    assert shlex.split(made["command"])[0] != "cairn" and not made["command"].startswith(str(other))
