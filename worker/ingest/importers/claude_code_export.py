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
stands for the user's prompt. The last prompt, when its turn did not end on
reply text (``Interrupted by user``, a tool call pending, no reply), is the
session's tail (:attr:`Session.tail`), with whatever reply text it has,
admitted once the file is sealed: the last prompt of a finished session is
never lost.

A prompt Claude Code shows as a command's status, ``/init is analyzing your
codebase…`` or ``/review is running… <arguments>``, stands for what the user
typed: the command and its arguments (``/init``). Where the terminal's
wrapping was saved as line breaks, a word cut at the edge of the terminal is
joined again: a line that fills the widest line of the file and ends inside a
word goes on at column 0 with the rest of the word; an indented line that
fills it and ends inside a path or name (``code/p`` / ``y/compute_embedding.py``)
goes on with the rest on the next line.

Copying a terminal's scrollback can take its history twice (the terminal
printed it again, e.g. after a resize): two or more turns that repeat earlier
turns in the same order, word for word, prompts and replies, are that repeat
and are kept once (one exchange said twice stays two turns).

A turn is complete when the next prompt follows it, or, for the last turn,
when its last block is reply text (not a tool call still running). The
export carries no ids and no times: the session id is derived from the
format, the welcome box's working directory (when present) and the first
prompt; turn ids from their content and their parent (``_common``), so a
re-export of a longer session keeps the ids of the turns it had.
"""

from __future__ import annotations

import re
import unicodedata

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
_PREAMBLE = 3  # lines before the welcome box a file may start with and still be sniffed as an /export
# A command's status where its prompt was: "/init is analyzing your codebase…", "/name is running… <arguments>"
_COMMAND_STATUS = re.compile(r"(/[\w:.-]+) is [^\n…]{1,80}…[ \t]*(.*)", re.S)
_NAME_PART = re.compile(r"[/\\._]")  # a path or an identifier: where a cut inside a word can be told


def _first_lines(text: str, n: int) -> list[str]:
    return [line for line in text.lstrip("\ufeff").split("\n", 64)[:64] if line.strip()][:n]


def sniff(text: str) -> bool:
    """True when ``text`` (the head of a file) is an ``/export``: it starts with the welcome box
    (after at most :data:`_PREAMBLE` lines a person put before it when committing it: the ``claude``
    command typed, a ``# title``, a sentence and a code fence) or a prompt, and a reply marker (``⏺`` or
    ``●``) opens a line."""
    first = _first_lines(text, _HEADER_LINES)
    if not first:
        return False
    welcome = any("Welcome to Claude Code" in line or "Claude Code v" in line for line in first) and any(
        line.lstrip().startswith(("╭", "▐▛", "*", "✻")) for line in first[:_PREAMBLE + 1])
    prompt = first[0].startswith(PROMPTS)
    return (welcome or prompt) and re.search(r"^[⏺●] ", text, re.M) is not None


def _is_noise(line: str) -> bool:
    """A column-0 line the terminal draws between blocks (a spinner's status, a collapsed tool group)."""
    return line.startswith(_STATUS) or _COLLAPSED.search(line) is not None


def _width(line: str) -> int:
    """Columns ``line`` takes in a terminal (wide characters take two)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


def _cut_word(previous: str, line: str, edge: int) -> bool:
    """Whether ``previous`` reached the terminal's edge inside a word that ``line`` goes on with: it fills
    the widest line of the file and ends in a non-space, and ``line`` starts with one. At column 0 that is
    the terminal's own wrap; on an indented line only a path or a name is taken for one word (prose
    that ends exactly at the edge goes on with another word)."""
    if not previous or previous[-1].isspace() or _width(previous) < edge:
        return False
    if line and not line[0].isspace():
        return True
    body = line.lstrip()
    if not body or len(line) - len(body) > 4:
        return False
    head, tail = previous.split()[-1], body.split()[0]
    return _NAME_PART.search(head) is not None and _NAME_PART.search(tail) is not None


def _blocks(text: str) -> list[tuple[str, list[str], bool]]:
    """(kind, text lines, has output) per block; kind is prompt | reply | noise."""
    blocks: list[tuple[str, list[str], bool]] = []
    kind, output = "noise", False
    lines: list[str] = []
    raw_lines = text.split("\n")
    edge = max((_width(raw) for raw in raw_lines), default=0)  # the terminal's width, where it wrapped
    wrapped = False  # the previous line ended in a space: a terminal's wrap kept as a line break
    previous = ""  # the previous line of the block, as written
    for raw in raw_lines:
        line = raw.rstrip()
        cut = kind in ("prompt", "reply") and not output and _cut_word(previous, raw, edge)
        if line.startswith(PROMPTS) or line in (">", "❯"):
            start: tuple[str, str] | None = ("prompt", line[2:])
        elif line.startswith(REPLIES):
            start = ("reply", line[1:].lstrip())
        elif line and not line[0].isspace():
            start = None if (kind == "prompt" and wrapped or cut) and not _is_noise(line) else ("noise", line)
        else:
            start = None
        wrapped = raw.endswith((" ", "\t")) or (wrapped and not line)
        previous = raw
        if start is not None:
            blocks.append((kind, lines, output))
            kind, lines, output = start[0], [start[1]], False
            continue
        body = line[2:] if line.startswith("  ") else line.lstrip()
        if body.lstrip().startswith(RESULT):
            output = True
        if not output:
            if cut and lines:
                lines[-1] += body.lstrip()  # the rest of a word the terminal's edge cut
            else:
                lines.append(body)
    blocks.append((kind, lines, output))
    return blocks


def _without_repeats(turns: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``turns`` less the runs of two or more that repeat earlier turns in the same order, word for word
    (the scrollback printed again); one exchange said twice is two turns."""
    first: dict[tuple[str, str], list[int]] = {}
    out: list[tuple[str, str]] = []
    j = 0
    while j < len(turns):
        run = 0
        for i in first.get(turns[j], ()):
            k = 0
            while j + k < len(turns) and i + k < j and turns[i + k] == turns[j + k]:
                k += 1
            run = max(run, k)
        if run >= 2:
            j += run
            continue
        first.setdefault(turns[j], []).append(j)
        out.append(turns[j])
        j += 1
    return out


def _typed(prompt: str) -> str:
    """What the user typed where Claude Code shows a command's status (``/init is analyzing your codebase…``)."""
    status = _COMMAND_STATUS.fullmatch(prompt)
    return f"{status.group(1)} {status.group(2).strip()}".strip() if status else prompt


def parse(text: str, *, source_name: str) -> list[Session]:
    """Parse one export into at most one session of completed turns (and its tail)."""
    text = text.replace("\r\n", "\n").lstrip("\ufeff")
    builder = TurnBuilder()
    user: str | None = None
    texts: list[str] = []
    answered = False
    ends_cleanly = False

    turns: list[tuple[str, str]] = []

    def close() -> None:
        if user is not None and answered:
            turns.append((user, join_texts(texts)))

    for kind, lines, output in _blocks(text):
        body = "\n".join(lines).strip()
        if kind == "prompt":
            close()
            prompt = _typed(_claude.clean_prompt(body))
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
    for turn in _without_repeats(turns):
        builder.add(*turn)
    if not ends_cleanly and user is not None and (answered or not user.startswith("/")):
        # the last prompt, interrupted, waiting on a tool or on its reply: the tail (admitted when sealed)
        builder.set_tail(user, join_texts(texts))
    if not len(builder) and not builder.has_tail:
        return []
    found = _CWD.search(text[:4096]) or _V2_CWD.search(text[:4096])
    sid = derived_session_id(NAME, found.group(1).strip() if found else None, builder.first_user or "")
    return [builder.finish(session_id=sid, source_format=NAME, title=None)]


FORMAT = Format(name=NAME, parse=parse, sniff_text=lambda head, name: sniff(head))
