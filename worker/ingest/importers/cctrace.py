"""cctrace's "Claude Code Session Export" Markdown (``conversation_full.md``): a Claude Code session
rendered message by message by the cctrace exporter.

The file opens with ``# Claude Code Session Export`` and a list of
``**Session ID:** `<uuid>` ``, ``**Project:**``, ``**Start Time:**`` …; then
each record of the session's JSONL becomes one block closed by ``---``:
``**[YYYY-MM-DD HH:MM:SS]**`` (the record's timestamp, in UTC), a ``### 👤 User``
or ``### 🤖 Assistant (<model>)`` header and the message's content blocks one
after the other: text as written, ``thinking`` as a ``<details>`` block
(``💭 Internal Reasoning``), ``tool_use`` as ``🔧 **Tool Use: <name>** (ID: …)``
and its input in a ``json`` fence, ``tool_result`` as ``📊 **Tool Result:**``
and the result (at most 5000 characters) in a fence.

The Claude Code rules apply (:mod:`._claude`): a user block of tool results is
the tool loop, unless it carries the user's words (a rejected tool call's
reason, answers to the assistant's questions); slash-command echoes, caveats
and reminders are not prompts; a plan approved with a fresh context is the
user's approval of the assistant's plan. The export drops the record flags
the JSONL has, so one more rule stands in for ``isMeta``: the user block right
after a command's echo is the command's text that Claude Code sends in the
user's name, and the echo stands for the prompt. Thinking and tool traffic
are not text.

A turn is complete when a new prompt follows it, or, for the last turn, when
its last message is assistant text with no tool call pending; one that is not
(a tool call pending, no reply yet) is the session's tail (:attr:`Session.tail`),
with whatever reply text it has, admitted once the file is sealed: the last
prompt of a finished session is never lost. A turn's
``completed_at`` is the timestamp of its last assistant message.
"""

from __future__ import annotations

import bisect
import re
from typing import Any

from cairn.protocol.transcript import Session

from . import _claude
from ._common import TurnBuilder, derived_session_id, join_texts, malformed
from ._format import Format

NAME = "cctrace"
MAGIC = "# Claude Code Session Export"
# A message opens after the rule closing the one before: its time line (when the record had one) and its header.
_MESSAGE = re.compile(
    r"^---\n\n(?:\*\*\[(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)\]\*\*\n\n)?### (👤 User|🤖 Assistant\b[^\n]*)[ \t]*$", re.M)
_SESSION_ID = re.compile(r"^\*\*Session ID:\*\*\s*`([^`]+)`", re.M)
_THINKING = re.compile(r"<details>\s*<summary>💭 Internal Reasoning[^\n]*</summary>.*?</details>", re.S)
_TOOL_USE = re.compile(r"🔧 \*\*Tool Use: [^\n]*\n```json\n.*?\n```", re.S)
_TOOL_RESULT = "📊 **Tool Result:**"
_RESULT_OPEN = "📊 **Tool Result:**\n```\n"
_RESULT_FENCE = re.compile(r"📊 \*\*Tool Result:\*\*\s*\n```[^\n]*\n(.*)\n```", re.S)
RESULT_LIMIT = 5000  # cctrace keeps this many characters of a tool result, then notes "... (truncated"


def _sections(text: str) -> list[tuple[str, str, str | None]]:
    """(role, body, ISO 8601 UTC time or None) per message, in file order.

    A tool result may show another export (the session's own, read back), whose messages look like
    this file's: a result runs to cctrace's limit (then its truncation note) or to the fence followed
    by the rule that closes the message, and the messages it shows are not taken for the session's.
    """
    found = list(_MESSAGE.finditer(text))
    starts = [m.start() for m in found]
    kept: list[re.Match[str]] = []
    skip_until = -1
    for index, match in enumerate(found):
        if match.start() < skip_until:
            continue
        kept.append(match)
        end = found[index + 1].start() if index + 1 < len(found) else len(text)
        at = text.find(_RESULT_OPEN, match.end(), end)
        while at >= 0:
            content = at + len(_RESULT_OPEN)
            if text.startswith("\n\n... (truncated, ", content + RESULT_LIMIT):
                close = content + RESULT_LIMIT
            else:  # the fence that closes the message: a blank line and the rule follow it
                close = text.find("\n```\n\n\n---\n", content)
                close = len(text) if close < 0 else close
            skip_until = max(skip_until, close)
            later = bisect.bisect_left(starts, close)
            end = starts[later] if later < len(starts) else len(text)
            at = text.find(_RESULT_OPEN, close, end)
    out: list[tuple[str, str, str | None]] = []
    for index, match in enumerate(kept):
        end = kept[index + 1].start() if index + 1 < len(kept) else len(text)
        body = text[match.end() : end].strip("\n")
        if index + 1 == len(kept):
            body = re.sub(r"\n[ \t]*---[ \t]*$", "", body.rstrip()).strip("\n")
        stamp = f"{match.group(1)}T{match.group(2)}Z" if match.group(1) else None
        out.append(("user" if match.group(3).startswith("👤") else "assistant", body, stamp))
    return out


def _user_content(body: str) -> str | list[dict[str, Any]]:
    """A user body made of tool results as Claude content blocks (so the Claude rules read it), else its text."""
    if body.lstrip().startswith(_TOOL_RESULT):
        found = _RESULT_FENCE.search(body)
        return [{"type": "tool_result", "content": found.group(1) if found else ""}]
    return body


def parse(text: str, *, source_name: str) -> list[Session]:
    """Parse one export into at most one session of completed turns (and its tail)."""
    text = text.replace("\r\n", "\n")
    if not text.lstrip("\ufeff\n").startswith(MAGIC):
        raise malformed(1, "missing the '# Claude Code Session Export' header")
    found_sid = _SESSION_ID.search(text[:4096])
    builder = TurnBuilder()
    user: str | None = None
    texts: list[str] = []
    answered = False
    ends_cleanly = False
    at: str | None = None
    pending_command: str | None = None
    after_command = False  # the previous message was a command's echo: this one may be its text

    def close() -> None:
        if user is not None and answered:
            builder.add(user, join_texts(texts), completed_at=at)

    for role, body, stamp in _sections(text):
        expansion, after_command = after_command, False
        if role == "user":
            content = _user_content(body)
            if _claude.only_tool_results(content):
                reply = _claude.tool_reply(content)
                if reply:  # the user's words in a tool result (a rejection's reason, answers): a new prompt
                    close()
                    user, texts, answered, ends_cleanly, at, pending_command = reply, [], False, False, None, None
                else:
                    ends_cleanly = False
                continue
            raw = body.strip()
            approval = _claude.plan_approval(raw)
            if approval is not None:  # the user approved the plan; the plan is the assistant's
                close()
                user, texts, answered, ends_cleanly, at, pending_command = approval[0], [approval[1]], False, False, None, None
                continue
            prompt = _claude.clean_prompt(raw)
            if prompt and expansion and pending_command is not None:
                continue  # the command's own text, sent in the user's name
            if prompt:
                close()
                user, texts, answered, ends_cleanly, at, pending_command = prompt, [], False, False, None, None
            elif command := _claude.slash_command(raw):
                close()
                user, pending_command, after_command = None, command, True
            continue
        said = _TOOL_USE.sub("", _THINKING.sub("", body)).strip()
        tool = _TOOL_USE.search(body) is not None
        if user is None:
            if pending_command is None:
                continue
            user, texts, answered, pending_command = pending_command, [], False, None
        answered = True
        at = stamp or at
        if said:
            texts.append(said)
        ends_cleanly = bool(said) and not tool
    if ends_cleanly:
        close()
    elif user is not None:  # the last prompt, waiting on a tool or on its reply: the tail (admitted when sealed)
        builder.set_tail(user, join_texts(texts), completed_at=at)

    if not len(builder) and not builder.has_tail:
        return []
    sid = found_sid.group(1).strip() if found_sid else derived_session_id(NAME, None, builder.first_user or "")
    return [builder.finish(session_id=sid, source_format=NAME, title=None)]


FORMAT = Format(name=NAME, parse=parse, sniff_mark=lambda head, name: head.lstrip("\ufeff \n").startswith(MAGIC))
