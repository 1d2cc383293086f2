"""The embedded extractive digest engine: offline, deterministic, fast.

It keeps only sentences the *user* wrote that state reusable knowledge, and
cites the turn each came from. The assistant's text is never evidence (a
model's summary is not the user's preference), so it is not read at all.

A turn that a tool or the agent put on the user's side (a skill's prompt,
a notification that a sub-agent finished and the query generated under it,
an approval reviewer's prompt with the transcript it reviews) is not read;
nor is a model's answer the user pasted in (a long message that closes with
an assistant's offer, "Would you like me to …?", or is written "for your AI
developer"), nor, in a message, what follows the start of another agent's
pasted conversation (an "## Assistant" or "## Tools" heading, a terminal
agent's "└"/"⎿" tool output), nor a message over 32 KiB (``PASTED_DOCUMENT``: a
document pasted whole, someone else's ``CLAUDE.md`` or a product's terms, whose
rules are its author's, not a user's words). Before matching, each user message is cleaned: fenced code
blocks (an unclosed fence runs to the end), indented blocks, quoted lines
(``>``), markdown table rows (``| … |``: a pasted table, a tool's help) and lines that look like logs, tracebacks, console prompts, aligned
program output, compiler output, Dockerfile or environment-file lines, or
code are dropped. What remains is split into sentences; bullets and leading filler
("ok,", "btw", "also", "remember that" …) are ignored. A sentence is then
classified by the first rule that matches; anything else is dropped.

The engine writes every digest until a model is configured, so it is built
for precision: it publishes only on strong evidence of durable knowledge and
keeps nothing where it is unsure (recall is the model path's job).

Rules that drop a sentence whatever it says:
  requests for work addressed to the assistant ("add/create/initialize/
  implement/fix/refactor/rewrite/unify/compare/get/put/perform …", "let's …", "can you …",
  "I want you to …", "your task is …", "we should (also) adjust …", also after
  "moreover," / "finally," …), unless said "always/never …" or "from now on …";
  the list items of a message that opens with such a request (its
  specification: "Fix image loading …" over "- always fall back to …"), and a
  "don't …" right after it ("Perform a full rewrite of X. Do not use partial
  updates …": a fence of that work);
  a request behind a pasted link ("https://… Help me copy the README");
  questions (ends with ``?`` or ``?!``); sentences over 1000 characters (pasted text);
  markers of a one-off or of the moment ("for now", "this time", "right
  now", "today", "yet", "this PR/commit/branch/file/bug/case …", "in this case",
  "deadline", "asap", "until …", a sentence that opens with "now", one of the
  options the assistant offered, "Option 1: …"); vague directives
  whose object is only a pronoun ("don't do that", "never mind").

``feedback`` — how the assistant should work. The sentence addresses the
  assistant: an imperative rule ("always/never …", "you should/must
  always/never …", "make sure to always/never …", "please always/never/
  don't …", "don't <verb> …" except "don't forget/worry/bother" and
  the edit verbs ("don't change/modify/remove/fix …" fences the edit of the
  moment), fences of the work at hand ("don't add new …", "… again",
  "… endlessly", "don't skip/write/generate …", "… any(thing) …", "don't use a
  <technique>" where a lasting rule names the tool), what the program does
  ("don't display/show/render/return/log/emit/send …": the feature's
  specification; "don't show me …" is about the answers) and scope limits
  ("… anything else", "…, just explain"), "stop <verb>ing …"; "always
  falls back …" describes the feature, not the assistant's work), a
  correction ("no, use X instead (of Y)", "use X, not Y"; "use a better
  name instead" asks to improve the work at hand),
  a first-person preference that mentions the assistant or its output
  ("you", "your", answers, responses, replies, summaries, explanations,
  confirmation), or any other statement introduced by "from now on / going
  forward / in future" that is not a project fact ("generally …" and "as a
  rule of thumb …" introduce advice, not a rule, and keep nothing).
``user`` — the user's own taste: a first-person preference ("I prefer …",
  "I'd rather (not) …", "I like/hate it when …", "I always/never …",
  "my preference is …") that does not address the assistant.
  The rule between the two: *addressed to the assistant → feedback; about
  the user → user*.
``project`` — enduring facts and conventions of the project or team:
  "this project/repo/codebase uses|is written in|runs on|deploys …", "our
  CI/pipeline/tests/docs … runs|uses|lives …", "the X service/module/config
  lives|is in …", "the/our convention (here) is …", and "we" statements
  ("we always/never/usually …", "we deploy/release/squash … with …", "we use
  X, not Y / for Y"), because a team's habit is a fact about the project,
  not one person's taste; a "we" remark of the conversation ("we don't just
  …", "… here", "we want …") is not. Status words ("currently", "now", "still", "broken", "failing",
  "flaky", "red" …) drop a project sentence: that is progress, not a fact.
``reference`` — a labelled pointer: a URL the user introduces with a label
  (tracker, dashboard(s), docs, wiki, runbook, status page, Sentry,
  Grafana …) near the start of the sentence ("the tracker is https://…",
  "dashboards at https://…", "Runbook: https://…"). The URL is kept.

``project`` facts said by the shape of a message rather than a sentence (a
  lead-in such as "Tech stack:" over a list, "Framework: Next.js" lines) are
  read by :mod:`worker.providers.blocks`; the broader phrasings by
  :mod:`worker.providers.cues`.

A sentence that directly follows a kept one and starts with a reason
("because", "since", "otherwise", "that's why" …) is kept in its body.
Titles are the first clause of the sentence without its lead-in; bodies are
the sentence(s). Final cleaning, redaction, merging and ordering are those
of :mod:`worker.providers.notes`; a secret value recognised anywhere in the
session (an ``export KEY=…`` in another turn, or an assistant's reply) is
hidden in a note that repeats it bare (:func:`session_secrets`).
"""

from __future__ import annotations

import re

from cairn.protocol.digest import DigestInput, DigestOutput
from cairn.protocol.vocab import NoteType
from cairn.worker.providers import blocks, cues
from cairn.worker.providers.notes import Draft, finalize, one_line
from cairn.worker.redaction.redact import KnownSecrets, known_secrets

MAX_SENTENCE = 1000
PASTED_DOCUMENT = 32 * 1024

# ---------------------------------------------------------------- cleaning

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_URL = re.compile(r"https?://[^\s<>()\[\]{}\"'`]*[^\s<>()\[\]{}\"'`.,;:!?]")
_LOG_LINE = re.compile(
    r"""^(?:
        \d{4}-\d{2}-\d{2}[T\ ]\d{1,2}:\d{2}            # ISO timestamps
      | \[?\d{1,2}:\d{2}:\d{2}                          # clock times
      | \[\s*(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL|CRITICAL)\b
      | (?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL|CRITICAL|PANIC|DEPRECATION|NOTICE|HINT)\b\s*[:\]|\-]
      | Traceback\ \(most\ recent\ call\ last\)
      | File\ "[^"]*",\ line\ \d+
      | at\ [\w$.<>/]+\s*\(.*\)\s*$                    # JVM / JS stack frames
      | (?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Warning)\b\s*(?::|$)
      | (?:\$|>>>|\.\.\.|PS\ [A-Z]:\\[^>]*>)\s          # shell and REPL prompts
      | [A-Z]:\\[^>\s]*>\S                                # a Windows console prompt: C:\Users\me>ssh vps
      | (?:[-*•]\ )?[\w\ ]{1,30}:\ {2,}\S                    # column-aligned program output: "Documentation:  https://…"
      | (?:FROM|RUN|ENV|COPY|ADD|WORKDIR|EXPOSE|CMD|ENTRYPOINT|ARG|USER|VOLUME|LABEL|HEALTHCHECK)\ \S  # a Dockerfile
      | (?:export\ )?[A-Z][A-Z0-9]*_[A-Z0-9_]*=\S*$         # an environment file's assignment
      | [EF]\s{2,}                                      # pytest failure detail
      | (?:FAILED|PASSED|ERROR|SKIPPED|XFAIL)\s
      | [\w./\\-]+\.\w+:\d+(?::\d+)?:                   # file.py:12:3: compiler output
      | (?:error|warning)(?:\[\w+\])?:
      | npm\ (?:ERR|WARN)!
      | -->\s
      | \d+\ (?:passed|failed|errors?|warnings?)\b
      | (?:[=\-*_#~+]\s?){3,}$                          # separators
      | (?:def|class|import|from\s+\S+\s+import|function|\#include|@\w+)\b.*[:;{(=]
    )""",
    re.X,
)
_CODE_END = re.compile(r"[;{}]\s*$|^\s*[})\]]")
_BULLET = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])\s+")
# a markdown table row ("| **/read** | Add a file to the chat … |"): a pasted table or a tool's help, not prose
_TABLE_ROW = re.compile(r"^\|.*\|$")
# "don't …" / "do not …" opening a sentence (said after a request for work: a fence of that work)
_FENCE_OF_REQUEST = re.compile(r"^(?:please\s+)?(?:do\s+not|don'?t|don’t)\b", re.I)
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=\S)")
# a lower-case line continues the previous one only if that one looks wrapped
# (long); chat users often write one thought per short line, unpunctuated
_WRAP_WIDTH = 60
# the "user" side of a turn that reads as an assistant's message: aider's
# architect mode hands its plan to the editor model as a prompt
_HANDOFF = re.compile(
    r"""^(?:(?:ok(?:ay)?|great|thanks|sure|alright|got\ it)[,.!]?\s+)?
    (?:here\ (?:are|is)\ (?:the\ )?(?:(?:complete|full|detailed|updated|revised|final)\ )?(?:minimal|precise|exact|changes
      |instructions|edits)
      |(?:make|apply)\ (?:the\ following|these)\b|proposed\ changes?\b|change\ summary\b|changes\ to\ implement\b
      |plan:|problem\s*$|i\ (?:have|'ve)\ (?:reviewed|updated|got)\b|you\ are\ (?:absolutely\ )?(?:right|correct)
      |my\ apologies\b|thanks\ for\ (?:adding|the\ (?:files|update|payload|concrete))|to\ (?:fix|finish|make)\ [^\n]{0,120}?,\ (?:apply|make)\ (?:the\ following|these)\b)""",
    re.I | re.X,
)


# a role prompt for an agent pasted into a message ("… follow the prompt below - You are the Analyzer Agent
# (…). Your goals: …"): what follows is that prompt's rules for another agent, not the user's own word
_ROLE_PROMPT = re.compile(
    r"""(?:^|(?<=[\s.:\-—]))you\ are\ (?:a|an|the)\ (?!(?:right|wrong|correct|mistaken)\b)[\w\ &,()/-]{0,80}?
    \b(?:agent|assistant|expert|engineer|developer|architect|reviewer|analy[sz]er|bot|model|orchestrator|planner
    |investigator|specialist|consultant)\b""",
    re.I | re.X,
)


# a turn the agent or a tool put on the user's side: a skill's prompt ("Base directory for this skill: …"), a
# notification that a sub-agent or background task finished (the query under it is generated too), an
# approval reviewer's prompt ("The following is the Codex agent history added since your last approval
# assessment. …", with the transcript delta it reviews)
_INJECTED = re.compile(
    r"^(?:<timestamp>[^<]{0,80}</timestamp>\s*)?(?:<(?:system[_-]notification|task[_-]notification|system-reminder)>"
    r"|Base\ directory\ for\ this\ skill:"
    r"|The\ following\ is\ the\ [\w\ -]{1,40}\ agent\ (?:history|transcript)\b)",
    re.X,
)
# the reviewer's transcript marker, on a line of its own anywhere in the turn
_DELTA = re.compile(r"^>>>\ TRANSCRIPT\ DELTA\ START\b", re.X | re.M)
# a model's reply pasted on the user's side (an answer from another chat, copied in to be applied): a long
# text laid out as an answer that closes as one does, with an offer of more ("Would you like me to show …?",
# "Let me know if you'd like me to …"), or that is addressed to "your AI developer"; a user's own short
# offer ("let me know if you need me to run anything") is not this
_REPLY_CLOSE = re.compile(
    r"\b(?:would\ you\ like\ me\ to|let\ me\ know\ if\ you(?:'d|\ would)?\ (?:like|want)\ me\ to)\b",
    re.I | re.X,
)
# an answer's body is laid out as one: a fenced block or a numbered list (a user's long message that ends by
# offering to paste more, "Would you like me to paste the CI config?", is not enough)
_REPLY_LAYOUT = re.compile(r"^(?:```|~~~|[ \t]*\d{1,2}[.)][ \t]+\S)", re.M)
_FOR_YOUR_AI = re.compile(r"\bfor\ your\ ai\ (?:developer|assistant|agent|coder)\b", re.I | re.X)
_REPLY_MIN = 400  # characters: a pasted answer is long; a user's own closing line is not
_REPLY_TAIL = 300  # the offer closes the answer: it sits in its last few lines
# a transcript of another agent pasted into the message ("## User … ## Assistant …", or a terminal agent's
# screen, whose tool output hangs under "└"/"⎿"): the user's own words end where the other conversation's
# assistant turn or tool output begins, or its tool section under its "## User" heading (a brief of the user's
# own may well have a "## Tools" section)
# (within a line only: "[ \t]", never "\s", which would run over blank lines at every line start)
_PASTED_TURN = re.compile(r"^(?:\#{1,4}[ \t]*assistant[ \t]*$|[ \t]*[└⎿][ \t])", re.I | re.M)
_PASTED_USER = re.compile(r"^\#{1,4}[ \t]*user[ \t]*$", re.I | re.M)
_PASTED_TOOLS = re.compile(r"^\#{1,4}[ \t]*(?:tools?|tool\ (?:call|result)s?)[ \t]*$", re.I | re.M)
# a link the user pastes before the request ("https://github.com/o/r Help me copy the README …")
_LEADING_LINK = re.compile(r"^(?:<?https?://\S+>?[\s,:;-]+)+")


def _own_words(text: str) -> str:
    """``text`` up to a pasted role prompt or another conversation's assistant turn, if it holds one."""
    m = _ROLE_PROMPT.search(text) if "ou are " in text else None
    if m:
        text = text[: m.start()]
    if "#" not in text and "└" not in text and "⎿" not in text:
        return text
    cut = [m.start() for m in (_PASTED_TURN.search(text),) if m]
    user = _PASTED_USER.search(text)
    tools = _PASTED_TOOLS.search(text, user.end()) if user else None
    if tools:
        cut.append(tools.start())
    return text[: min(cut)] if cut else text


def _pasted_reply(text: str) -> bool:
    """Is ``text`` a model's answer pasted on the user's side (see ``_REPLY_CLOSE``)?"""
    if len(text) < _REPLY_MIN:
        return False
    if _FOR_YOUR_AI.search(text):
        return True
    tail = text.rstrip()[-_REPLY_TAIL:]
    return _REPLY_CLOSE.search(tail) is not None and len(_REPLY_LAYOUT.findall(text)) >= 2


def _symbol_heavy(line: str) -> bool:
    """Code and log lines are dense in symbols; prose (URLs aside) is not."""
    bare = _URL.sub("", line)
    if len(bare) < 16:
        return False
    symbols = sum(1 for c in bare if not (c.isalnum() or c.isspace() or c in ".,'’!?-\"()"))
    return symbols / len(bare) > 0.2


def _units(text: str) -> list[tuple[list[str], bool]]:
    """Prose paragraphs of ``text`` (each its sentences, and whether it began as a list item), without code,
    quotes, tables and logs."""
    units: list[tuple[str, bool]] = []
    current: list[str] = []
    item = False  # the paragraph being read began as a list item ("- …", "2. …")
    fence: str | None = None

    def close() -> None:
        if current:
            units.append((" ".join(current), item))
            current.clear()

    for raw in text.splitlines():
        m = _FENCE.match(raw)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            close()
            fence = m.group(1)
            continue
        if not raw.strip():
            close()
            continue
        if raw.startswith(("    ", "\t")):
            close()
            continue
        line = raw.strip()
        if line.startswith(">") or _TABLE_ROW.match(line) or _LOG_LINE.match(line) or _CODE_END.search(line) or _symbol_heavy(line):
            close()
            continue
        bullet = _BULLET.match(line) is not None
        line = _BULLET.sub("", line)
        if current and (not line[:1].islower() or len(current[-1]) < _WRAP_WIDTH):
            close()
        if not current:
            item = bullet
        current.append(line)
    close()
    return [(_SENTENCE_SPLIT.split(unit), bullet) for unit, bullet in units]


# ---------------------------------------------------------------- rules

_FILLER = re.compile(
    r"^(?:ok(?:ay)?|also|and|but|btw|by\ the\ way|fyi|oh|hey|so|well|note(?:\ that)?|nb|ps|one\ more\ thing"
    r"|for\ the\ record|for\ future\ reference|just\ so\ you\ know|just\ a\ reminder|remember(?:\ that)?"
    r"|keep\ in\ mind(?:\ that)?|important|reminder|heads[\ -]up|actually|honestly|thanks|thank\ you|great"
    r"|got\ it|right|sure|cool|perfect|nice|again|perhaps|maybe|ideally|i\ think|i\ guess|i\ believe)\b[\s,:;!.\-—]*",
    re.I | re.X,
)
# "no need to …", "no longer …" are no "no, …" correction
_NO = re.compile(r"^(?:no|nope|nah|wrong)\b(?!\ (?:need|problem|worries|way|longer|more|one|matter)\b)[\s,:;!.\-—]+", re.I)
_DURABLE = re.compile(
    r"^(?:from\ now\ on|going\ forward|moving\ forward|in\ (?:the\ )?future|henceforth"
    r"|from\ here\ on(?:\ out)?|as\ a\ rule|in\ general|generally)\b[\s,:;\-—]*",
    re.I | re.X,
)
_STANDING = re.compile(
    r"(?:from\ now\ on|going\ forward|moving\ forward|in\ (?:the\ )?future|henceforth|from\ here\ on)", re.I | re.X
)
_PLEASE = re.compile(r"^please\s+", re.I)
# a correction of how the assistant works, said as an imperative: "Run it yourself rather than pasting me commands"
_HOW_TO_WORK = re.compile(r"\b(?:yourself|you|me)\b.*\b(?:rather\ than|instead\ of)\b", re.I | re.X)
# a request for work addressed to the assistant is a task, however it is worded: "Initialize a bun project
# for a CLI tool called …", "Add a `session start` command that …", "let's refactor …", "I want you to …"
_WORK_REQUEST = re.compile(
    r"""^(?:(?:now|then|next|first|and\ then|so|moreover|furthermore|additionally|in\ addition|lastly|finally
      |after\ that)[\s,]+)?(?:please\s+)?(?:we\ (?:should|need\ to|have\ to|must)\ (?:also\ )?)?
    (?!make\ sure\b|i\ want\ you\ to\ (?:keep\ in\ mind|remember|always|never)\b)
    (?:(?:add|create|initiali[sz]e|init|implement|fix|refactor|build|make|write|generate|set\ up|setup|scaffold
      |bootstrap|update|change|modify|rename|move|remove|delete|integrate|install|convert|migrate|improve|optimi[sz]e
      |re-?write|re-?implement|re-?do|rework|unify|simplify|split|extract|clean\ up|reorgani[sz]e|restructure|adjust
      |tweak|polish|replace|extend|enable|disable|configure|wire|hook\ up|introduce|design|develop|finish|complete
      |continue|start|run|test|deploy|commit|push|merge|review|check|investigate|debug|analy[sz]e|look\ at|go\ ahead
      |help\ me|show\ me|tell\ me|explain|summari[sz]e|list|find|read|open|try|compare|revert|upgrade|translate|get|put|fetch|pull|copy|download|upload|hide|display|insert|append
      |attach|draw|render|plot|connect|call|send|perform|do\ a|do\ the)\b
    |let'?s\b|let\ us\b|i\ (?:want|need|would\ like|'d\ like)\ you\ to\b|(?:can|could|would|will)\ you\b
    |your\ (?:task|job|goal|mission|assignment)\ (?:is|will\ be)\b)""",
    re.I | re.X,
)

_ONE_OFF = re.compile(
    r"\b(?:for\ now|this\ time|right\ now|at\ the\ moment|today|tonight|tomorrow|yesterday|yet|asap"
    r"|deadline|due\ (?:on|by)|by\ (?:eod|end\ of)|until\ (?:we|i|you|the|it|this|tomorrow|next)"
    r"|this\ (?:pr|commit|change|branch|file|function|method|test|bug|issue|ticket|session|task|sprint"
    r"|week|release|one|case)|in\ (?:this|that)\ case|for\ this\ (?:one|pr|change|task|file|fix)"
    r"|^option\ (?:\d{1,2}|[a-e])(?=[:.)\s]))\b",
    re.I | re.X,
)
# a sentence that opens with "now" is about the moment: "now that we have the rules ready, we should run …",
# "now I need you to …" ("from now on" is read as a standing marker before this)
_NOW = re.compile(r"now\b", re.I)
_STATUS = re.compile(
    r"\b(?:currently|now|still|broken|failing|fails|failed|flaky|red|green|passing|down|blocked|blocker"
    r"|temporarily|wip|todo|not\ working|doesn't\ work|does\ not\ work|bug|regression)\b",
    re.I | re.X,
)
_PRONOUNS = frozenset("it that this them those these one".split())
_VAGUE_WORDS = _PRONOUNS | frozenset("do again so please ever now mind anything so".split())

_ALWAYS_NEVER = re.compile(
    r"^(?:(?:you\s+(?:should|must|shall)|make\s+sure\s+(?:to|you)|be\s+sure\s+to|to)\s+)?"
    r"(?:always|never)\s+(?P<rest>.+)$",
    re.I | re.S,
)
# "always falls back to …", "never crashes": what the software does (a description of the feature), not an
# instruction to the assistant, which is imperative ("always run …", "never trust …")
_DESCRIBES = re.compile(r"^(?:also\s+|only\s+)?[a-z]*[a-rtv-z]s\b", re.I)
_DONT = re.compile(r"^(?:don'?t|do\ not|don’t)\s+(?P<verb>[\w'’]+)(?P<rest>.*)$", re.I | re.S | re.X)
_DONT_EXCLUDED = frozenset(
    {"worry", "bother", "forget", "mind", "hesitate", "panic", "stop", "know", "think", "do"}  # "don't do X": the act of the moment
)
# "don't …" that fences the edit of the moment: "don't change anything else", "don't make any changes, just
# explain", "don't run the server, I already have it running", "don't use libraries for this"
_SCOPE = re.compile(
    r"""\b(?:anything|nothing)\ else\b|\bany\ other\b|\bother\ (?:files|parts|code)\b|\bthe\ rest\b|\bany\ changes\b
    |,\s*(?:just|only)\ \w+|\bfor\ this\s*[.!]?$|\bi\ already\b|\byet\b""",
    re.I | re.X,
)
# "don't change/modify/touch/remove …" keeps the rest of the code as it is during the edit of the moment: a
# fence around a task, not a rule ("Do not change Supabase or other cards", "Don't edit anything, I want …");
# a lasting one is said with "never" ("never modify the migrations"), which this does not touch
_EDIT_VERBS = frozenset("change modify touch remove edit alter break delete rename rewrite refactor move fix".split())
# "don't add new features", "do not create them again", "don't polish endlessly": the scope of the work at
# hand, not a rule that outlives it
_MOMENT_FENCE = re.compile(r"\b(?:new|again|endlessly|anymore|any\ more|extra)\b", re.I)
# "don't skip any file", "do not write code", "do not generate the whole codebase in one shot": how to go about
# the work at hand ("any" spans the work's own items), not a rule that outlives it
_ACTIVITY_VERBS = frozenset("skip write generate output produce print proceed continue".split())
_ANY = re.compile(r"\bany(?:thing)?\b", re.I)
# "don't display if there is no chance", "do NOT return sqlite://// ever", "don't log if not self.mp": what the
# program does, a specification of the feature; "don't show me the whole file" is how the assistant answers
_PRODUCT_VERBS = frozenset("return display show render log emit send".split())
_TO_ME = re.compile(r"^\s+(?:me|us)\b", re.I)
# "do not use a global transaction": a technique for the code of the moment; a lasting rule names the tool
# ("do not use Prisma")
_GENERIC_OBJECT = re.compile(r"^\s+(?:a|an)\s", re.I)
_STOP = re.compile(r"^stop\s+(?P<rest>[a-z]+ing\b.*)$", re.I | re.S)
_INSTEAD = re.compile(
    r"^(?:use|prefer|pick|choose|go\ with|write|run)\s+(?P<rest>.+?)\s+instead\b", re.I | re.S | re.X
)
# "use better names … instead of Run Import", "use a different colour instead": asks to improve the work at
# hand; a lasting choice names what to use ("use pnpm instead of npm")
_BETTER = re.compile(
    r"^(?:a\ |an\ |the\ )?(?:better|clearer|cleaner|nicer|simpler|shorter|longer|more|less|different|another|other"
    r"|proper|appropriate|correct|right|good|meaningful|descriptive)\b",
    re.I | re.X,
)
_NOT_Y = re.compile(r"^use\s+(?P<rest>\S.*?),?\s+not\s+\S", re.I | re.S)
_FIRST_PERSON = re.compile(
    r"^(?:i\ (?:really\ |strongly\ |much\ |generally\ )?prefer|i'?d\ (?:much\ )?(?:rather|prefer)"
    r"|i\ would\ (?:much\ )?(?:rather|prefer)|my\ preference\ is|i\ (?:really\ )?(?:like|love|hate|dislike)"
    r"\ (?:it\ )?when|i\ (?:don'?t|do\ not)\ like\ (?:it\ )?when|i\ (?:always|never|usually|tend\ to)\b)",
    re.I | re.X,
)
_ADDRESSES_ASSISTANT = re.compile(
    r"\b(?:you|your|yourself|answers?|responses?|repl(?:y|ies)|summar\w*|explanations?|explain\w*"
    r"|confirm\w*|ask(?:ing)?)\b",
    re.I,
)
_WE = re.compile(
    r"^we\s+(?:always|never|usually|generally|normally|typically|prefer|deploy|build"
    r"|release|ship|host|run|test|store|keep|follow|target|support|publish|package|version|lint|format"
    r"|squash|rebase|merge|write|name|pin|vendor|require|track|manage|document|tag|review|sign"
    r"|use\s+[^,;]{1,60}?,?\s+(?:not|instead\ of|rather\ than|for)\s)\b",
    re.I | re.X,
)
# "we don't just run events", "we use AI heavily here": a remark of the conversation, not a standing habit
_WE_REMARK = re.compile(r"\b(?:just|here|heavily|want|wanted|will|'ll|going\ to)\b", re.I)
_PROJECT_SUBJECT = re.compile(
    r"^(?:this|the|our)\s+(?:project|repo|repository|codebase|code\ base|app|application|package|library"
    r"|monorepo|service|workspace|team)\s+(?:uses|is\ built\ (?:with|on)|is\ written\ in|runs\ on|targets"
    r"|requires|depends\ on|follows|keeps|stores|deploys|ships|is\ deployed|is\ hosted|lives|supports"
    r"|relies\ on|prefers|vendors|pins|has\ (?:no|a|an|its|one|two|three))\b",
    re.I | re.X,
)
_POSSESSIVE_FACT = re.compile(
    r"^(?:this|the|our)\s+(?:project|repo|repository|codebase|app|application|package|library|monorepo|service"
    r"|team)'s\s+(?:[\w./-]+\s+){0,2}?(?:runs?\ on|uses?|is|are|lives?|targets?|requires?|builds?\ with"
    r"|deploys?\ (?:to|with)|follows?)\b",
    re.I | re.X,
)
# "…, so never/always …": a rule with its reason in front of it
_SO_RULE = re.compile(r"^(?P<reason>.+?)[,;]\s+so\s+(?P<rule>(?:always|never)\s+.+)$", re.I | re.S)
_OUR_THING = re.compile(
    r"^our\s+(?:[\w./-]+\s+){0,2}?(?:ci|pipeline|build|builds|tests?|test\ suite|deploys?|deployment|releases?"
    r"|release\ process|staging|production|prod|database|db|api|backend|frontend|docs|documentation"
    r"|conventions?|style\ guide|linter|formatter|infra|infrastructure|cluster|stack|branching\ (?:model|strategy)"
    r"|workflow|main\ branch|default\ branch|migrations|changelog)\s+(?:runs?|uses?|is|are|lives?|deploys?"
    r"|builds?|requires?|goes|go|happens?|needs?|targets?|follows?|has|have|pins?|checks?|enforces?"
    r"|blocks?|rejects?|publish(?:es)?|gets?)\b",
    re.I | re.X,
)
_LIVES_IN = re.compile(
    r"^the\s+(?:[\w./-]+\s+){0,3}?(?:service|server|api|module|package|library|lib|config|configuration"
    r"|frontend|backend|worker|workers|schema|migrations?|tests?|docs|cli|client|daemon|jobs?|scripts?|code"
    r"|source|entry\ ?point|fixtures?|templates?|models?|handlers?|routes?)\s+(?:lives?|is|are|sits?|belongs?)"
    r"\s+(?:in|under|inside|at)\s+\S",
    re.I | re.X,
)
_CONVENTION = re.compile(
    r"^(?:(?:the|our)\s+convention\s+(?:here\s+|in\s+this\s+\w+\s+)?is\b|by\s+convention\b|the\s+rule\s+here\s+is\b)",
    re.I,
)
_REFERENCE_LABEL = re.compile(
    r"\b(?:(?:issue\ |bug\ )?tracker|issues|board|jira|linear|dashboards?|grafana|kibana|datadog|sentry"
    r"|docs|documentation|wiki|runbooks?|playbooks?|handbook|manual|design\ docs?|specs?|status\ page"
    r"|monitoring|metrics|alerts|logs|confluence|notion|roadmap|backlog|kanban|api\ reference|style\ guide"
    r"|changelog|storybook|figma|mockups|rfcs?|adrs?|on-?call|postmortems?|release\ notes|registry)\b",
    re.I | re.X,
)
_REFERENCE_LEAD = re.compile(r"^(?:(?:the|our|my|team|project)\b|(?:see|refer\ to)\s)", re.I | re.X)
_TASK_VERB = re.compile(
    r"\b(?:fix|update|add|create|open|close|review|check|look|investigate|debug|merge|click)\b", re.I
)
_REASON = re.compile(
    r"^(?:because|since|otherwise|that's\ why|that\ is\ why|the\ reason|it'?s\ because|this\ is\ because)\b",
    re.I | re.X,
)
_TITLE_CUT = re.compile(
    r"[.;!?](?:\s|$)|\s[—–]\s|\s-\s|,\s(?:because|since|so\ that|as|which|but|otherwise)\b", re.X
)


def _strip_lead(sentence: str) -> tuple[str, bool]:
    """Remove bullets' filler words, report whether the sentence was a "no, …" correction."""
    s = sentence
    correction = False
    for _ in range(4):
        before = s
        s = _FILLER.sub("", s, count=1)
        m = _NO.match(s)
        if m:
            correction = True
            s = s[m.end() :]
        if s == before:
            break
    return s, correction


def _vague(rest: str) -> bool:
    """No content, or a short phrase whose object is a pronoun ("do that", "touch it", "mind")."""
    words = [w for w in (w.strip(".,!;:").lower() for w in rest.split()) if w]
    if all(w in _VAGUE_WORDS for w in words):
        return True
    return len(words) <= 2 and words[-1] in _PRONOUNS


def _directive(s: str) -> bool:
    """Is ``s`` (lead removed, "please" removed) a rule for the assistant?"""
    m = _ALWAYS_NEVER.match(s)
    if m:
        return not _vague(m.group("rest")) and not _DESCRIBES.match(m.group("rest"))
    m = _DONT.match(s)
    if m:
        verb = m.group("verb").lower()
        rest = m.group("rest")
        if verb in _EDIT_VERBS or verb in _ACTIVITY_VERBS or _MOMENT_FENCE.search(rest) or _ANY.search(rest):
            return False
        if verb in _PRODUCT_VERBS and not _TO_ME.match(rest):
            return False
        if verb == "use" and _GENERIC_OBJECT.match(rest):
            return False
        return verb not in _DONT_EXCLUDED and not _vague(verb + rest) and not _SCOPE.search(rest)
    m = _STOP.match(s)
    if m:
        return not _vague(m.group("rest"))
    m = _INSTEAD.match(s)
    if m:
        return not _vague(m.group("rest")) and not _BETTER.match(m.group("rest"))
    m = _NOT_Y.match(s)
    return m is not None and not _vague(m.group("rest"))


def _preference_type(s: str) -> NoteType:
    return NoteType.FEEDBACK if _ADDRESSES_ASSISTANT.search(s) else NoteType.USER


def _project(s: str, plain: str) -> bool:
    if _STATUS.search(plain):
        return False
    if _WE.match(s):
        return not _vague(" ".join(s.split()[2:])) and not _WE_REMARK.search(s)
    return bool(
        _PROJECT_SUBJECT.match(s) or _POSSESSIVE_FACT.match(s) or _OUR_THING.match(s) or _LIVES_IN.match(s)
        or _CONVENTION.match(s)
    )


def _reference(s: str, plain: str) -> bool:
    url = _URL.search(s)
    if url is None:
        return False
    prefix = s[: url.start()]
    label = _REFERENCE_LABEL.search(prefix)
    if label is None or len(prefix.split()) > 10 or _STATUS.search(plain) or _TASK_VERB.search(prefix):
        return False
    return label.start() == 0 or bool(_REFERENCE_LEAD.match(prefix))


def classify(sentence: str) -> tuple[NoteType, str, str] | None:
    """Classify one cleaned user sentence: (type, title text, body text), or None to drop it.

    The rules are those of the module docstring, tried in this order:
    drop rules, feedback directives, first-person preferences, project
    facts, references, then anything else said "from now on".
    """
    sentence = one_line(sentence).replace("\u2019", "'")
    if not sentence or len(sentence) > MAX_SENTENCE or sentence.rstrip("!").endswith("?") or sentence.endswith("?!"):
        return None
    lead, _ = _strip_lead(sentence)
    s = lead
    durable = _DURABLE.match(s)
    if durable:
        s = s[durable.end() :]
    plain = _URL.sub(" ", s)
    if _ONE_OFF.search(plain) or _NOW.match(s) or len(s.split()) < 2:
        return None
    s = _PLEASE.sub("", _LEADING_LINK.sub("", s))
    # "from now on, add type hints" is a standing rule; "generally, …" / "as a rule of thumb, …" is advice
    standing = durable is not None and _STANDING.match(durable.group(0)) is not None
    if _WORK_REQUEST.match(s) and not _ALWAYS_NEVER.match(s) and not standing and not _HOW_TO_WORK.search(s):
        return None
    body = lead[:1].upper() + lead[1:]
    if _directive(s):
        return NoteType.FEEDBACK, s, body
    so = _SO_RULE.match(s)
    if so and _directive(so.group("rule")):
        return NoteType.FEEDBACK, so.group("rule"), body
    if _FIRST_PERSON.match(s):
        return _preference_type(s), s, body
    if _project(s, plain) and not cues.reported(plain):
        return NoteType.PROJECT, s, body
    if _reference(s, plain) and not cues.reported(plain):
        return NoteType.REFERENCE, s, body
    broad = cues.broad(s, sentence)
    if broad is not None and not _vague(s):
        return broad, s, body
    if standing and not _vague(s) and not re.match(r"(?:can|could|would|will|let'?s)\b", s, re.I):
        return NoteType.FEEDBACK, s, body
    return None


def _asks_for_work(sentence: str) -> bool:
    """Is ``sentence`` (a message's first) a request for work, not a rule said with "always/never/from now on"?"""
    s, _ = _strip_lead(one_line(sentence).replace("\u2019", "'"))
    if _DURABLE.match(s):
        return False
    s = _PLEASE.sub("", s)
    return _WORK_REQUEST.match(s) is not None and not _ALWAYS_NEVER.match(s)


def _title(text: str) -> str:
    m = _TITLE_CUT.search(text)
    title = text[: m.start()] if m else text
    title = title.strip(" ,;:-—")
    return title[:1].upper() + title[1:]


def digest(inp: DigestInput) -> DigestOutput:
    """Digest ``inp`` into notes of reusable knowledge; see the module docstring for the rules."""
    drafts: list[Draft] = []
    turn_order = {turn.turn_id: index for index, turn in enumerate(inp.turns)}
    for turn in inp.turns:
        position = 0
        user = turn.user.lstrip()
        if (len(user) > PASTED_DOCUMENT or _HANDOFF.match(user) or _INJECTED.match(user) or _DELTA.search(user)
                or _pasted_reply(turn.user)):
            continue
        text = _own_words(turn.user)
        for block in blocks.blocks(text):
            position += 1
            if _ONE_OFF.search(block):
                continue
            drafts.append(
                Draft(type=NoteType.PROJECT, title=_title(block), body=block, turn_ids=(turn.turn_id,), position=position)
            )
        units = _units(text)
        brief = bool(units) and _asks_for_work(units[0][0][0])
        for u, (sentences, item) in enumerate(units):
            for i, sentence in enumerate(sentences):
                position += 1
                # the list items of a message that opens with a request for work specify that work ("Fix image
                # loading …" then "- always fall back to a local image"): its requirements, not standing rules;
                # so does a "don't …" right after the request ("Perform a full rewrite of X. Do not use partial
                # updates …"): a fence of that work ("never …" and "from now on …" still say a standing rule)
                if brief and (item or (u == 0 and i > 0 and _FENCE_OF_REQUEST.match(sentence))):
                    continue
                found = classify(sentence)
                if found is None:
                    continue
                note_type, title_text, statement = found
                body = statement
                if i + 1 < len(sentences) and _REASON.match(sentences[i + 1]):
                    body = f"{statement} {one_line(sentences[i + 1])}"
                drafts.append(
                    Draft(
                        type=note_type,
                        title=_title(title_text),
                        body=body,
                        turn_ids=(turn.turn_id,),
                        position=position,
                        statement=statement,
                    )
                )
    return DigestOutput(notes=finalize(drafts, turn_order, session_secrets(inp, drafts)))


def session_secrets(inp: DigestInput, drafts: list[Draft]) -> KnownSecrets:
    """The secret values of the session that the drafts may quote (:func:`worker.redaction.redact.known_secrets`).

    Every text of the session is a place where a value may have been
    recognised (an assistant's ``export KEY=…`` too); only the texts sharing
    a cue with the drafts are redacted to find out, so notes free of random
    words cost nothing.
    """
    among = "\n".join(x for d in drafts for x in (d.title, d.body))
    texts = [inp.title or "", *(x for t in inp.turns for x in (t.user, t.assistant))]
    return known_secrets(texts, among=among)
