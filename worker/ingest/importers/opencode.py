"""opencode sessions: the SQLite database ``opencode.db`` under ``$XDG_DATA_HOME/opencode``
(default ``~/.local/share/opencode``; ``OPENCODE_DB`` names another file).

Tables: ``session`` (``id, project_id, parent_id, directory, title,
time_created, time_updated``), ``message`` (``id, session_id, time_created,
data``) and ``part`` (``id, message_id, session_id, time_created, data``);
``data`` is JSON. A message's data has ``role`` (``user``/``assistant``), for
an assistant ``parentID`` (the prompt it answers), ``time.completed`` once the
answer finished, ``finish`` (``tool-calls`` while the agent loop goes on) and
``summary: true`` for a compaction summary. Parts have ``type``: ``text``
(``synthetic``/``ignored`` mark injected text), ``reasoning``, ``tool``,
``file``, ``step-start``, ``step-finish``, ``patch``, ``agent``...

A turn starts at a user message with non-synthetic text; its id is the
message id. Its answer is the text parts of the assistant messages that
follow (not summaries). It is complete when a new prompt follows it, or when
its last assistant message has ``time.completed`` and did not stop for tool
calls. Sub-agent sessions (``parent_id`` set) are sidechains and skipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cairn.protocol.transcript import Session

from . import _sqlite
from ._common import TurnBuilder, iso_from_millis, join_texts, malformed
from ._format import Format

NAME = "opencode"
TABLES = frozenset({"session", "message", "part"})


def _text(parts: list[dict[str, Any]]) -> str:
    return join_texts([p["text"] for p in parts if p.get("type") == "text" and isinstance(p.get("text"), str)
                       and not p.get("synthetic") and not p.get("ignored")])


def build(sid: str, title: str | None, messages: list[tuple[str, dict[str, Any], list[dict[str, Any]]]]) -> list[Session]:
    builder = TurnBuilder()
    turn: dict[str, Any] | None = None

    def close(t: dict[str, Any] | None) -> None:
        if t is not None and t["texts"]:
            builder.add(t["user"], join_texts(t["texts"]), turn_id=t["id"], completed_at=t["at"])

    for mid, data, parts in messages:
        role = data.get("role")
        if role == "user":
            prompt = _text(parts)
            if prompt:
                close(turn)
                turn = {"id": mid, "user": prompt, "texts": [], "at": None, "done": False}
        elif role == "assistant" and turn is not None and not data.get("summary"):
            said = _text(parts)
            if said:
                turn["texts"].append(said)
            raw_time = data.get("time")
            times: dict[str, Any] = raw_time if isinstance(raw_time, dict) else {}
            finished = times.get("completed") is not None and data.get("finish") not in ("tool-calls",)
            turn["done"] = finished and bool(said)
            if said:
                turn["at"] = iso_from_millis(times.get("completed")) or turn["at"]
    if turn is not None and turn["done"]:
        close(turn)
    if not len(builder):
        return []
    return [builder.finish(session_id=sid, source_format=NAME, title=title)]


def parse_path(path: Path) -> list[Session]:
    """Every top-level session of an opencode database, read-only."""
    with _sqlite.open_ro(path) as con:
        if not TABLES <= _sqlite.tables(con):
            raise malformed(1, "not an opencode database")
        scols = _sqlite.columns(con, "session")
        parent = "parent_id" if "parent_id" in scols else "NULL"
        rows = con.execute(f"SELECT id, title, {parent} FROM session ORDER BY time_created, id").fetchall()
        out: list[Session] = []
        for sid, title, parent_id in rows:
            if parent_id:
                continue
            parts: dict[str, list[dict[str, Any]]] = {}
            for message_id, raw in con.execute(
                "SELECT message_id, data FROM part WHERE session_id = ? ORDER BY id", (sid,)
            ):
                value = _sqlite.json_value(raw)
                if isinstance(value, dict):
                    parts.setdefault(message_id, []).append(value)
            messages = []
            for mid, raw in con.execute(
                "SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id", (sid,)
            ):
                value = _sqlite.json_value(raw)
                if isinstance(value, dict):
                    messages.append((mid, value, parts.get(mid, [])))
            out += build(sid, title if isinstance(title, str) and title else None, messages)
        return out


FORMAT = Format(
    name=NAME, parse_path=parse_path, stores="home",
    sniff_db=lambda names, con: TABLES <= names,
)
