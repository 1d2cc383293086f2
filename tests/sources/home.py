"""A synthetic home directory with one store of every kind, each session recording its workspace."""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import re
import shutil
import sqlite3

from tests.importers.formats import build_db
from tests.support.transcripts import FIXTURES


def _put(dest: pathlib.Path, rel: str, workspace: str, old: str | None = None) -> pathlib.Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    text = (FIXTURES / rel).read_text()
    if old:
        text = text.replace(old, workspace)
    dest.write_text(text)
    return dest


def make_home(root: pathlib.Path, ws: str, other: str) -> pathlib.Path:
    """``root/home`` with sessions of ``ws`` (the workspace) and of ``other`` in every store."""
    home = root / "home"
    claude = (FIXTURES / "claude-code" / "session.jsonl").read_text()
    cwd = json.loads(claude.splitlines()[1]).get("cwd") or json.loads(claude.splitlines()[2]).get("cwd")
    for name, where in (("a", ws), ("b", other)):
        d = home / ".claude" / "projects" / where.replace("/", "-")
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{name}.jsonl").write_text(claude.replace(cwd, where).replace("sessionId\":\"", f"sessionId\":\"{name}"))
    _put(home / ".codex" / "sessions" / "2025" / "07" / "14" / "rollout-2025-07-14T16-00-00-x.jsonl",
         "codex/rollout-2025-07-14T16-00-00-0197a3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b.jsonl", ws, "/home/dana/src/cairn-demo")
    slug = home / ".gemini" / "tmp" / "proj"
    _put(slug / "chats" / "session-2026-03-02T10-15-5f1c2d3e.jsonl", "gemini-cli/session-2026-03-02T10-15-5f1c2d3e.jsonl", ws)
    (slug / ".project_root").write_text(ws)
    hashed = home / ".gemini" / "tmp" / hashlib.sha256(other.encode()).hexdigest()
    _put(hashed / "chats" / "session-2025-09-14T08-02-a1b2c3d4.json", "gemini-cli/session-2025-09-14T08-02-a1b2c3d4.json", other)
    _put(home / ".qwen" / "projects" / "p" / "chats" / "q.jsonl", "qwen-code/3c9d7e21-5b4a-4f10-9c2e-7a8b9c0d1e2f.jsonl",
         ws, "/home/dev/inventory")
    _put(home / ".copilot" / "session-state" / "7d2e" / "events.jsonl",
         "copilot-cli/session-state/7d2e4f60-1a2b-4c3d-9e8f-0a1b2c3d4e5f/events.jsonl", other, "/home/dev/billing")
    _put(home / ".continue" / "sessions" / "0e4a.json", "continue/0e4a1c9b-77d2-4b5e-a0f1-2b3c4d5e6f70.json",
         "file://" + ws, "file:///home/dev/webapp")
    (home / ".continue" / "sessions" / "sessions.json").write_text("[]")
    storage = home / ".config" / "Code" / "User" / "globalStorage"
    _put(storage / "saoudrizwan.claude-dev" / "tasks" / "1" / "api_conversation_history.json",
         "cline/tasks/1767225600000/api_conversation_history.json", ws, "/home/dev/tasks-app")
    _put(storage / "rooveterinaryinc.roo-cline" / "tasks" / "2" / "api_conversation_history.json",
         "roo-code/tasks/0b8c6f2e-3d4a-4b5c-8d6e-7f8091a2b3c4/api_conversation_history.json", other, "/home/dev/tasks-app")
    goose = home / ".local" / "share" / "goose" / "sessions"
    _put(goose / "20250611_143022.jsonl", "goose/20250611_143022.jsonl", ws, "/home/dev/etl")
    _db(build_db("goose/sessions.sql", _mk(goose / "sessions.db")), "UPDATE sessions SET working_dir = ?", other)
    _db(build_db("opencode/opencode.sql", _mk(home / ".local" / "share" / "opencode" / "opencode.db")),
        "UPDATE session SET directory = ?", ws)
    cursor = home / ".config" / "Cursor" / "User"
    build_db("cursor/state.sql", _mk(cursor / "globalStorage" / "state.vscdb"))
    wsdb = build_db("cursor/workspace.sql", _mk(cursor / "workspaceStorage" / "abc" / "state.vscdb"))
    (wsdb.parent / "workspace.json").write_text(json.dumps({"folder": "file://" + ws}))
    transcript = "cursor-transcript/agent-transcripts/6a1f0c3e-8b2d-4e5f-9a7c-1d2e3f4a5b6c/6a1f0c3e-8b2d-4e5f-9a7c-1d2e3f4a5b6c.jsonl"
    cursor_projects = home / ".cursor" / "projects"
    mine, theirs = "6a1f0c3e-8b2d-4e5f-9a7c-1d2e3f4a5b6c", "7b2e1d4f-9c3e-4f60-8b8d-2e3f4a5b6c7d"
    _put(cursor_projects / cursor_folder(ws) / "agent-transcripts" / mine / f"{mine}.jsonl", transcript, ws)
    _put(cursor_projects / cursor_folder(other) / "agent-transcripts" / f"{theirs}.jsonl", transcript, other)
    # the conversation of the Cursor database fixture: read from the database only
    _put(cursor_projects / cursor_folder(ws) / "agent-transcripts" / f"{CURSOR_COMPOSER}.jsonl", transcript, ws)
    project = pathlib.Path(ws)
    project.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(FIXTURES / "aider" / ".aider.chat.history.md", project / ".aider.chat.history.md")
    spec = project / ".specstory" / "history"
    spec.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(FIXTURES / "specstory" / ".specstory" / "history" / "2025-06-10_08-12Z-dark-mode-toggle.md", spec / "s.md")
    return home


CURSOR_COMPOSER = "5b0e1c2d-3f4a-4b5c-9d6e-7f8a9b0c1d2e"  # the composer of cursor/state.sql


def cursor_folder(directory: str) -> str:
    """The project folder Cursor names after ``directory`` (written here as Cursor does, not imported)."""
    return "-".join(part for part in re.split(r"[^A-Za-z0-9]+", directory) if part)


def _mk(path: pathlib.Path) -> pathlib.Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _db(path: pathlib.Path, sql: str, value: str) -> None:
    con = sqlite3.connect(path)
    con.execute(sql, (value,))
    con.commit()
    con.close()


def env_for(home: pathlib.Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(home), **extra}


def by_format(stores) -> dict[str, list]:
    out: dict[str, list] = {}
    for st in stores:
        out.setdefault(st.format, []).extend(st.sessions)
    return out


__all__ = ["by_format", "env_for", "make_home", "os"]
