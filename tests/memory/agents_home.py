"""A home with real sessions of a workspace for the agents cairn knows, and a memory root: ``cairn agents`` tests."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from tests.support.transcripts import FIXTURES

#: every relocation variable discovery honours, emptied so the real machine's stores are never read
CLEARED = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "OPENCODE_DB", "XDG_DATA_HOME", "COPILOT_HOME",
           "CLINE_DIR", "GOOSE_PATH_ROOT", "CONTINUE_GLOBAL_DIR", "APPDATA")


def claude_folder(directory: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", directory)


def make_home(tmp_path: Path, ws: Path, agents: tuple[str, ...] = ("claude-code", "codex", "gemini-cli")) -> Path:
    """A home holding one real session of ``ws`` per agent, where each tool keeps them."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    if "claude-code" in agents:
        text = (FIXTURES / "claude-code" / "session.jsonl").read_text()
        lines = text.splitlines()
        cwd = json.loads(lines[1]).get("cwd") or json.loads(lines[2]).get("cwd")
        folder = home / ".claude" / "projects" / claude_folder(str(ws))
        folder.mkdir(parents=True)
        (folder / "a.jsonl").write_text(text.replace(cwd, str(ws)))
    if "codex" in agents:
        name = "rollout-2025-07-14T16-00-00-0197a3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b.jsonl"
        day = home / ".codex" / "sessions" / "2025" / "07" / "14"
        day.mkdir(parents=True)
        (day / name).write_text((FIXTURES / "codex" / name).read_text().replace("/home/dana/src/cairn-demo", str(ws)))
    if "gemini-cli" in agents:  # Gemini CLI names a project's folder by the hash of its path
        chats = home / ".gemini" / "tmp" / hashlib.sha256(str(ws).encode()).hexdigest() / "chats"
        chats.mkdir(parents=True)
        name = "session-2026-03-02T10-15-5f1c2d3e.jsonl"
        (chats / name).write_text((FIXTURES / "gemini-cli" / name).read_text())
    return home


def env_for(home: Path) -> dict[str, str]:
    return {"HOME": str(home), **dict.fromkeys(CLEARED, "")}


def memory(ws: Path) -> None:
    """A memory root as accepted reviews leave it: an index and one topic."""
    root = ws / ".agents" / "memory"
    root.mkdir(parents=True)
    (root / "MEMORY.md").write_text("- [Money](money.md) - amounts are integer cents\n")
    (root / "money.md").write_text("---\nname: Money\ndescription: amounts are integer cents\ntype: project\n---\n\n"
                                   "- Amounts are integer cents.\n")
