"""Contradiction at accept time: a proposal never writes a statement that memory, as it is now, contradicts.

A review replaces a statement it changes (rule 4a, :mod:`worker.memory.supersede`), but it compares a
note with memory *as it was* when the review ran. Two proposals made while neither was applied — "Use npm
to install dependencies", then "Use pnpm, not npm, to install dependencies", both pending — each create
a topic; accepting both would leave a memory that disagrees with itself, in either order. So accepting
(and listing) a proposal checks it again against the other topic files of its memory root as they are
now (:func:`conflict`, docs/adr/0025):

* the **added** statements are the body lines of the proposal's after-states that none of the files it
  writes or deletes held before (a merge carries lines over: they are not new);
* they must agree with one another and with the lines the proposal's own files keep (a topic never
  disagrees with itself);
* each is compared with every body line of the root's *other* topic files (those the proposal does not
  write or delete; a file without a topic's front matter, or with one that does not parse, is no topic,
  and a topic holding fenced code is left out, as a review never rewrites one);
* the proposal is in conflict when an added line supersedes a line memory holds and replaces nothing
  (it changes a statement without replacing it: it should have been a replacement), or when a line
  memory holds supersedes the added one and not the other way round (memory already moved away from
  what the proposal says: "use pnpm, not npm" over "use npm"). Both tests are
  :func:`worker.memory.supersede.supersedes`, the review's own. A replacement (a proposal that removes a
  line its new statement supersedes) is not held back by another topic still saying the old thing: it
  is the change, and refusing it would only lose the note.

The answer names the file and its line number, never the statement (reasons reach listings and logs). A
proposal in conflict is *stale* (:func:`worker.memory.apply.check_fresh`): accepting it is refused with
``E_PROPOSAL_STALE`` and its fingerprint no longer holds back the same change, so the next review of its
note proposes it afresh against memory as it is. Pure: bytes in, a reason out.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence

from cairn.protocol.errors import CairnError
from cairn.worker.memory.model import parse_topic
from cairn.worker.memory.similarity import BULLET_MARK, HEADING, NOTED, tokens
from cairn.worker.memory.supersede import FAMILIES, overrules, supersedes

#: another topic with more body lines than this is compared by its first lines only (a hand-made dump;
#: the check stays linear in what a memory root normally holds)
MAX_LINES = 400
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_WORDS = re.compile(r"[\w.+-]+|[^\W_]+")
#: each tool with the groups it is in (ruff formats and lints: two)
_TOOL_FAMILY: dict[str, frozenset[int]] = {}
for _i, _fam in enumerate(FAMILIES):
    for _tool in _fam:
        _TOOL_FAMILY[_tool] = _TOOL_FAMILY.get(_tool, frozenset()) | {_i}


def _body(data: bytes | None, *, topic_only: bool = False) -> list[tuple[int, str]]:
    """A topic file's body lines as (line number in the file, text): blank lines, headings and fenced code
    left out. The front matter is skipped without parsing it; with ``topic_only``, a file that has none is
    no topic (a README in the root) and has no statements."""
    if not data:
        return []
    lines = data.decode("utf-8", "replace").lstrip("\ufeff").split("\n")
    start = 0
    if lines and lines[0].strip() == "---":
        close = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
        if close is None:
            return []
        start = close + 1
    elif topic_only:
        return []
    out: list[tuple[int, str]] = []
    fenced = False
    for i in range(start, len(lines)):
        ln = lines[i].rstrip("\r")
        if _FENCE.match(ln):
            fenced = not fenced
            continue
        if not fenced and ln.strip() and not HEADING.match(ln):
            out.append((i + 1, ln))
    return out


@functools.lru_cache(maxsize=256)  # a listing checks every pending proposal against the same files
def _readable(data: bytes) -> bool:
    """Whether ``data`` is a topic the review can read (:func:`~worker.memory.model.parse_topic`): one whose
    front matter does not parse is no topic to a review (it is reported, ``E_TOPIC_FRONT_MATTER``, and left
    as it is), so its body holds no statement a proposal could be held to, nor replace."""
    try:
        parse_topic(data)
    except CairnError:
        return False
    return True


def _statement(line: str) -> str:
    return NOTED.sub("", BULLET_MARK.sub("", line)).strip()


@functools.lru_cache(maxsize=16384)  # a listing checks every pending proposal against the same lines
def _key(text: str) -> tuple[frozenset[str], frozenset[int]]:
    """A statement's words (as written, as content words, and stemmed) and the tool families it names."""
    raw = {w.strip(".") for w in _WORDS.findall(text.casefold())} - {""}
    words = tokens(text)
    stems = {_stem(w) for w in words | raw}
    every = frozenset(raw | words | stems)
    return every, frozenset(i for w in every for i in _TOOL_FAMILY.get(w, ()))


def _stem(word: str) -> str:
    for suffix in ("ation", "ing", "ed", "es", "s", "e"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


_COMMON = frozenset({"use", "the", "a", "an", "to", "in", "of", "for", "with", "and", "or", "is", "are", "be", "on",
                     "not", "no", "we", "our", "it", "this", "that", "from", "by", "at", "as", "all", "always",
                     "never", "don't", "do", "dont", "instead", "rather", "than", "now", "longer", "moved"})


@functools.lru_cache(maxsize=65536)  # a review lists, suppresses and re-opens with the same proposals
def _supersedes(note: str, line: str) -> bool:
    return supersedes(note, line)


def _related(a: tuple[frozenset[str], frozenset[int]], b: tuple[frozenset[str], frozenset[int]]) -> bool:
    """A cheap necessary condition of :func:`supersedes` either way: a word in common (a changed value, a
    swapped word and a named old choice all share one) or tools of one family ("use pnpm" over "npm is
    our package manager"). It spares the full test on unrelated lines (a root holds thousands)."""
    return bool(a[0] & b[0]) or bool(a[1] & b[1])


def may_supersede(a: str, b: str) -> bool:
    """False only where neither statement can supersede the other: no word in common but the commonest
    (:data:`_COMMON`), no tool family in common. A cheap filter, tested against :func:`supersedes`."""
    (wa, fa), (wb, fb) = _key(a), _key(b)
    return bool((wa - _COMMON) & (wb - _COMMON)) or bool(fa & fb)


def conflict(changes: Sequence[tuple[bytes | None, bytes | None]], others: Mapping[str, bytes]) -> str:
    """Why the topic writes ``changes`` ((before, after) bytes of each topic file the proposal writes or
    deletes) contradict the topic files ``others`` (name -> bytes, as they are now), or "" when they do
    not."""
    had = {_statement(ln) for before, _ in changes for _, ln in _body(before)}
    now = {_statement(ln) for _, after in changes for _, ln in _body(after)}
    added = sorted({s for s in now - had if s})
    if not added:
        return ""
    removed = [s for s in had - now if s]
    # a replacement: the new statement takes the place of a line the proposal removes
    replaces = {new for new in added if any(supersedes(new, old) for old in removed)}
    # what it adds against itself and against the lines its own files keep (a topic that disagrees with
    # itself: two new statements of one session, or a change appended instead of replacing)
    # (bullets only, as a review replaces them: :func:`worker.memory.drafts.replace_superseded`)
    kept = sorted({_statement(ln) for _, after in changes for _, ln in _body(after)
                   if BULLET_MARK.match(ln)} - set(added) - {""})
    for i, new in enumerate(added):
        for other in [*added[i + 1:], *kept]:
            if may_supersede(new, other) and (_supersedes(new, other) or _supersedes(other, new)):
                return "two statements it writes into one topic disagree"
    keys = {new: _key(new) for new in added}
    by_word: dict[str, list[str]] = {}
    by_family: dict[int, list[str]] = {}
    for new, (words, families) in keys.items():
        for w in words - _COMMON:
            by_word.setdefault(w, []).append(new)
        for f in families:
            by_family.setdefault(f, []).append(new)
    for name in sorted(others):
        if any(_FENCE.match(ln) for ln in others[name].decode("utf-8", "replace").split("\n")):
            continue  # a topic holding code is never rewritten by a review (rule 4a): no claim on it here
        if not _readable(others[name]):
            continue  # a front matter the review cannot read: it could never replace a line of this file
        for number, line in _body(others[name], topic_only=True)[:MAX_LINES]:
            held = _statement(line)
            if not held:
                continue
            words, families = _key(held)
            candidates = {new for w in words - _COMMON for new in by_word.get(w, ())}
            candidates |= {new for f in families for new in by_family.get(f, ())}
            for new in sorted(candidates):
                forward = _supersedes(new, held)
                if forward and new not in replaces:
                    return f"it changes what {name} says (line {number}) without replacing it"
                if not forward and overrules(held, new):
                    return f"{name} (line {number}) now says otherwise on the same subject"
    return ""
