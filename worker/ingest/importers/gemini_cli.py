"""Gemini CLI chats (``~/.gemini/tmp/<project>/chats/session-*.json[l]``).

Two layouts, one record shape. The older ``.json`` file is one object
``{sessionId, projectHash, startTime, lastUpdated, messages: [...]}``. The
newer ``.jsonl`` file starts with that object's metadata on line 1; each later
line is either a whole message record (re-appended when it changes: the last
write for an ``id`` wins, in the place of its first appearance), a
``{"$set": {...}}`` patch (a ``messages`` array in it replaces the list), or
``{"$rewindTo": id}`` (the message ``id`` and everything after it are dropped).

A message is ``{id, timestamp, type, content, thoughts?, toolCalls?, tokens?}``
with ``type`` one of ``user``, ``gemini``, ``info``, ``error``, ``warning``;
``content`` is a string or a list of parts (``{text}``; ``thought`` parts are
reasoning). Only ``user`` and ``gemini`` messages count: info/error/warning
lines, ``thoughts``, tool calls and their results are left out.

A turn starts at a ``user`` message with text; its id is that message's id.
Its answer is the text of the ``gemini`` messages that follow. A turn is
complete when a new prompt follows it, or when its last ``gemini`` message has
text, no tool calls (the model continues after tools), and usage ``tokens``
(written once the stream ended; legacy ``.json`` files are complete as saved).
A prompt that got no answer (``/chat save``, a cancelled request) is no turn.
A chat whose metadata says ``kind: "subagent"`` is a sidechain and is skipped.
A turn's time is the ``timestamp`` of its last ``gemini`` message with text,
as UTC (a time without a zone is none).
"""

from __future__ import annotations

import re
from typing import Any

from cairn.protocol import boundedjson
from cairn.protocol.transcript import Session, utc_stamp

from ._common import (
    TurnBuilder,
    derived_session_id,
    iter_jsonl,
    join_texts,
    json_document,
    malformed,
    part_texts,
)
from ._format import Format

NAME = "gemini-cli"
_INJECTED = re.compile(r"<(session_context|hook_context|system-reminder)>.*?</\1>", re.S)
_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})
_PROJECT_HASH = re.compile(r'"projectHash"\s*:')
_MESSAGES = re.compile(r'"messages"\s*:')


def text_of(content: Any) -> str:
    return join_texts(part_texts(content))


def clean_prompt(text: str) -> str:
    return _INJECTED.sub("", text).strip()


def _messages_from_jsonl(text: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    meta: dict[str, Any] = {}
    order: list[str] = []
    by_id: dict[str, dict[str, Any]] = {}
    for number, rec in iter_jsonl(text):
        if "$set" in rec:
            patch = rec["$set"]
            if not isinstance(patch, dict):
                raise malformed(number, "'$set' is not an object")
            if isinstance(patch.get("messages"), list):
                order, by_id = [], {}
                for m in patch["messages"]:
                    if isinstance(m, dict) and isinstance(m.get("id"), str):
                        order.append(m["id"])
                        by_id[m["id"]] = m
            meta.update({k: v for k, v in patch.items() if k != "messages"})
            continue
        if "$rewindTo" in rec:
            target = rec["$rewindTo"]
            if target in by_id:
                cut = order.index(target)
                for dropped in order[cut:]:
                    by_id.pop(dropped, None)
                order = order[:cut]
            continue
        mid = rec.get("id")
        if isinstance(mid, str) and isinstance(rec.get("type"), str):
            if mid not in by_id:
                order.append(mid)
            by_id[mid] = rec
        elif not meta and isinstance(rec.get("sessionId"), str):
            meta = dict(rec)
        elif "type" in rec or "id" in rec:
            raise malformed(number, "message record lacks a string 'id' and 'type'")
    return meta, [by_id[i] for i in order]


def messages_of(text: str) -> tuple[dict[str, Any], list[dict[str, Any]], bool]:
    """(metadata, messages in order, legacy whole-object file?)."""
    try:
        doc = boundedjson.loads(text)
    except ValueError:
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("messages"), list):
        return doc, [m for m in doc["messages"] if isinstance(m, dict)], True
    if doc is None and _looks_whole(text):
        json_document(text)  # raises the fixed error: a whole-object file cut short
    meta, messages = _messages_from_jsonl(text)
    return meta, messages, False


def _looks_whole(text: str) -> bool:
    """A pretty-printed object: its first line alone is not JSON."""
    first = text.lstrip().split("\n", 1)[0]
    try:
        boundedjson.loads(first)
    except ValueError:
        return True
    return False


def build(meta: dict[str, Any], messages: list[dict[str, Any]], legacy: bool, fmt: str) -> list[Session]:
    if meta.get("kind") == "subagent":
        return []  # a sub-agent's chat is a sidechain of its parent session
    builder = TurnBuilder()
    turn: dict[str, Any] | None = None

    def close(t: dict[str, Any] | None) -> None:
        if t is not None and t["texts"]:
            builder.add(t["user"], join_texts(t["texts"]), turn_id=t["id"], completed_at=t["at"])

    for m in messages:
        kind = m.get("type")
        if kind not in _TYPES:
            continue
        if kind == "user":
            prompt = clean_prompt(text_of(m.get("content")))
            if prompt:
                close(turn)
                turn = {"id": m.get("id") if isinstance(m.get("id"), str) else None, "user": prompt,
                        "texts": [], "at": None, "last": None}
            continue
        if kind != "gemini" or turn is None:
            continue
        said = text_of(m.get("content"))
        if said:
            turn["texts"].append(said)
            turn["at"] = utc_stamp(m.get("timestamp")) or turn["at"]
        turn["last"] = m
    if turn is not None and turn["last"] is not None:
        last = turn["last"]
        done = bool(text_of(last.get("content"))) and not last.get("toolCalls") and (legacy or isinstance(last.get("tokens"), dict))
        if done:
            close(turn)
    if not len(builder):
        return []
    sid = meta.get("sessionId") if isinstance(meta.get("sessionId"), str) else None
    sid = sid or derived_session_id(fmt, None, builder.first_user or "")
    title = meta.get("summary") if isinstance(meta.get("summary"), str) else None
    return [builder.finish(session_id=sid, source_format=fmt, title=title)]


def parse(text: str, *, source_name: str) -> list[Session]:
    """Parse one Gemini CLI chat file (``.json`` or ``.jsonl``) into at most one session."""
    meta, messages, legacy = messages_of(text)
    return build(meta, messages, legacy, NAME)


def _sniff_record(rec: dict[str, Any], head: str) -> bool:
    """The metadata line of a ``.jsonl`` chat (or a whole ``.json`` chat on one line), or a message."""
    if "projectHash" in rec or ("startTime" in rec and "sessionId" in rec and "type" not in rec and "messages" not in rec):
        return True
    kind = rec.get("type")
    return isinstance(kind, str) and kind in _TYPES and "content" in rec and "message" not in rec


FORMAT = Format(
    name=NAME, parse=parse, stores="home", live=True,  # not ``jsonl``: a ``.json`` chat is one document
    sniff_record=_sniff_record,
    sniff_json=lambda head: _PROJECT_HASH.search(head) is not None and _MESSAGES.search(head) is not None,
)
