"""Proposal drafts: the scope a review works in and the one way each kind of draft is built.

A review (embedded :mod:`worker.memory.engine` or remote
:mod:`worker.memory.remote`) decides *what* to propose; this module builds
the bytes. :class:`ReviewScope` is what every review of one memory root is
given besides the digests and the snapshot: where the root and its index
are, the instruction files, the fingerprints not to propose again, and the
stamp (``now``, ``review_id``) each draft carries. :class:`ProposalDraft`
is a proposal before it has an id and bundles (the general review turns it
into a ``Proposal``).

Construction rules shared by both providers: an UPDATE appends bullets to a
topic and guards its index entry; an INSTRUCTION appends bullets to the
``## Working agreements`` section of an instruction file; a CREATE
(:class:`NewTopics`) writes a topic named by its title, with the
description as index hook (none when it only repeats the name), under
:func:`~worker.memory.model.topic_filename` of the name made unique in the
root, and is not proposed when the index cannot take its entry. Summaries
join the items (note titles, bullet texts) clipped to 80 characters. Drafts are ordered
(:func:`ordered`) MERGE, DELETE, UPDATE, CREATE, INSTRUCTION — removals
first, then what memory gains — then DISPOSITION (a working note disposed
of, :mod:`worker.memory.notes`, after what carries it), then by target.

Index edits are entry-level ``(file, before, after)`` tuples for
:func:`~worker.memory.model.apply_index_edits`; an edit with ``before ==
after`` is a freshness guard only (the topic must keep its captured entry).
``files`` holds topic and instruction files only, never the index; a file
whose after-state is its before-state (``(None, None)``: it must stay
absent) is likewise a guard, verified on application and never written.
Pure; imports the protocol and the memory model, similarity and
fingerprints.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Iterable, Mapping
from typing import Any

import attrs
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.memory import ProposalKind
from cairn.protocol.vocab import NoteType
from cairn.worker.memory.fingerprints import fingerprint
from cairn.worker.memory.model import (
    FILENAME_MAX,
    INDEX_BUDGET,
    INDEX_NAME,
    Index,
    IndexBudget,
    IndexEditTuple,
    MemorySnapshot,
    add_working_agreements,
    append_to_topic,
    apply_index_edits,
    entry_line,
    format_entry,
    one_line,
    parse_topic,
    render_topic,
    replace_line,
    topic_filename,
)
from cairn.worker.memory.similarity import BULLET_MARK, NOTED, normalise
from cairn.worker.memory.supersede import supersedes

#: most digests one review may take (the caller bounds the scope)
MAX_DIGESTS = 20
#: longest description / index hook of a created topic
DESCRIPTION_MAX = 150
#: longest name of a created topic (and of an entry restored for an orphan)
NAME_MAX = 120
#: longest item title quoted in a summary
SUMMARY_ITEM_MAX = 80

_KIND_ORDER = {
    ProposalKind.MERGE: 0,
    ProposalKind.DELETE: 1,
    ProposalKind.UPDATE: 2,
    ProposalKind.CREATE: 3,
    ProposalKind.INSTRUCTION: 4,
    ProposalKind.DISPOSITION: 5,  # a note disposed of after the drafts that carry it
}


def present_instructions(instruction_files: Mapping[str, bytes | None]) -> dict[str, bytes]:
    """Configured instruction files that exist and are UTF-8 text, in configured order.

    The first is the one rule 3 edits; all of them are what memory already says.
    """
    out: dict[str, bytes] = {}
    for path, data in instruction_files.items():
        if data is None:
            continue
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        out[path] = data
    return out


@attrs.frozen(kw_only=True)
class ReviewScope:
    """One memory root's review, apart from its digests and snapshot."""

    root_rel: str  # the memory root as a path in the drafts ("" = the workspace itself)
    index_rel: str  # its MEMORY.md as a path in the drafts
    instruction_files: Mapping[str, bytes | None]  # configured order; None = absent
    rejected: set[str]  # fingerprints never to propose again
    now: float  # stamped on each draft
    review_id: str  # stamped on each draft
    budget: IndexBudget = INDEX_BUDGET  # what agents load of the index (settings ``indexMaxLines``/``Bytes``)

    @classmethod
    def of(cls, scope: ReviewScope | None, fields: Mapping[str, Any]) -> ReviewScope:
        """``scope``, or one built from the same fields given as keywords (never both)."""
        if scope is None:
            return cls(**fields)
        if fields:
            raise TypeError("give a ReviewScope or its fields as keywords, not both")
        return scope

    def path(self, file: str) -> str:
        """A root file as a path in the drafts."""
        return posixpath.join(self.root_rel, file) if self.root_rel else file

    def present_instructions(self) -> dict[str, bytes]:
        return present_instructions(self.instruction_files)

    def known_texts(self, snapshot: MemorySnapshot) -> list[str]:
        """What memory already says (parsed topic bodies, instruction files), normalised.

        A text whose normalised form occurs in one of these is never proposed.
        """
        known = [normalise(tf.topic.body) for _, tf in sorted(snapshot.topics.items()) if tf.topic is not None]
        return known + [normalise(data.decode("utf-8")) for data in self.present_instructions().values()]


#: path -> (before, after) bytes; None = absent / delete
FileChanges = Mapping[str, tuple[bytes | None, bytes | None]]


@attrs.frozen(kw_only=True)
class ProposalDraft:
    """A proposal before it has an id and bundles: the lead of a review turns it into a Proposal."""

    kind: ProposalKind
    title: str
    summary: str
    target: str  # main affected path (workspace-relative)
    files: FileChanges  # path -> (before, after); None = absent / delete
    index_path: str  # the MEMORY.md the index edits apply to
    index_edits: tuple[IndexEditTuple, ...]  # (topic file, before line | None, after line | None)
    evidence: tuple[str, ...]  # digest ids, sorted
    fingerprint: str
    review: str
    created: float
    requires: tuple[str, ...] = ()  # fingerprints of drafts that must be applied first (a note disposition)
    premise: str | None = None  # Proposal.premise


def draft(
    scope: ReviewScope,
    kind: ProposalKind,
    *,
    title: str,
    summary: str,
    target: str,
    files: FileChanges,
    index_edits: tuple[IndexEditTuple, ...],
    evidence: tuple[str, ...],
    fingerprint: str,
) -> ProposalDraft:
    """A draft of ``kind`` in ``scope``: its index and stamp filled in."""
    return ProposalDraft(
        kind=kind,
        title=title,
        summary=summary,
        target=target,
        files=files,
        index_path=scope.index_rel,
        index_edits=index_edits,
        evidence=evidence,
        fingerprint=fingerprint,
        review=scope.review_id,
        created=scope.now,
    )


def ordered(drafts: Iterable[ProposalDraft]) -> list[ProposalDraft]:
    """Drafts in proposal order: by kind (removals first), then by target."""
    return sorted(drafts, key=lambda d: (_KIND_ORDER[d.kind], d.target))


def unrejected(drafts: Iterable[ProposalDraft], scope: ReviewScope) -> list[ProposalDraft]:
    return [d for d in drafts if d.fingerprint not in scope.rejected]


# -- text ----------------------------------------------------------------------------


def clip(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters (cut at a word, marked with an ellipsis)."""
    text = one_line(text)
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if cut.rfind(" ") > limit // 2:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:-") + "…"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def summary(items: Iterable[str]) -> str:
    """A draft's summary: its items (note titles, bullet texts) clipped and joined."""
    return "; ".join(clip(t, SUMMARY_ITEM_MAX) for t in items)


def unwritable(kind: NoteType, title: str, body: str) -> ErrorCode | None:
    """The code a note would fail with as a topic (name, description, index entry, bullet); None if it can be written.

    A review leaves such a note out and counts it (:func:`worker.memory.review.readable`)
    rather than let one note stop the proposals of every other.
    """
    name = clip(title, NAME_MAX)
    description = clip(body, DESCRIPTION_MAX)
    try:
        render_topic(name, description, kind, f"\n- {one_line(body)}\n")
        format_entry(name, "topic.md", description)
    except CairnError as exc:
        return exc.code
    return None


def admit_entry(
    index: bytes | None, name: str, file: str, description: str, budget: IndexBudget = INDEX_BUDGET,
    confirmed: str | None = None,
) -> tuple[bytes, str] | None:
    """The index (``None``: none yet) with an entry for ``file`` added, and that entry; None past ``budget``.

    The hook is the description, or nothing when it only repeats the name; a ``confirmed`` day ends the
    line (`` (confirmed YYYY-MM-DD)``, see :func:`worker.memory.model.format_entry`).
    """
    hook = description if normalise(description) != normalise(name) else ""
    line = format_entry(name, file, hook, confirmed)
    try:
        return apply_index_edits(index, [(file, None, line)], budget), line
    except CairnError as exc:
        if exc.code == ErrorCode.INDEX_FULL:
            return None
        raise


# -- the kinds both providers propose ---------------------------------------------------


@attrs.frozen(kw_only=True)
class Additions:
    """What a content draft adds to memory, and what it is known and summarised by."""

    bullets: tuple[str, ...]  # bullet lines ("- ...") in order
    summary_of: tuple[str, ...]  # item texts the summary quotes (note titles, bullet texts)
    parts: tuple[str, ...]  # the fingerprint's added texts
    evidence: tuple[str, ...]  # digest ids, sorted


def _content_draft(
    scope: ReviewScope,
    kind: ProposalKind,
    target: str,
    adds: Additions,
    *,
    title: str,
    files: FileChanges,
    index_edits: tuple[IndexEditTuple, ...],
) -> ProposalDraft:
    return draft(
        scope,
        kind,
        title=title,
        summary=summary(adds.summary_of),
        target=target,
        files=files,
        index_edits=index_edits,
        evidence=adds.evidence,
        fingerprint=fingerprint(kind, target, adds.parts),
    )


def append_all(data: bytes, bullets: Iterable[str]) -> bytes:
    """A topic's bytes with ``bullets`` appended, in order."""
    for bullet in bullets:
        data = append_to_topic(data, bullet)
    return data


def instruction_draft(scope: ReviewScope, path: str, before: bytes | None, adds: Additions) -> ProposalDraft:
    """INSTRUCTION: the bullets appended to the working agreements of the instruction file ``path``."""
    return _content_draft(
        scope,
        ProposalKind.INSTRUCTION,
        path,
        adds,
        title=f"Add {plural(len(adds.bullets), 'working agreement')} to {posixpath.basename(path)}",
        files={path: (before, add_working_agreements(before, list(adds.bullets)))},
        index_edits=(),
    )


def instruction_edit_draft(
    scope: ReviewScope, path: str, before: bytes, after: bytes, adds: Additions, replaced: list[tuple[str, str]]
) -> ProposalDraft:
    """INSTRUCTION: lines of the instruction file ``path`` replaced by the notes that change them
    (``replaced``: old and new statements), and the other bullets of ``adds`` already in ``after``."""
    name = posixpath.basename(path)
    changes = "; ".join(f"\u201c{clip(old, 60)}\u201d \u2192 \u201c{clip(new, 60)}\u201d" for old, new in replaced)
    added = len({new for new in adds.parts if not new.startswith("replace\0")}) - len({new for _, new in replaced})
    title = f"Replace {plural(len(replaced), 'working agreement')} in {name}: {changes}"
    if added > 0:
        title = f"Add {plural(added, 'working agreement')} and replace {len(replaced)} in {name}: {changes}"
    return _content_draft(scope, ProposalKind.INSTRUCTION, path, adds, title=title, files={path: (before, after)},
                          index_edits=())


def update_draft(
    scope: ReviewScope, index: Index, file: str, name: str, data: bytes, adds: Additions
) -> ProposalDraft:
    """UPDATE: the bullets appended to the topic ``file`` (named ``name``, bytes ``data``); its entry is guarded.

    A bullet that supersedes a line of the topic (:mod:`worker.memory.supersede`)
    replaces that line instead of standing beside it; the title then says so.
    """
    path = scope.path(file)
    current = entry_line(index, file)
    after, rest, replaced = replace_superseded(data, adds.bullets)
    title = f"Add {plural(len(adds.bullets), 'note')} to {name}"
    if replaced:
        title = f"Replace {plural(len(replaced), 'statement')} in {name}: " + "; ".join(
            f"\u201c{clip(old, 60)}\u201d \u2192 \u201c{clip(new, 60)}\u201d" for old, new in replaced
        )
    return _content_draft(
        scope,
        ProposalKind.UPDATE,
        path,
        adds,
        title=title,
        files={path: (data, append_all(after, rest))},
        index_edits=((file, current, current),),
    )


def _statement(line: str) -> str:
    return NOTED.sub("", BULLET_MARK.sub("", line)).strip()


def replace_superseded(data: bytes, bullets: Iterable[str]) -> tuple[bytes, list[str], list[tuple[str, str]]]:
    """(``data`` with each line a bullet supersedes replaced by it, the other bullets, (old, new) statements)."""
    try:
        body = parse_topic(data).body
    except CairnError:
        return data, list(bullets), []
    lines = [ln.rstrip("\r") for ln in body.split("\n") if BULLET_MARK.match(ln)]
    rest: list[str] = []
    replaced: list[tuple[str, str]] = []
    for bullet in bullets:
        old = next((ln for ln in lines if supersedes(_statement(bullet), ln)), None)
        if old is None:
            rest.append(bullet)
            continue
        data = replace_line(data, old, bullet)
        lines.remove(old)
        replaced.append((_statement(old), _statement(bullet)))
    return data, rest, replaced


class NewTopics:
    """CREATE drafts of one review: unique file names, and the index bound counted across them."""

    def __init__(self, snapshot: MemorySnapshot, index: Index) -> None:
        self._taken = {n.casefold() for n in (*snapshot.topics, *snapshot.refused, INDEX_NAME)}
        self._taken |= {e.file.casefold() for e in index.entries}
        self._index = snapshot.index  # as it would read after the creates so far

    def _free_file(self, name: str) -> str:
        file = topic_filename(name)
        stem, n = file[: -len(".md")], 2
        limit = FILENAME_MAX - len(".md")
        while file.casefold() in self._taken:
            suffix = f"-{n}"
            file = f"{stem[: limit - len(suffix)].rstrip('-')}{suffix}.md"
            n += 1
        return file

    def draft(
        self, scope: ReviewScope, kind: NoteType, name: str, description: str, adds: Additions
    ) -> ProposalDraft | None:
        """CREATE of a topic ``name`` holding the bullets; None when the index cannot take its entry.

        A returned draft takes its file name and its index line for the rest
        of the review, rejected or not.
        """
        file = self._free_file(name)
        data = render_topic(name, description, kind, "\n" + "".join(b + "\n" for b in adds.bullets))
        day = time.strftime("%Y-%m-%d", time.gmtime(scope.now))  # provenance sets the sessions' day
        admitted = admit_entry(self._index, name, file, description, scope.budget, day)
        if admitted is None:
            return None
        self._index, line = admitted
        self._taken.add(file.casefold())
        path = scope.path(file)
        return _content_draft(
            scope,
            ProposalKind.CREATE,
            path,
            adds,
            title=f"New {kind} memory: {name}",
            files={path: (None, data)},
            index_edits=((file, None, line),),
        )
