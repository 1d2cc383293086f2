"""Continue sessions (``~/.continue/sessions/<session-id>.json``; ``CONTINUE_GLOBAL_DIR`` moves it).

One JSON object per session: ``{sessionId, title, workspaceDirectory,
history: [ChatHistoryItem], mode?}``. Each history item holds a ``message``
``{role, content, toolCalls?}`` with ``role`` one of ``user``, ``assistant``,
``thinking``, ``tool``, ``system``; ``content`` is a string or a list of parts
(``{type: "text", text}``, images). ``sessions.json`` beside the files is an
index, not a session.

A turn starts at a ``user`` message with text. Its answer is the text of the
``assistant`` messages that follow; ``thinking`` and ``system`` messages, tool
calls and ``tool`` results are left out. A turn is complete when a new prompt
follows it, or when its last assistant message has text and calls no tool.
Continue has no message ids, so turn ids are derived from content.
"""

from __future__ import annotations

import re
from typing import Any

from cairn.protocol.transcript import Session

from ._common import TurnBuilder, derived_session_id, join_texts, json_document, malformed, part_texts
from ._format import Format

NAME = "continue"
_WORKSPACE = re.compile(r'"workspaceDirectory"\s*:')
_HISTORY = re.compile(r'"history"\s*:')


def parse(text: str, *, source_name: str) -> list[Session]:
    """Parse one Continue session file into at most one session of completed turns."""
    doc = json_document(text)
    if not isinstance(doc, dict) or not isinstance(doc.get("history"), list):
        raise malformed(1, "session has no 'history' array")
    builder = TurnBuilder()
    user: str | None = None
    texts: list[str] = []
    at: str | None = None
    last_open = True
    for item in doc["history"]:
        message = item.get("message") if isinstance(item, dict) else None
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        said = join_texts(part_texts(message.get("content"), skip=("imageUrl",)))
        if role == "user":
            if said:
                if user is not None and texts:
                    builder.add(user, join_texts(texts), completed_at=at)
                user, texts, last_open = said, [], True
        elif role == "assistant" and user is not None:
            if said:
                texts.append(said)
            last_open = bool(message.get("toolCalls")) or not said
    if user is not None and texts and not last_open:
        builder.add(user, join_texts(texts), completed_at=at)
    if not len(builder):
        return []
    sid = doc.get("sessionId") if isinstance(doc.get("sessionId"), str) else None
    sid = sid or derived_session_id(NAME, None, builder.first_user or "")
    title = doc.get("title") if isinstance(doc.get("title"), str) and doc.get("title") != "New Session" else None
    return [builder.finish(session_id=sid, source_format=NAME, title=title)]


def _sniff_record(rec: dict[str, Any], head: str) -> bool:
    """A document on one line with ``workspaceDirectory`` and ``messages``."""
    return "messages" in rec and "workspaceDirectory" in rec


FORMAT = Format(
    name=NAME, parse=parse, stores="home",
    sniff_record=_sniff_record,
    # a session written over several lines: its keys in the head
    sniff_json=lambda head: _WORKSPACE.search(head) is not None and _HISTORY.search(head) is not None,
)
