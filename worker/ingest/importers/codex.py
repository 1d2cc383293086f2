"""Codex CLI rollout JSONL (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Two layouts. The current one (Codex CLI from September 2025): each line is
``{timestamp, type, payload}``; ``session_meta`` names the session
(``payload.id``). The conversation is recorded twice: as model items
(``response_item``: messages, function calls and their output, reasoning)
and as UI events (``event_msg``: ``user_message``, ``agent_message``,
``task_started``, ``task_complete``, ``token_count`` ...). The older one
(Codex CLI until August 2025): a first line ``{id, timestamp, instructions,
git}`` names the session and its start, then bare model items (``{"type":
"message", ...}`` without the wrapper, no time of their own) and
``{"record_type": "state"}`` lines (skipped; they also occur in some files
of the current layout). A file is read in the older layout when its first
record is that header.

To avoid double counting, prompts come from ``event_msg``/``user_message``
once the file has had one (those hold exactly what the user typed), before
that from user messages with Codex's injected context removed
(``<environment_context>``, ``<user_instructions>``, AGENTS.md
instructions): a rollout that an older Codex began and a newer one resumed
keeps the older turns' prompts, and the event that follows a turn's user
message (how the newer layout writes every prompt) replaces the message's
text before any reply. Assistant text comes from assistant messages
(``output_text``), else from ``agent_message`` events.

A turn closes on ``task_complete`` (written by Codex CLI versions after
0.60), else on the next prompt. The last prompt of a file with neither (Codex CLI up to
about 0.60 wrote no ``task_complete`` event; any session ended or killed
before it) is the session's :attr:`~cairn.protocol.transcript.Session.tail`,
with whatever reply text it has (none yet, or a tool call pending after it):
the import admits it once the file is sealed, so the last prompt of a
finished session is never lost. A prompt that got no reply before the next
one (interrupted at once) is a turn with an empty reply. Codex's own
turn ids are per-process submission counters that repeat across resumes, so
turn ids are derived from content, chained through the parent turn id; a
tail's id is the one the same turn gets once a next prompt closes it.

Times: a turn's ``completed_at`` is the time of the record that ended it
(its last reply, or ``task_complete``). The older layout records no time per
line: its turns carry the header's ``timestamp``, the session's start, the
only time the file holds.

What decides how each record is read is known only over the whole file
(the layout, by the first line; where prompts and replies come from, by
flags any later record can set). :func:`read` reports it (:class:`State`,
kept in the manifest as ``protocol.sources.RolloutState``) with the record
that opened each turn it gave, and reads a file from such a record when
given the state found before it: ``worker/ingest/resume.py`` resumes a
grown rollout that way (docs/adr/0022).
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

from cairn.protocol import boundedjson
from cairn.protocol.transcript import Session

from ._common import TurnBuilder, derived_session_id, join_texts, malformed
from ._format import Format
from ._jsonl import JsonlText, Records

NAME = "codex"
_RECORD_TYPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
_RECORD_TYPE = re.compile(r'"type"\s*:\s*"(?:session_meta|response_item|event_msg|turn_context|compacted)"'
                          r'|"record_type"\s*:\s*"state"')

_INJECTED = re.compile(
    r"<(environment_context|user_instructions|user_shell_command|turn_aborted)>.*?</\1>"
    r"|# AGENTS\.md instructions for [^\n]*\n+<INSTRUCTIONS>.*?</INSTRUCTIONS>",
    re.S,
)
_ACTIVITY = frozenset(
    {"function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output",
     "local_shell_call", "web_search_call", "reasoning"}
)
#: the keys of the older layout's first line (``instructions`` and ``git`` may be absent)
_HEADER_KEYS = frozenset({"id", "timestamp", "instructions", "git"})
#: model items the older layout writes bare (its state lines are ``{"record_type": "state"}``)
_BARE_ITEMS = frozenset({"message", *_ACTIVITY})

Record = tuple[int, int, str, dict[str, Any], str | None]  # line, offset, kind, payload, time


def _texts(content: Any, kinds: tuple[str, ...]) -> list[str]:
    if not isinstance(content, list):
        return []
    return [b["text"] for b in content if isinstance(b, dict) and b.get("type") in kinds and isinstance(b.get("text"), str)]


def clean_prompt(text: str) -> str:
    """The user's words with Codex's injected context blocks removed (``""`` if nothing is left)."""
    return _INJECTED.sub("", text).strip()


_UTC_MS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def utc(value: Any) -> str | None:
    """A record's time as ISO 8601 UTC with milliseconds and ``Z``; None when it is no time with a zone."""
    if not isinstance(value, str) or not 10 < len(value) <= 64:
        return None
    if _UTC_MS.fullmatch(value):
        return value  # how Codex writes it: already the form kept
    try:
        stamp = _dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if stamp.tzinfo is None:
        return None
    stamp = stamp.astimezone(_dt.UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"


def _is_header(rec: dict[str, Any]) -> bool:
    """The first line of the older layout: a string ``id`` and ``timestamp``, no record type."""
    return (isinstance(rec.get("id"), str) and isinstance(rec.get("timestamp"), str)
            and "type" not in rec and "payload" not in rec)


def _records(src: Records, legacy: bool | None = None) -> Iterator[Record]:
    """``(line, offset, kind, payload, time)`` of each record read, in either layout (the older one's
    first line as ``header``, its bare items as ``response_item``; ``legacy`` None: the first record
    read says which); tool activity is kept as its type only, so memory follows the conversation's
    text, not the size of tool output."""
    for number, offset, rec in src.scan():
        if legacy is None:
            legacy = _is_header(rec)
            if legacy:
                yield number, offset, "header", {"id": rec["id"]}, utc(rec["timestamp"])
                continue
        if "record_type" in rec and "payload" not in rec:
            continue  # a state snapshot: nothing of the conversation
        kind, payload = rec.get("type"), rec.get("payload")
        if legacy and payload is None and isinstance(kind, str):
            kind, payload = "response_item", rec
        if not isinstance(kind, str) or not isinstance(payload, dict):
            raise malformed(number, "record lacks a string 'type' and an object 'payload'")
        if kind in ("response_item", "event_msg") and not isinstance(payload.get("type"), str):
            raise malformed(number, f"{kind} payload has no string 'type'")
        if kind == "response_item" and payload.get("type") in _ACTIVITY:
            payload = {"type": payload["type"]}
        elif kind not in ("response_item", "event_msg", "session_meta"):
            continue  # turn_context, compacted: never read below
        yield number, offset, kind, payload, utc(rec.get("timestamp"))


def parse(text: str, *, source_name: str) -> list[Session]:
    """Parse one rollout file into at most one session of completed turns (and its tail)."""
    return parse_records(JsonlText(text))


def parse_records(src: Records) -> list[Session]:
    """The session of a rollout read record by record (see the module docstring)."""
    return read(src).sessions


class State(NamedTuple):
    """What the reader knows of the records read so far and uses on every record (see the module docstring)."""

    legacy: bool  # the older layout: the first line is a header
    named: bool  # the session id is the file's own (a header, a session_meta)
    started: str | None  # the older layout's header time
    event_prompts: bool  # a user_message event was read
    event_replies: bool  # an agent_message event was read
    item_replies: bool  # an assistant message item was read


class Read(NamedTuple):
    """What :func:`read` gives: the sessions, the reader's state over every record read (the state it
    started from included; None when there was neither) and ``(offset, line)`` of the record that
    opened each completed turn given, in order."""

    sessions: list[Session]
    state: State | None
    opened: list[tuple[int, int]]


def read(src: Records, *, start: State | None = None, session_id: str | None = None,
         parent: str | None = None) -> Read:
    """The session of a rollout read record by record. With ``start``, ``src`` begins at a record that
    opened a turn and is read as a whole read that found ``start`` before it reads on from there: the
    session is ``session_id``, the first turn's parent ``parent``; its turns are those a whole read gives
    from that turn on when the state after the read decides what ``start`` decided (the caller checks)."""
    records = list(_records(src, start.legacy if start else None))

    started: str | None = None  # the older layout's only time
    events_have_prompts = events_have_replies = False  # prompts: a user_message event read so far
    items_have_replies = False
    given = session_id
    if start is not None:
        session_id = session_id if start.named else None
        started, legacy = start.started, start.legacy
        events_have_prompts, events_have_replies = start.event_prompts, start.event_replies
        items_have_replies = start.item_replies
    else:
        session_id = None
        legacy = bool(records) and records[0][2] == "header"
    for _, _, kind, payload, stamp in records:
        ptype = payload.get("type")
        if kind == "header":
            session_id, started = payload["id"], stamp
        elif kind == "session_meta" and session_id is None and isinstance(payload.get("id"), str):
            session_id = payload["id"]
        elif kind == "event_msg" and ptype == "agent_message":
            events_have_replies = True
        elif kind == "response_item" and ptype == "message" and payload.get("role") == "assistant":
            items_have_replies = True
    replies_from_events = events_have_replies and not items_have_replies

    builder = TurnBuilder()
    opened: list[tuple[int, int]] = []
    opening = (0, 0)  # (offset, line) of the record that opened the turn being read
    user: str | None = None
    texts: list[str] = []
    answered = False
    completed_at: str | None = None
    from_item = False  # the turn's prompt is a user message's, no reply yet: its event may follow

    def close() -> None:
        if user is not None:  # answered or not: the prompt is the user's word
            builder.add(user, join_texts(texts), completed_at=completed_at or started)
            opened.append(opening)

    for number, offset, kind, payload, stamp in records:
        ptype = payload.get("type")
        prompt: str | None = None
        if kind == "event_msg" and ptype == "user_message":
            events_have_prompts = True
            if payload.get("kind", "plain") in (None, "plain"):
                message = payload.get("message")
                if not isinstance(message, str):
                    raise malformed(number, "user_message has no string 'message'")
                prompt = clean_prompt(message)
                if prompt and from_item and user is not None and not answered:
                    # the same prompt as the user message before it, as the user typed it
                    user, from_item, opening = prompt, False, (offset, number)
                    continue
        elif kind == "response_item" and ptype == "message" and payload.get("role") == "user":
            if not events_have_prompts:
                prompt = clean_prompt("\n\n".join(_texts(payload.get("content"), ("input_text", "text"))))
        elif user is None:
            continue
        elif kind == "response_item" and ptype == "message" and payload.get("role") == "assistant":
            if not replies_from_events:
                said = _texts(payload.get("content"), ("output_text", "text"))
                texts.extend(said)
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
            opening, from_item = (offset, number), kind == "response_item"

    if user is not None:
        builder.set_tail(user, join_texts(texts), completed_at=completed_at or started)
    state = None if not records and start is None else State(
        legacy=legacy, named=session_id is not None, started=started, event_prompts=events_have_prompts,
        event_replies=events_have_replies, item_replies=items_have_replies)
    if not len(builder) and not builder.has_tail:
        return Read([], state, opened)
    if start is not None and given is not None:
        sid = given  # the whole file's, named or derived from its first prompt
    else:
        sid = session_id or derived_session_id(NAME, None, builder.first_user or "")
    return Read([builder.finish(session_id=sid, source_format=NAME, title=None, parent=parent)], state, opened)


def _sniff_record(rec: dict[str, Any], head: str) -> bool:
    """``{timestamp, type, payload}`` with a rollout record type, or the older layout's header line
    followed (in the head) by its state lines or bare model items."""
    if isinstance(rec.get("payload"), dict) and rec.get("type") in _RECORD_TYPES:
        return True
    if not _is_header(rec) or not set(rec) <= _HEADER_KEYS:
        return False
    for line in head.split("\n")[1:6]:
        try:
            nxt = boundedjson.loads(line)
        except ValueError:
            continue
        if isinstance(nxt, dict) and "payload" not in nxt and (
                nxt.get("record_type") == "state" or nxt.get("type") in _BARE_ITEMS):
            return True
    return "instructions" in rec or "git" in rec  # a header alone: a session just started


FORMAT = Format(
    name=NAME, parse=parse, stream=parse_records, jsonl=True, stores="home",
    sniff_record=_sniff_record,
    # a first line cut short by the head: a record type (quotes inside strings are escaped, so it is a key)
    sniff_json=lambda head: _RECORD_TYPE.search(head) is not None,
)
