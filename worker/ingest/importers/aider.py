"""aider chat history (``.aider.chat.history.md``).

``# aider chat started at <time>`` opens a session. Lines starting ``#### ``
are the user's prompt (consecutive ones form one prompt); lines starting
``> `` are aider's own output (startup banner, "Applied edit", command output,
the questions it asks and their answers); everything else after a prompt is
the assistant's reply. A prompt with no reply (a ``/add`` command, the prompt
still being answered) is not a completed turn. aider writes a reply in one
piece once it ends, so a reply present in the file is complete, or was cut
short for good (the user pressed Ctrl-C, the model's output limit was hit).
But a turn can go on after its reply (below: a refusal answered, a reply
after the files the previous one named were added), so the file's last turn
is the session's tail (:attr:`Session.tail`): closed by the next prompt, or
admitted once the file is sealed (quiet for the idle period, or said to be
over). Read earlier, it was captured, and captured again under another id
once it grew.

How aider writes (``InputOutput`` in aider's ``io.py``) tells the parts apart:
a prompt goes out as ``\\n#### line  \\n#### line  \\n`` (after a blank line,
each line ending in two spaces), its own output as ``> text  `` (two spaces
again), and a reply as ``\\n<reply>\\n\\n`` (after and before a blank line, as
the model wrote it). So:

- a ``> `` line ending in two spaces is aider's; one without them is the
  assistant's own Markdown blockquote, unless it goes on directly from a
  prompt or from aider's output, or an older aider's message written over two
  lines (``> Tokens: …`` / ``Cost: …  ``). A session whose prompts lost their
  trailing spaces (an editor trimmed the file) cannot be read that way: there
  every ``> `` line outside a code fence is aider's;
- a reply cut short can leave a code fence open. The fence ends with the
  reply: inside it, a prompt or an aider line (two trailing spaces) after a
  blank line is aider writing again, and so, once aider has logged an
  interruption (``^C again to exit``, written before the cut reply), is any
  ``#### `` line after a blank line. Elsewhere in a fence, ``#### `` and ``> ``
  lines belong to the reply;
- thinking aider logs inside the reply (``<thinking-content-…>`` … ``</…>``,
  or a model's own ``<think>`` … ``</think>``) is not the assistant's text.

aider's yes/no questions ("Add file to the chat?", "Create new file?", "Run
shell command?" …) are logged with the answer typed, ``> <question>
(Y)es/(N)o… [Yes]: n``. A refusal (``n``, ``s`` skip all, ``d`` don't ask
again) of a question about the turn's work (files to add, create or edit,
commands to run and their output, URLs to add, the architect's edits, lint and
test fixes) is the user's word: it is added to the user side of the turn being
read, as the question quoted on its own line (with the file, command or URL it
names, and ``[skip all]`` or ``[don't ask again]`` when the answer also said
that) above the answer, ``> Add file to the chat? src/app.py`` / ``No``. Accepting is the default (pressing Enter) and adds nothing; aider's
housekeeping questions (release notes, ``.gitignore``, opening a web page) are
not about the turn. Once the user answers "all" or "skip" to a question asked
about several files, URLs or commands, aider answers the next questions of that
group itself and logs each as a ``#### `` line,
``#### <question> (Y)es/(N)o/...[Yes]: all``, right after a blank line and
before the ``> `` line of the answer. Such a line is no prompt and its answer is
not the user's: it neither ends nor replaces the turn being read, so the reply
aider writes after it (aider asks these questions after reading the prompt, and
again after a reply that names files) belongs to the user's preceding prompt. A
reply aider writes after adding the files its previous reply named, and an
answer given after a reply, continue that turn, so that turn's text (and
derived id) can still grow after its first reply.

In architect mode (``aider --architect``) the architect model's reply is
handed to the editor model as a prompt, and aider logs that hand-off as a
``#### `` prompt repeating the reply word for word. It is model text, never
the user's: a prompt whose words are exactly the previous reply's is no new
turn, and the editor's reply joins the architect's in that turn.

Times: aider logs only the session's start, in the local time of the machine
that ran it, with no zone. It is read in the local zone of the machine reading
the file (the history sits in the user's project) and is every turn's
``completed_at``.
"""

from __future__ import annotations

import datetime as _dt
import re

from cairn.protocol.transcript import Session

from ._common import TurnBuilder, derived_session_id, inside_fence
from ._format import Format

NAME = "aider"
FILE_NAME = ".aider.chat.history.md"
_HEADER = re.compile(r"^# aider chat started at .*$")
_STARTED = re.compile(r"^# aider chat started at ", re.M)
_START_TIME = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")
# The end of a question of a group that aider answered from the user's earlier
# "all" / "skip" (``InputOutput.confirm_ask``): the options, the default in
# brackets, the group's answer ("a" / "s" in the first release that logged it).
_OPTIONS = "? (Y)es/(N)o"
_GROUP_ANSWER_TAIL = re.compile(r"\? \(Y\)es/\(N\)o(?:/\([A-Z]\)[\w' ]*)* \[[^\]]*\]: ?(?:all|skip|a|s) *")
# A question and the answer typed, as ``confirm_ask`` logs them: ``<question>? (Y)es/(N)o/… [Yes]: n``;
# releases before the options were shown log ``<question>? n``.
_ANSWERED = re.compile(r"(?P<q>.*?\?)(?: \(Y\)es/\(N\)o(?:/\([A-Z]\)[\w' ]*)* \[[^\]]*\]:)? (?P<a>[A-Za-z']+)")
# A refusal and, on the quoted question, what else it said (aider's option: no to the rest of the group, never again)
_REFUSALS = {"n": "", "no": "", "s": " [skip all]", "skip": " [skip all]", "d": " [don't ask again]",
             "don't": " [don't ask again]"}
# Questions naming a file, command or URL (aider's ``subject``, logged as the ``> `` line just before the question).
_ABOUT_A_SUBJECT = frozenset({"Add file to the chat?", "Create new file?", "Allow edits to file that has not been added to the chat?",
                              "Run shell command?", "Run shell commands?", "Add URL to the chat?"})
# Questions about aider itself, not the turn's work (opening a web page, installing its helpers, its setup).
_HOUSEKEEPING = ("Open URL for more info?", "Open documentation url for more info?", "Install playwright?", "Run pip install?",
                 "Would you like to see what's new", "Allow collection of anonymous analytics", "Login to OpenRouter",
                 "No git repo found", "Add .aider")
_INTERRUPTED = ("^C again to exit", "^C KeyboardInterrupt")
_THINKING = re.compile(r"<(thinking-content-[0-9a-f]+|think)>")
# aider's in-chat commands (``Commands`` in aider's ``commands.py``); aider takes any unambiguous prefix (``/ex``)
_COMMANDS = ("add", "architect", "ask", "chat-mode", "clear", "clipboard", "code", "commit", "context", "copy",
             "copy-context", "diff", "drop", "edit", "editor", "editor-model", "exit", "git", "help", "lint", "load",
             "ls", "map", "map-refresh", "model", "models", "multiline-mode", "paste", "quit", "read-only",
             "reasoning-effort", "report", "reset", "run", "save", "settings", "test", "think-tokens", "tokens",
             "undo", "voice", "weak-model", "web")
# commands whose argument is a message to the model: with one, the prompt is the user's words
_MESSAGE_COMMANDS = ("architect", "ask", "code", "context", "help")
_COMMAND = re.compile(r"/([a-z][a-z-]*)(?:\s+(\S.*))?", re.S)


def _is_prompt(line: str) -> bool:
    return line.startswith("#### ") or line.rstrip() == "####"


def _is_command(text: str) -> bool:
    """Whether a prompt's text is an aider command (``/drop``, ``/ex``), not words for the model
    (``/ask why?`` is: a message command with its message)."""
    m = _COMMAND.fullmatch(text.strip())
    if m is None:
        return False
    named = [name for name in _COMMANDS if name.startswith(m.group(1))]
    if not named:
        return False  # ``/usr/lib/…``: a path, not a command
    return not (m.group(2) and any(name in _MESSAGE_COMMANDS for name in named))


def _says_something(prompt: list[str]) -> bool:
    """Whether a prompt holds the user's words: not only a command, nor only empty input (``<blank>``)."""
    text = "\n".join(line for line in prompt if line.strip() != "<blank>").strip()
    return bool(text) and not _is_command(text)


def _is_group_answer(line: str) -> bool:
    # matched from the last options marker on, so a long line costs one pass
    at = line.rfind(_OPTIONS)
    return line.startswith("#### ") and at > 0 and _GROUP_ANSWER_TAIL.fullmatch(line.rstrip(), at) is not None


def _is_quote(line: str) -> bool:
    return line.startswith("> ") or line.rstrip() == ">"


def _aider_wrote(line: str) -> bool:
    """A line ending the way aider ends every line it writes (two spaces)."""
    return line.endswith("  ")


def _words(lines: list[str]) -> list[str]:
    return " ".join(lines).split()


def _refusal(text: str, subject: str | None) -> str | None:
    """The user's refusal in an answered question ``text``, as the quoted question and the answer, else ``None``."""
    m = _ANSWERED.fullmatch(text)
    answer = _REFUSALS.get(m.group("a").lower()) if m is not None else None
    if m is None or answer is None or m.group("q").startswith(_HOUSEKEEPING):
        return None
    question = m.group("q")
    named = f" {'; '.join(' '.join(part.split()) for part in subject.splitlines())}" if subject and question in _ABOUT_A_SUBJECT else ""
    return f"> {question}{named}{answer}\nNo"


def _start_time(header: str | None) -> str | None:
    """The session's start as ISO 8601 UTC, read in the local zone (see the module docstring)."""
    m = _START_TIME.match(header or "")
    if m is None:
        return None
    try:
        local = _dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").astimezone()
    except (ValueError, OverflowError, OSError):
        return None
    return local.astimezone(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Session:
    def __init__(self, header: str | None, *, trailing_spaces: bool) -> None:
        self.header = header
        self.started = _start_time(header)
        #: the session's lines keep the two spaces aider ends its own lines with (no editor trimmed them)
        self.trailing_spaces = trailing_spaces
        self.builder = TurnBuilder()
        self.prompt: list[str] | None = None  # lines of the prompt being read or answered
        self.reading_prompt = False
        self.reply: list[str] = []
        self.answers: list[str] = []  # the user's refusals, for the prompt being answered
        self.fence: str | None = None
        self.thinking: str | None = None  # the closing tag of the thinking block being skipped
        self.interrupted = False  # aider logged an interruption since the prompt
        #: what the previous line was: "blank", "prompt", "aider" (its output), "quote" (a blockquote
        #: of the reply), "group" (aider's own answer for a group) or "reply"
        self.last = "blank"
        self.aider_text: str | None = None  # the previous line aider wrote, without its "> "
        self.quote_from = 0  # where the reply's current blockquote starts in ``reply``
        #: the turn before the prompt being read, added once that prompt proves not to be its hand-off
        self.parked: tuple[list[str], list[str], list[str]] | None = None
        #: only blank lines since the last line of a prompt that says something: a next ``#### `` block
        #: goes on with that prompt (see the module docstring)
        self.joinable = False
        self.dropping = False  # reading a command written right after a prompt, before any reply

    def _add(self, prompt: list[str] | None, reply: list[str], answers: list[str], *, tail: bool = False) -> None:
        if prompt is not None:
            user = "\n".join(prompt).strip()
            assistant = "\n".join(reply).strip()
            if user and (assistant or _says_something(prompt)):
                if answers:
                    user = "\n\n".join([user, *answers])
                (self.builder.set_tail if tail else self.builder.add)(user, assistant, completed_at=self.started)

    def _prompt_read(self) -> None:
        """The prompt just read is whole: if it repeats the parked turn's reply, it is the architect's
        hand-off to the editor model, and the turn goes on (the editor's reply joins its reply)."""
        self.reading_prompt = False
        parked, self.parked = self.parked, None
        if parked is None:
            return
        before, answer, answers = parked
        said = _words(answer)
        if said and self.prompt is not None and _words(self.prompt) == said:
            self.prompt, self.reply, self.answers = before, [*answer, ""], [*answers, *self.answers]
            return
        self._add(before, answer, answers)

    def close_turn(self, *, last: bool = False) -> None:
        """End the session's lines. ``last``: the file ends here, so its final turn may still grow (a
        refusal answered, a reply after the files the previous one named were added): it is the session's
        tail (:attr:`Session.tail`), captured once a next prompt closes it or the file is sealed, never
        twice."""
        if last and self.reading_prompt and self._handing_off():
            # the file ends inside the architect's hand-off, written so far: the turn is not over (the rest of
            # the hand-off and the editor's reply join it), so it is the tail, never captured without them
            assert self.parked is not None
            before, answer, answers = self.parked
            self.parked, self.reading_prompt = None, False
            self._add(before, answer, answers, tail=True)
            return
        if self.reading_prompt:
            self._prompt_read()
        if self.parked is not None:
            self._add(*self.parked)
        if last:
            if self.prompt is not None:
                self._add(self.prompt, self.reply, self.answers, tail=True)
            return
        self._add(self.prompt, self.reply, self.answers)
        self.prompt, self.reply, self.answers, self.parked = None, [], [], None
        self.fence, self.thinking, self.reading_prompt, self.interrupted = None, None, False, False
        self.joinable = self.dropping = False

    def _handing_off(self) -> bool:
        """Whether the prompt read so far (the file ends in it) repeats the start of the parked turn's reply,
        three words at least: the architect's hand-off to the editor model, cut where the file ends."""
        if self.parked is None or self.prompt is None:
            return False
        said, got = _words(self.parked[1]), _words(self.prompt)
        if len(got) < 3 or len(got) > len(said):
            return False
        return said[:len(got) - 1] == got[:-1] and said[len(got) - 1].startswith(got[-1])

    def _reply_ends(self, line: str) -> bool:
        """Inside a fence or a thinking block, after a blank line: whether ``line`` is aider writing
        again, which ends the reply the block belongs to (see the module docstring)."""
        if self.trailing_spaces and _aider_wrote(line) and (_is_prompt(line) or _is_quote(line)):
            return True
        return self.interrupted and _is_prompt(line)

    def feed(self, line: str) -> None:
        last, self.last = self.last, "blank" if not line.strip() else "reply"
        if line.strip() and not (self.fence is None and self.thinking is None and _is_prompt(line)):
            self.joinable = False
        if (self.fence is not None or self.thinking is not None) and last == "blank" and self._reply_ends(line):
            self.fence = self.thinking = None
        if self.thinking is not None:
            self._think(line)
            return
        if self.fence is None and not self.reading_prompt and _is_group_answer(line):
            self.last, self.joinable = "group", False
            return  # aider's own answer to a yes/no question, not a prompt (a prompt's later lines are kept)
        if self.fence is None and _is_prompt(line):
            self.last = "prompt"
            text = line[5:].rstrip() if len(line) > 4 else ""
            if self.dropping and self.reading_prompt:
                return
            if not self.reading_prompt and self.joinable and self.prompt is not None:
                # a block after only blank lines: the same prompt going on (one input aider logged in
                # pieces), or a command typed before the reply, which does not replace the prompt
                self.reading_prompt = True
                if _is_command(text):
                    self.dropping, self.joinable = True, False
                else:
                    self.prompt.extend(["", text])
                return
            if not self.reading_prompt:
                if self.prompt is not None:  # parked until the new prompt is whole (a hand-off?)
                    self.parked = (self.prompt, self.reply, self.answers)
                self.prompt, self.reply, self.answers, self.reading_prompt = [], [], [], True
                self.fence, self.interrupted = None, False
            assert self.prompt is not None
            self.prompt.append(text)
            return
        if self.reading_prompt:
            if self.dropping:
                self.reading_prompt = self.dropping = False
            else:
                self._prompt_read()
                self.joinable = not any(r.strip() for r in self.reply) and _says_something(self.prompt or [])
        if self.fence is None and _is_quote(line):
            self._quote(line, last)
            return
        if self.fence is None and last == "aider" and line.strip():
            # aider's message going on over lines it did not mark (a subject of several lines, an older
            # release's message): a reply never follows aider's output without a blank line
            self.aider_text = f"{self.aider_text}\n{line.strip()}"
            self.last = "aider"
            return
        if self.fence is None and last == "quote" and line.strip() and self.trailing_spaces and _aider_wrote(line):
            # an older aider's message over two lines ("> Tokens: …" / "Cost: …  "): not a blockquote
            del self.reply[self.quote_from:]
            self.last = "aider"
            return
        if self.prompt is None:
            return  # banner or text before the first prompt
        if self.fence is None and _THINKING.fullmatch(line.strip()):
            self.thinking = f"</{_THINKING.fullmatch(line.strip()).group(1)}>"  # type: ignore[union-attr]
            return
        self.fence = inside_fence(line, self.fence)
        self.reply.append(line.rstrip())

    def _think(self, line: str) -> None:
        assert self.thinking is not None
        at = line.find(self.thinking)
        if at < 0:
            return
        rest = line[at + len(self.thinking):]
        self.thinking = None
        if rest.strip():
            self.feed(rest)

    def _quote(self, line: str, last: str) -> None:
        """A ``> `` line outside a fence: aider's output, or a blockquote of the reply."""
        aider = (not self.trailing_spaces or _aider_wrote(line) or self.prompt is None
                 or last in ("prompt", "aider", "group"))
        if not aider:
            if last != "quote":
                self.quote_from = len(self.reply)
            self.last = "quote"
            self.reply.append(line.rstrip())
            return
        text = line[1:].strip()
        if text in _INTERRUPTED and self.prompt is not None:
            self.interrupted = True
        if self.prompt is not None and last != "group":
            subject = self.aider_text if last == "aider" else None
            refusal = _refusal(text, subject)
            if refusal is not None:
                self.answers.append(refusal)
        self.last, self.aider_text = "aider", text


def _keeps_trailing_spaces(lines: list[str]) -> bool:
    """Whether most prompt lines of a session end in the two spaces aider writes."""
    prompts = [line for line in lines if _is_prompt(line) and line.strip() != "####"]
    return sum(1 for line in prompts if _aider_wrote(line)) * 2 > len(prompts)


def parse(text: str, *, source_name: str) -> list[Session]:
    """Parse a chat history file into one session per ``# aider chat started at`` header."""
    text = text.replace("\r\n", "\n")
    chunks: list[tuple[str | None, list[str]]] = [(None, [])]
    lines_of = text.split("\n")
    if lines_of and not lines_of[-1]:
        lines_of.pop()  # the file ends with a whole line: no blank line follows it (a prompt may go on)
    for line in lines_of:
        if _HEADER.match(line):
            chunks.append((line.strip(), []))
        else:
            chunks[-1][1].append(line)

    out: list[Session] = []
    seen: dict[str, int] = {}
    for n, (header, lines) in enumerate(chunks):
        s = _Session(header, trailing_spaces=_keeps_trailing_spaces(lines))
        for line in lines:
            s.feed(line)
        s.close_turn(last=n == len(chunks) - 1)
        if not len(s.builder) and not s.builder.has_tail:
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
