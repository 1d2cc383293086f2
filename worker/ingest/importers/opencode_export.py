"""opencode's ``/export`` Markdown (``session-<id>.md``, the session transcript the TUI saves).

Shape (read from opencode's ``cli/cmd/tui/util/transcript.ts`` and real exports)::

    # <session title>

    **Session ID:** ses_…
    **Created:** <local time>
    **Updated:** <local time>

    ---

    ## User

    <the prompt's text parts>

    ---

    ## Assistant (Build · claude-sonnet-4 · 12.3s)

    <parts>

    ---

Each message is a ``## User`` or ``## Assistant`` section after a ``---``
line. With "assistant metadata" the assistant heading names the agent, the
model and, once the message completed, its duration. An assistant message is
one step of the agent loop; its parts are written in order:

* text: the paragraphs as written — the assistant's words;
* with "thinking": ``_Thinking:_`` (or ``_Thinking (omitted …):_``) and the
  reasoning text. The export marks where reasoning starts, not where it
  ends: the reply written after it in the same message follows after a
  blank line, like a second paragraph of reasoning. The first paragraph
  after the label (a reasoning summary's title, or the one paragraph most
  models write; continued while a paragraph ends in a colon, announcing a
  list) is taken as the reasoning and left out, and what follows is the
  reply: a reasoning of several paragraphs leaves its later ones in the
  reply (exporting without thinking has no such doubt). An empty reasoning
  (the label followed by two blank lines or more) covers nothing;
* a tool call: ``**Tool: <name>**`` followed, with "tool details", by
  ``**Input:**``/``**Output:**``/``**Error:**`` and a fenced block each
  (older versions: a fenced block opening with a ``Tool: <name>`` line, the
  details nested inside). Tool calls, their input and output are left out.

A user section with no text (opencode's own continuation after a
compaction) and an assistant message of the ``Compaction`` agent (the
summary opencode writes for itself) are not part of any turn; messages before
the first prompt (an export that starts mid-session) are left out.

A prompt starts a turn and the assistant messages after it answer it; a
prompt that got no answer at all before the next prompt is joined to that
next prompt. A turn is complete when the next prompt follows, or, for the
last turn, when its last assistant message ends with text or reasoning (not a
tool call still being answered) and, where the heading has metadata, names
its duration. The session id is the export's ``Session ID``; turn ids are
derived from content (``_common``), so a later export keeps them. Times are
local and carry no zone: ``completed_at`` is left unset.
"""

from __future__ import annotations

import re

from cairn.protocol.transcript import Session

from ._common import TurnBuilder, derived_session_id, inside_fence, join_texts
from ._format import Format

NAME = "opencode-export"
#: the header opencode writes under the title: the session id and times
_SESSION_ID = re.compile(r"^\*\*Session ID:\*\* *(\S+)[ \t]*$", re.M)
_CREATED = re.compile(r"^\*\*Created:\*\* ", re.M)
_HEAD_LINES = 8
_TITLE = re.compile(r"\A\s*# ([^\n]*)")
_HEADER = re.compile(r"^---[ \t]*\n(?:[ \t]*\n)*## (User|Assistant)(?: \(([^\n]*)\))?[ \t]*\n", re.M)
_DURATION = re.compile(r"· [0-9]+(?:\.[0-9]+)?s$")
_TOOL = re.compile(r"^\*\*Tool: [^\n]*\*\*[ \t]*$")
_OLD_TOOL = re.compile(r"^Tool: \S")
_THINKING = re.compile(r"^_Thinking(?: \([^\n]*\))?:_[ \t]*$")
_LABELS = ("**Input:**", "**Output:**", "**Error:**")


def _header(text: str) -> re.Match[str] | None:
    """The session id line of the header an opencode export opens with (a title line, the session id as the
    next line written, then the times among the next lines), or None."""
    lines = text.lstrip("\ufeff").replace("\r\n", "\n").lstrip().split("\n", _HEAD_LINES + 1)[: _HEAD_LINES + 1]
    if not lines or not lines[0].startswith("# "):
        return None
    rest = [ln for ln in lines[1:] if ln.strip()]
    found = _SESSION_ID.match(rest[0]) if rest else None
    return found if found and _CREATED.search("\n".join(rest[1:])) else None


def sniff(head: str) -> bool:
    """True when ``head`` opens with the header an opencode export writes."""
    return _header(head) is not None


def _old_tool_at(lines: list[str], i: int) -> bool:
    return lines[i].rstrip() == "```" and i + 1 < len(lines) and _OLD_TOOL.match(lines[i + 1]) is not None


def _marker_at(lines: list[str], i: int) -> bool:
    """A line that starts a part other than text: a tool call (either style) or a reasoning label."""
    return _TOOL.match(lines[i]) is not None or _THINKING.match(lines[i]) is not None or _old_tool_at(lines, i)


def _boundary_after(lines: list[str], i: int) -> bool:
    """After ``i`` (blank lines skipped) comes the end of the message, a detail label or a new part."""
    while i < len(lines) and not lines[i].strip():
        i += 1
    return i >= len(lines) or lines[i].rstrip() in _LABELS or _marker_at(lines, i)


def _skip_details(lines: list[str], i: int) -> int:
    """Past the ``**Input:**``/``**Output:**``/``**Error:**`` blocks of a tool call starting at ``i``.

    A detail block's fence closes at a bare fence line followed by the end of
    the message, another label or a new part: an output holding fence lines of
    its own does not end the block early (if nothing closes it, the rest of the
    message is the tool's).
    """
    n = len(lines)
    while True:
        j = i
        while j < n and not lines[j].strip():
            j += 1
        if j >= n or lines[j].rstrip() not in _LABELS:
            return i
        j += 1
        if j < n and lines[j].startswith("```"):
            k = j + 1
            while k < n and not (lines[k].rstrip() == "```" and _boundary_after(lines, k + 1)):
                k += 1
            j = k + 1
        i = j


def _skip_old_tool(lines: list[str], i: int) -> int:
    """Past an older-style tool block (``i`` is its ``Tool: <name>`` line): it closes at a bare fence
    line right after the name line or after a nested block's closing fence, at the message's end or
    before a blank line."""
    n = len(lines)
    k = i + 1
    while k < n:
        if (lines[k].rstrip() == "```" and (lines[k - 1].rstrip() == "```" or _OLD_TOOL.match(lines[k - 1]))
                and (k + 1 >= n or not lines[k + 1].strip())):
            return k + 1
        k += 1
    return n


def _skip_thinking(lines: list[str], i: int) -> int:
    """Past a reasoning part (``i`` is the line after its label): its first paragraph (see the module)."""
    n = len(lines)
    if i + 1 < n and not lines[i].strip() and not lines[i + 1].strip():
        return i  # an empty reasoning: the label, then the blank lines opencode writes around nothing
    fence: str | None = None
    last = ""
    while True:
        while i < n and not lines[i].strip():
            i += 1
        while i < n and (fence is not None or (lines[i].strip() and not _marker_at(lines, i))):
            fence = inside_fence(lines[i], fence)
            last = lines[i].rstrip()
            i += 1
        if not last.endswith((":", "：")) or i >= n or _marker_at(lines, _next_line(lines, i)):
            return i  # a paragraph ending in a colon goes on in the next one (a list it announces)
        last = ""


def _next_line(lines: list[str], i: int) -> int:
    while i < len(lines) - 1 and not lines[i].strip():
        i += 1
    return i


def _parts(body: str) -> list[tuple[str, str]]:
    """``(kind, text)`` per part of an assistant message: kind ``text``, ``thinking`` or ``tool``."""
    lines = body.split("\n")
    out: list[tuple[str, str]] = []
    text: list[str] = []
    fence: str | None = None

    def flush() -> None:
        words = "\n".join(text).strip()
        if words:
            out.append(("text", words))
        text.clear()

    i = 0
    while i < len(lines):
        if fence is None and _marker_at(lines, i):
            flush()
            if _TOOL.match(lines[i]):
                i = _skip_details(lines, i + 1)
                out.append(("tool", ""))
            elif _THINKING.match(lines[i]):
                i = _skip_thinking(lines, i + 1)
                out.append(("thinking", ""))
            else:
                i = _skip_old_tool(lines, i + 1)
                out.append(("tool", ""))
            continue
        fence = inside_fence(lines[i], fence)
        text.append(lines[i].rstrip())
        i += 1
    flush()
    return out


def _body(raw: str) -> str:
    lines = raw.split("\n")
    while lines and (not lines[-1].strip() or lines[-1].strip() == "---"):
        lines.pop()
    return "\n".join(lines)


def parse(text: str, *, source_name: str) -> list[Session]:
    """Parse one opencode export into at most one session of completed turns."""
    text = text.replace("\r\n", "\n").lstrip("\ufeff")
    head = _header(text)
    found_title = _TITLE.match(text)
    title = found_title.group(1).strip() or None if found_title else None
    headers = list(_HEADER.finditer(text))

    builder = TurnBuilder()
    prompt: str | None = None
    texts: list[str] = []
    answered = False
    ends_cleanly = False
    for index, match in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(text)
        body = _body(text[match.end() : end])
        meta = match.group(2)
        if match.group(1) == "User":
            words = body.strip()
            if not words:
                continue  # opencode's own continuation (its text parts are synthetic)
            if prompt is not None and answered:
                builder.add(prompt, join_texts(texts))
                prompt = words
            else:  # the first prompt, or one joined to a prompt that got no answer
                prompt = words if prompt is None else f"{prompt}\n\n{words}"
            texts, answered, ends_cleanly = [], False, False
            continue
        if prompt is None or (meta is not None and meta.startswith("Compaction ")):
            continue
        parts = _parts(body)
        if not parts:
            continue  # an empty message (stopped or failed before writing anything)
        answered = True
        texts.extend(words for kind, words in parts if kind == "text")
        finished = meta is None or _DURATION.search(meta.rstrip()) is not None
        ends_cleanly = finished and parts[-1][0] != "tool"
    if prompt is not None and answered and ends_cleanly:
        builder.add(prompt, join_texts(texts))

    if not len(builder):
        return []
    sid = head.group(1) if head else derived_session_id(NAME, title, builder.first_user or "")
    return [builder.finish(session_id=sid, source_format=NAME, title=title)]


FORMAT = Format(name=NAME, parse=parse, sniff_mark=lambda head, name: sniff(head))
