"""aider chat history (``.aider.chat.history.md``).

``# aider chat started at <time>`` opens a session. Lines starting ``#### ``
are the user's prompt (consecutive ones form one prompt); lines starting
``> `` are aider's own tool output (startup banner, "Applied edit", command
output) and are noise; everything else after a prompt is the assistant's
reply. Inside a fenced code block of the reply, ``> `` lines belong to the
reply. A prompt with no reply (a ``/add`` command, an interrupted request, the
prompt still being answered) is not a completed turn. aider writes a reply
only once it is complete, so a reply present in the file is complete.

aider's yes/no questions ("Add file to the chat?", "Run shell command?",
"Add URL to the chat?", "Create new file?" ...) and their answers are logged
as ``> `` lines, except one case: once the user answers "all" or "skip" to a
question asked about several files, URLs or commands, aider answers the next
questions of that group itself and logs each as a ``#### `` line,
``#### <question> (Y)es/(N)o/...[Yes]: all``, right after a blank line and
before the ``> `` line of the answer. Such a line is no prompt: it neither ends
nor replaces the turn being read, so the reply aider writes after it (aider
asks these questions after reading the prompt, and again after a reply that
names files) belongs to the user's preceding prompt. A reply aider writes
after adding the files its previous reply named continues that turn's reply,
whichever way the question was answered, so that turn's text (and derived id)
can still grow after its first reply.

In architect mode (``aider --architect``) the architect model's reply is
handed to the editor model as a prompt, and aider logs that hand-off as a
``#### `` prompt repeating the reply word for word. It is model text, never
the user's: a prompt whose words are exactly the previous reply's is no new
turn, and the editor's reply joins the architect's in that turn.
"""

from __future__ import annotations

import re

from cairn.protocol.transcript import Session

from ._common import TurnBuilder, derived_session_id, inside_fence
from ._format import Format

NAME = "aider"
FILE_NAME = ".aider.chat.history.md"
_HEADER = re.compile(r"^# aider chat started at .*$")
_STARTED = re.compile(r"^# aider chat started at ", re.M)
# The end of a question of a group that aider answered from the user's earlier
# "all" / "skip" (``InputOutput.confirm_ask``): the options, the default in
# brackets, the group's answer ("a" / "s" in the first release that logged it).
_OPTIONS = "? (Y)es/(N)o"
_GROUP_ANSWER_TAIL = re.compile(r"\? \(Y\)es/\(N\)o(?:/\([A-Z]\)[\w' ]*)* \[[^\]]*\]: ?(?:all|skip|a|s) *")


def _is_prompt(line: str) -> bool:
    return line.startswith("#### ") or line.rstrip() == "####"


def _is_group_answer(line: str) -> bool:
    # matched from the last options marker on, so a long line costs one pass
    at = line.rfind(_OPTIONS)
    return line.startswith("#### ") and at > 0 and _GROUP_ANSWER_TAIL.fullmatch(line.rstrip(), at) is not None


def _is_tool_output(line: str) -> bool:
    return line.startswith("> ") or line.rstrip() == ">"


def _words(lines: list[str]) -> list[str]:
    return " ".join(lines).split()


class _Session:
    def __init__(self, header: str | None) -> None:
        self.header = header
        self.builder = TurnBuilder()
        self.prompt: list[str] | None = None  # lines of the prompt being read or answered
        self.reading_prompt = False
        self.reply: list[str] = []
        self.fence: str | None = None
        #: the turn before the prompt being read, added once that prompt proves not to be its hand-off
        self.parked: tuple[list[str], list[str]] | None = None

    def _add(self, prompt: list[str] | None, reply: list[str]) -> None:
        if prompt is not None:
            user = "\n".join(prompt).strip()
            assistant = "\n".join(reply).strip()
            if user and assistant:
                self.builder.add(user, assistant)

    def _prompt_read(self) -> None:
        """The prompt just read is whole: if it repeats the parked turn's reply, it is the architect's
        hand-off to the editor model, and the turn goes on (the editor's reply joins its reply)."""
        self.reading_prompt = False
        parked, self.parked = self.parked, None
        if parked is None:
            return
        before, answer = parked
        said = _words(answer)
        if said and self.prompt is not None and _words(self.prompt) == said:
            self.prompt, self.reply = before, [*answer, ""]
            return
        self._add(before, answer)

    def close_turn(self) -> None:
        if self.reading_prompt:
            self._prompt_read()
        if self.parked is not None:
            self._add(*self.parked)
        self._add(self.prompt, self.reply)
        self.prompt, self.reply, self.fence, self.reading_prompt, self.parked = None, [], None, False, None

    def feed(self, line: str) -> None:
        if self.fence is None and not self.reading_prompt and _is_group_answer(line):
            return  # aider's own answer to a yes/no question, not a prompt (a prompt's later lines are kept)
        if self.fence is None and _is_prompt(line):
            if not self.reading_prompt:
                if self.prompt is not None:  # parked until the new prompt is whole (a hand-off?)
                    self.parked = (self.prompt, self.reply)
                self.prompt, self.reply, self.fence, self.reading_prompt = [], [], None, True
            assert self.prompt is not None
            self.prompt.append(line[5:].rstrip() if len(line) > 4 else "")
            return
        if self.reading_prompt:
            self._prompt_read()
        if self.prompt is None:
            return  # banner or text before the first prompt
        if self.fence is None and _is_tool_output(line):
            return
        self.fence = inside_fence(line, self.fence)
        self.reply.append(line.rstrip())


def parse(text: str, *, source_name: str) -> list[Session]:
    """Parse a chat history file into one session per ``# aider chat started at`` header."""
    text = text.replace("\r\n", "\n")
    sessions: list[_Session] = [_Session(None)]
    for line in text.split("\n"):
        if _HEADER.match(line):
            sessions[-1].close_turn()
            sessions.append(_Session(line.strip()))
            continue
        sessions[-1].feed(line)
    sessions[-1].close_turn()

    out: list[Session] = []
    seen: dict[str, int] = {}
    for s in sessions:
        if not len(s.builder):
            continue
        sid = derived_session_id(NAME, s.header, s.builder.first_user or "")
        # Two sessions with identical header and opening prompt: number the repeats in file order,
        # which an append never changes.
        seen[sid] = seen.get(sid, 0) + 1
        if seen[sid] > 1:
            sid = derived_session_id(NAME, f"{s.header}#{seen[sid]}", s.builder.first_user or "")
        out.append(s.builder.finish(session_id=sid, source_format=NAME, title=None))
    return out


FORMAT = Format(
    name=NAME, parse=parse, stores="project",
    sniff_mark=lambda head, name: name == FILE_NAME or _STARTED.search(head) is not None,
)
