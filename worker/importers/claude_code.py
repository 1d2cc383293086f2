"""Claude Code session JSONL (``~/.claude/projects/<project>/<session-uuid>.jsonl``).

Each line is one record. Messages (``type`` user/assistant/system) form a tree
through ``uuid``/``parentUuid``; a rewind starts a new branch from an earlier
message, so the conversation that counts is the *active branch*: the chain
from the most recent message back to the root (across compaction boundaries
through ``logicalParentUuid``). Sidechain records (sub-agents) are skipped.

A root turn starts at a user message carrying the user's own words; its id is
that message's ``uuid`` (a fork-point id that survives rewinds). Tool results,
meta messages and injected boilerplate never start a turn. The turn's
assistant text is the concatenation of the text blocks of its assistant
messages. A turn is complete when a new prompt follows it, or when its last
assistant message stopped for a reason other than ``tool_use``; a trailing
turn still streaming or waiting on a tool is skipped.
"""

from __future__ import annotations

from typing import Any

from cairn.protocol.transcript import Session

from . import _claude
from ._common import TurnBuilder, derived_session_id, iter_jsonl, join_texts, malformed

FORMAT = "claude-code"
_MESSAGE_TYPES = ("user", "assistant")


class _Open:
    """The turn being read: who started it and what the assistant has said so far."""

    __slots__ = ("turn_id", "user", "texts", "answered", "stop", "ended_on_tool", "completed_at")

    def __init__(self, turn_id: str, user: str) -> None:
        self.turn_id = turn_id
        self.user = user
        self.texts: list[str] = []
        self.answered = False
        self.stop: str | None = None
        self.ended_on_tool = False
        self.completed_at: str | None = None


def _check(number: int, rec: dict[str, Any]) -> None:
    """Refuse records whose shape the importer relies on but cannot read."""
    kind = rec.get("type")
    if not isinstance(kind, str):
        raise malformed(number, "record has no string 'type'")
    uuid = rec.get("uuid")
    if uuid is not None and not isinstance(uuid, str):
        raise malformed(number, "'uuid' is not a string")
    for key in ("parentUuid", "logicalParentUuid"):
        if rec.get(key) is not None and not isinstance(rec[key], str):
            raise malformed(number, f"'{key}' is not a string")
    if kind in _MESSAGE_TYPES:
        if not isinstance(uuid, str):
            raise malformed(number, f"{kind} record has no 'uuid'")
        message = rec.get("message")
        if not isinstance(message, dict):
            raise malformed(number, f"{kind} record has no 'message' object")
        content = message.get("content")
        if not isinstance(content, str) and not _claude.is_blocks(content):
            raise malformed(number, f"{kind} message content is neither text nor content blocks")


def _active_branch(nodes: dict[str, dict[str, Any]], leaf: str | None) -> list[dict[str, Any]]:
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    current = leaf
    while current is not None and current not in seen and current in nodes:
        seen.add(current)
        rec = nodes[current]
        chain.append(rec)
        current = rec.get("parentUuid") or rec.get("logicalParentUuid")
    chain.reverse()
    return chain


def parse(text: str, *, source_name: str) -> list[Session]:
    """Parse one Claude Code session file into at most one session of completed root turns."""
    nodes: dict[str, dict[str, Any]] = {}
    summaries: list[tuple[str, str]] = []
    session_id: str | None = None
    leaf: str | None = None
    for number, rec in iter_jsonl(text):
        _check(number, rec)
        kind = rec["type"]
        if kind == "summary":
            if isinstance(rec.get("leafUuid"), str) and isinstance(rec.get("summary"), str):
                summaries.append((rec["leafUuid"], rec["summary"]))
            continue
        if session_id is None and isinstance(rec.get("sessionId"), str):
            session_id = rec["sessionId"]
        uuid = rec.get("uuid")
        if isinstance(uuid, str):
            nodes[uuid] = rec
            if kind in _MESSAGE_TYPES and not rec.get("isSidechain"):
                leaf = uuid

    chain = _active_branch(nodes, leaf)
    builder = TurnBuilder()
    current: _Open | None = None
    pending_command: tuple[str, str] | None = None

    def close(turn: _Open | None) -> None:
        if turn is not None and turn.answered:
            builder.add(turn.user, join_texts(turn.texts), turn_id=turn.turn_id, completed_at=turn.completed_at)

    for rec in chain:
        if rec.get("isSidechain") or rec["type"] not in _MESSAGE_TYPES:
            continue
        content = rec["message"]["content"]
        if rec["type"] == "user":
            if rec.get("isMeta") or rec.get("isCompactSummary") or rec.get("isVisibleInTranscriptOnly"):
                continue
            if _claude.only_tool_results(content):
                if current is not None:
                    current.ended_on_tool = True
                continue
            raw = "\n\n".join(_claude.block_texts(content))
            prompt = _claude.clean_prompt(raw)
            if prompt:
                close(current)
                current, pending_command = _Open(rec["uuid"], prompt), None
                continue
            command = _claude.slash_command(raw)
            if command:
                close(current)
                current, pending_command = None, (rec["uuid"], command)
            continue
        # assistant
        message = rec["message"]
        if message.get("model") == "<synthetic>" or rec.get("isApiErrorMessage"):
            continue
        if current is None:
            if pending_command is None:
                continue  # output with no prompt on this branch (e.g. after a compaction summary)
            current, pending_command = _Open(*pending_command), None
        current.answered = True
        current.texts.extend(_claude.block_texts(content))
        stop = message.get("stop_reason")
        current.stop = stop if isinstance(stop, str) else None
        current.ended_on_tool = _claude.has_tool_use(content)
        if isinstance(rec.get("timestamp"), str):
            current.completed_at = rec["timestamp"]

    if current is not None and not current.ended_on_tool and current.stop not in (None, "tool_use"):
        close(current)

    if not len(builder):
        return []
    on_branch = {rec["uuid"] for rec in chain if isinstance(rec.get("uuid"), str)}
    title = None
    for leaf_uuid, summary in summaries:
        if leaf_uuid in on_branch:
            title = summary
    if title is None:
        for leaf_uuid, summary in summaries:
            if leaf_uuid in nodes:
                title = summary
    sid = session_id or derived_session_id(FORMAT, None, builder.first_user or "")
    return [builder.finish(session_id=sid, source_format=FORMAT, title=title)]
