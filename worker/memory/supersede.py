"""Supersession: a note that changes what memory says replaces the old statement, never sits beside it.

Rule 4a of the embedded engine (:mod:`worker.memory.engine`). A note
**supersedes** a body line of an existing topic (any type) when it is the
same statement with its choice changed or turned down:

* **Change shapes** (:func:`change_of`): "use X (for Z), not Y", "X, not Y",
  "X instead of Y", "X rather than Y", "we moved / switched / migrated from
  Y to X", "switched / migrated to X (for Z)", "no longer use Y" / "no
  longer deploy with Y" / "Y is no longer used (for Z)", "replace Y with X",
  and "from now on (use) X". They name the new choice X (a known tool just
  before a command: "ruff format instead of black" chooses ruff) and the old
  one Y where they say it. **Negations** ("never use Y for Z", "don't run Z
  with Y; use X", "avoid Y …", "stop using Y …") turn Y, the first known tool
  of their clause, down. A plain "use X", "Z runs with X", "X is used for Z"
  is a choice too when X is a known tool (:data:`FAMILIES`, tools grouped by
  what they are for; ruff formats and lints: it is in two), and so is "the
  database is X".
* **The line states the old choice** as a choice (not merely mentions it,
  not already rejects it: "don't use npm", "pnpm, not npm"), and does not
  name the new one. The old choice is the Y the note names; a negation
  replaces only a line stating that very Y ("never use sqlite in production"
  leaves "use postgres in production" alone). A change that names no Y, or a
  Y the line does not state, replaces a line stating another tool of X's
  family ("use pnpm, not npm, to install dependencies" over "use yarn to
  install dependencies").
* **The same subject, exactly** (:func:`_subject`): the words left once the
  choices, change and negation wording and stop words are taken out must be
  the same on both sides, flags and commands included ("make test-all" is
  not "make test", "pytest -s" not "pytest"). One word more on either side is
  another scope, and the note is added beside the line: "never run the tests
  with pytest in parallel", "switched to pnpm for installing dependencies in
  CI", "don't format generated code with prettier" leave "run the tests with
  pytest", "use npm to install dependencies", "use prettier to format code"
  as they are. Only what a tool already says is let go: its language on one
  side when the other names none ("use ruff format, not black" over "format
  Python with black"), "code", "indent" for tabs and spaces.
* **A change about the tool alone** ("we moved from npm to pnpm", "replace
  pip with uv", "yarn is no longer used": no subject words at all) replaces a
  line stating its Y whatever that line is about, as Y is gone; not one
  between tabs and spaces, which are values: "use spaces, not tabs" is no
  change of "use tabs in Makefiles". A change that names neither a Y nor a
  subject ("from now on use pnpm", "switched to ruff") replaces only a line
  without a subject of its own.
* **Another command of the same tool**, said as a change (:func:`_command_changed`:
  "from now on deploy with make ship" over "deploy with make release"): the
  tool the means of both ("with", "using", "via"), the commands other words
  without flags, the rest the same subject.

* **Changed values** (:func:`value_changed`): the same statement with other
  numbers (a port, a version, a count of workers) replaces the old one; so
  does the same statement with one word swapped for an alternative of it
  (:func:`word_swapped`, :data:`ALTERNATIVES`: single/double quotes, one
  natural language for another, LF/CRLF …), unless either turns something
  down.

Precision over recall: a wrong replacement deletes a true line of the
user's memory; a missed one leaves two lines a person can still reconcile.
When unsure, the note is added beside the line, and since the test is
exact either way, a line never overrules (rule 4b) a note whose subject
differs from it by a word. Pure.
"""

from __future__ import annotations

import functools
import re

import attrs
from cairn.worker.memory.similarity import BULLET_MARK, NOTED, STOP_WORDS, jaccard, tokens

#: tools grouped by what they are for: two members of one group are alternative choices (a tool may be in
#: two: ruff formats and lints)
FAMILIES: tuple[frozenset[str], ...] = tuple(
    frozenset(group.split())
    for group in (
        "npm pnpm yarn bun",
        "pip pipenv poetry uv conda pdm hatch",
        "pytest unittest nose nose2",
        "jest vitest mocha ava jasmine",
        "black autopep8 yapf ruff",
        "ruff flake8 pylint",
        "eslint tslint biome oxlint",
        "prettier dprint biome",
        "webpack vite rollup esbuild parcel rspack turbopack",
        "docker podman",
        "make just task",
        "mypy pyright pyre",
        "cargo",
        "gradle maven",
        "postgres postgresql mysql mariadb sqlite",
        "tabs spaces",
        "semicolons",
        "single double",
    )
)
#: each tool with every tool it is an alternative to (itself included)
_TOOL_FAMILY: dict[str, frozenset[str]] = {}
for _fam in FAMILIES:
    for _tool in _fam:
        _TOOL_FAMILY[_tool] = _TOOL_FAMILY.get(_tool, frozenset()) | _fam
#: choices that are values, not tools: a line that names where it holds ("use tabs in Makefiles", "indent Go
#: code with tabs") is an exception to a general "use spaces, not tabs", not the same statement
_VALUES = frozenset({"tabs", "spaces"})
_PYTHON_TOOLS = ("pip pipenv poetry uv conda pdm hatch pytest unittest nose nose2 black autopep8 yapf ruff flake8 "
                 "pylint mypy pyright pyre")
_JS_TOOLS = ("npm pnpm yarn bun jest vitest mocha ava jasmine eslint tslint biome oxlint prettier dprint "
             "webpack vite rollup esbuild parcel rspack turbopack")
#: the language a tool's name already says ("format Python with black": black formats nothing else); said on
#: one side only, it narrows nothing, unless the other side names a language of its own
_IMPLIED: dict[str, frozenset[str]] = {
    **{t: frozenset({"python"}) for t in _PYTHON_TOOLS.split()},
    **{t: frozenset({"javascript", "typescript", "js", "ts", "node", "node.js"}) for t in _JS_TOOLS.split()},
    "tabs": frozenset({"indent"}),
    "spaces": frozenset({"indent"}),
}
_LANGUAGES = frozenset("python javascript typescript js ts node node.js go golang rust java kotlin ruby".split())

_CHOICE = r"`[^`\n]{1,80}`|[\w./~@+-]{1,80}"
#: (pattern, how it turns the old choice down: "" replaced by the new one, "no longer" given up)
_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = (
    # "use X, not Y", "use ruff format, not black", "use tabs in Makefiles, not spaces"
    (re.compile(rf"\buse\s+(?P<new>{_CHOICE})(?:\s+[\w-]+){{0,2}}?\s*,?\s*(?:and\s+)?not\s+(?P<old>{_CHOICE})",
                re.I), ""),
    # "the database is SQLite, not PostgreSQL" (a comma before "not": a choice turned down, not a negation)
    (re.compile(rf"(?P<new>{_CHOICE})\s*,\s*(?:and\s+)?not\s+(?P<old>{_CHOICE})", re.I), ""),
    (re.compile(rf"(?P<new>{_CHOICE})\s*,?\s+(?:instead\s+of|rather\s+than|over)\s+(?P<old>{_CHOICE})", re.I), ""),
    (re.compile(
        rf"\b(?:moved|switched|migrated|changed|went)\s+(?:over\s+)?from\s+(?P<old>{_CHOICE})\s+(?:back\s+)?to\s+(?P<new>{_CHOICE})",
        re.I,
    ), ""),
    (re.compile(rf"\breplac(?:e|ed|ing)\s+(?P<old>{_CHOICE})\s+(?:with|by)\s+(?P<new>{_CHOICE})", re.I), ""),
    # "no longer use fly", "we no longer deploy with fly"
    (re.compile(rf"\bno\s+longer\s+(?:use|using|used|run|need|[a-z]+\s+(?:with|using|via|through))\s+(?P<old>{_CHOICE})",
                re.I), "no longer"),
    (re.compile(rf"(?P<old>{_CHOICE})\s+(?:is|are)\s+no\s+longer\b", re.I), "no longer"),
    (re.compile(rf"\bfrom\s+now\s+on\s*,?\s+(?:(?:we|you|please)\s+)?(?:use|run)\s+(?P<new>{_CHOICE})", re.I), ""),
    # "switched to pnpm for installing dependencies": the new choice only (the old one is whatever the line says)
    (re.compile(rf"\b(?:moved|switched|migrated|changed|went)\s+(?:(?:the|our)\s+[a-z][\w-]*(?:\s+[a-z][\w-]*)?\s+)?(?:over\s+|back\s+)?to\s+(?P<new>{_CHOICE})", re.I), ""),
)
#: a sentence (or a clause after ";" / ":") that turns something down: "never use npm …", "don't run the tests
#: with pytest -s", "avoid npm install -g", "stop using npm link"; its first known tool is the one turned down
_NEGATION = re.compile(
    r"(?:^|[;:!?]\s*|\.\s+)\s*(?:please\s+)?(?:never|don'?t|do\s+not|avoid|stop)\b"
    r"(?!\s+(?:forget|hesitate|worry|mind)\b)(?P<clause>.*?)(?=[,;!?]|\.(?:\s|$)|$)",
    re.I,
)
#: said as a change of what was so before
_MARKED = re.compile(r"(?i)\b(?:from\s+now\s+on|going\s+forward|now|switched|migrated|moved|changed|anymore)\b")
#: a lookahead, so that "tests run with vitest" offers both "with" and "vitest" as the choice; a count before
#: the choice is not it ("use 4 spaces": spaces)
_USE = re.compile(rf"\b(?:use|uses|using|run|runs|prefer|with|via)\s+(?:\d+\s+)?(?=(?P<new>{_CHOICE}))", re.I)
#: a plain statement of what something is ("the database is PostgreSQL"): a choice only when it names a known tool
_IS = re.compile(rf"\b(?:is|are)\s+(?=(?P<new>{_CHOICE}))", re.I)
#: a tool said as what is used ("Jest is used for unit tests", "vitest is now used …")
_IS_USED = re.compile(rf"^\W*(?P<new>{_CHOICE})\s+(?:is|are)\s+(?:now\s+|still\s+|also\s+)?used\b", re.I)
_REJECTS = (
    r"(?:not|never|don'?t\s+use|do\s+not\s+use|avoid|instead\s+of|rather\s+than|no\s+longer(?:\s+use)?)"
)
_BACKTICK = re.compile(r"`([^`\n]{1,80})`")
_PATH = re.compile(r"(?<![\w/])(?:~|\.{1,2})?/?(?:[\w.@-]+/)+[\w.@-]*")
#: words that say a choice changed (or is turned down), not what it is about
_CHANGE_WORDS = tokens(
    "moved switched migrated changed went over back replace replaced replacing longer now on from instead rather "
    "prefer preferred we run runs running ran need needed going forward stop stopped anymore henceforth"
)


#: words that are never a choice, though a change shape's slot may catch them ("not a collection", "not just X")
_FUNCTION_WORDS = STOP_WORDS | frozenset("""that also just only even still too then more less some much many other
    another one two first last same different new old every its their your our his her""".split())


def _choice(text: str | None) -> str:
    return (text or "").strip("`").strip().casefold().rstrip(".,;:!")


@attrs.frozen
class Change:
    """What a note changes: the new choice and the old one ("" when the note names none)."""

    new: str
    old: str
    #: said only as what something is ("the database is SQLite"): its subject words must agree more closely
    plain: bool = False
    #: how the old choice is turned down: "" (replaced by the new one), "never" (a negation: "never use Y
    #: for Z", "don't run Z with Y"), "no longer" ("we no longer use Y", "Y is no longer used")
    denied: str = ""
    #: said as a change ("from now on", "now", "switched", "going forward")
    marked: bool = False


def _negation(folded: str, marked: bool) -> Change | None:
    """The tool a negation turns down (the first known tool of its clause) and the one it names instead
    ("…, use pnpm": a tool of the same family), or None when it turns no known tool down."""
    for m in _NEGATION.finditer(folded):
        clause = m.group("clause")
        old = next((w for w in (_choice(w) for w in re.findall(r"[\w.+-]+", clause)) if w in _TOOL_FAMILY), "")
        if not old:
            continue
        rest = folded[m.end():]
        family = _TOOL_FAMILY[old]
        words = (_choice(w) for w in re.findall(r"[\w.+-]+", rest))
        new = next((w for w in words if w in family and w != old), "")
        return Change(new=new, old=old, denied="never", marked=marked)
    return None


@functools.lru_cache(maxsize=4096)  # a review compares each note with every line: each text is read once
def change_of(text: str) -> Change | None:
    """The change ``text`` states (see the module docstring), or None when it states none."""
    folded = text.replace("\u2019", "'")
    marked = _MARKED.search(folded) is not None
    negated = _negation(folded, marked)
    if negated is not None:
        return negated
    for pattern, denied in _SHAPES:
        m = pattern.search(folded)
        if m is None:
            continue
        groups = m.groupdict()
        new, old = _choice(groups.get("new")), _choice(groups.get("old"))
        if old in _FUNCTION_WORDS:
            continue  # "… a single item, not a collection": no choice was turned down
        if new in _FUNCTION_WORDS:
            new = ""  # "so that instead of …": the new choice is not named here
        if new and new not in _TOOL_FAMILY and m.start("new") >= 0:
            before = re.findall(r"[\w.+-]+", folded[: m.start("new")])
            if before and before[-1].casefold() in _TOOL_FAMILY:
                new = before[-1].casefold()  # "ruff format instead of black": the tool, not its command
        siblings = [t for t in _TOOL_FAMILY.get(old, ()) if t != old and _names(folded, t)]
        if siblings and new not in siblings:  # "use pnpm to install dependencies instead of npm"
            new = sorted(siblings)[0]
        if not old and new not in _TOOL_FAMILY:
            continue  # "switched to the dark theme": no tool chosen
        if new != old and (new or old):
            return Change(new=new, old=old, denied=denied, marked=marked)
    stated = stated_choice(folded)
    if stated not in _TOOL_FAMILY:
        return None
    used = any(_choice(m.group("new")) == stated for m in _USE.finditer(folded))
    return Change(new=stated, old="", plain=not used, marked=marked)


def stated_choice(text: str) -> str:
    """The choice a plain statement makes ("use X", "run X", "with X"; a tool's name first; "X is used";
    "… is X" only when X is a known tool), or ""."""
    folded = text.replace("\u2019", "'")
    found = [_choice(m.group("new")) for m in _USE.finditer(folded)]
    tool = next((c for c in found if c in _TOOL_FAMILY), None)
    if tool is None:
        used = _IS_USED.match(folded)
        if used is not None and _choice(used.group("new")) in _TOOL_FAMILY:
            tool = _choice(used.group("new"))
    if tool is None:
        tool = next((c for c in (_choice(m.group("new")) for m in _IS.finditer(folded)) if c in _TOOL_FAMILY), None)
    return tool or (found[0] if found else "")


def _states(choice: str, old_choices: set[str]) -> bool:
    """Whether the stated ``choice`` is one of ``old_choices``, or a command of one (`fly deploy`: fly)."""
    return choice in old_choices or (" " in choice and choice.split()[0] in old_choices)


def subject_keys(text: str) -> frozenset[str]:
    """The subject keys of ``text``: known tools, backticked identifiers, paths (casefolded)."""
    folded = text.casefold()
    keys = {w for w in re.findall(r"[\w.+-]+", folded) if w in _TOOL_FAMILY}
    keys |= {_choice(b) for b in _BACKTICK.findall(folded)}
    keys |= {p.rstrip(".,;:") for p in _PATH.findall(folded) if len(p) > 2}
    return frozenset(k for k in keys if k)


def _names(text: str, choice: str) -> bool:
    """Whether ``text`` names ``choice`` as a word (``npm`` is not named by ``pnpm``)."""
    return re.search(rf"(?<![\w.-]){re.escape(choice)}(?![\w-])", text.casefold()) is not None


def _rejects(text: str, choice: str) -> bool:
    """Whether ``text`` already turns ``choice`` down ("not npm", "avoid npm", "npm is no longer")."""
    c = re.escape(choice)
    folded = text.casefold().replace("\u2019", "'")
    return (
        re.search(rf"\b{_REJECTS}\s+`?{c}(?![\w-])", folded) is not None
        or re.search(rf"(?<![\w.-])`?{c}`?\s+(?:is|are)\s+no\s+longer\b", folded) is not None
    )


def _stem(word: str) -> str:
    # "required", "requires" (already "require" by ``tokens``) and "require" meet at "requir"; "indentation",
    # "indenting" and "indent" at "indent"
    for suffix in ("ation", "ing", "ed", "e"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


#: a statement's words: a backticked span as one, a flag with its dashes ("-s", "--force"), a word with
#: its hyphens and dots ("test-all", "e2e", "CHANGELOG.md": "make test-all" is not "make test")
_WORD = re.compile(r"`[^`\n]{1,80}`|(?<![\w-])--?[^\W_][\w-]*|[^\W_]+(?:[-./+][^\W_]+)*")
#: a backticked span right after the word that uses it is the choice, not the subject ("deploy with `fly deploy`")
_CHOSEN_SPAN = re.compile(r"(?i)\b(?:use|uses|using|run|runs|with|via|through)\s+`[^`\n]{1,80}`")
#: words that carry no subject of their own ("format Python code" and "format Python" say the same)
_FILLER = frozenset({"code"})


def _norm(word: str) -> str:
    """One form of a word: singular, lightly stemmed, a doubled last consonant single ("formatted", "format";
    "installed", "install")."""
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    word = _stem(word)
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiou0123456789":
        word = word[:-1]
    return word


def _subject(text: str, tools: frozenset[str], cut: tuple[int, int] | None = None) -> frozenset[str]:
    """What ``text`` is about: its words without ``tools`` (the choices it and the other statement make), the
    choice it makes in backticks, a count before a tool ("4 spaces"), change and
    negation wording and stop words; flags, commands and every other word kept, each once, lightly stemmed.
    ``cut`` (start, end) leaves a span out (a tool's command, when the command is what changed)."""
    folded = text.replace("\u2019", "'").casefold()
    if cut is not None:
        folded = folded[: cut[0]] + " " + folded[cut[1]:]
    folded = _CHOSEN_SPAN.sub(" ", folded)
    if tools:
        alts = "|".join(re.escape(t) for t in sorted(tools, key=len, reverse=True))
        folded = re.sub(rf"(?<![\w.])\d+\s+(?=(?:{alts})(?![\w-]))", " ", folded)
    out = set()
    for raw in _WORD.findall(folded):
        if raw.startswith("`"):
            if _choice(raw) not in tools:
                out.add(_choice(raw))
            continue
        w = raw.rstrip(".")
        if w in tools or w in STOP_WORDS or w in _CHANGE_WORDS or w in _FILLER:
            continue
        if "'" in w or not w:
            continue
        w = _norm(w)
        if w in tools or w in STOP_WORDS or w in _CHANGE_WORDS or w in _FILLER:
            continue
        out.add(w)
    return frozenset(out)


def _without_implied(mine: frozenset[str], theirs: frozenset[str],
                     chosen: set[str]) -> tuple[frozenset[str], frozenset[str]]:
    """Both subjects without what their tools already say: the language of a tool (on one side, when the other
    names no language), "indent" of tabs and spaces."""
    implied = frozenset(w for t in chosen for w in _IMPLIED.get(t, ()))
    if not implied:
        return mine, theirs
    always = implied - _LANGUAGES
    mine, theirs = mine - always, theirs - always
    if not mine & _LANGUAGES:
        theirs = theirs - implied
    if not theirs & _LANGUAGES:
        mine = mine - implied
    return mine, theirs


#: a tool used as the means of doing something, with its command ("deploy with make release", "run the
#: linters with just lint"): the command words up to a stop word or punctuation
_MEANS = r"\b(?:with|using|via|through|use)\s+`?(?P<tool>{tool})\s+(?P<cmd>(?:[\w.:/-]+`?(?:\s+|$)){{1,3}})"


def _command(text: str, tool: str) -> tuple[tuple[str, ...], tuple[int, int]] | None:
    """The command words ``text`` uses ``tool`` with, as the means of what it says, and their span."""
    folded = text.replace("\u2019", "'").casefold() + " "
    m = re.search(_MEANS.format(tool=re.escape(tool)), folded)
    if m is None:
        return None
    words: list[str] = []
    end = m.start("cmd")
    for w in re.finditer(r"[\w.:/-]+", m.group("cmd")):
        word = w.group().strip("`.")
        if word in STOP_WORDS or word.endswith("ly") or word in _TOOL_FAMILY:
            break
        words.append(word)
        end = m.start("cmd") + w.end()
    return (tuple(words), (m.start("tool"), end)) if words else None


def _command_changed(note: str, line: str, change: Change) -> bool:
    """Whether ``note`` says, as a change, to do what ``line`` says with another command of the same tool
    ("from now on deploy with make ship" over "deploy with make release"): the tool the means of both, the
    commands differ and hold no flags (a flag is one more thing to do, not another way: "pytest -x" beside
    "pytest --cov"), and the rest of the two statements is the same subject."""
    if change.old or change.denied or not change.marked or not change.new:
        return False
    line_change = change_of(line)
    if line_change is not None and line_change.denied:
        return False
    mine, theirs = _command(note, change.new), _command(line, change.new)
    if mine is None or theirs is None or mine[0] == theirs[0]:
        return False
    if any(w.startswith("-") for w in (*mine[0], *theirs[0])):
        return False
    tools = frozenset({change.new})
    a, b = _subject(note, tools, mine[1]), _subject(line, tools, theirs[1])
    return bool(a) and a == b


_VALUE = re.compile(r"(?<![\w.])\d+(?:[.:]\d+)*(?![\w])")
#: non-numeric subject words two statements of one value must share (of their union)
VALUE_SIMILARITY = 0.8


def value_changed(note: str, line: str) -> bool:
    """Whether ``note`` states another value for what ``line`` states one of: the same words, other numbers
    ("the API server now listens on port 9000" over "the API server listens on port 8000", "run the tests
    with 8 workers" over "… with 4 workers"). Both state as many values and at least one differs; their
    words other than numbers and change wording agree at :data:`VALUE_SIMILARITY`, so another subject
    with its own number ("the integration tests use 8 workers") is no change; and the words that carry a
    number inside them agree too, so numbered subjects are no change either ("Worker 2 runs on host node2"
    beside "Worker 1 runs on host node1", "Runbook 2 is at …/r2/…" beside "Runbook 1 is at …/r1/…"): a
    wrong replacement deletes a true statement, a missed one leaves two a person can reconcile."""
    mine, theirs = _VALUE.findall(note), _VALUE.findall(line)
    if not mine or len(mine) != len(theirs) or sorted(mine) == sorted(theirs):
        return False
    named = [frozenset(w for w in tokens(t) if any(c.isdigit() for c in w) and not w.isdigit()) for t in (note, line)]
    if named[0] != named[1]:
        return False
    words = [frozenset(_stem(w) for w in tokens(t) if not any(c.isdigit() for c in w) and w not in _CHANGE_WORDS)
             for t in (note, line)]
    return bool(words[0]) and jaccard(words[0], words[1]) >= VALUE_SIMILARITY


#: words that are alternatives to one another where the rest of a statement is the same
ALTERNATIVES: tuple[frozenset[str], ...] = tuple(
    frozenset(group.split())
    for group in (
        "single double",
        "tab space",
        "light dark",
        "lf crlf",
        "true false",
        "enabled disabled",
        "sync async synchronou asynchronou",
        "relative absolute",
        "ascending descending",
        "uppercase lowercase",
        "main master trunk",
        "english french german spanish italian portuguese dutch polish russian chinese japanese korean",
    )
)
_ALTERNATIVE = {w: g for g in ALTERNATIVES for w in g}
#: a statement that turns something down: its alternatives are not its choice (change shapes handle it)
_NEGATED = re.compile(r"(?i)(?:not|never|don'?t|avoid|no\s+longer|instead\s+of|rather\s+than)")


def _prefers(text: str) -> bool:
    return re.search(r"(?i)\bprefer(?:s|red)?\b", text) is not None


def word_swapped(note: str, line: str) -> bool:
    """Whether ``note`` says ``line`` with one word swapped for an alternative of it ("prefer double quotes
    in Python" over "prefer single quotes in Python", "write commit messages in French from now on" over
    "always write commit messages in English", "I prefer answers in English" over "I prefer answers in
    French"): every other content word the same, at least two of them (one when both are preferences),
    and neither text turning something down ("never use double quotes" agrees with "use single quotes")."""
    if _NEGATED.search(note.replace("\u2019", "'")) or _NEGATED.search(line.replace("\u2019", "'")):
        return False
    mine, theirs = (frozenset(w for w in tokens(t) if w not in _CHANGE_WORDS) for t in (note, line))
    added, gone = mine - theirs, theirs - mine
    # two subject words in common, or one for two preferences ("I prefer answers in English" over "… in
    # French": "prefer" is a change word, so the subject alone is "answers"); "run the sync tests" beside
    # "run the async tests" shares one subject word and no preference: two statements, both true
    shared = len(mine & theirs)
    if len(added) != 1 or len(gone) != 1 or shared < 1 or (shared < 2 and not (_prefers(note) and _prefers(line))):
        return False
    (a,), (b,) = added, gone
    return a in _ALTERNATIVE and b in _ALTERNATIVE.get(a, frozenset())


#: a statement that adds to what is said ("Vitest is also used", "CI also tests 3.12", "as well"): never a change
_ADDITIVE = re.compile(r"(?i)\balso\b(?!,)|\bas\s+well\b|\bin\s+addition\s+to\b")


def supersedes(note: str, line: str) -> bool:
    """Whether the note text ``note`` replaces the topic body line ``line`` (see the module docstring).

    A note that says it adds ("also", "as well", "in addition to"; not a leading "Also," that joins it to what
    was said before) replaces nothing, nor is replaced by a line that says so: both hold."""
    text = NOTED.sub("", BULLET_MARK.sub("", line))
    if _ADDITIVE.search(note) or _ADDITIVE.search(text):
        return False
    change = change_of(note)
    if change is None:
        return value_changed(note, text) or word_swapped(note, text)
    if change.new and (change.old or change.marked) and not change.plain and _rejects(text, change.new):
        # a reversal said as a change: "use npm, not pnpm" (or "we moved back to npm") over "use pnpm, not
        # npm": the line turns the new choice down and states another, the note's old one when it names one
        # (a bare "always use npm" is no change of it: ADR 0025, rule 4b)
        line_change = change_of(text)
        stated = line_change.new if line_change else stated_choice(text)
        if not stated or stated == change.new or (change.old and not _states(stated, {change.old})):
            return False
        chosen = {c for c in (change.new, change.old, stated) if c}
        tools = frozenset(t for c in chosen for t in (c, *c.split()))
        mine, theirs = _without_implied(_subject(note, tools), _subject(text, tools), chosen)
        return mine == theirs
    if change.new and _names(text, change.new):
        # the line already speaks of the new choice: a fact about it, the same advice, another value of it
        # ("use 2 spaces" over "use 4 spaces"), or another command of it said as a change
        return _command_changed(note, text, change) or value_changed(note, text) or word_swapped(note, text)
    line_change = change_of(text)
    if line_change is not None and line_change.denied:
        return False  # the line turns its tool down: it states no choice to replace
    stated = line_change.new if line_change else stated_choice(text)
    third = False
    if change.old and _names(text, change.old):
        if _rejects(text, change.old):
            return False
        old_choices = {change.old}
    elif change.denied == "never" or (change.old and change.denied):
        return False  # a negation replaces only the line stating what it turns down
    else:
        # "use pnpm to install dependencies" over "use yarn to install dependencies"; with an old choice the
        # line does not name ("use pnpm, not npm, …" over "use yarn …"), a third tool of the family
        family = _TOOL_FAMILY.get(change.new, frozenset())
        old_choices = {t for t in family if t not in (change.new, change.old) and _names(text, t)
                       and not _rejects(text, t)}
        third = bool(change.old)
    if not old_choices or not _states(stated, old_choices):
        return False  # the line must state the old choice as a choice, not merely mention it
    chosen = {c for c in (change.new, change.old, *old_choices) if c}
    tools = frozenset(t for c in chosen for t in (c, *c.split()))  # "task" of "run tasks" is no tool here
    mine, theirs = _subject(note, tools), _subject(text, tools)
    if change.denied == "never":
        return mine == theirs  # exactly what the line says, turned down: not a narrower case of it
    mine, theirs = _without_implied(mine, theirs, chosen)
    if not mine and change.old and not third and change.old not in _VALUES:
        # "we moved from npm to pnpm", "yarn is no longer used": about the tool alone, wherever it is used
        return True
    if change.plain or third:  # "the test database is SQLite" is no change of "the database is PostgreSQL"
        return bool(mine) and mine == theirs
    return mine == theirs


def overrules(line: str, note: str) -> bool:
    """Whether the memory ``line`` overrules the newer ``note`` (ADR 0025, rule 4b: memory already moved
    away from what it says): the line supersedes it, it does not supersede the line, and it speaks of no
    more than the line does. "Use npm to publish packages" after "we moved from npm to pnpm" is another job
    of the old tool, not a step back: it is proposed, never dropped."""
    if not supersedes(line, note) or supersedes(note, line):
        return False
    text = NOTED.sub("", BULLET_MARK.sub("", line))
    change = change_of(text)
    chosen = {c for c in ((change.new, change.old) if change else ()) if c} | ({stated_choice(note)} - {""})
    tools = frozenset(t for c in chosen for t in (c, *c.split()))
    mine, theirs = _without_implied(_subject(note, tools), _subject(text, tools), chosen)
    return not (mine - theirs)
