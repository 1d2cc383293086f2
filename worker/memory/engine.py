"""The embedded review engine: digest notes → proposal drafts, deterministic and offline.

Input is a bounded scope (at most 20 public digests, one memory root's
snapshot, and a :class:`~worker.memory.drafts.ReviewScope`: the configured
instruction files, fingerprints of past rejections, the stamp); output is a
list of :class:`~worker.memory.drafts.ProposalDraft`, possibly empty (No
action). The same input always gives the same drafts in the same order.
:func:`review` applies the rules below in order, one function each; how a
draft's bytes are built and how drafts are ordered is
:mod:`worker.memory.drafts`, shared with the remote review.

1. **Notes** (:func:`fresh_notes`). Digests are taken in the order their
   sessions were held (:attr:`~protocol.journal.PublicDigest.session_time`:
   the session's start, else the digest's ``created``; then ``created``,
   then id), notes in digest order. The same note (type +
   normalised body) from several digests is one note with all their
   evidence. A note whose normalised body already appears verbatim in any
   topic body or instruction file is dropped: memory already says it.
   1a. **Outlived** (:func:`outlived`): a note that a later note of the same
   review supersedes is dropped; the later one is what holds.
2. **Similarity**: token Jaccard at 0.5, see :mod:`worker.memory.similarity`.
3. **Instructions** (:func:`instruction_edit`). A ``feedback`` note whose
   title or body is an instruction to the assistant (starts with "never",
   "always", "don't", "do not", "avoid" or "stop", after "please" / "you
   should" / "from now on") becomes an INSTRUCTION edit of the first
   configured instruction file that exists: one bullet per note at the end
   of its ``## Working agreements`` section (the section is appended if
   missing). With no instruction file present it is treated as an ordinary
   topic note. 3a. A note (of any type) that supersedes a bullet line of a
   present instruction file replaces that line instead (:func:`instruction_edits`:
   agents read both the file and the memory, so they must not disagree);
   one draft per file touched.
4. **Merge** (:func:`plan_merges`, :func:`merge_drafts`). Two parsed topics
   of the same type that are similar are near duplicates: one MERGE keeps
   the survivor (the one with an index entry, else the longer body, else the
   first name) with the union of their lines (the other's body lines it
   lacks are appended as bullets; headings dropped) and deletes the other
   with its index entry. Topics containing fenced code are never merged.
   Best pairs first; a topic is in one merge. Its fingerprint covers the
   merge itself (survivor, deleted topic, lines carried over), not the notes
   that join it, so a rejected merge stays rejected and its notes are
   proposed as updates instead.
4a. **Supersession** (:func:`supersession_drafts`, :mod:`worker.memory.supersede`).
   A note that changes what a topic says ("use pnpm, not npm", "we moved
   from npm to pnpm", "npm is no longer used" …) on the same subject
   replaces the old line in that topic (any type) by its dated bullet: one
   UPDATE titled old → new, its summary citing the old line's date and the
   new note's evidence. The topic's name, description and index entry follow
   when they only repeated the old statement. A second topic that disagrees
   with the first is never proposed.
4b. **Overruled** (:func:`overruled`). A note that a topic line or an
   instruction file's bullet supersedes, while it does not supersede that
   line ("use npm" where a topic says "use pnpm, not npm"), is not proposed:
   memory already moved away from it.
5. **Update** (:func:`route_notes`, :func:`update_drafts`). A note similar
   to an existing topic of its type is appended to it as a bullet ``- body
   (noted YYYY-MM-DD)``, the date (UTC) of the session of the first digest
   that carried the note. Several notes for one topic make one UPDATE; notes
   for a merged topic join that MERGE.
6. **Create** (:func:`create_drafts`). Remaining notes of one type are
   clustered (a note joins the first cluster holding a similar note); each
   cluster is one CREATE: name = the title of its strongest note (most
   digests, then most turns, then earliest), description and index hook =
   that note's body on one line (clipped; no hook when it only repeats the
   title), type = the note type, body = one bullet per note. The file is
   :func:`~worker.memory.model.topic_filename` of the name, made unique in
   the root. A create the index cannot take (over 200 entries, past line
   200, or past 25 KB: what agents load) is not proposed; 6a.
   **Consolidation** (:func:`consolidation_drafts`): its notes move into the
   closest existing topic of their type instead (of any type when memory has
   none of theirs; into the closest topic this review creates when memory has
   no topic to take them), so nothing is dropped.
7. **Dangling entry** and 8. **Orphan topic**: index housekeeping of the
   snapshot alone, computed whichever provider drafted the other proposals,
   see :mod:`worker.memory.housekeeping`.
9. **Rejections.** A draft whose fingerprint (sha256 over kind, target and
   the normalised added content, evidence dates excluded; rules 7 and 8 as
   stated there; see :mod:`worker.memory.fingerprints`) is in ``rejected``
   is dropped: the same proposal is never made again.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

import attrs
from cairn.protocol.digest import Note
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.journal import PublicDigest, by_session
from cairn.protocol.memory import ProposalKind
from cairn.protocol.vocab import NoteType
from cairn.worker.memory.contradiction import _supersedes, may_supersede
from cairn.worker.memory.drafts import (
    DESCRIPTION_MAX,
    MAX_DIGESTS,
    NAME_MAX,
    Additions,
    NewTopics,
    ProposalDraft,
    ReviewScope,
    append_all,
    clip,
    draft,
    instruction_draft,
    instruction_edit_draft,
    ordered,
    plural,
    unrejected,
    update_draft,
)
from cairn.worker.memory.fingerprints import fingerprint
from cairn.worker.memory.housekeeping import index_maintenance
from cairn.worker.memory.model import (
    Index,
    MemorySnapshot,
    add_working_agreements,
    entry_line,
    format_entry,
    one_line,
    replace_line,
    set_front_matter,
    with_confirmed,
)
from cairn.worker.memory.similarity import (
    BULLET_MARK,
    HEADING,
    SIMILARITY,
    TopicView,
    body_lines,
    jaccard,
    normalise,
    similar,
    tokens,
    topic_view,
)
from cairn.worker.memory.supersede import overrules, supersedes

_INSTRUCTION = re.compile(
    r"^(?:(?:please|kindly)[ ,]+|you\s+should\s+|from\s+now\s+on[ ,]+)*(?:never|always|don'?t|do\s+not|avoid|stop)\b",
    re.I,
)


def is_instruction(note: Note) -> bool:
    """A feedback note telling the assistant to always/never do something."""
    if note.type != NoteType.FEEDBACK:
        return False
    return any(_INSTRUCTION.match(t.replace("\u2019", "'").strip()) for t in (note.title, note.body))


# -- rule 1: notes --------------------------------------------------------------------


@attrs.define
class _Item:
    """One distinct note of the review with every digest that carried it."""

    note: Note
    key: str  # normalised body
    digests: list[str]
    day: str  # the day the session of the first digest that carried it was held (``session_day``)
    order: int
    words: frozenset[str] = frozenset()
    last: int = 0  # when it was said last (a count over every note of the review, in session order)

    @property
    def bullet(self) -> str:
        return f"- {one_line(self.note.body)} (noted {self.day})"

    @property
    def strength(self) -> tuple[int, int, int]:
        return (len(self.digests), len(self.note.turn_ids), -self.order)


def _evidence(items: list[_Item]) -> tuple[str, ...]:
    return tuple(sorted({d for item in items for d in item.digests}))


def _additions(items: list[_Item]) -> Additions:
    """Notes as a topic's additions: dated bullets, fingerprinted by their normalised bodies."""
    return Additions(
        bullets=tuple(it.bullet for it in items),
        summary_of=tuple(it.note.title for it in items),
        parts=tuple(it.key for it in items),
        evidence=_evidence(items),
    )


def fresh_notes(digests: list[PublicDigest], known: list[str]) -> list[_Item]:
    """Rule 1: the distinct notes of ``digests``, oldest first, without those memory already says."""
    items: dict[tuple[NoteType, str], _Item] = {}
    said = 0
    for digest in by_session(digests):
        for note in digest.notes:
            key = normalise(note.body)
            if not key:
                continue
            said += 1
            found = items.get((note.type, key))
            if found is not None:
                found.last = said
            if found is None:
                items[(note.type, key)] = _Item(
                    note=note,
                    key=key,
                    digests=[digest.id],
                    day=digest.session_day,
                    order=len(items),
                    words=tokens(f"{note.title} {note.body}"),
                    last=said,
                )
            elif digest.id not in found.digests:
                found.digests.append(digest.id)
    # rule 1a before memory's words are taken out: a later statement also outlives an earlier one that
    # memory holds already (that one is then replaced by rule 4a, not restored)
    return [it for it in outlived(list(items.values())) if not any(it.key in text for text in known)]


def outlived(items: list[_Item]) -> list[_Item]:
    """Rule 1a: of two notes of the same review where either supersedes the other ("always use npm", then
    "use pnpm, not npm"; or the other way round), the one said last holds and the other is left out: they
    would otherwise be clustered into one topic that disagrees with itself. A note said again later counts
    from its last mention (:attr:`_Item.last`). Both stay in the journal, which records what was said."""
    out = []
    for it in items:
        newer = [o for o in items if o is not it and o.last > it.last and may_supersede(o.note.body, it.note.body)]
        if not any(_supersedes(o.note.body, it.note.body) or _supersedes(it.note.body, o.note.body) for o in newer):
            out.append(it)
    return out


# -- rule 3: instructions ----------------------------------------------------------------


def instruction_edits(items: list[_Item], instructed: list[_Item], scope: ReviewScope
                      ) -> tuple[list[ProposalDraft], list[_Item]]:
    """Rule 3 with 3a: the drafts editing instruction files, and the notes they took.

    3a. A note that supersedes a bullet line of a present instruction file ("use pnpm, not npm" where
    ``AGENTS.md`` says "- Always use npm to install dependencies") replaces that line, whatever its type
    (agents read the file and the memory: they must not disagree); it may also replace a topic's line
    (rule 4a). The other instruction notes are appended to the first file's working agreements (rule 3).
    One draft per file touched."""
    present = scope.present_instructions()
    if not present or not items:
        return [], []
    files: dict[str, tuple[bytes, list[tuple[str, str]], list[_Item]]] = {}
    appended: list[_Item] = []
    for it in items:
        body = one_line(it.note.body)
        hit = False
        for path, before in present.items():
            data, replaced, its = files.get(path, (before, [], []))
            lines = [ln for ln in _agreements(data) if may_supersede(body, ln) and _supersedes(body, ln)]
            if not lines:
                continue
            # the agreement most like the note ("always use npm to install …" rather than "run npm run lint")
            mine = tokens(body)
            old = max(lines, key=lambda ln: (jaccard(mine, tokens(_statement(ln)[0])), -lines.index(ln)))
            mark = BULLET_MARK.match(old)
            assert mark is not None
            data = _replace_agreements(data, old, mark.group(0) + body)  # every copy of it, outside code
            files[path] = (data, [*replaced, (_statement(old)[0], body)], [*its, it] if it not in its else its)
            hit = True
        if not hit and it in instructed:
            appended.append(it)
    out = []
    taken = [it for _, _, its in files.values() for it in its]
    first = next(iter(present))
    if appended and first not in files:
        edit = instruction_edit(appended, scope)
        if edit is not None:
            out.append(edit)
        taken += appended
        appended = []
    for path, (data, replaced, its) in files.items():
        extra = appended if path == first else []
        after = add_working_agreements(data, [f"- {one_line(it.note.body)}" for it in extra]) if extra else data
        every = [*its, *extra]
        texts = tuple(one_line(it.note.body) for it in every)
        adds = Additions(bullets=tuple(f"- {t}" for t in texts), summary_of=tuple(it.note.title for it in every),
                         parts=(*texts, *(f"replace\0{old}" for old, _ in replaced)), evidence=_evidence(every))
        out.append(instruction_edit_draft(scope, path, present[path], after, adds, replaced))
        taken += extra
    return out, taken


def instruction_edit(items: list[_Item], scope: ReviewScope) -> ProposalDraft | None:
    """Rule 3: one INSTRUCTION draft for the instruction notes among ``items`` (None: there are none)."""
    present = scope.present_instructions()
    if not items or not present:
        return None
    path, before = next(iter(present.items()))
    texts = tuple(one_line(it.note.body) for it in items)
    adds = Additions(
        bullets=tuple(f"- {t}" for t in texts),
        summary_of=tuple(it.note.title for it in items),
        parts=texts,
        evidence=_evidence(items),
    )
    return instruction_draft(scope, path, before, adds)


# -- rule 4: merges -------------------------------------------------------------------------


@attrs.frozen
class _Merge:
    survivor: TopicView
    other: TopicView
    carried: list[str]  # the other's lines the survivor lacks, as bullets
    fingerprint: str


def plan_merges(views: list[TopicView], index: Index, scope: ReviewScope) -> dict[str, _Merge]:
    """Rule 4: the merges of near-duplicate topics, keyed by both of their files (rejected ones left out)."""
    by_file = {v.file: v for v in views}
    pairs: list[tuple[float, str, str]] = []
    for i, a in enumerate(views):
        for b in views[i + 1 :]:
            if a.topic.type != b.topic.type or a.has_code or b.has_code:
                continue
            sim = jaccard(a.all_words, b.all_words)
            if sim >= SIMILARITY:
                pairs.append((-sim, a.file, b.file))
    merged: dict[str, _Merge] = {}
    for _, fa, fb in sorted(pairs):
        if fa in merged or fb in merged:
            continue
        survivor, other = sorted(
            (by_file[fa], by_file[fb]),
            key=lambda v: (index.entry(v.file) is None, -len(v.topic.body.encode()), v.file),
        )
        survivor_norm = normalise(survivor.topic.body)
        carried: list[str] = []
        for line in body_lines(other.topic.body):
            text = BULLET_MARK.sub("", line).strip()
            if HEADING.match(line) or not text:
                continue
            if normalise(text) not in survivor_norm and f"- {text}" not in carried:
                carried.append(f"- {text}")
        fp = fingerprint(ProposalKind.MERGE, survivor.path, [other.path] + [c[2:] for c in carried])
        if fp in scope.rejected:
            continue  # the notes of these topics then route as updates
        merged[fa] = merged[fb] = _Merge(survivor, other, carried, fp)
    return merged


def merge_drafts(
    merged: Mapping[str, _Merge], updates: dict[str, list[_Item]], index: Index, scope: ReviewScope
) -> list[ProposalDraft]:
    """Rule 4's drafts; the notes routed to a survivor (taken from ``updates``) join its MERGE."""
    out: list[ProposalDraft] = []
    for m in sorted({m.survivor.file: m for m in merged.values()}.values(), key=lambda m: m.survivor.file):
        survivor, other = m.survivor, m.other
        notes = updates.pop(survivor.file, [])
        after = append_all(survivor.data, m.carried + [it.bullet for it in notes])
        other_entry = index.entry(other.file)
        survivor_line = entry_line(index, survivor.file)
        out.append(
            draft(
                scope,
                ProposalKind.MERGE,
                title=f"Merge {other.topic.name} into {survivor.topic.name}",
                summary=f"{other.file} folds into {survivor.file} ({plural(len(m.carried), 'line')} carried "
                f"over, {plural(len(notes), 'new note')}); {other.file} is deleted",
                target=survivor.path,
                files={survivor.path: (survivor.data, after), other.path: (other.data, None)},
                index_edits=(
                    (survivor.file, survivor_line, survivor_line),
                    (other.file, other_entry.raw if other_entry else None, None),
                ),
                evidence=_evidence(notes),
                fingerprint=m.fingerprint,
            )
        )
    return out


# -- rule 4a: supersession ------------------------------------------------------------------

_NOTED = re.compile(r"\s*\(noted (?P<day>[^()]*)\)\s*$")


def _statement(line: str) -> tuple[str, str]:
    """(the statement of a body line without its list mark and date, the day it was noted or "")."""
    text = BULLET_MARK.sub("", line).strip()
    m = _NOTED.search(text)
    return (text[: m.start()].strip(), m.group("day")) if m else (text, "")


def _quoted(text: str) -> str:
    return "\u201c" + clip(text, 60) + "\u201d"


def supersession_drafts(
    items: list[_Item], views: list[TopicView], index: Index, scope: ReviewScope
) -> tuple[list[ProposalDraft], list[_Item]]:
    """Rule 4a: (one UPDATE per topic whose statement a note changes, the notes it took).

    The first line (topics in file order) the note supersedes (see
    :mod:`worker.memory.supersede`) is replaced by the note's dated bullet,
    any further line of that topic it supersedes is removed; the topic's
    name, description and index entry follow when they only repeated the
    replaced statement. One supersession per topic per review; a topic
    holding fenced code is left alone.
    """
    out: list[ProposalDraft] = []
    taken: list[_Item] = []
    done: set[str] = set()
    for it in items:
        for v in views:
            if v.file in done or v.has_code:
                continue
            lines = [ln for ln in body_lines(v.topic.body) if not HEADING.match(ln)]
            old = [ln for ln in lines if supersedes(it.note.body, ln)]
            if not old:
                continue
            made = _supersession(it, v, old, index, scope)
            if made is None:
                continue
            out.append(made)
            taken.append(it)
            done.add(v.file)
            break
    return out, taken


def overruled(items: list[_Item], views: list[TopicView], scope: ReviewScope | None = None) -> list[_Item]:
    """Rule 4b: the notes a topic line supersedes while they do not supersede it ("use npm" where memory
    says "use pnpm, not npm"): memory already moved away from what they say, so they are not proposed (a
    topic beside it would disagree with it; accepting one is refused anyway,
    :mod:`worker.memory.contradiction`). Where either supersedes the other (two plain choices, two
    values, a swapped word) the note is the newer statement and goes on to the later rules; a change said
    as one ("use npm, not pnpm", "we moved back to npm") supersedes the line instead (rule 4a)."""
    held = [_statement(ln)[0] for v in views for ln in body_lines(v.topic.body) if not HEADING.match(ln)]
    for data in (scope.present_instructions() if scope is not None else {}).values():  # the agreements too
        held += [_statement(ln)[0] for ln in _agreements(data)]
    return [it for it in items
            if any(may_supersede(ln, it.note.body) and overrules(ln, it.note.body) for ln in held if ln)]


def _replace_agreements(data: bytes, old: str, new: str) -> bytes:
    """``data`` with every agreement (:func:`_agreements`) reading ``old`` replaced by ``new``, line endings
    kept; lines in fenced code stay as they are."""
    out, fenced = [], False
    for raw in data.split(b"\n"):
        ln = raw.decode("utf-8", "replace").rstrip("\r")
        if ln.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and ln == old and "\r" not in ln:
            raw = new.encode("utf-8") + (b"\r" if raw.endswith(b"\r") else b"")
        out.append(raw)
    return b"\n".join(out)


def _agreements(data: bytes) -> list[str]:
    """The bullet lines of an instruction file outside fenced code (an example is no agreement), as
    :func:`~worker.memory.model.replace_line` sees lines."""
    out, fenced = [], False
    for raw in data.split(b"\n"):
        ln = raw.decode("utf-8", "replace").rstrip("\r")
        if ln.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and BULLET_MARK.match(ln) and "\r" not in ln:
            out.append(ln)
    return out


def _old_digests(sources: object) -> str:
    """The digest ids the topic's front matter names as its sources (the old statement's), at most three."""
    ids = sources.get("digests") if isinstance(sources, dict) else None
    ids = [str(i) for i in ids if isinstance(i, str) and len(i) <= 120] if isinstance(ids, list) else []
    return ", ".join(ids[:3]) + (", \u2026" if len(ids) > 3 else "")


def _supersession(
    it: _Item, v: TopicView, old: list[str], index: Index, scope: ReviewScope
) -> ProposalDraft | None:
    data = v.data
    try:
        data = replace_line(data, old[0].rstrip("\r"), it.bullet)
        for line in old[1:]:
            data = replace_line(data, line.rstrip("\r"), None)
    except CairnError:
        return None
    statement, day = _statement(old[0])
    name, description = v.topic.name, v.topic.description
    new_name = clip(it.note.title, NAME_MAX) if normalise(name) == normalise(statement) else name
    new_body = one_line(it.note.body)
    new_description = (
        clip(new_body, DESCRIPTION_MAX) if normalise(description) == normalise(statement) else description
    )
    try:
        if new_name != name:
            data = set_front_matter(data, "name", new_name)
        if new_description != description:
            data = set_front_matter(data, "description", new_description)
        if v.topic.confirmed and it.day[:10] > v.topic.confirmed[:10] and len(it.day) == 10:
            data = set_front_matter(data, "confirmed", it.day)  # the topic file's date moves on with the index's
    except CairnError:
        new_name, new_description, data = name, description, replace_line(v.data, old[0].rstrip("\r"), it.bullet)
        for line in old[1:]:
            data = replace_line(data, line.rstrip("\r"), None)
    entry = index.entry(v.file)
    current = entry.raw if entry else None
    after = current
    if entry is not None and (entry.title, entry.hook) != (new_name, new_description):
        title = new_name if entry.title == name else entry.title
        hook = new_description if entry.hook == description else entry.hook
        if normalise(hook) == normalise(title):
            hook = ""
        after = (format_entry(title, v.file, hook, entry.confirmed) if (title, hook) != (entry.title, entry.hook)
                 else current)
    if entry is not None and after is not None:  # the new note confirms the entry: its date moves on
        after = with_confirmed(attrs.evolve(entry, raw=after), it.day)
    olds = _old_digests(v.topic.sources)
    noted = ", ".join(x for x in (f"noted {day}" if day else "", f"from {olds}" if olds else "") if x)
    was = f"{_quoted(statement)} ({noted})" if noted else _quoted(statement)
    removed = f"; {plural(len(old) - 1, 'more line')} saying the same removed" if len(old) > 1 else ""
    return draft(
        scope,
        ProposalKind.UPDATE,
        title=f"Replace in {v.topic.name}: {_quoted(statement)} \u2192 {_quoted(new_body)}",
        summary=f"{v.file}: {was} \u2192 {_quoted(new_body)} (noted {it.day}, from "
        f"{', '.join(it.digests)}){removed}",
        target=v.path,
        files={v.path: (v.data, data)},
        index_edits=((v.file, current, after),),
        evidence=_evidence([it]),
        fingerprint=fingerprint(ProposalKind.UPDATE, v.path, ["replace", *(_statement(ln)[0] for ln in old), it.key]),
    )


# -- rule 5: updates ------------------------------------------------------------------------


def route_notes(
    items: list[_Item], views: list[TopicView], merged: Mapping[str, _Merge]
) -> tuple[dict[str, list[_Item]], list[_Item]]:
    """Rule 5's routing: (notes per existing topic file — a merge's survivor for a merged one, the rest)."""
    updates: dict[str, list[_Item]] = {}
    pending: list[_Item] = []
    for it in items:
        best: tuple[float, str] | None = None
        for v in views:
            if v.topic.type != it.note.type:
                continue
            sim = v.similarity(it.words)
            if sim >= SIMILARITY and (best is None or (-sim, v.file) < (-best[0], best[1])):
                best = (sim, v.file)
        if best is None:
            pending.append(it)
        else:
            file = merged[best[1]].survivor.file if best[1] in merged else best[1]
            updates.setdefault(file, []).append(it)
    return updates, pending


def update_drafts(
    updates: Mapping[str, list[_Item]], views: list[TopicView], index: Index, scope: ReviewScope
) -> list[ProposalDraft]:
    """Rule 5's drafts: one UPDATE per topic, its notes appended as dated bullets."""
    by_file = {v.file: v for v in views}
    return [
        update_draft(scope, index, file, by_file[file].topic.name, by_file[file].data, _additions(notes))
        for file, notes in sorted(updates.items())
    ]


# -- rule 6: creates ------------------------------------------------------------------------


def _clusters(items: list[_Item]) -> list[list[_Item]]:
    clusters: list[list[_Item]] = []
    for it in items:
        home = next(
            (c for c in clusters if c[0].note.type == it.note.type and any(similar(it.words, o.words) for o in c)),
            None,
        )
        if home is None:
            clusters.append([it])
        else:
            home.append(it)
    return clusters


def _closest(words: frozenset[str], clusters: list[list[_Item]]) -> list[_Item]:
    return max(clusters, key=lambda c: max(jaccard(words, it.words) for it in c))


def create_drafts(
    items: list[_Item], snapshot: MemorySnapshot, index: Index, scope: ReviewScope, full: list[_Item] | None = None,
    views: list[TopicView] | None = None,
) -> list[ProposalDraft]:
    """Rule 6: one CREATE per cluster of similar notes no topic takes. A cluster the index cannot take goes to
    ``full`` (rule 6a) when a topic of memory (``views``) can take its notes; else into the closest topic
    created by this review, of its type if there is one (nothing is dropped: a full index and a memory
    without a topic of the note's type, or none yet, left the note with no proposal at all)."""

    def draft(new: NewTopics, cluster: list[_Item], joining: tuple[_Item, ...] = ()) -> ProposalDraft | None:
        strongest = max(cluster, key=lambda it: it.strength)  # named by its own notes, whatever joins it
        name = clip(strongest.note.title, NAME_MAX)
        body_line = one_line(strongest.note.body)
        description = clip(body_line if normalise(body_line) != normalise(name) else name, DESCRIPTION_MAX)
        return new.draft(scope, strongest.note.type, name, description, _additions([*cluster, *joining]))

    clusters = _clusters(items)
    new = NewTopics(snapshot, index)
    admitted = [c for c in clusters if draft(new, c) is not None]  # whether the index takes a cluster's entry
    if len(admitted) == len(clusters):  # what its bullets do not change: drafted again below, with them
        new = NewTopics(snapshot, index)
        return [d for c in clusters if (d := draft(new, c)) is not None]
    homes = {v.topic.type for v in views or ()}
    joined: dict[int, list[_Item]] = {id(c): [] for c in admitted}
    for cluster in clusters:
        if any(cluster is c for c in admitted):
            continue
        kind = cluster[0].note.type
        if kind in homes or not admitted:
            if full is not None:
                full.extend(cluster)  # rule 6a: an existing topic (or none: a later review)
            continue
        of_kind = [c for c in admitted if c[0].note.type == kind]
        words = frozenset().union(*(it.words for it in cluster))
        joined[id(_closest(words, of_kind or admitted))].extend(cluster)
    new = NewTopics(snapshot, index)
    out = []
    for c in admitted:
        d = draft(new, c, tuple(joined[id(c)]))
        if d is not None and joined[id(c)]:  # it says why notes unlike its own are in it
            d = attrs.evolve(d, title=clip(f"{d.title} (the index is full)", 160), summary=f"{d.summary} {INDEX_FULL_WHY}")
        if d is not None:
            out.append(d)
    return out


def consolidation_drafts(
    items: list[_Item], views: list[TopicView], updates: Mapping[str, list[_Item]], index: Index, scope: ReviewScope,
    unplaced: list[_Item] | None = None,
) -> list[ProposalDraft]:
    """Rule 6a: notes a full index cannot take as new topics move into the closest topic of their type.

    The index gains no line: each note is appended to the existing topic of
    its type it shares most words with (ties: file name), else, when memory
    has no topic of its type, to the closest topic of any type, one UPDATE
    per topic, so nothing is dropped. A topic already updated or merged by
    this review is passed over (one proposal per topic); a note with no topic
    at all is left for a later review, after the index was consolidated; it is put in ``unplaced`` (the
    review counts it as left out, ``E_INDEX_FULL``, so that the user learns why nothing was proposed).
    """
    busy = set(updates)
    home: dict[str, list[_Item]] = {}
    for it in items:
        ranked = sorted(
            (-v.similarity(it.words), v.file) for v in views if v.topic.type == it.note.type and v.file not in busy
        ) or sorted((-v.similarity(it.words), v.file) for v in views if v.file not in busy)  # none of its type
        if ranked:
            home.setdefault(ranked[0][1], []).append(it)
        elif unplaced is not None:
            unplaced.append(it)
    # the closest topic may be only loosely related: the proposal says why the note went there, and how to
    # make room (a rejection keeps the note for a later review)
    return [attrs.evolve(d, title=clip(f"{d.title} (the index is full)", 160),
                         summary=f"{d.summary} {INDEX_FULL_WHY}")
            for d in update_drafts(home, views, index, scope)]


#: what a consolidation proposal (rule 6a) says of itself
INDEX_FULL_WHY = ("The memory index (MEMORY.md) has no room for a new entry within its budget (index_max_lines, "
                  "index_max_bytes: what agents load), so the note is filed under the closest topic of its type. "
                  "Reject it to keep the note for a later review; retire or merge entries to make room.")


# -- the review -------------------------------------------------------------------------------


def review(
    digests: list[PublicDigest], snapshot: MemorySnapshot, scope: ReviewScope | None = None, *,
    left_out: Counter[str] | None = None, **fields: Any
) -> list[ProposalDraft]:
    """Review ``digests`` against one memory root; see the module docstring for the rules.

    ``scope`` (or its fields as keywords) says where the root is and what
    each draft is stamped with. An index that cannot be read raises its
    error code (nothing is proposed rather than proposals that could not be
    applied). A note a full index cannot take and no topic can hold (rule 6a)
    is counted in ``left_out`` as ``E_INDEX_FULL``.
    """
    scope = ReviewScope.of(scope, fields)
    assert len(digests) <= MAX_DIGESTS, f"a review takes at most {MAX_DIGESTS} digests"
    index = snapshot.parsed_index()
    views = [
        topic_view(name, scope.path(name), tf.topic, tf.data)
        for name, tf in sorted(snapshot.topics.items())
        if tf.topic is not None
    ]
    items = fresh_notes(digests, scope.known_texts(snapshot))
    # rule 4b before the instructions: a note memory or an agreement already moved away from is not proposed
    gone = overruled(items, views, scope)
    items = [it for it in items if it not in gone]
    instructed = [it for it in items if is_instruction(it.note)] if scope.present_instructions() else []
    drafts: list[ProposalDraft] = []
    edits, agreed = instruction_edits(items, instructed, scope)
    drafts += edits
    instructed = [it for it in instructed if it not in agreed]
    superseding, taken = supersession_drafts([it for it in items if it not in instructed], views, index, scope)
    drafts += superseding
    taken += [it for it in agreed if it not in taken]
    replaced = {d.target for d in superseding}
    views = [v for v in views if v.path not in replaced]  # one proposal per topic: its merge waits
    merged = plan_merges(views, index, scope)
    updates, pending = route_notes([it for it in items if it not in instructed and it not in taken], views, merged)
    merged_files = set(merged)
    drafts += merge_drafts(merged, updates, index, scope)
    drafts += update_drafts(updates, views, index, scope)
    full: list[_Item] = []
    drafts += create_drafts(pending, snapshot, index, scope, full, views)
    unplaced: list[_Item] = []
    drafts += consolidation_drafts(full, views, {**dict.fromkeys(merged_files, []), **updates}, index, scope,
                                   unplaced)
    if unplaced and left_out is not None:
        left_out[str(ErrorCode.INDEX_FULL)] += len(unplaced)
    drafts = unrejected(drafts, scope)
    return ordered(drafts + index_maintenance(snapshot, drafts, scope))
