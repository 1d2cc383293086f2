""""Claude Session Export" Markdown (a Claude Code session rendered as Markdown).

The file opens with ``# Claude Session Export`` and a ``## Session Information``
list (``- **Session ID**: `<uuid>` ``); each message is a ``### User`` or
``### Assistant`` section, optionally starting with a ``> <local time>`` line,
closed by ``---``. A body is either plain text or a JSON array of Claude
content blocks, of which only ``text`` blocks carry words (``thinking``,
``tool_use``, ``tool_result`` are noise). The same boilerplate rules as for
Claude Code apply: tool-result-only user messages (unless they carry the
user's words: a rejected tool call's reason, answers to the assistant's
questions), slash-command echoes, caveats and reminders never start a turn.

A turn is complete when a new prompt follows it, or, for the last turn, when
its last message is assistant text without a pending tool call. Its
``completed_at`` is the time line of its last assistant message: local time
without a zone (``6/3/2025, 10:02:11 AM``), read in the local zone of the
machine reading the file (an export the user saved there) and written in UTC.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any

from cairn.protocol import boundedjson
from cairn.protocol.transcript import Session

from . import _claude
from ._common import TurnBuilder, derived_session_id, headers_outside_fences, join_texts, malformed
from ._format import Format

NAME = "claude-export"
MAGIC = "# Claude Session Export"
_SECTION = re.compile(r"^### (User|Assistant|System)[ \t]*$", re.M)
_SESSION_ID = re.compile(r"\*\*Session ID\*\*:\s*`([^`]+)`")


def _content(body: str) -> str | list[dict[str, Any]]:
    """A JSON block array when the body is one, else the body as text."""
    stripped = body.strip()
    if stripped.startswith("[") and stripped.endswith("]"):
        try:
            value = boundedjson.loads(stripped)
        except ValueError:  # not JSON, or nesting past the bound: the body is text
            return body
        if _claude.is_blocks(value):
            return value
    return body


_LOCAL_TIME = "%m/%d/%Y, %I:%M:%S %p"  # how the exporter writes a message's time (en-US, local)


def _time(line: str) -> str | None:
    """A message's time line (``> 6/3/2025, 10:02:11 AM``) as ISO 8601 UTC, read in the local zone."""
    try:
        local = _dt.datetime.strptime(line[2:].strip(), _LOCAL_TIME).astimezone()
    except (ValueError, OverflowError, OSError):
        return None
    return local.astimezone(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _body(section: str) -> tuple[str, str | None]:
    """The section's body and its time (``None`` when it has no time line)."""
    lines = section.split("\n")
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    at = None
    if start < len(lines) and lines[start].startswith("> "):
        at = _time(lines[start])
        start += 1  # the message's timestamp line
    out = lines[start:]
    while out and (not out[-1].strip() or out[-1].strip() == "---"):
        out.pop()
    return "\n".join(out), at


def parse(text: str, *, source_name: str) -> list[Session]:
    """Parse one export into at most one session of completed turns."""
    text = text.replace("\r\n", "\n")
    first = text.lstrip("\ufeff\n").split("\n", 1)[0].strip()
    if first != MAGIC:
        raise malformed(1, "missing the '# Claude Session Export' header")
    headers = headers_outside_fences(_SECTION, text)
    preamble = text[: headers[0].start()] if headers else text
    found_sid = _SESSION_ID.search(preamble)
    source_sid = found_sid.group(1).strip() if found_sid else None
    sections: list[tuple[str, str]] = []
    for index, match in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(text)
        sections.append((match.group(1).lower(), text[match.end() : end]))

    builder = TurnBuilder()
    user: str | None = None
    texts: list[str] = []
    answered = False
    ends_cleanly = False  # last message so far is assistant text with no tool call pending
    pending_command: str | None = None

    completed_at: str | None = None

    def close() -> None:
        if user is not None and answered:
            builder.add(user, join_texts(texts), completed_at=completed_at)

    for role, section in sections:
        body, stamp = _body(section)
        content = _content(body)
        if role == "user":
            if _claude.only_tool_results(content):
                reply = _claude.tool_reply(content)
                if reply:  # the user's words in a tool result (a rejection's reason, answers): a new prompt
                    close()
                    user, texts, answered, ends_cleanly, pending_command, completed_at = reply, [], False, False, None, None
                else:
                    ends_cleanly = False
                continue
            raw = "\n\n".join(_claude.block_texts(content))
            approval = _claude.plan_approval(raw)
            if approval is not None:  # the user approved the plan; the plan is the assistant's
                close()
                user, texts, answered, ends_cleanly, pending_command, completed_at = approval[0], [approval[1]], False, False, None, None
                continue
            prompt = _claude.clean_prompt(raw)
            if prompt:
                close()
                user, texts, answered, ends_cleanly, pending_command, completed_at = prompt, [], False, False, None, None
            elif command := _claude.slash_command(raw):
                close()
                user, pending_command = None, command
            continue
        if role != "assistant":
            continue
        pieces = [t for t in _claude.block_texts(content) if t.strip()]
        tool = _claude.has_tool_use(content)
        if user is None:
            if pending_command is None or not (pieces or tool or isinstance(content, list)):
                continue
            user, texts, answered, pending_command, completed_at = pending_command, [], False, None, None
        if not pieces and not tool and not isinstance(content, list):
            continue  # an empty section, as the exporter writes for streamed placeholders
        answered = True
        completed_at = stamp or completed_at
        texts.extend(pieces)
        ends_cleanly = bool(pieces) and not tool
    if ends_cleanly:
        close()

    if not len(builder):
        return []
    sid = source_sid or derived_session_id(NAME, None, builder.first_user or "")
    return [builder.finish(session_id=sid, source_format=NAME, title=None)]


FORMAT = Format(name=NAME, parse=parse, sniff_mark=lambda head, name: head.lstrip().startswith(MAGIC))
