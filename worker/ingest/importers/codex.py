"""Codex CLI rollout JSONL (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Each line is ``{timestamp, type, payload}``. ``session_meta`` names the
session (``payload.id``). The conversation is recorded twice: as model items
(``response_item``: messages, function calls and their output, reasoning)
and as UI events (``event_msg``: ``user_message``, ``agent_message``,
``task_started``, ``task_complete``, ``token_count`` ...). To avoid double
counting, prompts come from ``event_msg``/``user_message`` when the file has
any (those hold exactly what the user typed), else from user
``response_item`` messages with Codex's injected context removed
(``<environment_context>``, ``<user_instructions>``, AGENTS.md instructions);
assistant text comes from assistant ``response_item`` messages
(``output_text``), else from ``agent_message`` events.

A turn is complete when ``task_complete`` or the next prompt follows it; an
unfinished trailing turn is skipped. Codex's own turn ids are per-process
submission counters that repeat across resumes, so turn ids are derived from
content, chained through the parent turn id.
"""

from __future__ import annotations

import re
from typing import Any

from cairn.protocol.transcript import Session

from ._common import TurnBuilder, derived_session_id, join_texts, malformed
from ._format import Format
from ._jsonl import JsonlText, Records

NAME = "codex"
_RECORD_TYPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
_RECORD_TYPE = re.compile(r'"type"\s*:\s*"(?:session_meta|response_item|event_msg|turn_context|compacted)"')

_INJECTED = re.compile(
    r"<(environment_context|user_instructions|user_shell_command|turn_aborted)>.*?</\1>"
    r"|# AGENTS\.md instructions for [^\n]*\n+<INSTRUCTIONS>.*?</INSTRUCTIONS>",
    re.S,
)
_ACTIVITY = frozenset(
    {"function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output",
     "local_shell_call", "web_search_call", "reasoning"}
)


def _texts(content: Any, kinds: tuple[str, ...]) -> list[str]:
    if not isinstance(content, list):
        return []
    return [b["text"] for b in content if isinstance(b, dict) and b.get("type") in kinds and isinstance(b.get("text"), str)]


def clean_prompt(text: str) -> str:
    """The user's words with Codex's injected context blocks removed (``""`` if nothing is left)."""
    return _INJECTED.sub("", text).strip()


def parse(text: str, *, source_name: str) -> list[Session]:
    """Parse one rollout file into at most one session of completed turns."""
    return parse_records(JsonlText(text))


def parse_records(src: Records) -> list[Session]:
    """The session of a rollout read record by record; tool activity is kept as its type only,
    so memory follows the conversation's text, not the size of tool output."""
    records: list[tuple[int, str, dict[str, Any], str | None]] = []
    for number, _, rec in src.scan():
        kind, payload = rec.get("type"), rec.get("payload")
        if not isinstance(kind, str) or not isinstance(payload, dict):
            raise malformed(number, "record lacks a string 'type' and an object 'payload'")
        if kind in ("response_item", "event_msg") and not isinstance(payload.get("type"), str):
            raise malformed(number, f"{kind} payload has no string 'type'")
        if kind == "response_item" and payload.get("type") in _ACTIVITY:
            payload = {"type": payload["type"]}
        elif kind not in ("response_item", "event_msg", "session_meta"):
            continue  # turn_context, compacted: never read below
        stamp = rec.get("timestamp")
        records.append((number, kind, payload, stamp if isinstance(stamp, str) else None))

    session_id: str | None = None
    events_have_prompts = events_have_replies = False
    items_have_replies = False
    for _, kind, payload, _ in records:
        ptype = payload.get("type")
        if kind == "session_meta" and session_id is None and isinstance(payload.get("id"), str):
            session_id = payload["id"]
        elif kind == "event_msg" and ptype == "user_message":
            events_have_prompts = True
        elif kind == "event_msg" and ptype == "agent_message":
            events_have_replies = True
        elif kind == "response_item" and ptype == "message" and payload.get("role") == "assistant":
            items_have_replies = True
    replies_from_events = events_have_replies and not items_have_replies

    builder = TurnBuilder()
    user: str | None = None
    texts: list[str] = []
    answered = False
    completed_at: str | None = None

    def close() -> None:
        if user is not None and answered:
            builder.add(user, join_texts(texts), completed_at=completed_at)

    for number, kind, payload, stamp in records:
        ptype = payload.get("type")
        prompt: str | None = None
        if kind == "event_msg" and ptype == "user_message" and events_have_prompts:
            if payload.get("kind", "plain") in (None, "plain"):
                message = payload.get("message")
                if not isinstance(message, str):
                    raise malformed(number, "user_message has no string 'message'")
                prompt = clean_prompt(message)
        elif kind == "response_item" and ptype == "message" and payload.get("role") == "user":
            if not events_have_prompts:
                prompt = clean_prompt("\n\n".join(_texts(payload.get("content"), ("input_text", "text"))))
        elif user is None:
            continue
        elif kind == "response_item" and ptype == "message" and payload.get("role") == "assistant":
            if not replies_from_events:
                texts.extend(_texts(payload.get("content"), ("output_text", "text")))
                answered, completed_at = True, stamp or completed_at
            continue
        elif kind == "event_msg" and ptype == "agent_message" and replies_from_events:
            if isinstance(payload.get("message"), str):
                texts.append(payload["message"])
            answered, completed_at = True, stamp or completed_at
            continue
        elif kind == "response_item" and ptype in _ACTIVITY:
            answered = True
            continue
        elif kind == "event_msg" and ptype == "task_complete":
            if answered:
                completed_at = stamp or completed_at
                close()
                user = None
            continue
        else:
            continue
        if prompt:
            close()
            user, texts, answered, completed_at = prompt, [], False, None

    if not len(builder):
        return []
    sid = session_id or derived_session_id(NAME, None, builder.first_user or "")
    return [builder.finish(session_id=sid, source_format=NAME, title=None)]


def _sniff_record(rec: dict[str, Any], head: str) -> bool:
    """``{timestamp, type, payload}`` with a rollout record type."""
    return isinstance(rec.get("payload"), dict) and rec.get("type") in _RECORD_TYPES


FORMAT = Format(
    name=NAME, parse=parse, stream=parse_records, jsonl=True, stores="home",
    sniff_record=_sniff_record,
    # a first line cut short by the head: a record type (quotes inside strings are escaped, so it is a key)
    sniff_json=lambda head: _RECORD_TYPE.search(head) is not None,
)
