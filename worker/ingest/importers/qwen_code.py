"""Qwen Code chats (``~/.qwen/projects/<project>/chats/<session-id>.jsonl``).

Each line is a ``ChatRecord``: ``{uuid, parentUuid, sessionId, timestamp,
type, subtype?, cwd, version, message?, toolCallResult?, systemPayload?,
isSidechain?}`` with ``type`` one of ``user``, ``assistant``, ``tool_result``,
``system``. ``message`` is a Gemini API ``Content`` (``{role, parts}``);
parts carry ``text`` (``thought: true`` marks reasoning), ``functionCall`` or
``functionResponse``. Records form a tree through ``uuid``/``parentUuid``; the
conversation that counts is the chain from the newest non-sidechain message
back to the root. Older Qwen Code versions wrote Gemini CLI's whole-object
``.json`` chats under ``~/.qwen/tmp``; those are read as Gemini CLI files are.

A turn starts at a ``user`` record with text of its own (not a sub-agent's, not
a ``system`` record such as a slash command or compression checkpoint); its id
is that record's ``uuid``. Its answer is the non-thought text of the
``assistant`` records that follow; ``tool_result`` records, function calls and
thoughts are left out. A turn is complete when a new prompt follows it or when
its last assistant record has text and no function call; a custom title
(``system``/``custom_title``) names the session. A turn's time is the
``timestamp`` of its last assistant record with text, as UTC.
"""

from __future__ import annotations

import re
from typing import Any

from cairn.protocol.transcript import Session, utc_stamp

from . import claude_code, gemini_cli
from ._common import TurnBuilder, derived_session_id, iter_jsonl, join_texts, malformed, part_texts
from ._format import Format, PathHint

NAME = "qwen-code"
_MESSAGE = re.compile(r'"message"\s*:\s*\{\s*"role"\s*:\s*"(?:user|model)"\s*,\s*"parts"\s*:')


def _parts(rec: dict[str, Any]) -> list[Any]:
    message = rec.get("message")
    parts = message.get("parts") if isinstance(message, dict) else None
    return parts if isinstance(parts, list) else []


def _has_call(parts: list[Any]) -> bool:
    return any(isinstance(p, dict) and "functionCall" in p for p in parts)


def parse(text: str, *, source_name: str) -> list[Session]:
    """Parse one Qwen Code chat file into at most one session of completed turns."""
    if not text.lstrip().startswith("{") or gemini_cli._looks_whole(text):
        meta, messages, legacy = gemini_cli.messages_of(text)
        return gemini_cli.build(meta, messages, legacy, NAME)
    nodes: dict[str, dict[str, Any]] = {}
    leaf: str | None = None
    session_id: str | None = None
    title: str | None = None
    for number, rec in iter_jsonl(text):
        uuid, kind = rec.get("uuid"), rec.get("type")
        if not isinstance(uuid, str) or not isinstance(kind, str):
            raise malformed(number, "record lacks a string 'uuid' and 'type'")
        if rec.get("parentUuid") is not None and not isinstance(rec.get("parentUuid"), str):
            raise malformed(number, "'parentUuid' is not a string")
        nodes[uuid] = rec
        if session_id is None and isinstance(rec.get("sessionId"), str):
            session_id = rec["sessionId"]
        if kind == "system" and rec.get("subtype") == "custom_title":
            payload = rec.get("systemPayload")
            if isinstance(payload, dict) and isinstance(payload.get("customTitle"), str):
                title = payload["customTitle"]
        if kind in ("user", "assistant", "tool_result") and not rec.get("isSidechain"):
            leaf = uuid
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    current = leaf
    while current is not None and current in nodes and current not in seen:
        seen.add(current)
        chain.append(nodes[current])
        current = nodes[current].get("parentUuid")
    chain.reverse()

    builder = TurnBuilder()
    turn: dict[str, Any] | None = None

    def close(t: dict[str, Any] | None) -> None:
        if t is not None and t["texts"]:
            builder.add(t["user"], join_texts(t["texts"]), turn_id=t["id"], completed_at=t["at"])

    for rec in chain:
        if rec.get("isSidechain"):
            continue
        kind, parts = rec["type"], _parts(rec)
        if kind == "user":
            if rec.get("provenance") not in (None, "real_user"):
                continue
            prompt = gemini_cli.clean_prompt(join_texts(part_texts(parts)))
            if prompt:
                close(turn)
                turn = {"id": rec["uuid"], "user": prompt, "texts": [], "at": None, "calls": False}
            continue
        if kind != "assistant" or turn is None:
            continue
        said = join_texts(part_texts(parts))
        if said:
            turn["texts"].append(said)
            turn["at"] = utc_stamp(rec.get("timestamp")) or turn["at"]
        turn["calls"] = _has_call(parts)
        turn["ended_on_text"] = bool(said)
    if turn is not None and turn.get("ended_on_text") and not turn["calls"]:
        close(turn)
    if not len(builder):
        return []
    sid = session_id or derived_session_id(NAME, None, builder.first_user or "")
    return [builder.finish(session_id=sid, source_format=NAME, title=title)]


def _sniff_record(rec: dict[str, Any], head: str) -> bool:
    """A ``ChatRecord``: a Gemini-style ``message`` (``{role, parts}``) or a ``systemPayload``; a chat
    whose first record carries neither (a bare ``system`` record) has Claude Code's keys, and
    Gemini-style messages further on in the head."""
    message = rec.get("message")
    if "systemPayload" in rec or (isinstance(message, dict) and isinstance(message.get("parts"), list)):
        return True
    return claude_code.is_session_record(rec) and _MESSAGE.search(head) is not None


FORMAT = Format(
    name=NAME, parse=parse, jsonl=True, stores="home",
    sniff_record=_sniff_record,
    # older versions wrote Gemini CLI's chats: a ``.qwen`` folder in the path makes one Qwen Code's
    path_hint=PathHint(folders=(".qwen",), over=("gemini-cli",)),
)
