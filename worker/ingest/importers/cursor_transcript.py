"""Cursor agent transcripts (``~/.cursor/projects/<project>/agent-transcripts/<id>.jsonl``, newer versions
``agent-transcripts/<id>/<id>.jsonl``), written by the Cursor editor's agent and by the Cursor CLI.

One JSON record per line: a message ``{role: "user" | "assistant", message: {content}}`` (content a string or
blocks: ``text``, ``tool_use {name, input}``, in some versions ``tool_result``) or a marker ``{type:
"turn_ended", status: "success" | "error" | "aborted", error?}``. Records carry no id and no time. Cursor
rewrites the file as a conversation goes on: when a new prompt arrives, the ``turn_ended`` at the end is
replaced by it, so a marker ends the file once the agent is idle.

A user message's text wraps what the user typed in ``<user_query>`` (sometimes nested); the blocks
around it (``<timestamp>``, ``<user_info>``, ``<attached_files>``, ``<image_files>``, ``<external_links>``,
rules, skills…) are injected context and are not the user's words, nor are the notices Cursor itself puts in
``<user_query>`` when a subagent or a background task finishes ("The above subagent result is already
visible to the user…", "Briefly inform the user about the task result…"). The ``<timestamp>`` (``Monday,
Jun 1, 2026, 12:04 PM (UTC+2)``) is the only time in the file: it becomes the turn's time. A user message
without ``<user_query>`` (older versions, the CLI's later prompts) is its text without the injected blocks;
one of tool results only continues the tool loop.
The assistant's words are its ``text`` blocks, less the bare ``[REDACTED]`` that stands for its hidden
reasoning; ``tool_use`` blocks are tool traffic.

A turn starts at a user message with words; a prompt that got no text in answer before the next prompt
(an aborted one, a subagent's forking prompts, a plan's "Implement the plan…") is joined to that next
prompt. A turn is complete when a new prompt follows it or a ``turn_ended`` marker does that something else
follows (whatever its status: an aborted answer gets no more text), and it has text. An answered last turn
is the session's tail, with a marker after it or not (older versions write none): Cursor replaces the
file's last marker with what comes next, and what comes next may be one of its notices and more text of
the same turn (a subagent's result), which read earlier captured the turn again under another id.
The session id is ``cursor-transcript:<id>`` from the file's name when it is Cursor's (a UUID), otherwise
content-derived; turn ids are content-derived (the records have none).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from cairn.protocol.transcript import Session

from ._common import TurnBuilder, derived_session_id, iter_jsonl, join_texts
from ._format import Format

NAME = "cursor-transcript"

#: the query; Cursor sometimes nests a second one (with its own ``<timestamp>``) inside the first
_QUERY = re.compile(
    r"<user_query>\s*(?:(?:<user_query>|<timestamp>[^<]*</timestamp>)\s*)*(.*?)\s*(?:</user_query>|\Z)", re.S)
#: what Cursor itself writes into ``<user_query>`` when a subagent or a background task has finished
_NOTICES = ("The above subagent result is already visible to the user.",
            "Briefly inform the user about the task result")
#: injected blocks of a user message: a tag of lower-case words, alone on its line, up to its closing tag
_INJECTED = re.compile(r"(?m)^[ \t]*<([a-z][a-z0-9_-]*)(?:\s[^>\n]*)?>.*?</\1>[ \t]*$", re.S)
_TIMESTAMP = re.compile(r"<timestamp>\s*(.*?)\s*</timestamp>", re.S)
_CLOCK = re.compile(
    r"(?:[A-Za-z]+,\s*)?([A-Za-z]{3})[a-z]*\.?\s+(\d{1,2}),\s*(\d{4}),?\s+(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([AaPp][Mm])?"
    r"\s*\((?:UTC|GMT)\s*(?:([+-])(\d{1,2})(?::?(\d{2}))?)?\)"
)
_MONTHS = {m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov",
                                       "dec"), start=1)}
_REDACTED = re.compile(r"\s*\[REDACTED\]\s*$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _texts(content: Any) -> list[str]:
    return [b["text"] for b in _blocks(content) if b.get("type") == "text" and isinstance(b.get("text"), str)]


def stamp(text: str) -> str | None:
    """The ``<timestamp>`` of a user message as ISO 8601 UTC with milliseconds and ``Z``, when it names its
    zone (else ``None``: a time without a zone names no instant)."""
    found = _TIMESTAMP.search(text)
    if found is None:
        return None
    raw = found.group(1)
    parsed: dt.datetime | None
    try:
        parsed = dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        parsed = _clock(raw)
    if parsed is None or parsed.tzinfo is None:
        return None
    try:
        utc = parsed.astimezone(dt.UTC)
    except (OverflowError, ValueError):
        return None
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def _clock(raw: str) -> dt.datetime | None:
    m = _CLOCK.fullmatch(raw.strip())
    if m is None:
        return None
    mon, day, year, hour, minute, second, half, sign, zh, zm = m.groups()
    month = _MONTHS.get(mon.lower())
    h = int(hour)
    if half:
        if not 1 <= h <= 12:
            return None
        h = h % 12 + (12 if half.lower() == "pm" else 0)
    offset = dt.timedelta(hours=int(zh or 0), minutes=int(zm or 0)) * (-1 if sign == "-" else 1)
    try:
        return dt.datetime(int(year), month or 0, int(day), h, int(minute), int(second or 0),
                           tzinfo=dt.timezone(offset))
    except (ValueError, OverflowError):
        return None


def prompt_of(content: Any) -> tuple[str, str | None]:
    """(the user's words, the message's time) of a user message."""
    texts = _texts(content)
    joined = "\n".join(texts)
    queries = [q for q in (m.group(1) for m in _QUERY.finditer(joined)) if q.strip()]
    if queries:
        words = join_texts([q for q in queries if not q.startswith(_NOTICES)])
    else:
        words = join_texts([_INJECTED.sub("", t) for t in texts])
    return words, stamp(joined)


def answer_of(content: Any) -> list[str]:
    """The text pieces of an assistant message (tool calls and the ``[REDACTED]`` stand-in left out)."""
    return [said for said in (_REDACTED.sub("", t).strip() for t in _texts(content)) if said]


def parse(text: str, *, source_name: str) -> list[Session]:
    """Parse one agent transcript into at most one session of completed turns."""
    builder = TurnBuilder()
    turn: dict[str, Any] | None = None

    def close(t: dict[str, Any] | None) -> None:
        if t is not None and t["texts"]:
            builder.add(t["user"], join_texts(t["texts"]), completed_at=t["at"])

    ended = False  # a marker was read last: the turn before it is closed by whatever comes next
    for _number, rec in iter_jsonl(text):
        if rec.get("type") == "turn_ended":
            ended = True
            continue
        if ended:
            ended = False
            if turn is not None and turn["texts"]:  # a prompt without text in answer waits to join the next
                close(turn)
                turn = None
        role = rec.get("role")
        message = rec.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if role == "user":
            words, at = prompt_of(content)
            if words and turn is not None and not turn["texts"]:  # the last prompt got no text: one prompt
                turn["user"], turn["at"] = join_texts([turn["user"], words]), at or turn["at"]
            elif words:
                close(turn)
                turn = {"user": words, "texts": [], "at": at}
        elif role == "assistant" and turn is not None:
            turn["texts"].extend(answer_of(content))
    if turn is not None and turn["texts"]:  # answered, nothing after it (a marker may yet be replaced): the tail
        builder.set_tail(turn["user"], join_texts(turn["texts"]), completed_at=turn["at"])
    if not len(builder) and not builder.has_tail:
        return []
    stem = source_name.rsplit(".", 1)[0]
    sid = f"{NAME}:{stem}" if _UUID.match(stem) else derived_session_id(NAME, None, builder.first_user or "")
    return [builder.finish(session_id=sid, source_format=NAME, title=None)]


def _sniff_record(rec: dict[str, Any], head: str) -> bool:
    """A message ``{role, message: {content}}`` (no other keys carry it), or the turn marker."""
    message = rec.get("message")
    if rec.get("role") in ("user", "assistant") and isinstance(message, dict) and "content" in message:
        return "type" not in rec and "uuid" not in rec and "sessionId" not in rec
    return rec.get("type") == "turn_ended" and "status" in rec


#: the head of a transcript whose first line the head cut short
_HEAD = re.compile(r'^\{\s*"role"\s*:\s*"(?:user|assistant)"\s*,\s*"message"\s*:\s*\{\s*"content"\s*:')

FORMAT = Format(
    name=NAME, parse=parse, jsonl=True, stores="home",
    sniff_record=_sniff_record,
    sniff_json=lambda head: _HEAD.match(head) is not None,
)
