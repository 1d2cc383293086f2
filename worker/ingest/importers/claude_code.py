"""Claude Code session JSONL (``~/.claude/projects/<project>/<session-uuid>.jsonl``).

Each line is one record. Messages (``type`` user/assistant/system) form a tree
through ``uuid``/``parentUuid``; a rewind starts a new branch from an earlier
message, so the conversation that counts is the *active branch*: the chain
from the most recent message back to the root (across compaction boundaries
through ``logicalParentUuid``; a compaction with no parent, or whose logical
parent the file does not hold before it, hangs from the record written just
before it, so the turns before a compaction stay the session's; a tool hook's
record written when the turn ended hangs from the record before it, not from
its tool call: :func:`_hang_late_hooks`). Sidechain records (sub-agents) are
skipped.

A root turn starts at a user message carrying the user's own words; its id is
that message's ``uuid`` (a fork-point id that survives rewinds). A message
typed while the assistant was working is a ``queued_command`` attachment
record on the branch; it starts a turn the same way (the assistant's later
output answers it), and so does a tool result that carries the user's words
(a rejected tool call's reason, answers to the assistant's questions:
``_claude.tool_reply``). The message Claude Code writes when the user
approves a plan with a fresh context starts a turn whose user side is the
approval and whose assistant text opens with the plan (``_claude.plan_approval``). Other tool results, meta messages, records whose
``origin`` is not the user (background-task notifications) and injected
boilerplate never start a turn. The turn's
assistant text is the concatenation of the text blocks of its assistant
messages. A turn is complete when a new prompt follows it, when its last
assistant message stopped for a reason other than ``tool_use`` (and holds a
text or a tool call: each block of a message is a record of its own, and the
record of its thinking says ``end_turn`` before its text is written), or when a
record says the assistant finished (the ``Stop`` hook's progress, a
``stop_hook_summary`` or ``turn_duration`` system record: 2.1.x writes
``stop_reason: null`` on every assistant record). A trailing turn waiting on a
tool is skipped, and so is one still streaming (older versions: a null
``stop_reason`` where other records of the file give one). In a file whose
records never give one (2.1.x), a last turn answered with text and none of
these signals after it is the session's tail (:attr:`Session.tail`), admitted
once the file is sealed (its stop signal may never come: a session ended or
killed before it, as public transcripts show); read from a stream it is known
once the turns have been read (:attr:`StreamedSession.late_tail`). So is a
last turn whose reply is thinking only so far. Output after a complete turn
with no prompt before it (a background task's notice woke the assistant, a
compaction) is a turn of its own with an empty user side (a *continuation*,
see :func:`_turns`): the complete turn may have been captured already.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterator
from typing import Any

from cairn.protocol.transcript import Session, Turn

from . import _claude
from ._common import derived_session_id, join_texts, malformed
from ._format import Format
from ._jsonl import JsonlText, Records, StreamedSession

NAME = "claude-code"
_MESSAGE_TYPES = ("user", "assistant")
_RECORD_TYPES = ("summary", "file-history-snapshot", "user", "assistant", "system")
_RECORD_KEYS = ("parentUuid", "sessionId", "leafUuid")
_HEAD_KEYS = re.compile(
    r'"(?:parentUuid|leafUuid|sessionId|isSidechain)"|"type"\s*:\s*"(?:file-history-snapshot|summary|user|assistant)"'
)


class _Open:
    """The turn being read: who started it and what the assistant has said so far."""

    __slots__ = ("turn_id", "user", "texts", "answered", "said", "message", "stop", "ended_on_tool", "completed_at")

    def __init__(self, turn_id: str, user: str) -> None:
        self.turn_id = turn_id
        self.user = user
        self.texts: list[str] = []
        self.answered = False
        self.said = False  # the reply's last message holds a text or a tool call (not only thinking)
        self.message: str | None = None  # the id of the reply's last message (its records share it)
        self.stop: str | None = None
        self.ended_on_tool = False
        self.completed_at: str | None = None

    def done(self) -> bool:
        """Whether the assistant has finished: it stopped for a reason other than a tool, and its last message
        holds more than thinking (Claude Code writes each block of a message as a record of its own, the
        stop reason on each: a thinking block's record says ``end_turn`` seconds before its text is written)."""
        return self.answered and self.said and not self.ended_on_tool and self.stop not in (None, "tool_use")


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


def _stop_signal(rec: dict[str, Any]) -> bool:
    """A record Claude Code writes once the assistant has finished its turn: the ``Stop`` hook running
    (``progress`` with ``hook_progress``), its summary, or the turn's duration (``system`` records).
    Versions 2.1.x write ``stop_reason: null`` on every assistant record, so this is the only signal
    that closes a session's last turn."""
    kind = rec.get("type")
    if kind == "system":
        return rec.get("subtype") in ("turn_duration", "stop_hook_summary")
    data = rec.get("data")
    return kind == "progress" and isinstance(data, dict) and data.get("hookEvent") == "Stop"


def _tool_hook(rec: dict[str, Any]) -> bool:
    """A ``PreToolUse``/``PostToolUse`` hook's progress record (it reports on the tool call it hangs from)."""
    data = rec.get("data")
    return (rec.get("type") == "progress" and isinstance(data, dict) and data.get("type") == "hook_progress"
            and data.get("hookEvent") in ("PreToolUse", "PostToolUse"))


def _fresh_start(rec: dict[str, Any]) -> bool:
    """A ``SessionStart`` hook record with no parent: the conversation starts afresh in the same file (plan
    mode's "clear context" approval); what was said before it still belongs to the session."""
    data = rec.get("data")
    return (rec.get("type") == "progress" and isinstance(data, dict) and data.get("hookEvent") == "SessionStart"
            and not rec.get("parentUuid") and not rec.get("logicalParentUuid"))


def _compaction(rec: dict[str, Any]) -> bool:
    """A record Claude Code writes where it compacted the conversation: a ``compact_boundary`` system record
    (2.x), or the summary itself written as a user record (``isCompactSummary``; 1.0.x writes it with no
    parent at all)."""
    return ((rec.get("type") == "system" and rec.get("subtype") == "compact_boundary")
            or (rec.get("type") == "user" and bool(rec.get("isCompactSummary"))))


def _index(src: Records) -> tuple[dict[str, int], array, array, array, list[tuple[str, str]], str | None, int, int,
                                  list[int]]:
    """Pass 1: the message tree as ids and offsets only (no text is kept here; the reader keeps a small
    file's first records for pass 2, see ``_jsonl.REREAD_CACHE_BYTES``).

    Returns (uuid -> node, parent node per node (-1: none), offsets, line
    numbers, summaries, session id, leaf node, prompt-like node count, and the leaf before each fresh
    start of the conversation in the file).

    A compaction record with no parent (1.0.x's summary) or whose ``logicalParentUuid`` names no record
    before it (2.1.x even names a record written after the boundary, a cycle) hangs from the leaf written
    just before it: the conversation before it is still in the file and still the session's. Any other
    record whose parent is not (yet) in the file stays a root: Claude Code writes records before the
    record they hang from (a ``turn_duration`` one line before the reply's text), so a file read while it
    grows cannot tell a parent still to come from one never written. A read resumed inside the
    file (``src.start`` > 0) cannot tell a parent before its start from one the file never held: it leaves
    such a record a root, and :func:`resume.resume <cairn.worker.ingest.resume.resume>` then reads the
    file whole unless that record is where it started.
    """
    whole = getattr(src, "start", 0) == 0
    fallback: dict[int, tuple[int, bool]] = {}  # node with no parent before it -> (the leaf before it, compaction)
    late: dict[int, int] = {}  # a tool hook's progress record -> the leaf written before it (see _hang_late_hooks)
    nodes: dict[str, int] = {}
    parent_ids: list[str | None] = []
    offsets = array("q")
    numbers = array("q")
    summaries: list[tuple[str, str]] = []
    session_id: str | None = None
    leaf = -1
    prompts = 0
    earlier: list[int] = []
    for number, offset, rec in src.scan():
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
            i = nodes.get(uuid)
            if i is None:
                i = nodes[uuid] = len(offsets)
                offsets.append(offset)
                numbers.append(number)
                parent_ids.append(None)
            else:  # a repeated uuid: the later record wins, as a dict of records would have it
                offsets[i], numbers[i] = offset, number
            parent_ids[i] = up = rec.get("parentUuid") or rec.get("logicalParentUuid")
            fallback.pop(i, None)
            if leaf >= 0 and leaf != i and not rec.get("isSidechain") and up not in nodes and _compaction(rec):
                fallback[i] = (leaf, not rec.get("parentUuid") and _compaction(rec))  # see the docstring
            if leaf >= 0 and leaf != i and _tool_hook(rec) and not rec.get("isSidechain"):
                late[i] = leaf
            if leaf >= 0 and _fresh_start(rec) and not rec.get("isSidechain"):
                earlier.append(leaf)
            if (kind in _MESSAGE_TYPES or _stop_signal(rec)) and not rec.get("isSidechain"):
                leaf = i
                if kind == "user" and _claude.human(rec.get("origin")):
                    content = rec["message"]["content"]
                    if not _claude.only_tool_results(content) or _claude.tool_reply(content, rec.get("toolUseResult")):
                        prompts += 1
            elif kind == "attachment" and not rec.get("isSidechain") and _claude.queued_prompt(rec.get("attachment")):
                prompts += 1
    parents = array("q", (nodes.get(p, -1) if p is not None else -1 for p in parent_ids))
    for i, (before, compaction) in fallback.items():
        up = parent_ids[i]
        if up in nodes:  # written after it: a record's parent may be (records of one message come out of
            if compaction:  # order), a compaction's logical parent may not (2.1.x names one of its own
                parents[i] = before  # continuation: a cycle)
        elif up is None or whole:  # no parent, or one the file never held
            parents[i] = before
    del parent_ids
    _hang_late_hooks(parents, offsets, late)
    return nodes, parents, offsets, numbers, summaries, session_id, leaf, prompts, earlier


def _hang_late_hooks(parents: array, offsets: array, late: dict[int, int]) -> None:
    """Hang a tool hook's progress records written after the turn went on from the record written just before
    them, not from the tool call they report on.

    Claude Code 2.1.x writes a turn's ``PreToolUse``/``PostToolUse`` hook records when the turn ends, each
    chain hanging from the tool call that ran its hooks, several messages back; the ``Stop`` hook's records,
    the turn's summary and the next prompt hang from the end of that chain. Followed as written, the active
    branch goes from the next prompt through the hooks to that tool call and skips every message between:
    the turn's replies after the tool call look abandoned. A hook record is an annotation of its tool call,
    never a rewind: when its parent is an ancestor of the leaf written before it (the same line of the
    conversation, further on), it hangs from that leaf. A parent that is not such an ancestor (a real fork,
    a hook continuing a chain of hooks) is kept."""
    for node, before in late.items():
        up = parents[node]
        if up < 0 or up == before:
            continue
        start = offsets[up]
        current, steps = before, 0
        while current >= 0 and current != node and offsets[current] >= start and steps < 100_000:
            if current == up:
                parents[node] = before
                break
            current = parents[current]
            steps += 1


def _active_branch(parents: array, leaf: int) -> list[int]:
    chain: list[int] = []
    seen: set[int] = set()
    current = leaf
    while current >= 0 and current not in seen:
        seen.add(current)
        chain.append(current)
        current = parents[current]
    chain.reverse()
    return chain


def _turns(src: Records, chain: list[int], offsets: array, numbers: array,
           found: dict[str, Turn | None] | None = None) -> Iterator[Turn]:
    """Pass 2: read the branch's records again by offset and yield completed root turns in order; ``found``
    gets the tail (``"tail"``) once they are all read.

    Assistant output after a finished turn with no prompt before it (the assistant woken by a background
    task's notice, or going on after a compaction) is a turn of its own, a *continuation*: its user side is
    empty, its id that of the record that woke the assistant (the notice), else of its first message. The
    finished turn may have been captured already, by id: output added to it would never be.
    """
    if found is not None:
        found["tail"] = None
    stops = False  # an assistant record said why it stopped: a null stop_reason then means still streaming
    current: _Open | None = None
    pending_command: tuple[str, str] | None = None
    woken: str | None = None  # a record that is no prompt, after a finished turn: a continuation opens there
    parent: list[str | None] = [None]

    def close(turn: _Open | None) -> Iterator[Turn]:
        if turn is not None and turn.answered:
            yield Turn(turn_id=turn.turn_id, parent_turn_id=parent[0], user=turn.user,
                       assistant=join_texts(turn.texts), completed_at=turn.completed_at)
            parent[0] = turn.turn_id

    for node in chain:
        rec = src.at(offsets[node], numbers[node])
        if rec.get("isSidechain"):
            continue
        if rec.get("type") == "attachment":
            queued = _claude.queued_prompt(rec.get("attachment"))
            if queued:
                yield from close(current)
                current, pending_command, woken = _Open(rec["uuid"], queued), None, None
            continue
        if rec.get("type") not in _MESSAGE_TYPES:
            if current is not None and current.answered and _stop_signal(rec):
                current.stop, current.ended_on_tool = "end_turn", False  # the assistant finished its turn
            continue
        _check(numbers[node], rec)
        content = rec["message"]["content"]
        if rec["type"] == "user":
            opened = False
            if (rec.get("isMeta") or rec.get("isCompactSummary") or rec.get("isVisibleInTranscriptOnly")
                    or not _claude.human(rec.get("origin"))):
                pass
            elif _claude.only_tool_results(content):
                reply = _claude.tool_reply(content, rec.get("toolUseResult"))
                if reply:
                    yield from close(current)
                    current, pending_command, opened = _Open(rec["uuid"], reply), None, True
                elif current is not None:
                    current.ended_on_tool = True
                    continue
            else:
                raw = "\n\n".join(_claude.block_texts(content))
                approval = _claude.plan_approval(raw, rec.get("planContent"))
                prompt = _claude.clean_prompt(raw) if approval is None else ""
                command = _claude.slash_command(raw) if approval is None and not prompt else None
                if approval is not None:  # the user approved the plan; the plan is the assistant's
                    yield from close(current)
                    current, pending_command, opened = _Open(rec["uuid"], approval[0]), None, True
                    current.texts.append(approval[1])
                elif prompt:
                    yield from close(current)
                    current, pending_command, opened = _Open(rec["uuid"], prompt), None, True
                elif command:
                    yield from close(current)
                    current, pending_command, opened = None, (rec["uuid"], command), True
            if opened:
                woken = None
            elif current is not None and current.done():  # a notice, a compaction summary…: no prompt
                yield from close(current)
                current, woken = None, rec["uuid"]
            elif current is None and pending_command is None and woken is None:
                woken = rec["uuid"]
            continue
        # assistant
        message = rec["message"]
        if message.get("model") == "<synthetic>" or rec.get("isApiErrorMessage"):
            continue
        message_id = message.get("id") if isinstance(message.get("id"), str) else None
        if current is not None and current.done() and (message_id is None or message_id != current.message):
            yield from close(current)  # the assistant goes on after its turn ended, with no prompt
            current = None
        if current is None:
            if pending_command is not None:
                current = _Open(*pending_command)
            else:  # a continuation (or output with no prompt before it on this branch)
                current = _Open(woken or rec["uuid"], "")
            pending_command, woken = None, None
        current.answered = True
        texts = _claude.block_texts(content)
        current.texts.extend(texts)
        tool = _claude.has_tool_use(content)
        if message_id is None or message_id != current.message:
            current.said = False
        current.said = current.said or bool(texts) or tool
        current.message = message_id
        stop = message.get("stop_reason")
        current.stop = stop if isinstance(stop, str) else None
        stops = stops or current.stop is not None
        current.ended_on_tool = tool
        if isinstance(rec.get("timestamp"), str):
            current.completed_at = rec["timestamp"]

    if current is not None and current.done():
        yield from close(current)
    elif (found is not None and current is not None and current.answered and not current.ended_on_tool
          and ((current.stop is None and not stops and join_texts(current.texts))
               or (current.stop not in (None, "tool_use") and not current.said))):
        # no stop signal yet, or only the thinking of a message whose text is still to come
        found["tail"] = Turn(turn_id=current.turn_id, parent_turn_id=parent[0], user=current.user,
                             assistant=join_texts(current.texts), completed_at=current.completed_at)


def stream(src: Records) -> list[StreamedSession]:
    """At most one session whose turns are read from ``src`` on demand (memory follows the tree, not the file)."""
    nodes, parents, offsets, numbers, summaries, session_id, leaf, prompts, earlier = _index(src)
    chain = _active_branch(parents, leaf)
    for end in reversed(earlier):  # the conversation before a fresh start, unless the branch already holds it
        kept = set(chain)
        chain = [n for n in _active_branch(parents, end) if n not in kept] + chain
    if not prompts or not chain:
        return []
    on_branch = set(chain)
    title = None
    for leaf_uuid, summary in summaries:
        if nodes.get(leaf_uuid, -1) in on_branch:
            title = summary
    if title is None:
        for leaf_uuid, summary in summaries:
            if leaf_uuid in nodes:
                title = summary
    del nodes
    if session_id is None:
        probe: dict[str, Turn | None] = {}
        first = next(_turns(src, chain, offsets, numbers, probe), None) or probe.get("tail")  # (read to its end)
        if first is None:
            return []
        session_id = derived_session_id(NAME, None, first.user)
    found: dict[str, Turn | None] = {}
    return [StreamedSession(session_id=session_id, source_format=NAME, title=title, turn_hint=prompts,
                            turns=lambda: _turns(src, chain, offsets, numbers, found),
                            late_tail=lambda: found.get("tail"))]


def parse(text: str, *, source_name: str) -> list[Session]:
    """Parse one Claude Code session file into at most one session of completed root turns (and its tail)."""
    out = []
    for s in stream(JsonlText(text)):
        turns = tuple(s.turns())
        tail = s.found_tail()
        if turns or tail is not None:
            out.append(Session(session_id=s.session_id, source_format=NAME, title=s.title, turns=turns, tail=tail))
    return out


def is_session_record(rec: dict[str, Any]) -> bool:
    """A record of Claude Code's shape: a session record type, or the keys that chain records
    (Qwen Code's records share them)."""
    return rec.get("type") in _RECORD_TYPES or any(k in rec for k in _RECORD_KEYS)


FORMAT = Format(
    name=NAME, parse=parse, stream=stream, jsonl=True, stores="home",
    sniff_record=lambda rec, head: is_session_record(rec),
    # a first line cut short by the head: the chaining keys or a record type (quotes inside strings are escaped)
    sniff_json=lambda head: _HEAD_KEYS.search(head) is not None,
)
