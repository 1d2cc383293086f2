"""Supersession: a note that changes what memory says replaces the old statement, never sits beside it.

Rule 4a of the embedded engine (:mod:`worker.memory.engine`). A note
**supersedes** a body line of an existing topic (any type) when both are
about the same subject and the note says something different:

* **Change shapes** (:func:`change_of`): "use X (for Z), not Y", "X, not Y",
  "X instead of Y", "X rather than Y", "we moved / switched / migrated from
  Y to X", "no longer use Y" / "no longer deploy with Y" / "Y is no longer
  used", "replace Y with X", and "from now on (use) X". They name the new
  choice X (a known tool just before a command: "ruff format instead of
  black" chooses ruff) and, except the last, the old one Y.
* **Subject keys** (:func:`subject_keys`): known tools grouped by what they
  are for (a package manager, a test runner …, :data:`FAMILIES`),
  backticked identifiers, and paths. A plain "use X" is a choice too when X
  is a known tool: "Use pnpm to install dependencies" and "Use npm to
  install dependencies" choose different package managers ("use 4 spaces":
  a count before the choice is not it; another count of the same choice is
  a changed value). "The database is X" is a choice when X is a known tool,
  and then the rest of the two statements must agree closely
  (:data:`VALUE_SIMILARITY`: "the test database is SQLite" changes nothing).
* **Same subject**: the line names the old choice Y (or, without a Y, a
  tool of X's family other than X) and does not name X; and the words left
  once tools and the change wording are taken out agree (token Jaccard at
  :data:`~worker.memory.similarity.SIMILARITY`, or the note has no such
  words: "we moved from npm to pnpm" is about the tool alone).

* **Changed values** (:func:`value_changed`): the same statement with other
  numbers (a port, a version, a count of workers) replaces the old one; so
  does the same statement with one word swapped for an alternative of it
  (:func:`word_swapped`, :data:`ALTERNATIVES`: single/double quotes, one
  natural language for another, LF/CRLF …), unless either turns something
  down.

Precision over recall: a line that already rejects Y ("don't use npm",
"pnpm, not npm") is not contradicted by the note, and a second fact about
the same tool ("the pnpm store is in ~/.pnpm-store") is no change at all:
it names no other choice. A wrong replacement loses a true statement; a
missed one leaves two lines a person can still reconcile. Pure.
"""

from __future__ import annotations

import functools
import re

import attrs
from cairn.worker.memory.similarity import BULLET_MARK, NOTED, SIMILARITY, STOP_WORDS, jaccard, tokens

#: tools grouped by what they are for: two members of one group are alternative choices
FAMILIES: tuple[frozenset[str], ...] = tuple(
    frozenset(group.split())
    for group in (
        "npm pnpm yarn bun",
        "pip pipenv poetry uv conda pdm hatch",
        "pytest unittest nose nose2",
        "jest vitest mocha ava jasmine",
        "black autopep8 yapf",
        "ruff flake8 pylint",
        "eslint tslint biome oxlint",
        "prettier dprint",
        "webpack vite rollup esbuild parcel rspack turbopack",
        "docker podman",
        "make just task",
        "mypy pyright pyre",
        "cargo",
        "gradle maven",
        "postgres postgresql mysql mariadb sqlite",
        "tabs spaces",
    )
)
_TOOL_FAMILY = {tool: fam for fam in FAMILIES for tool in fam}

_CHOICE = r"`[^`\n]{1,80}`|[\w./~@+-]{1,80}"
_SHAPES = (
    # (pattern, has old choice)
    # "use X, not Y", "use ruff format, not black", "use tabs in Makefiles, not spaces"
    re.compile(rf"\buse\s+(?P<new>{_CHOICE})(?:\s+[\w-]+){{0,2}}?\s*,?\s*(?:and\s+)?not\s+(?P<old>{_CHOICE})", re.I),
    # "the database is SQLite, not PostgreSQL" (a comma before "not": a choice turned down, not a negation)
    re.compile(rf"(?P<new>{_CHOICE})\s*,\s*(?:and\s+)?not\s+(?P<old>{_CHOICE})", re.I),
    re.compile(rf"(?P<new>{_CHOICE})\s*,?\s+(?:instead\s+of|rather\s+than|over)\s+(?P<old>{_CHOICE})", re.I),
    re.compile(
        rf"\b(?:moved|switched|migrated|changed|went)\s+(?:over\s+)?from\s+(?P<old>{_CHOICE})\s+to\s+(?P<new>{_CHOICE})",
        re.I,
    ),
    re.compile(rf"\breplac(?:e|ed|ing)\s+(?P<old>{_CHOICE})\s+(?:with|by)\s+(?P<new>{_CHOICE})", re.I),
    # "no longer use fly", "we no longer deploy with fly"
    re.compile(rf"\bno\s+longer\s+(?:use|using|used|run|need|[a-z]+\s+(?:with|using|via|through))\s+(?P<old>{_CHOICE})",
               re.I),
    re.compile(rf"(?P<old>{_CHOICE})\s+(?:is|are)\s+no\s+longer\b", re.I),
    re.compile(rf"\bfrom\s+now\s+on\s*,?\s+(?:(?:we|you|please)\s+)?(?:use|run)\s+(?P<new>{_CHOICE})", re.I),
)
#: a lookahead, so that "tests run with vitest" offers both "with" and "vitest" as the choice; a count before
#: the choice is not it ("use 4 spaces": spaces)
_USE = re.compile(rf"\b(?:use|uses|using|run|runs|prefer|with|via)\s+(?:\d+\s+)?(?=(?P<new>{_CHOICE}))", re.I)
#: a plain statement of what something is ("the database is PostgreSQL"): a choice only when it names a known tool
_IS = re.compile(rf"\b(?:is|are)\s+(?=(?P<new>{_CHOICE}))", re.I)
_REJECTS = (
    r"(?:not|never|don'?t\s+use|do\s+not\s+use|avoid|instead\s+of|rather\s+than|no\s+longer(?:\s+use)?)"
)
_BACKTICK = re.compile(r"`([^`\n]{1,80})`")
_PATH = re.compile(r"(?<![\w/])(?:~|\.{1,2})?/?(?:[\w.@-]+/)+[\w.@-]*")
#: words that say a choice changed, not what it is about
_CHANGE_WORDS = tokens(
    "moved switched migrated changed went over replace replaced replacing longer now on from instead rather "
    "prefer preferred we run need needed"
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


@functools.lru_cache(maxsize=4096)  # a review compares each note with every line: each text is read once
def change_of(text: str) -> Change | None:
    """The change ``text`` states (see the module docstring), or None when it states none."""
    folded = text.replace("\u2019", "'")
    for pattern in _SHAPES:
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
        if new != old and (new or old):
            return Change(new=new, old=old)
    stated = stated_choice(folded)
    if stated not in _TOOL_FAMILY:
        return None
    used = any(_choice(m.group("new")) == stated for m in _USE.finditer(folded))
    return Change(new=stated, old="", plain=not used)


def stated_choice(text: str) -> str:
    """The choice a plain statement makes ("use X", "run X", "with X"; a tool's name first; "… is X" only
    when X is a known tool), or ""."""
    folded = text.replace("\u2019", "'")
    found = [_choice(m.group("new")) for m in _USE.finditer(folded)]
    tool = next((c for c in found if c in _TOOL_FAMILY), None)
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


def _residue(text: str, drop: frozenset[str]) -> frozenset[str]:
    """The subject words of ``text``: its content words without tools and change wording, lightly stemmed."""
    return frozenset(_stem(w) for w in tokens(text) if w not in drop and w not in _CHANGE_WORDS)


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


def supersedes(note: str, line: str) -> bool:
    """Whether the note text ``note`` replaces the topic body line ``line`` (see the module docstring)."""
    change = change_of(note)
    text = NOTED.sub("", BULLET_MARK.sub("", line))
    if change is None:
        return value_changed(note, text) or word_swapped(note, text)
    if change.new and _names(text, change.new):
        # the line already speaks of the new choice: a fact about it, the same advice, or another value of it
        # ("use 2 spaces" over "use 4 spaces")
        return value_changed(note, text) or word_swapped(note, text)
    if change.old:
        if not _names(text, change.old) or _rejects(text, change.old):
            return False
        old_choices = {change.old}
    else:
        family = _TOOL_FAMILY.get(change.new, frozenset())
        old_choices = {t for t in family if t != change.new and _names(text, t) and not _rejects(text, t)}
        if not old_choices:
            return False
    line_change = change_of(text)
    if not _states(line_change.new if line_change else stated_choice(text), old_choices):
        return False  # the line must state the old choice as a choice, not merely mention it
    tools = (
        frozenset(tokens(" ".join((change.new, change.old, *old_choices))))
        | subject_keys(note)
        | subject_keys(text)
    )
    mine, theirs = _residue(note, tools), _residue(text, tools)
    if change.plain:  # "the test database is SQLite" is no change of "the database is PostgreSQL"
        return bool(mine) and jaccard(mine, theirs) >= VALUE_SIMILARITY
    return not mine or jaccard(mine, theirs) >= SIMILARITY
