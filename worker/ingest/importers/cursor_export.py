"""Cursor's "Export Chat" Markdown (``cursor_<title>.md``, saved from a chat's menu).

Shape (Cursor 0.50 to 3.x)::

    # <chat title>
    _Exported on 6/29/2025 at 10:52:17 PDT from Cursor (1.1.6)_

    ---

    **User**

    <what the user typed>

    ---

    **Cursor**

    <the reply>

A message starts at a ``**User**`` or ``**Cursor**`` line that follows a
``---`` line (and blank lines); its body runs to the next such pair. The
export holds the conversation's words only: tool calls are not written (a
file an edit wrote, a command the agent ran, appear as the fenced code blocks
of the reply, which the export does not tell apart from code the reply
quotes, so they stay reply text); there are no message ids and no message
times (the ``Exported on`` line is the time of the export, in the exporter's
local zone), so ``completed_at`` is left unset.

A prompt starts a turn; the ``**Cursor**`` messages after it answer it. A
prompt that got no reply before the next prompt (a request stopped before
Cursor wrote anything) is joined to that next prompt, so every word the user
typed reaches a turn. A turn is complete when a reply with text follows its
prompt: the last prompt of a file that ends before any reply is left out
until a later export holds its answer. The session id is derived from the
format, the title and the first prompt, turn ids from their content and
their parent (``_common``): a later export of the same chat keeps them.
"""

from __future__ import annotations

import re

from cairn.protocol.transcript import Session

from ._common import TurnBuilder, derived_session_id
from ._format import Format

NAME = "cursor-export"
#: the line under the title that names the file an export (``_Exported on <time> from Cursor (<version>)_``)
_EXPORTED = re.compile(r"^_Exported on [^\n]* from Cursor \([^()\n]*\)_[ \t]*$", re.M)
_HEAD_LINES = 6
_HEADER = re.compile(r"^---[ \t]*\n(?:[ \t]*\n)*\*\*(User|Cursor)\*\*[ \t]*\n", re.M)
_TITLE = re.compile(r"\A[ \t]*# (.+)$", re.M)


def sniff(head: str) -> bool:
    """True when the ``Exported on … from Cursor (…)`` line is among the first lines of ``head``."""
    lines = [ln.rstrip() for ln in head.lstrip("\ufeff").split("\n", 32)[:32] if ln.strip()][:_HEAD_LINES]
    return any(_EXPORTED.match(ln) for ln in lines)


def _body(raw: str) -> str:
    lines = [ln.rstrip() for ln in raw.split("\n")]
    while lines and (not lines[-1].strip() or lines[-1].strip() == "---"):
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    return "\n".join(lines)


def parse(text: str, *, source_name: str) -> list[Session]:
    """Parse one Cursor export into at most one session of completed turns."""
    text = text.replace("\r\n", "\n").lstrip("\ufeff")
    headers = list(_HEADER.finditer(text))
    preamble = text[: headers[0].start()] if headers else text
    found_title = _TITLE.search(preamble)
    title = found_title.group(1).strip() or None if found_title else None

    builder = TurnBuilder()
    prompt: str | None = None
    replies: list[str] = []
    for index, match in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(text)
        body = _body(text[match.end() : end])
        if not body:
            continue
        if match.group(1) == "User":
            if prompt is not None and replies:
                builder.add(prompt, "\n\n".join(replies))
                prompt, replies = body, []
            else:  # the first prompt, or one the previous prompt's missing reply leaves open
                prompt = body if prompt is None else f"{prompt}\n\n{body}"
        elif prompt is not None:
            replies.append(body)
    if prompt is not None and replies:
        builder.add(prompt, "\n\n".join(replies))

    if not len(builder):
        return []
    sid = derived_session_id(NAME, title, builder.first_user or "")
    return [builder.finish(session_id=sid, source_format=NAME, title=title)]


FORMAT = Format(name=NAME, parse=parse, sniff_mark=lambda head, name: sniff(head))
