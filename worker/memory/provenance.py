"""Provenance of a topic: its sources, citations and confirmation date, written into its front matter.

:func:`stamp_created` takes a review's drafts and gives each CREATE draft's
topic the front matter keys of ADR 0020: ``sources`` (the digest ids of its
evidence, the turn ids of the notes its text quotes, else all of the digests'
turn ids, the sessions' ``start/end`` times), ``citations``
(what its text names in the workspace, with content hashes and the git
commit: :func:`worker.memory.citations.find_citations`) and ``confirmed``
(the day of the latest session, else of the review). :func:`stamp_updated`
does the same for an UPDATE of an existing topic (a statement replaced, a
note appended): the new evidence joins the recorded sources, what the new
text names joins the citations (a recorded citation keeps its hash, so an
update never hides a change it recorded), and the later day stays
confirmed; only a front matter exactly as cairn writes it is written again
(one the user edited is left as it is, keys, comments and layout). Only
values cairn derives itself reach the front matter (ids matched against a
closed pattern, paths made of ``[\\w./-]``), so no transcript text does. The
other drafts, and a topic whose bytes do not parse, are returned as they
were. Reads the cited files (never a link, a FIFO or a huge file); writes
nothing.

:func:`edit_front_matter` changes a few keys of a front matter the user
edited (a verification's update of a renamed target or a moved file): the
lines of those keys are written anew, every other line (the user's keys,
comments, layout) is kept; where no such line can be told, the front matter
is written again with every key it has (its comments lost, its keys kept).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from typing import Any

import attrs
import yaml
from cairn.protocol.errors import CairnError
from cairn.protocol.journal import PublicDigest
from cairn.protocol.memory import ProposalKind
from cairn.protocol.text import memory_text
from cairn.worker.memory.citations import find_citations, git_commit
from cairn.worker.memory.drafts import ProposalDraft
from cairn.worker.memory.model import Topic, format_entry, parse_index, parse_topic, render_topic

#: turn ids recorded per topic at most (the digests name the rest)
MAX_TURNS = 20
_ID = re.compile(r"^[\w.:@+-]{1,120}$")
_INSTANT = re.compile(r"^\d{4}-\d{2}-\d{2}T[\d:.]+Z$")
_SESSION = re.compile(r"^\d{4}-\d{2}-\d{2}T[\d:.]+Z/\d{4}-\d{2}-\d{2}T[\d:.]+Z$")


def provenance(workspace: str, text: str, digests: Sequence[PublicDigest], now: float,
               commit: str | None = None, exclude: Sequence[str] = ()) -> dict[str, Any]:
    """The front matter keys recording where ``text`` came from and what it cites."""
    ids = sorted({d.id for d in digests if _ID.match(d.id)})
    # the turns of the notes the text was made from; a text that quotes no note (edited, merged) names the
    # evidence's turns, as before
    flat = " ".join(text.split())
    own = [t for d in digests for n in d.notes if _quoted(flat, n.body) or _quoted(flat, n.title)
           for t in n.turn_ids]
    turns = list(dict.fromkeys(t for t in (own or [t for d in digests for t in d.turn_ids]) if _ID.match(t)))
    turns = turns[:MAX_TURNS]
    sessions = sorted({f"{d.session_started}/{d.session_ended}" for d in digests
                       if d.session_started and d.session_ended
                       and _INSTANT.match(d.session_started) and _INSTANT.match(d.session_ended)})
    days = [d.session_day for d in digests]
    sources: dict[str, Any] = {k: v for k, v in (("digests", ids), ("turns", turns), ("sessions", sessions)) if v}
    cites = [c.as_front_matter() for c in find_citations(workspace, text, commit=commit, exclude=exclude)
             if c.sha256]
    return {"sources": sources, "citations": cites,
            "confirmed": max(days) if days else time.strftime("%Y-%m-%d", time.gmtime(now))}


def _quoted(flat_text: str, part: str) -> bool:
    """Whether ``part`` (a note's body or title, 12 characters or more) occurs in the text, whitespace folded."""
    flat = " ".join(memory_text(part).split())  # as the memory holds it (never a bidirectional control)
    return len(flat) >= 12 and flat in flat_text


def _dated(line: str, day: str) -> str:
    entries = parse_index(line.encode()).entries
    if not entries or entries[0].confirmed is None:
        return line
    entry = entries[0]
    return format_entry(entry.title, entry.file, entry.hook, day)


def stamp_created(workspace: str, drafts: Iterable[ProposalDraft], digests: Iterable[PublicDigest],
                  exclude: Sequence[str] = ()) -> list[ProposalDraft]:
    """``drafts`` with the provenance of each new topic in its front matter (see the module docstring)."""
    by_id = {d.id: d for d in digests}
    out: list[ProposalDraft] = []
    commit: str | None = None
    looked = False
    for d in drafts:
        if d.kind is not ProposalKind.CREATE or len(d.files) != 1:
            out.append(d)
            continue
        [(path, (before, after))] = d.files.items()
        if before is not None or after is None:
            out.append(d)
            continue
        try:
            topic = parse_topic(after)
        except CairnError:
            out.append(d)
            continue
        if not looked:
            commit, looked = git_commit(workspace), True
        prov = provenance(workspace, topic.body, [by_id[e] for e in d.evidence if e in by_id], d.created, commit,
                          exclude)
        data = render_topic(topic.name, topic.description, topic.type, topic.body, prov)
        # the index line carries the same day (fixed width: the budget checked for it still holds)
        edits = tuple((f, b, _dated(a, prov["confirmed"])) if b is None and a is not None else (f, b, a)
                      for f, b, a in d.index_edits)
        out.append(attrs.evolve(d, files={path: (None, data)}, index_edits=edits))
    return out


def _recorded(topic: Topic) -> dict[str, Any]:
    """The provenance keys a topic's front matter holds, as :func:`render_topic` takes them."""
    return {k: v for k, v in (("sources", topic.sources), ("citations", topic.citations),
                              ("confirmed", topic.confirmed)) if v}


def _own(topic: Topic) -> bool:
    """Whether the topic's bytes are exactly what cairn writes for its fields: writing it again loses no key,
    comment or layout of the user's."""
    try:
        return render_topic(topic.name, topic.description, topic.type, topic.body, _recorded(topic)) == topic.raw
    except (CairnError, TypeError, ValueError):
        return False


def _ids(sources: object, key: str, pattern: re.Pattern[str]) -> list[str]:
    got = sources.get(key) if isinstance(sources, dict) else None
    return [x for x in got if isinstance(x, str) and pattern.match(x)] if isinstance(got, list) else []


def _named(citation: dict[str, Any]) -> str:
    """What a citation's text names: its target or symbol, else its path."""
    name = citation.get("target") or citation.get("symbol") or citation.get("path")
    return name if isinstance(name, str) else ""


def merged(topic: Topic, new: dict[str, Any]) -> dict[str, Any]:
    """The provenance of ``topic`` updated with ``new`` (:func:`provenance` of its new text and evidence).

    Sources are the union (turn ids: the latest :data:`MAX_TURNS`); a recorded citation is kept, with the
    hash it was recorded with, while the text still names what it cites, and a citation of something the
    text names for the first time is added; ``confirmed`` is the later day."""
    old = topic.sources
    digests = sorted({*_ids(old, "digests", _ID), *new["sources"].get("digests", [])})
    turns = list(dict.fromkeys([*_ids(old, "turns", _ID), *new["sources"].get("turns", [])]))[-MAX_TURNS:]
    sessions = sorted({*_ids(old, "sessions", _SESSION), *new["sources"].get("sessions", [])})
    sources = {k: v for k, v in (("digests", digests), ("turns", turns), ("sessions", sessions)) if v}
    body = topic.body
    kept = [c for c in (topic.citations if isinstance(topic.citations, list) else [])
            if isinstance(c, dict) and _named(c) and _named(c) in body]
    have = {(c.get("path"), c.get("target") or c.get("symbol")) for c in kept}
    cites = kept + [c for c in new["citations"] if (c.get("path"), c.get("target") or c.get("symbol")) not in have]
    days = [d for d in (topic.confirmed, new.get("confirmed")) if isinstance(d, str) and d]
    return {"sources": sources, "citations": cites, "confirmed": max(days) if days else None}


def stamp_updated(workspace: str, drafts: Iterable[ProposalDraft],
                  digests: Iterable[PublicDigest], exclude: Sequence[str] = ()) -> list[ProposalDraft]:
    """``drafts`` with each UPDATE of a topic carrying its new evidence in the topic's front matter (see the
    module docstring); an UPDATE with no evidence of this review (a verification's) is returned as it was.
    ``exclude`` (here and in :func:`stamp_created`): the memory roots besides ``.agents/memory``, never cited."""
    by_id = {d.id: d for d in digests}
    out: list[ProposalDraft] = []
    commit: str | None = None
    looked = False
    for d in drafts:
        evidence = [by_id[e] for e in d.evidence if e in by_id]
        if d.kind is not ProposalKind.UPDATE or len(d.files) != 1 or not evidence:
            out.append(d)
            continue
        [(path, (before, after))] = d.files.items()
        try:
            topic = parse_topic(after) if before is not None and after is not None else None
        except CairnError:
            topic = None
        if topic is None or not _own(topic):
            out.append(d)
            continue
        if not looked:
            commit, looked = git_commit(workspace), True
        prov = merged(topic, provenance(workspace, topic.body, evidence, d.created, commit, exclude))
        data = render_topic(topic.name, topic.description, topic.type, topic.body, prov)
        out.append(attrs.evolve(d, files={path: (before, data)}) if data != after else d)
    return out


_DUMP: dict[str, Any] = {"sort_keys": False, "allow_unicode": True, "width": 1 << 30, "default_flow_style": False}
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _mapping(lines: Sequence[str]) -> dict[Any, Any] | None:
    try:
        meta = yaml.load("\n".join(line.rstrip("\r") for line in lines), Loader=_LOADER)  # noqa: S506 -- safe
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError):
        return None
    return meta if isinstance(meta, dict) else None


def edit_front_matter(raw: bytes, values: dict[str, Any], body: str) -> bytes | None:
    """``raw`` (a topic file :func:`parse_topic` reads) with the front matter keys ``values`` set and ``body``
    after it, every other key kept: each key's lines (``key:`` at the start of a line and the indented or
    ``-`` lines after it) are written anew where the file has exactly one such line, every other line kept as
    it was (comments, quoting, the line endings); else the front matter is written again whole with all its
    keys (their comments lost). A key set to None or an empty value is left as it is when absent. None when
    the result would not read back as the same mapping with ``values`` set."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    lines = text[len(bom):].split("\n")
    close = next((i for i in range(1, len(lines)) if lines[i].rstrip("\r").rstrip(" \t") == "---"), None)
    if not lines or lines[0].rstrip("\r").rstrip(" \t") != "---" or close is None:
        return None
    head = lines[1:close]
    meta = _mapping(head)
    if meta is None:
        return None
    values = {k: v for k, v in values.items() if k in meta or v}
    want = {**meta, **values}
    cr = "\r" if lines[0].endswith("\r") else ""

    def done(new_head: list[str]) -> bytes | None:
        if _mapping(new_head) != want:
            return None
        out = (bom + "\n".join([lines[0], *new_head, lines[close]]) + "\n" + body).encode("utf-8")
        try:
            parse_topic(out)
        except CairnError:
            return None
        return out

    edited: list[str] | None = list(head)
    for key, value in values.items():
        if key in meta and meta[key] == value:
            continue
        assert edited is not None
        starts = [i for i, line in enumerate(edited) if re.match(re.escape(key) + r"[ \t]*:(?:[ \t]|$)", line.rstrip("\r"))]
        if key in meta and len(starts) != 1:
            edited = None
            break
        new = [line + cr for line in yaml.safe_dump({key: value}, **_DUMP).rstrip("\n").split("\n")]
        if not starts:  # a key the file did not have: after the others
            edited += new
            continue
        i = j = starts[0]
        j += 1
        while j < len(edited) and (edited[j][:1] in (" ", "\t") or edited[j].rstrip("\r") == "-"
                                   or edited[j].startswith("- ")):
            j += 1
        edited[i:j] = new
    if edited is not None and (out := done(edited)) is not None:
        return out
    try:
        whole = yaml.safe_dump(want, **_DUMP).rstrip("\n").split("\n")
    except yaml.YAMLError:
        return None
    return done([line + cr for line in whole])
