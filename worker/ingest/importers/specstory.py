"""SpecStory exports (``.specstory/history/*.md``), from Cursor or Claude Code.

The title is the first ``# `` heading. Messages start at header lines such as
``_**User**_``, ``_**User (2025-05-01 10:00Z)**_``, ``_**Assistant**_`` or
``_**Agent (model claude-sonnet-4)**_`` and are separated by ``---``. Tool
calls and thoughts are exported as ``<details>``/``<tool-use>``/``<think>``
blocks and ``_Tools used: …_`` lines; those are removed. Sidechain messages
(``(sidechain)`` in the header) are sub-agent traffic and skipped.

A user message starts a turn; consecutive assistant messages answer it. The
last turn counts only when its last assistant message has text of its own
(an export saved while the agent is still in its tool loop ends on a tool
block); earlier turns are complete because a new prompt followed them.
"""

from __future__ import annotations

import re

from cairn.protocol.transcript import Session

from ._common import TurnBuilder, derived_session_id, headers_outside_fences

FORMAT = "specstory"

_ROLE = re.compile(r"^_\*\*(User|Assistant|Agent)\b([^\n]*)\*\*_[ \t]*$", re.M)
_TITLE = re.compile(r"^# (.+)$", re.M)
_SESSION_ID = re.compile(r"(?:\*\*Session ID:\*\*\s*|<!--.*?\bSession\s+)([0-9A-Za-z][0-9A-Za-z-]{7,})")
_NOISE = re.compile(
    r"<!--.*?-->"
    r"|<think>.*?</think>"
    r"|<tool-use\b.*?</tool-use>"
    r"|<details>(?:(?!<details>).)*?</details>"
    r"|^_Tools used:[^\n]*_[ \t]*$",
    re.S | re.M,
)


def _clean(body: str) -> str:
    while True:  # innermost first, so nested <details> blocks go whole
        stripped = _NOISE.sub("", body)
        if stripped == body:
            break
        body = stripped
    out = [ln.rstrip() for ln in body.split("\n")]
    while out and (not out[-1].strip() or out[-1].strip() == "---"):
        out.pop()
    while out and (not out[0].strip() or out[0].strip() == "---"):
        out.pop(0)
    return "\n".join(out).strip()


def parse(text: str, *, source_name: str) -> list[Session]:
    """Parse one SpecStory export into at most one session of completed turns."""
    text = text.replace("\r\n", "\n")
    headers = headers_outside_fences(_ROLE, text)
    preamble = text[: headers[0].start()] if headers else text
    found_title = _TITLE.search(preamble)
    title = found_title.group(1).strip() if found_title else None
    found_sid = _SESSION_ID.search(preamble)
    source_sid = found_sid.group(1) if found_sid else None
    sections: list[tuple[str, bool, str]] = []  # (role, sidechain, body)
    for index, match in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(text)
        role = "user" if match.group(1) == "User" else "assistant"
        sections.append((role, "(sidechain)" in match.group(2), text[match.end() : end]))

    builder = TurnBuilder()
    user: str | None = None
    replies: list[str] = []
    answered = False
    last_has_text = False
    for role, sidechain, raw_body in sections:
        if sidechain:
            continue
        body = _clean(raw_body)
        if role == "user":
            if not body:
                continue
            if user is not None and answered:
                builder.add(user, "\n\n".join(replies))
            user, replies, answered, last_has_text = body, [], False, False
        elif user is not None:
            answered = True
            last_has_text = bool(body)
            if body:
                replies.append(body)
    if user is not None and answered and last_has_text:
        builder.add(user, "\n\n".join(replies))

    if not len(builder):
        return []
    sid = source_sid or derived_session_id(FORMAT, title, builder.first_user or "")
    return [builder.finish(session_id=sid, source_format=FORMAT, title=title)]
