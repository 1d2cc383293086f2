"""The fixture of every format, with SQLite stores built from their SQL scripts (shared by tests)."""

from __future__ import annotations

import pathlib
import shutil
import sqlite3

from tests.support.transcripts import FIXTURES

TEXT_FIXTURES = {
    "claude-code": ["claude-code/session.jsonl"],
    "codex": ["codex/rollout-2025-07-14T16-00-00-0197a3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b.jsonl",
              "codex/0.60/rollout-2025-11-23T11-12-40-019ab3e1-4c2d-7a80-b6f1-2d9e5c7a8b31.jsonl",
              "codex/2025-08/rollout-2025-08-12T11-30-05-5b1f7c2e-8d4a-4e6b-9c3f-1a2b3c4d5e6f.jsonl"],
    "aider": ["aider/.aider.chat.history.md"],
    "specstory": ["specstory/.specstory/history/2025-06-10_08-12Z-dark-mode-toggle.md"],
    "claude-export": ["claude-export/session-export.md"],
    "cctrace": ["cctrace/conversation_full.md"],
    "gptel-org": ["gptel/chat.org", "gptel/old-bounds.org"],
    "gptel-md": ["gptel/chat.md"],
    "claude-code-export": ["claude-code-export/2025-07-21-retry-upload.txt", "claude-code-export/2025-11-09-docs-v2.txt"],
    "gemini-cli": ["gemini-cli/session-2026-03-02T10-15-5f1c2d3e.jsonl", "gemini-cli/session-2025-09-14T08-02-a1b2c3d4.json"],
    "qwen-code": ["qwen-code/3c9d7e21-5b4a-4f10-9c2e-7a8b9c0d1e2f.jsonl"],
    "copilot-cli": ["copilot-cli/session-state/7d2e4f60-1a2b-4c3d-9e8f-0a1b2c3d4e5f/events.jsonl",
                    "copilot-cli/session-state/030f200c-c26f-4ef0-9099-6d1156c83631/events.jsonl"],
    "continue": ["continue/0e4a1c9b-77d2-4b5e-a0f1-2b3c4d5e6f70.json"],
    "cline": ["cline/tasks/1767225600000/api_conversation_history.json", "cline/sessions/success.messages.json",
              "cline/tasks/1767312000000/ui_messages.json"],
    "roo-code": ["roo-code/tasks/0b8c6f2e-3d4a-4b5c-8d6e-7f8091a2b3c4/api_conversation_history.json"],
    "goose": ["goose/20250611_143022.jsonl"],
    "cursor-transcript": ["cursor-transcript/agent-transcripts/6a1f0c3e-8b2d-4e5f-9a7c-1d2e3f4a5b6c/"
                          "6a1f0c3e-8b2d-4e5f-9a7c-1d2e3f4a5b6c.jsonl"],
    "cursor-export": ["cursor-export/cursor_chat-voice-assistant.md"],
    "opencode-export": ["opencode-export/session-ses_3a9f.md"],
    "vscode-copilot": ["vscode-copilot/chat.json"],
}
DB_FIXTURES = {
    "goose": ["goose/sessions.sql"],
    "opencode": ["opencode/opencode.sql"],
    "cursor": ["cursor/state.sql", "cursor/workspace.sql"],
}


def build_db(sql: str, dest: pathlib.Path) -> pathlib.Path:
    """A SQLite database made from the SQL fixture ``sql`` (relative to the transcripts folder)."""
    con = sqlite3.connect(dest)
    con.executescript((FIXTURES / sql).read_text())
    con.commit()
    con.close()
    return dest


def neutral_copies(tmp: pathlib.Path) -> list[tuple[str, str, pathlib.Path]]:
    """``(format, fixture, copy)`` for every fixture, each copied under a name that says nothing."""
    out = []
    for fmt, rels in TEXT_FIXTURES.items():
        for i, rel in enumerate(rels):
            dest = tmp / f"{fmt}-{i}" / "transcript.txt"
            dest.parent.mkdir(parents=True)
            shutil.copyfile(FIXTURES / rel, dest)
            out.append((fmt, rel, dest))
    for fmt, rels in DB_FIXTURES.items():
        for i, rel in enumerate(rels):
            dest = tmp / f"{fmt}-db-{i}" / "store.bin"
            dest.parent.mkdir(parents=True)
            out.append((fmt, rel, build_db(rel, dest)))
    return out
