"""Claude Code's ``/export`` text: the terminal scrollback of a session, saved as plain text.

Shape (Claude Code 1.x and 2.x): optionally a welcome box first (the 1.x
``╭── ✻ Welcome to Claude Code! ──╮`` box or the 2.x logo lines with
``Claude Code vX.Y``), then blocks that each start at column 0:

* ``> text`` (``❯ text`` in newer versions) — a user prompt; its further
  lines are indented by two spaces, or, where the terminal's wrapping was
  saved as line breaks, start at column 0 after a line that ends in a space
  (the wrap point) — except a spinner's status or a collapsed tool group;
* ``⏺ text`` (``● text`` where the terminal lacks the record glyph, as on
  Linux) — an assistant reply, further lines indented by two spaces;
  ``⏺ Tool(args)`` followed by ``  ⎿  result`` lines is a tool call and its
  result, which are noise;
* anything else at column 0 (``✻ Thinking…``, collapsed tool groups such as
  ``Read 2 files (ctrl+o to expand)``, the welcome box, tips) is noise up to
  the next block.

Within a block, a line ``  ⎿ …`` starts the output part (tool results,
local command output, ``Interrupted by user``), which is never text.
Prompts go through the same boilerplate rules as Claude Code's JSONL
(:func:`_claude.clean_prompt`); a shell-mode prompt (``! cmd``) is not a
prompt for the journal. A local slash command (``/model``) that the model
does not answer never completes a turn; one it answers (a custom command)
stands for the user's prompt.

A turn is complete when the next prompt follows it, or, for the last turn,
when its last block is reply text (not a tool call still running). The
export carries no ids and no times: the session id is derived from the
format, the welcome box's working directory (when present) and the first
prompt; turn ids from their content and their parent (``_common``), so a
re-export of a longer session keeps the ids of the turns it had.
"""

from __future__ import annotations

import re

from cairn.protocol.transcript import Session

from . import _claude
from ._common import TurnBuilder, derived_session_id, join_texts
from ._format import Format

NAME = "claude-code-export"
PROMPTS = ("> ", "❯ ")
REPLIES = ("⏺", "●")
RESULT = "⎿"
_TOOL_CALL = re.compile(r"^[A-Za-z][\w.:-]*(?: \([A-Za-z]+\))?\(.*\)$")
_CWD = re.compile(r"^[│ ]*cwd: (.+?)[ │]*$", re.M)
_V2_CWD = re.compile(r"^ *▘▘ ▝▝ +(\S.*?)\s*$", re.M)
_COLLAPSED = re.compile(r"\(ctrl\+\w to expand\)")
_STATUS = ("✻", "✢", "✶", "✳", "✽", "·", "*", "※", RESULT)
_HEADER_LINES = 12


def _first_lines(text: str, n: int) -> list[str]:
    return [line for line in text.lstrip("\ufeff").split("\n", 64)[:64] if line.strip()][:n]


def sniff(text: str) -> bool:
    """True when ``text`` (the head of a file) is an ``/export``: it starts with the welcome box
    or a prompt, and a reply marker (``⏺`` or ``●``) opens a line."""
    first = _first_lines(text, _HEADER_LINES)
    if not first:
        return False
    welcome = any("Welcome to Claude Code" in line or "Claude Code v" in line for line in first) and (
        first[0].lstrip().startswith(("╭", "▐▛", "*", "✻")))
    prompt = first[0].startswith(PROMPTS)
    return (welcome or prompt) and re.search(r"^[⏺●] ", text, re.M) is not None


def _is_noise(line: str) -> bool:
    """A column-0 line the terminal draws between blocks (a spinner's status, a collapsed tool group)."""
    return line.startswith(_STATUS) or _COLLAPSED.search(line) is not None


def _blocks(text: str) -> list[tuple[str, list[str], bool]]:
    """(kind, text lines, has output) per block; kind is prompt | reply | noise."""
    blocks: list[tuple[str, list[str], bool]] = []
    kind, output = "noise", False
    lines: list[str] = []
    wrapped = False  # the previous line ended in a space: a terminal's wrap kept as a line break
    for raw in text.split("\n"):
        line = raw.rstrip()
        if line.startswith(PROMPTS) or line in (">", "❯"):
            start: tuple[str, str] | None = ("prompt", line[2:])
        elif line.startswith(REPLIES):
            start = ("reply", line[1:].lstrip())
        elif line and not line[0].isspace():
            start = None if kind == "prompt" and wrapped and not _is_noise(line) else ("noise", line)
        else:
            start = None
        wrapped = raw.endswith((" ", "\t")) or (wrapped and not line)
        if start is not None:
            blocks.append((kind, lines, output))
            kind, lines, output = start[0], [start[1]], False
            continue
        body = line[2:] if line.startswith("  ") else line.lstrip()
        if body.lstrip().startswith(RESULT):
            output = True
        if not output:
            lines.append(body)
    blocks.append((kind, lines, output))
    return blocks


def parse(text: str, *, source_name: str) -> list[Session]:
    """Parse one export into at most one session of completed turns."""
    text = text.replace("\r\n", "\n").lstrip("\ufeff")
    builder = TurnBuilder()
    user: str | None = None
    texts: list[str] = []
    answered = False
    ends_cleanly = False

    def close() -> None:
        if user is not None and answered:
            builder.add(user, join_texts(texts))

    for kind, lines, output in _blocks(text):
        body = "\n".join(lines).strip()
        if kind == "prompt":
            close()
            prompt = _claude.clean_prompt(body)
            user = prompt if prompt and not prompt.startswith("!") else None
            texts, answered, ends_cleanly = [], False, False
        elif kind == "reply" and user is not None:
            answered = True
            tool = output or _TOOL_CALL.match(lines[0] if lines else "") is not None
            if not tool and body:
                texts.append(body)
            ends_cleanly = not tool and bool(body)
        elif kind == "noise" and (output or (lines and _COLLAPSED.search(lines[0]))):
            ends_cleanly = False  # tool activity (a collapsed group); thinking and tips change nothing
    if ends_cleanly:
        close()
    if not len(builder):
        return []
    found = _CWD.search(text[:4096]) or _V2_CWD.search(text[:4096])
    sid = derived_session_id(NAME, found.group(1).strip() if found else None, builder.first_user or "")
    return [builder.finish(session_id=sid, source_format=NAME, title=None)]


FORMAT = Format(name=NAME, parse=parse, sniff_text=lambda head, name: sniff(head))
