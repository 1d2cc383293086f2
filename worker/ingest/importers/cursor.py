"""Cursor chats, kept in VS Code-style SQLite stores named ``state.vscdb``.

``<Cursor>/User/globalStorage/state.vscdb`` holds the Composer/Agent chats in
the key-value table ``cursorDiskKV``: ``composerData:<composerId>`` is a
JSON object ``{composerId, name, createdAt, lastUpdatedAt, status,
fullConversationHeadersOnly: [{bubbleId, type}] | conversation: [bubble]}``
and ``bubbleId:<composerId>:<bubbleId>`` one message ("bubble") ``{bubbleId,
type, text, createdAt?, toolFormerData?, thinking?, ...}`` with ``type`` 1 for
the user and 2 for the assistant. Older versions kept the chat panel in each
workspace's ``workspaceStorage/<id>/state.vscdb``, table ``ItemTable``, key
``workbench.panel.aichat.view.aichat.chatdata``: ``{tabs: [{tabId, chatTitle,
bubbles: [{type: "user" | "ai", id?, text | rawText}]}]}``. A workspace's
``composer.composerData`` lists its composers; ``workspace.json`` beside it
names its folder (used by discovery, not here).

The store is opened read-only (immutable when Cursor, which keeps it open,
holds it locked). A turn starts at a user bubble with text; its id is the
bubble id. Its answer is the text of the assistant bubbles that follow (tool
calls, code-block diffs and ``thinking`` are not text). It is complete when a
new prompt follows it, or when the chat is not generating (``status`` other
than ``generating``) and its last assistant bubble has text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cairn.protocol.transcript import Session

from . import _sqlite
from ._common import TurnBuilder, derived_session_id, iso_from_millis, join_texts, malformed
from ._format import Format

NAME = "cursor"
CHAT_KEY = "workbench.panel.aichat.view.aichat.chatdata"


def _bubble_role(b: dict[str, Any]) -> str | None:
    kind = b.get("type")
    if kind in (1, "user"):
        return "user"
    if kind in (2, "ai", "assistant"):
        return "assistant"
    return None


def _bubble_text(b: dict[str, Any]) -> str:
    for key in ("text", "rawText"):
        value = b.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def build(sid: str, title: str | None, bubbles: list[dict[str, Any]], generating: bool) -> list[Session]:
    builder = TurnBuilder()
    turn: dict[str, Any] | None = None

    def close(t: dict[str, Any] | None) -> None:
        if t is not None and t["texts"]:
            builder.add(t["user"], join_texts(t["texts"]), turn_id=t["id"], completed_at=t["at"])

    for b in bubbles:
        role, said = _bubble_role(b), _bubble_text(b)
        if role == "user" and said:
            close(turn)
            bid = b.get("bubbleId") or b.get("id")
            turn = {"id": bid if isinstance(bid, str) else None, "user": said, "texts": [], "at": None, "last": ""}
        elif role == "assistant" and turn is not None:
            if said:
                turn["texts"].append(said)
                created = b.get("createdAt")
                turn["at"] = (created if isinstance(created, str) else iso_from_millis(created)) or turn["at"]
            turn["last"] = said
    if turn is not None and turn["last"] and not generating:
        close(turn)
    if not len(builder):
        return []
    return [builder.finish(session_id=sid, source_format=NAME, title=title)]


def _composers(con: Any) -> list[Session]:
    out: list[Session] = []
    rows = con.execute("SELECT key, value FROM cursorDiskKV WHERE key >= 'composerData:' AND key < 'composerData;' "
                       "ORDER BY key").fetchall()
    for key, raw in rows:
        data = _sqlite.json_value(raw)
        if not isinstance(data, dict):
            continue
        cid = data.get("composerId") if isinstance(data.get("composerId"), str) else key.split(":", 1)[1]
        bubbles: list[dict[str, Any]] = [b for b in data.get("conversation") or [] if isinstance(b, dict)]
        headers = data.get("fullConversationHeadersOnly")
        if not bubbles and isinstance(headers, list):
            wanted = [h.get("bubbleId") for h in headers if isinstance(h, dict) and isinstance(h.get("bubbleId"), str)]
            found: dict[str, dict[str, Any]] = {}
            for bkey, braw in con.execute(
                "SELECT key, value FROM cursorDiskKV WHERE key >= ? AND key < ?",
                (f"bubbleId:{cid}:", f"bubbleId:{cid};"),
            ):
                value = _sqlite.json_value(braw)
                if isinstance(value, dict):
                    found[bkey.rsplit(":", 1)[1]] = value
            bubbles = [found[w] for w in wanted if w in found]
        name = data.get("name") if isinstance(data.get("name"), str) and data.get("name") else None
        out += build(f"cursor:{cid}", name, bubbles, data.get("status") == "generating")
    return out


def _chat_tabs(con: Any) -> list[Session]:
    row = con.execute("SELECT value FROM ItemTable WHERE key = ?", (CHAT_KEY,)).fetchone()
    data = _sqlite.json_value(row[0]) if row else None
    tabs = data.get("tabs") if isinstance(data, dict) else None
    out: list[Session] = []
    for tab in tabs if isinstance(tabs, list) else []:
        if not isinstance(tab, dict):
            continue
        bubbles = [b for b in tab.get("bubbles") or [] if isinstance(b, dict)]
        title = tab.get("chatTitle") if isinstance(tab.get("chatTitle"), str) and tab.get("chatTitle") else None
        tid = tab.get("tabId")
        sid = f"cursor:{tid}" if isinstance(tid, str) else derived_session_id(NAME, title, "")
        out += build(sid, title, bubbles, False)
    return out


def is_cursor_db(names: set[str], con: Any) -> bool:
    if "cursorDiskKV" in names:
        return True
    if "ItemTable" in names:
        return con.execute("SELECT 1 FROM ItemTable WHERE key = ? OR key = 'composer.composerData' LIMIT 1",
                           (CHAT_KEY,)).fetchone() is not None
    return False


def parse_path(path: Path) -> list[Session]:
    """Every chat of a Cursor ``state.vscdb``, read-only."""
    with _sqlite.open_ro(path) as con:
        names = _sqlite.tables(con)
        if not is_cursor_db(names, con):
            raise malformed(1, "not a Cursor state database")
        out = _composers(con) if "cursorDiskKV" in names else []
        if "ItemTable" in names:
            out += _chat_tabs(con)
        return out


FORMAT = Format(name=NAME, parse_path=parse_path, stores="home", sniff_db=is_cursor_db)
