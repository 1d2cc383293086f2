"""Goose sessions: ``sessions.db`` (current) or one ``<session-id>.jsonl`` per session (older),
under ``~/.local/share/goose/sessions/`` (``GOOSE_PATH_ROOT`` or ``XDG_DATA_HOME`` move it).

The JSONL file's first line is the session's metadata (``{working_dir,
description, message_count, ...}``); each later line is a message ``{id?, role,
created, content: [items], metadata?}``. The database has a ``sessions`` table
(``id, name|description, working_dir, session_type?, ...``) and a ``messages``
table (``session_id, role, content_json, created_timestamp, metadata_json?``)
holding the same message content. Content items are ``text``, ``toolRequest``,
``toolResponse``, ``thinking``, ``redactedThinking``, ``image`` and others;
only ``text`` counts. A message whose metadata says ``userVisible: false`` is
the agent's own bookkeeping and is skipped; sub-agent and hidden sessions
(``session_type`` ``SubAgent``/``Hidden``) are skipped.

A turn starts at a user message with text (one of tool responses only
continues the tool loop). Its answer is the text of the assistant messages
that follow. It is complete when a new prompt follows it, or when its last
assistant message has text and requests no tool. Its time is that of its last
assistant message with text (``created`` / ``created_timestamp``, epoch seconds).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cairn.protocol.transcript import Session, utc_stamp

from . import _sqlite
from ._common import TurnBuilder, derived_session_id, iso_from_millis, iter_jsonl, join_texts, malformed
from ._format import Format

NAME = "goose"
_SKIPPED_TYPES = frozenset({"SubAgent", "subagent", "Hidden", "hidden"})


def _items(content: Any) -> list[dict[str, Any]]:
    return [c for c in content if isinstance(c, dict)] if isinstance(content, list) else []


def _time(value: Any) -> str | None:
    """A message's time: epoch seconds (``created``, ``created_timestamp``) or SQLite's UTC text
    ``YYYY-MM-DD HH:MM:SS`` (a ``created_at`` column), as a UTC ``Z`` stamp."""
    if isinstance(value, str):
        return utc_stamp(value) or utc_stamp(value.strip() + "Z")
    return iso_from_millis(value)


def build(messages: list[dict[str, Any]], sid: str | None, header: str | None, title: str | None) -> list[Session]:
    builder = TurnBuilder()
    turn: dict[str, Any] | None = None

    def close(t: dict[str, Any] | None) -> None:
        if t is not None and t["texts"]:
            builder.add(t["user"], join_texts(t["texts"]), completed_at=t["at"])

    for m in messages:
        meta = m.get("metadata")
        if isinstance(meta, dict) and meta.get("userVisible") is False:
            continue
        items = _items(m.get("content"))
        said = join_texts([c["text"] for c in items if c.get("type") == "text" and isinstance(c.get("text"), str)])
        if m.get("role") == "user":
            if said:
                close(turn)
                turn = {"user": said, "texts": [], "at": None, "open": True}
        elif m.get("role") == "assistant" and turn is not None:
            if said:
                turn["texts"].append(said)
                turn["at"] = _time(m.get("created")) or turn["at"]
            turn["open"] = not said or any(c.get("type") in ("toolRequest", "frontendToolRequest") for c in items)
    if turn is not None and not turn["open"]:
        close(turn)
    if not len(builder):
        return []
    sid = sid or derived_session_id(NAME, header, builder.first_user or "")
    return [builder.finish(session_id=sid, source_format=NAME, title=title)]


def parse(text: str, *, source_name: str) -> list[Session]:
    """Parse one Goose ``.jsonl`` session into at most one session of completed turns."""
    header: dict[str, Any] = {}
    messages: list[dict[str, Any]] = []
    for number, rec in iter_jsonl(text):
        if "role" in rec:
            if rec.get("role") not in ("user", "assistant") or not isinstance(rec.get("content"), list):
                raise malformed(number, "message lacks a known 'role' and a 'content' list")
            messages.append(rec)
        elif not messages and not header:
            header = rec
    description = header.get("description") if isinstance(header.get("description"), str) else None
    # the file is named by the session id, which Goose keeps when it moves a session into its database
    stem = source_name[: -len(".jsonl")] if source_name.endswith(".jsonl") else source_name
    return build(messages, f"goose:{stem}", None, description or None)


def is_goose_db(names: set[str], con: Any) -> bool:
    return {"sessions", "messages"} <= names and "content_json" in _sqlite.columns(con, "messages")


def parse_path(path: Path) -> list[Session]:
    """Every session of a Goose ``sessions.db``, read-only."""
    with _sqlite.open_ro(path) as con:
        if not is_goose_db(_sqlite.tables(con), con):
            raise malformed(1, "not a Goose session database")
        scols = _sqlite.columns(con, "sessions")
        name_col = "name" if "name" in scols else ("description" if "description" in scols else "NULL")
        type_col = "session_type" if "session_type" in scols else "NULL"
        rows = con.execute(f"SELECT id, {name_col}, {type_col} FROM sessions ORDER BY id").fetchall()
        mcols = _sqlite.columns(con, "messages")
        stamp = "created_timestamp" if "created_timestamp" in mcols else ("created_at" if "created_at" in mcols else "NULL")
        meta = "metadata_json" if "metadata_json" in mcols else "NULL"
        out: list[Session] = []
        for sid, name, kind in rows:
            if kind in _SKIPPED_TYPES:
                continue
            messages = []
            query = f"SELECT role, content_json, {stamp}, {meta} FROM messages WHERE session_id = ? ORDER BY rowid"
            for role, content, created, metadata in con.execute(query, (sid,)):
                messages.append({"role": role, "content": _sqlite.json_value(content), "created": created,
                                 "metadata": _sqlite.json_value(metadata)})
            out += build(messages, f"goose:{sid}", None, name if isinstance(name, str) and name else None)
        return out


def _sniff_record(rec: dict[str, Any], head: str) -> bool:
    """The header line ``{working_dir, …}`` of a JSONL session, or a message ``{role, created, content: [...]}``."""
    return ("role" in rec and "created" in rec and isinstance(rec.get("content"), list)) or "working_dir" in rec


FORMAT = Format(
    name=NAME, parse=parse, parse_path=parse_path, jsonl=True, stores="home",
    sniff_db=is_goose_db,
    sniff_record=_sniff_record,
)
