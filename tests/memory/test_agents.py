"""``cairn agents``: which coding agents read the memory, and ``wire`` that makes them, through checked proposals.

Everything runs the real CLI on real files, with a synthetic home holding
real sessions (the transcript fixtures) of this workspace. Whether an agent
reads the memory after the proposals are accepted is checked here by each
agent's own documented rule (docs/agents.md), written out independently of
cairn's code: Claude Code's and Gemini CLI's ``@`` imports (Qwen Code's are
Gemini CLI's), Codex reading ``AGENTS.md`` as text, Copilot its
instructions file, an always-applied Cursor rule.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.journal.helpers import cairn
from tests.memory.agents_home import CLEARED, env_for, make_home, memory

INDEX = ".agents/memory/MEMORY.md"
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
    """Every file of the workspace but cairn's records: regular bytes, or what the node is."""
    out: dict[str, bytes | str] = {}
    for p in sorted(ws.rglob("*")):
        rel = str(p.relative_to(ws))
        if rel == ".cairn" or rel.startswith(".cairn/"):
            continue
        if p.is_symlink():
            out[rel] = f"-> {os.readlink(p)}"
        elif p.is_fifo():
            out[rel] = "fifo"
        elif p.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = p.read_bytes()
    return out


# -- each agent's documented rule, written out on its own ------------------------------------------

def _gemini_imports(content: str) -> list[str]:
    """Gemini CLI's memory import processor (google-gemini/gemini-cli, packages/core/src/utils/
    memoryImportProcessor.ts): an ``@`` at the start or after whitespace, the path up to the next
    whitespace, starting with ``.``, ``/`` or a letter, not inside a backtick-delimited region."""
    regions = [(m.start(), m.end()) for m in re.finditer(r"(`+)([\s\S]*?)\1", content)]
    out, i = [], 0
    while (i := content.find("@", i)) != -1:
        if i > 0 and content[i - 1] not in " \t\n\r":
            i += 1
            continue
        j = i + 1
        while j < len(content) and content[j] not in " \t\n\r":
            j += 1
        path = content[i + 1:j]
        if path and (path[0] in "./" or path[0].isascii() and path[0].isalpha()) \
                and not any(s <= i < e for s, e in regions):
            out.append(path)
        i = j + 1
    return out


def _claude_imports(content: str) -> list[str]:
    """Claude Code's memory imports (its memory documentation): ``@path`` anywhere in the text, except in
    markdown code spans and code blocks (fences of backticks or tildes)."""
    kept, fence = [], None
    for line in content.splitlines():
        m = re.match(r" {0,3}(`{3,}|~{3,})", line)
        if fence is None and m:
            fence = m.group(1)[0]
            continue
        if fence is not None:
            if m and m.group(1)[0] == fence:
                fence = None
            continue
        kept.append(re.sub(r"(`+).*?\1", "", line))
    return [m.group(1) for m in re.finditer(r"(?:^|\s)@(\S+)", "\n".join(kept))]


def _imports_index(ws: Path, file: str, imports: list[str]) -> bool:
    """Whether one of ``file``'s imports, resolved against its own folder, is the memory index (and it exists)."""
    for path in imports:
        rel = posixpath.normpath(posixpath.join(posixpath.dirname(file), path))
        if rel == INDEX and (ws / rel).is_file():
            return True
    return False


def _codex_reads_index(ws: Path) -> bool:
    """Codex (developers.openai.com/codex/guides/agents-md): in the project root it reads AGENTS.override.md
    when it is there and not empty, else AGENTS.md, as text, up to project_doc_max_bytes (32 KiB)."""
    override = ws / "AGENTS.override.md"
    doc = override if override.is_file() and override.read_text().strip() else ws / "AGENTS.md"
    return doc.is_file() and INDEX.encode() in doc.read_bytes()[:32 * 1024]


def _cursor_reads_index(ws: Path) -> bool:
    """Cursor (cursor.com/docs/rules): a `.mdc` rule in .cursor/rules whose front matter has alwaysApply: true
    is included in every request."""
    for rule in sorted((ws / ".cursor" / "rules").glob("*.mdc")):
        text = rule.read_text()
        head = text.split("---", 2)
        if text.startswith("---") and len(head) == 3 and re.search(r"(?m)^alwaysApply:\s*true\s*$", head[1]) \
                and INDEX in head[2]:
            return True
    return False


# -- the tests --------------------------------------------------------------------------------------

def test_accepting_the_wiring_makes_claude_codex_and_gemini_read_the_memory_and_undo_restores_every_byte(
        tmp_path: Path, workspace: Path) -> None:
    home = make_home(tmp_path, workspace)
    memory(workspace)
    agents_md = b"# Team rules\r\n\r\nRun `make test` before a commit.\r\nNever push to main."  # CRLF, no final EOL
    (workspace / "AGENTS.md").write_bytes(agents_md)
    before = _visible(workspace)

    rows = _rows(workspace, home)
    assert set(rows) == {"claude-code", "codex", "gemini-cli"}
    for row in rows.values():
        assert row["wired"] is False and row["via"] is None and row["hooks"] is False, row
        assert row["sessions"] >= 1, row  # found by discovery in the home's stores
    assert {n: r["target"] for n, r in rows.items()} == {"claude-code": "CLAUDE.md", "codex": "AGENTS.md",
                                                         "gemini-cli": "GEMINI.md"}

    wired = _json(workspace, home, "agents", "wire")
    assert wired["refused"] == [] and wired["wired"] == []
    by_target = {p["target"]: p for p in wired["proposals"]}
    assert {t: p["agents"] for t, p in by_target.items()} == {
        "AGENTS.md": ["codex"], "CLAUDE.md": ["claude-code"], "GEMINI.md": ["gemini-cli"]}
    assert _visible(workspace) == before  # proposing writes nothing the agents read
    listed = {p["id"]: p for p in _json(workspace, home, "proposals")}
    assert all(listed[p["id"]]["state"] == "pending" for p in wired["proposals"])

    again = _json(workspace, home, "agents", "wire")  # idempotent while they wait
    assert sorted(p["id"] for p in again["proposals"]) == sorted(by_target[t]["id"] for t in by_target)
    assert all(p["new"] is False for p in again["proposals"])

    ids = [p["id"] for p in wired["proposals"]]
    r = _run(workspace, home, "accept", *ids)
    assert r.returncode == 0, r.stderr

    claude = (workspace / "CLAUDE.md").read_text()
    assert _imports_index(workspace, "CLAUDE.md", _claude_imports(claude)), claude
    gemini = (workspace / "GEMINI.md").read_text()
    assert _imports_index(workspace, "GEMINI.md", _gemini_imports(gemini)), gemini
    assert _codex_reads_index(workspace)
    agents_after = (workspace / "AGENTS.md").read_bytes()
    assert agents_after.startswith(agents_md + b"\r\n") and b"\n" not in agents_after.replace(b"\r\n", b"")

    rows = _rows(workspace, home)
    assert {n: (r["wired"], r["via"]["file"], r["via"]["mechanism"]) for n, r in rows.items()} == {
        "claude-code": (True, "CLAUDE.md", "import"), "codex": (True, "AGENTS.md", "pointer"),
        "gemini-cli": (True, "GEMINI.md", "import")}
    nothing = _json(workspace, home, "agents", "wire")
    assert nothing["proposals"] == [] and sorted(nothing["wired"]) == ["claude-code", "codex", "gemini-cli"]

    for pid in ids:
        r = _run(workspace, home, "undo", pid)
        assert r.returncode == 0, r.stderr
    assert _visible(workspace) == before  # AGENTS.md byte for byte, CLAUDE.md and GEMINI.md gone again
    assert not any(r["wired"] for r in _rows(workspace, home).values())


def test_a_wiring_written_by_hand_is_recognised_and_never_proposed_again(tmp_path: Path, workspace: Path) -> None:
    home = make_home(tmp_path, workspace, ())
    memory(workspace)
    # AGENTS.md is there: Claude Code and Gemini CLI see its rules only through an import of it
    (workspace / "CLAUDE.md").write_text("# Notes\n\nSee the memory:\n@.agents/memory/MEMORY.md\n@AGENTS.md\n")
    (workspace / "AGENTS.md").write_text("Read .agents/memory/MEMORY.md first.\n")
    (workspace / "GEMINI.md").write_text("The index is `@.agents/memory/MEMORY.md` (in code: no import).\n"
                                         "```\n@.agents/memory/MEMORY.md\n```\n@AGENTS.md\n")
    (workspace / "QWEN.md").write_text("@./docs/agents.md\n")  # an import of a file that points to the memory
    (workspace / "docs").mkdir()
    (workspace / "docs" / "agents.md").write_text("@../.agents/memory/MEMORY.md\n")
    before = _visible(workspace)

    rows = _rows(workspace, home)
    assert rows["claude-code"]["via"] == {"file": "CLAUDE.md", "mechanism": "import", "through": [], "link": None}
    assert rows["codex"]["via"] == {"file": "AGENTS.md", "mechanism": "pointer", "through": [], "link": None}
    assert rows["qwen-code"]["via"] == {"file": "QWEN.md", "mechanism": "import", "through": ["docs/agents.md"],
                                        "link": None}
    # only in code: Gemini CLI imports nothing, and reads the path as text
    assert rows["gemini-cli"]["via"] == {"file": "GEMINI.md", "mechanism": "pointer", "through": [], "link": None}

    wired = _json(workspace, home, "agents", "wire")
    assert sorted(wired["wired"]) == ["claude-code", "codex", "gemini-cli", "qwen-code"]
    assert wired["proposals"] == []
    assert _visible(workspace) == before
    named = _json(workspace, home, "agents", "wire", "claude-code")
    assert named["proposals"] == [] and named["wired"] == ["claude-code"]


def test_cursor_gets_an_always_applied_rule_and_copilot_its_instructions(tmp_path: Path, workspace: Path) -> None:
    home = make_home(tmp_path, workspace, ())
    memory(workspace)
    (workspace / ".cursor" / "rules").mkdir(parents=True)
    (workspace / ".cursor" / "rules" / "style.mdc").write_text("---\ndescription: style\nalwaysApply: false\n---\n"
                                                               "Use tabs. The memory: .agents/memory/MEMORY.md\n")
    (workspace / ".github").mkdir()
    (workspace / ".github" / "copilot-instructions.md").write_text("Prefer small functions.\n")
    before = _visible(workspace)

    rows = _rows(workspace, home)
    assert {n: r["wired"] for n, r in rows.items()} == {"copilot": False, "cursor": False}  # that rule is not always applied
    wired = _json(workspace, home, "agents", "wire")
    assert sorted((p["target"], tuple(p["agents"])) for p in wired["proposals"]) == [
        (".cursor/rules/cairn-memory.mdc", ("cursor",)), (".github/copilot-instructions.md", ("copilot",))]
    ids = [p["id"] for p in wired["proposals"]]
    assert _run(workspace, home, "accept", *ids).returncode == 0

    assert _cursor_reads_index(workspace)
    copilot = (workspace / ".github" / "copilot-instructions.md").read_text()
    assert copilot.startswith("Prefer small functions.\n") and INDEX in copilot
    assert all(r["wired"] for r in _rows(workspace, home).values())

    for pid in ids:
        assert _run(workspace, home, "undo", pid).returncode == 0
    assert _visible(workspace) == before  # the rule removed, the folder (which was there) kept


def test_qwen_code_imports_the_memory_from_qwen_md_and_undo_restores_every_byte(
        tmp_path: Path, workspace: Path) -> None:
    home = make_home(tmp_path, workspace, ())
    memory(workspace)
    qwen_md = b"# Qwen rules\n\nKeep answers short.\n`@not-an-import` stays code"  # no final EOL
    (workspace / "QWEN.md").write_bytes(qwen_md)
    before = _visible(workspace)
    rows = _rows(workspace, home)
    assert {n: (r["wired"], r["target"]) for n, r in rows.items()} == {"qwen-code": (False, "QWEN.md")}
    wired = _json(workspace, home, "agents", "wire", "qwen-code")
    assert [(p["target"], p["agents"], p["mechanism"]) for p in wired["proposals"]] == [
        ("QWEN.md", ["qwen-code"], "import")]
    assert _visible(workspace) == before
    pid = wired["proposals"][0]["id"]
    assert _run(workspace, home, "accept", pid).returncode == 0
    # Qwen Code's import processor is Gemini CLI's (docs/agents.md): the same rule, written out above
    after = (workspace / "QWEN.md").read_bytes()
    assert after.startswith(qwen_md + b"\n")
    assert _imports_index(workspace, "QWEN.md", _gemini_imports(after.decode()))
    assert _rows(workspace, home)["qwen-code"]["via"] == {"file": "QWEN.md", "mechanism": "import", "through": [],
                                                          "link": None}
    assert _run(workspace, home, "undo", pid).returncode == 0
    assert _visible(workspace) == before


@pytest.mark.parametrize("thing", ["symlink", "fifo", "large"])
def test_an_instruction_file_that_is_a_link_a_fifo_or_too_large_is_refused_and_nothing_is_written(
        tmp_path: Path, workspace: Path, thing: str) -> None:
    home = make_home(tmp_path, workspace, ("claude-code", "codex"))
    memory(workspace)
    claude = workspace / "CLAUDE.md"
    if thing == "symlink":
        (tmp_path / "elsewhere.md").write_text("outside the workspace\n")
        claude.symlink_to(tmp_path / "elsewhere.md")
    elif thing == "fifo":
        os.mkfifo(claude)
    else:
        claude.write_bytes(b"x" * (1024 * 1024 + 1))
    code = {"symlink": "E_PATH_SYMLINK", "fifo": "E_PATH_NOT_REGULAR", "large": "E_RECORD_TOO_LARGE"}[thing]
    before = _visible(workspace)

    rows = _rows(workspace, home)
    assert rows["claude-code"]["wired"] is False
    assert [p["code"] for p in rows["claude-code"]["problems"]] == [code]

    r = _run(workspace, home, "agents", "wire", "--json")
    assert r.returncode == 1, r.stderr
    assert f"cairn: {code}: " in r.stderr
    out = json.loads(r.stdout)
    assert [(f["target"], f["code"]) for f in out["refused"]] == [("CLAUDE.md", code)]
    assert [p["target"] for p in out["proposals"]] == ["AGENTS.md"]  # the other agent is still wired
    assert "CLAUDE.md" not in [p["target"] for p in _json(workspace, home, "proposals")]
    assert _visible(workspace) == before
    if thing == "symlink":
        assert (tmp_path / "elsewhere.md").read_text() == "outside the workspace\n"


def test_wiring_an_agent_not_in_use_or_unknown_is_refused_with_a_code(tmp_path: Path, workspace: Path) -> None:
    home = make_home(tmp_path, workspace, ("codex",))
    before = _visible(workspace)
    r = _run(workspace, home, "agents", "wire", "qwen-code")
    assert r.returncode == 2 and "cairn: E_AGENT_NOT_IN_USE: qwen-code" in r.stderr, r.stderr
    r = _run(workspace, home, "agents", "wire", "emacs")
    assert r.returncode == 2 and "cairn: E_USAGE: unknown agent 'emacs'" in r.stderr, r.stderr
    r = _run(workspace, home, "agents", "codex")
    assert r.returncode == 2 and "E_USAGE" in r.stderr, r.stderr
    assert _visible(workspace) == before
    assert not (workspace / ".cairn" / "state" / "memory" / "proposals").exists()
    # codex is in use by its sessions alone: a missing AGENTS.md is created for it
    out = _json(workspace, home, "agents", "wire", "codex")
    assert [(p["target"], p["agents"]) for p in out["proposals"]] == [("AGENTS.md", ["codex"])]


def test_hooks_are_found_in_each_agents_settings(tmp_path: Path, workspace: Path) -> None:
    home = make_home(tmp_path, workspace)
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.local.json").write_text(json.dumps({"hooks": {"SessionEnd": [
        {"hooks": [{"type": "command", "command": "cairn hook session-end"}]}]}}))
    (home / ".codex" / "config.toml").write_text('notify = ["cairn", "hook", "codex"]\n')
    (home / ".gemini" / "settings.json").write_text(json.dumps({"hooks": {"AfterAgent": [
        {"hooks": [{"type": "command", "command": "notify-send done"}]}]}}))
    rows = _rows(workspace, home)
    assert {n: r["hooks"] for n, r in rows.items()} == {"claude-code": True, "codex": True, "gemini-cli": False}
    (home / ".gemini" / "settings.json").write_text("{not json")
    row = _rows(workspace, home)["gemini-cli"]
    assert row["hooks"] is False and [p["code"] for p in row["problems"]] == ["E_CONFIG_INVALID"]


def test_the_status_counts_the_agents_in_use_that_do_not_read_thememory(
        tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cairn.worker.jobs.status import read_status

    home = make_home(tmp_path, workspace, ("claude-code", "gemini-cli"))  # session folders of this very workspace
    memory(workspace)
    (workspace / "AGENTS.md").write_text("# Rules\n")
    for name in CLEARED:
        monkeypatch.setenv(name, "")
    monkeypatch.setenv("HOME", str(home))
    assert read_status(str(workspace))["unwiredAgents"] == 3  # claude-code, gemini-cli (folders), codex (AGENTS.md)
    wired = _json(workspace, home, "agents", "wire")
    assert _run(workspace, home, "accept", *(p["id"] for p in wired["proposals"])).returncode == 0
    assert read_status(str(workspace))["unwiredAgents"] == 0


def test_the_status_rule_for_claude_folders_is_discoverys() -> None:
    from cairn.worker.ingest.sources.probe import claude_folder
    from cairn.worker.memory.agents import claude_folder as quick

    for path in ("/home/dev/my_project", "/srv/a.b/c-d", "/tmp/ü/x y", "C:\\Users\\dev"):
        assert quick(path) == claude_folder(path)


def test_wiring_keeps_the_users_own_lines_and_the_files_mode(tmp_path: Path, workspace: Path) -> None:
    """`wire` only appends a pointer: a line of the user's that looks like a credential is theirs (it was
    rewritten to [REDACTED:password] in the proposal), and a 0600 AGENTS.md stays 0600 through accept and undo."""
    home = make_home(tmp_path, workspace, ("codex",))
    memory(workspace)
    own = b"# Rules\n\nTest creds: password=Hunter2Secret99 for the local db.\n"
    agents = workspace / "AGENTS.md"
    agents.write_bytes(own)
    agents.chmod(0o600)
    (p,) = _json(workspace, home, "agents", "wire", "codex")["proposals"]
    shown = _run(workspace, home, "show", p["id"]).stdout
    assert "REDACTED" not in shown
    assert _run(workspace, home, "accept", p["id"]).returncode == 0
    assert agents.read_bytes().startswith(own) and oct(agents.stat().st_mode & 0o777) == "0o600"
    assert _run(workspace, home, "undo", p["id"]).returncode == 0
    assert agents.read_bytes() == own and oct(agents.stat().st_mode & 0o777) == "0o600"


def test_options_go_before_or_after_the_agents_named(tmp_path: Path, workspace: Path) -> None:
    """`agents wire --json codex` and `agents hooks --json claude-code` were E_USAGE ("unrecognized arguments")."""
    home = make_home(tmp_path, workspace, ("codex", "claude-code"))
    memory(workspace)
    r = _run(workspace, home, "agents", "wire", "--json", "codex")
    assert r.returncode == 0 and [p["agents"] for p in json.loads(r.stdout)["proposals"]] == [["codex"]], r.stderr
    r = _run(workspace, home, "agents", "hooks", "--json", "claude-code")
    assert r.returncode == 0 and json.loads(r.stdout)["agent"] == "claude-code", r.stderr
    r = _run(workspace, home, "agents", "--json")
    assert r.returncode == 0 and {row["agent"] for row in json.loads(r.stdout)} == {"codex", "claude-code"}


def test_a_long_agents_md_gets_the_pointer_where_codex_reads_it(tmp_path: Path, workspace: Path) -> None:
    """Codex reads AGENTS.md up to 32 KiB: the pointer appended to a 47 KB file was never read, while `cairn
    agents` said codex read the memory. It goes under the title now, and a pointer past the window is no wiring."""
    home = make_home(tmp_path, workspace, ("codex",))
    memory(workspace)
    rules = "# Rules\n\n" + "".join(f"- rule number {i}: keep the code tidy and documented\n" for i in range(900))
    agents = workspace / "AGENTS.md"
    agents.write_text(rules + "\nSee .agents/memory/MEMORY.md.\n")  # a pointer by hand, past what Codex reads
    assert _rows(workspace, home)["codex"]["wired"] is False
    agents.write_text(rules)
    (p,) = _json(workspace, home, "agents", "wire", "codex")["proposals"]
    assert _run(workspace, home, "accept", p["id"]).returncode == 0
    assert _codex_reads_index(workspace) and agents.read_text().startswith("# Rules\n\n## Project memory\n")
    assert agents.read_text().replace(agents.read_text()[9:agents.read_text().index("- rule number 0")], "") == rules
    assert _rows(workspace, home)["codex"]["wired"] is True
    assert _run(workspace, home, "undo", p["id"]).returncode == 0 and agents.read_text() == rules


def test_gemini_settings_with_comments_are_read_as_gemini_reads_them(tmp_path: Path, workspace: Path) -> None:
    """Gemini CLI reads settings.json through strip-json-comments: a commented file naming AGENTS.md as its context
    file made `cairn agents` report E_CONFIG_INVALID and wire GEMINI.md, a file Gemini then did not read."""
    home = make_home(tmp_path, workspace, ("gemini-cli",))
    memory(workspace)
    (workspace / ".gemini").mkdir()
    settings = b'{\n  // my context files\n  "context": {"fileName": ["AGENTS.md"]} /* only that */\n}\n'
    (workspace / ".gemini" / "settings.json").write_bytes(settings)
    (workspace / "GEMINI.md").write_text("# gem\n")
    (workspace / "AGENTS.md").write_text("# agents\n")
    row = _rows(workspace, home)["gemini-cli"]
    assert row["target"] == "AGENTS.md" and not row.get("problems"), row
    (p,) = _json(workspace, home, "agents", "wire", "gemini-cli")["proposals"]
    assert p["target"] == "AGENTS.md"
    r = _run(workspace, home, "agents", "hooks", "gemini-cli")
    assert r.returncode == 2 and "holds comments" in r.stderr
    assert (workspace / ".gemini" / "settings.json").read_bytes() == settings
