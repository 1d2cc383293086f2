"""GitHub Copilot CLI session events (``~/.copilot/session-state/<id>/events.jsonl``;
older versions: ``~/.copilot/session-state/<id>.jsonl``).

Each line is an event ``{type, data, id, timestamp, parentId, ephemeral?}``.
``session.start`` names the session (``data.sessionId``) and its directory
(``data.context.cwd``). ``user.message`` carries what the user typed in
``data.content`` (``data.transformedContent`` adds injected context and is not
read). Some releases write the context into ``content`` too: blocks such as
``<reminder>``, ``<attachments>``, ``<context>`` around the prompt, and the
prompt again inside ``<userRequest>``. The user's words are then the
``<userRequest>`` block's text, once; without one, ``content`` less the
injected blocks. ``assistant.message`` carries the reply text in ``data.content`` and the
tool calls it makes in ``data.toolRequests``; ``assistant.turn_end`` closes one
model turn. Streaming deltas, reasoning, ``tool.*`` and other ``session.*``
events are left out, and so is what a sub-agent writes into the same log while a
``task`` tool call runs (events with ``agentId``, messages with ``data.parentToolCallId``):
its prompt and report are the tool call's input and output, not the conversation.

A turn starts at a ``user.message`` with text; its id is that event's ``id``.
Its answer is the text of the ``assistant.message`` events that follow. It is
complete when a new prompt follows it, or when its last assistant message has
text, requests no tool, and an ``assistant.turn_end`` came after it.
"""

from __future__ import annotations

import re
from typing import Any

from cairn.protocol.transcript import Session

from ._common import TurnBuilder, derived_session_id, iter_jsonl, join_texts, malformed
from ._format import Format

NAME = "copilot-cli"
_EVENT_TYPE = re.compile(r'"type"\s*:\s*"(?:session\.[a-z_]+|user\.message|assistant\.[a-z_]+)"')
# Context the tool adds around the user's words (never typed by the user), and the block repeating the prompt.
_INJECTED = re.compile(
    r"<(reminder|attachments|context|editorContext|current_datetime|environment_info|workspace_info)>.*?</\1>", re.S)
_REQUEST = re.compile(r"<userRequest>(.*?)</userRequest>", re.S)


def _prompt(content: object) -> str:
    """The user's words in a ``user.message`` content (see the module docstring)."""
    if not isinstance(content, str):
        return ""
    asked = [found.strip() for found in _REQUEST.findall(content) if found.strip()]
    if asked:
        return asked[-1]
    return _INJECTED.sub("", content).strip()


def parse(text: str, *, source_name: str) -> list[Session]:
    """Parse one Copilot CLI event log into at most one session of completed turns."""
    builder = TurnBuilder()
    session_id: str | None = None
    turn: dict[str, Any] | None = None

    def close(t: dict[str, Any] | None) -> None:
        if t is not None and t["texts"]:
            builder.add(t["user"], join_texts(t["texts"]), turn_id=t["id"], completed_at=t["at"])

    for number, ev in iter_jsonl(text):
        kind, data = ev.get("type"), ev.get("data")
        if not isinstance(kind, str):
            raise malformed(number, "event has no string 'type'")
        if not isinstance(data, dict):
            if kind in ("user.message", "assistant.message", "session.start"):
                raise malformed(number, f"{kind} event has no 'data' object")
            continue
        if kind == "session.start" and session_id is None and isinstance(data.get("sessionId"), str):
            session_id = data["sessionId"]
        elif ev.get("agentId") is not None or data.get("parentToolCallId") is not None:
            continue  # a sub-agent's own stream: the work of a `task` tool call, not the conversation
        elif kind == "user.message":
            prompt = _prompt(data.get("content"))
            if prompt:
                close(turn)
                turn = {"id": ev.get("id") if isinstance(ev.get("id"), str) else None, "user": prompt,
                        "texts": [], "at": None, "open": True, "ended": False}
        elif turn is None:
            continue
        elif kind == "assistant.message":
            content = data.get("content")
            said = content.strip() if isinstance(content, str) else ""
            if said:
                turn["texts"].append(said)
                turn["at"] = ev.get("timestamp") if isinstance(ev.get("timestamp"), str) else turn["at"]
            turn["open"] = bool(data.get("toolRequests")) or not said
            turn["ended"] = False
        elif kind == "assistant.turn_end":
            turn["ended"] = True
    if turn is not None and turn["ended"] and not turn["open"]:
        close(turn)
    if not len(builder):
        return []
    sid = session_id or derived_session_id(NAME, None, builder.first_user or "")
    return [builder.finish(session_id=sid, source_format=NAME, title=None)]


def _sniff_record(rec: dict[str, Any], head: str) -> bool:
    """An event ``{type, data, …}`` of a session, user or assistant type."""
    kind = rec.get("type")
    return isinstance(rec.get("data"), dict) and isinstance(kind, str) and _EVENT_TYPE.search(f'"type":"{kind}"') is not None


FORMAT = Format(
    name=NAME, parse=parse, jsonl=True, stores="home",
    sniff_record=_sniff_record,
    # a first line cut short by the head: an event type (quotes inside strings are escaped, so it is a key)
    sniff_json=lambda head: _EVENT_TYPE.search(head) is not None,
)
