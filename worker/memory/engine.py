"""The embedded review engine: digest notes → proposal drafts, deterministic and offline.

Input is a bounded scope (at most 20 public digests, one memory root's
snapshot, the configured instruction files, fingerprints of past
rejections); output is a list of :class:`ProposalDraft`, possibly empty
(No action). The same input always gives the same drafts in the same order.

Rules, in the order they are applied:

1. **Notes.** Digests are taken oldest first (``created``, then id), notes
   in digest order. The same note (type + normalised body) from several
   digests is one note with all their evidence. A note whose normalised
   body already appears verbatim in any topic body or instruction file is
   dropped: memory already says it.
2. **Similarity** is token Jaccard: words are casefolded, split on
   non-alphanumerics, stripped of a plural ``s`` and of stop words
   (articles, pronouns, modal and polarity words such as "always",
   "never", "don't" — these say *how*, not *what about* — and words like
   "repo" or "project" that every note could use). Two texts are similar at
   :data:`SIMILARITY` = 0.5 or more: half of their distinct content words
   shared. That is deliberately conservative — paraphrases group, merely
   related statements do not — because a note filed under the wrong topic
   misleads while an extra small topic costs one index line. A note is
   compared with a topic's name + description and with each line of its
   body (the best match counts); notes with each other on title + body;
   topics with each other on all their words.
3. **Instructions.** A ``feedback`` note whose title or body is an
   instruction to the assistant (starts with "never", "always", "don't",
   "do not", "avoid" or "stop", after "please" / "you should" / "from now
   on") becomes an INSTRUCTION edit of the first configured instruction file
   that exists: one bullet per note at the end of its ``## Working
   agreements`` section (the section is appended if missing). With no
   instruction file present it is treated as an ordinary topic note.
4. **Merge.** Two parsed topics of the same type that are similar are near
   duplicates: one MERGE keeps the survivor (the one with an index entry,
   else the longer body, else the first name) with the union of their lines
   (the other's body lines it lacks are appended as bullets; headings
   dropped) and deletes the other with its index entry. Topics containing
   fenced code are never merged. Best pairs first; a topic is in one merge.
   Its fingerprint covers the merge itself (survivor, deleted topic, lines
   carried over), not the notes that join it, so a rejected merge stays
   rejected and its notes are proposed as updates instead.
5. **Update.** A note similar to an existing topic of its type is appended
   to it as a bullet ``- body (noted YYYY-MM-DD)``. Several notes for one
   topic make one UPDATE; notes for a merged topic join that MERGE.
6. **Create.** Remaining notes of one type are clustered (a note joins the
   first cluster holding a similar note); each cluster is one CREATE: name =
   the title of its strongest note (most digests, then most turns, then
   earliest), description and index hook = that note's body on one line
   (clipped; no hook when it only repeats the title), type = the note type,
   body = one bullet per note. The file is
   :func:`topic_filename` of the name, made unique in the root. A create the
   index cannot take (over 200 entries or past line 200) is not proposed.
7. **Dangling entry.** An index entry (the first one for its file) that
   links a plain topic file name (``*.md`` directly in the root, see
   :func:`~worker.memory.model.check_topic_file`) naming no file of the
   root is removed by one DELETE per entry: the index edit ``(file, entry,
   None)`` and no file change; the absent file is a freshness guard
   (``files`` maps it to ``(None, None)``: should it appear, the proposal is
   stale). Names compare case-insensitively, so a link that resolves on a
   case-insensitive file system is never called dangling; links with a
   path, an anchor or a URL are not judged at all.
8. **Orphan topic.** A parsed topic file (valid front matter) that no index
   entry links (compared as in rule 7, ``./`` and ``#anchor`` ignored) gets
   its entry back by one UPDATE: ``- [name](file.md) - description``, name
   and hook clipped like a create's (no hook when it only repeats the
   name), added after the last entry. The topic is a freshness guard
   (``files`` maps it to its unchanged bytes) and is not written. An entry
   the index cannot take after the review's creates (the limit of rule 6)
   is not proposed. Rules 7 and 8 are housekeeping of the snapshot alone
   (no evidence) and are computed here whichever provider drafted the
   other proposals (:func:`index_maintenance`). They leave alone every
   file another draft of the same review touches — a topic being merged
   away or updated, a created file — so two proposals of one review never
   contend for one entry; a later review takes it up. Their fingerprint
   covers the rule, the index and the file name only: a rejected repair
   stays rejected even when the entry's or the topic's wording changes.
9. **Rejections.** A draft whose fingerprint (sha256 over kind, target and
   the normalised added content, evidence dates excluded; rules 7 and 8
   as stated there) is in ``rejected`` is dropped: the same proposal is
   never made again.

Drafts are ordered MERGE, DELETE, UPDATE, CREATE, INSTRUCTION — removals
first, then what memory gains — then by target.
Index edits are entry-level ``(file, before, after)`` tuples for
:func:`~worker.memory.model.apply_index_edits`; an edit with ``before ==
after`` is a freshness guard only (the topic must keep its captured entry).
``files`` holds topic and instruction files only, never the index; a file
whose after-state is its before-state (``(None, None)``: it must stay
absent) is likewise a guard, verified on application and never written.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import time
import unicodedata
from collections.abc import Mapping, Sequence

import attrs
from cairn.protocol.digest import Note
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.journal import PublicDigest
from cairn.protocol.memory import ProposalKind
from cairn.protocol.vocab import NoteType
from cairn.worker.memory.model import (
    INDEX_NAME,
    IndexEditTuple,
    MemorySnapshot,
    Topic,
    add_working_agreements,
    append_to_topic,
    apply_index_edits,
    check_topic_file,
    entry_line,
    format_entry,
    one_line,
    render_topic,
    topic_filename,
)

#: most digests one review may take (the caller bounds the scope)
MAX_DIGESTS = 20
#: token Jaccard at or above which two texts are about the same thing
SIMILARITY = 0.5
#: longest description / index hook of a created topic
DESCRIPTION_MAX = 150

_KIND_ORDER = {
    ProposalKind.MERGE: 0,
    ProposalKind.DELETE: 1,
    ProposalKind.UPDATE: 2,
    ProposalKind.CREATE: 3,
    ProposalKind.INSTRUCTION: 4,
}
#: longest name of a created topic (and of an entry restored for an orphan)
NAME_MAX = 120
_STOP = frozenset(
    """a an the and or but if then so of to in on at by for from with without into onto as is are was were be
    been being it its this that these those there here i me my we us our you your he she they them their
    do does did don dont not no never always please should must can could would will shall may might
    instead also just only very use using used when while than which who what how all any each every
    avoid stop s t repo repository codebase project""".split()
)
_INSTRUCTION = re.compile(
    r"^(?:(?:please|kindly)[ ,]+|you\s+should\s+|from\s+now\s+on[ ,]+)*(?:never|always|don'?t|do\s+not|avoid|stop)\b",
    re.I,
)
_FENCE = re.compile(r"^\s*(```|~~~)", re.M)
_HEADING = re.compile(r"^\s*#")
_BULLET_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


@attrs.frozen(kw_only=True)
class ProposalDraft:
    """A proposal before it has an id and bundles: the lead of a review turns it into a Proposal."""

    kind: ProposalKind
    title: str
    summary: str
    target: str  # main affected path (workspace-relative)
    files: Mapping[str, tuple[bytes | None, bytes | None]]  # path -> (before, after); None = absent / delete
    index_path: str  # the MEMORY.md the index edits apply to
    index_edits: tuple[IndexEditTuple, ...]  # (topic file, before line | None, after line | None)
    evidence: tuple[str, ...]  # digest ids, sorted
    fingerprint: str
    review: str
    created: float


# -- text normalisation ---------------------------------------------------------


def normalise(text: str) -> str:
    """Casefolded, one-line, NFKC text without trailing punctuation: the verbatim comparison key."""
    text = unicodedata.normalize("NFKC", text).replace("\u2019", "'").casefold()
    return one_line(text).rstrip(" .!;,")


def tokens(text: str) -> frozenset[str]:
    words = re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", text).replace("\u2019", "'").casefold())
    out = set()
    for w in words:
        if w in _STOP:
            continue
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        if w not in _STOP:
            out.add(w)
    return frozenset(out)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def is_instruction(note: Note) -> bool:
    """A feedback note telling the assistant to always/never do something."""
    if note.type != NoteType.FEEDBACK:
        return False
    return any(_INSTRUCTION.match(t.replace("\u2019", "'").strip()) for t in (note.title, note.body))


# -- working items ----------------------------------------------------------------


@attrs.define
class _Item:
    note: Note
    key: str  # normalised body
    digests: list[str]
    created: float  # of the first digest that carried it
    order: int
    words: frozenset[str] = frozenset()

    @property
    def bullet(self) -> str:
        day = time.strftime("%Y-%m-%d", time.gmtime(self.created))
        return f"- {one_line(self.note.body)} (noted {day})"

    @property
    def strength(self) -> tuple[int, int, int]:
        return (len(self.digests), len(self.note.turn_ids), -self.order)


@attrs.define
class _TopicView:
    file: str
    path: str
    topic: Topic
    data: bytes
    head: frozenset[str]
    lines: list[frozenset[str]]
    all_words: frozenset[str]

    def similarity(self, words: frozenset[str]) -> float:
        return max([jaccard(words, self.head), *(jaccard(words, line) for line in self.lines)])


def _body_lines(body: str) -> list[str]:
    return [line for line in body.splitlines() if line.strip()]


def _view(file: str, path: str, topic: Topic, data: bytes) -> _TopicView:
    lines = [
        tokens(_BULLET_MARK.sub("", line)) for line in _body_lines(topic.body) if not _HEADING.match(line)
    ]
    head = tokens(f"{topic.name} {topic.description}")
    all_words = head.union(*lines) if lines else head
    return _TopicView(
        file=file,
        path=path,
        topic=topic,
        data=data,
        head=head,
        lines=[x for x in lines if x],
        all_words=all_words,
    )


def _collect(digests: list[PublicDigest]) -> list[_Item]:
    items: dict[tuple[NoteType, str], _Item] = {}
    for digest in sorted(digests, key=lambda d: (d.created, d.id)):
        for note in digest.notes:
            key = normalise(note.body)
            if not key:
                continue
            found = items.get((note.type, key))
            if found is None:
                items[(note.type, key)] = _Item(
                    note=note,
                    key=key,
                    digests=[digest.id],
                    created=digest.created,
                    order=len(items),
                    words=tokens(f"{note.title} {note.body}"),
                )
            elif digest.id not in found.digests:
                found.digests.append(digest.id)
    return list(items.values())


def _fingerprint(kind: ProposalKind, target: str, parts: list[str]) -> str:
    h = hashlib.sha256()
    for part in [str(kind), target, *sorted(normalise(p) for p in parts)]:
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def _evidence(items: list[_Item]) -> tuple[str, ...]:
    return tuple(sorted({d for item in items for d in item.digests}))


def _append_all(data: bytes, bullets: list[str]) -> bytes:
    for bullet in bullets:
        data = append_to_topic(data, bullet)
    return data


def _clip(text: str, limit: int) -> str:
    text = one_line(text)
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if cut.rfind(" ") > limit // 2:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:-") + "…"


def admit_entry(index: bytes | None, name: str, file: str, description: str) -> tuple[bytes, str] | None:
    """The index (``None``: none yet) with an entry for ``file`` added, and that entry; None when it is full.

    The hook is the description, or nothing when it only repeats the name.
    """
    hook = description if normalise(description) != normalise(name) else ""
    line = format_entry(name, file, hook)
    try:
        return apply_index_edits(index, [(file, None, line)]), line
    except CairnError as exc:
        if exc.code == ErrorCode.INDEX_FULL:
            return None
        raise


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


# -- the review -----------------------------------------------------------------------


def review(
    digests: list[PublicDigest],
    snapshot: MemorySnapshot,
    *,
    root_rel: str,
    index_rel: str,
    instruction_files: Mapping[str, bytes | None],
    rejected: set[str],
    now: float,
    review_id: str,
) -> list[ProposalDraft]:
    """Review ``digests`` against one memory root; see the module docstring for the rules.

    ``root_rel`` / ``index_rel``: the root and its ``MEMORY.md`` as paths in
    the drafts. ``instruction_files``: configured instruction files in
    configured order, their bytes or ``None`` when absent. ``now`` and
    ``review_id`` are stamped on each draft. An index that cannot be read
    raises its error code (nothing is proposed rather than proposals that
    could not be applied).
    """
    assert len(digests) <= MAX_DIGESTS, f"a review takes at most {MAX_DIGESTS} digests"
    index = snapshot.parsed_index()

    def path_of(file: str) -> str:
        return posixpath.join(root_rel, file) if root_rel else file

    views = [
        _view(name, path_of(name), tf.topic, tf.data)
        for name, tf in sorted(snapshot.topics.items())
        if tf.topic is not None
    ]
    by_file = {v.file: v for v in views}

    instruction_path: str | None = None
    instruction_data: bytes | None = None
    known_text: list[str] = [normalise(v.topic.body) for v in views]
    for path, data in instruction_files.items():
        if data is None:
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        known_text.append(normalise(text))
        if instruction_path is None:
            instruction_path, instruction_data = path, data

    items = [it for it in _collect(digests) if not any(it.key in known for known in known_text)]

    drafts: list[ProposalDraft] = []

    def add(draft: ProposalDraft) -> None:
        if draft.fingerprint not in rejected:
            drafts.append(draft)

    # 1. instruction notes
    instruction_items = [it for it in items if instruction_path is not None and is_instruction(it.note)]
    topic_items = [it for it in items if it not in instruction_items]
    if instruction_items and instruction_path is not None:
        bullets = [f"- {one_line(it.note.body)}" for it in instruction_items]
        after = add_working_agreements(instruction_data, bullets)
        name = posixpath.basename(instruction_path)
        add(
            ProposalDraft(
                kind=ProposalKind.INSTRUCTION,
                title=f"Add {_plural(len(bullets), 'working agreement')} to {name}",
                summary="; ".join(_clip(it.note.title, 80) for it in instruction_items),
                target=instruction_path,
                files={instruction_path: (instruction_data, after)},
                index_path=index_rel,
                index_edits=(),
                evidence=_evidence(instruction_items),
                fingerprint=_fingerprint(
                    ProposalKind.INSTRUCTION, instruction_path, [b[2:] for b in bullets]
                ),
                review=review_id,
                created=now,
            )
        )

    # 2. merges of near-duplicate topics
    pairs: list[tuple[float, str, str]] = []
    for i, a in enumerate(views):
        for b in views[i + 1 :]:
            if a.topic.type != b.topic.type or _FENCE.search(a.topic.body) or _FENCE.search(b.topic.body):
                continue
            sim = jaccard(a.all_words, b.all_words)
            if sim >= SIMILARITY:
                pairs.append((-sim, a.file, b.file))
    merged: dict[str, tuple[_TopicView, _TopicView, list[str], str]] = {}  # either file -> merge
    for _, fa, fb in sorted(pairs):
        if fa in merged or fb in merged:
            continue
        a, b = by_file[fa], by_file[fb]
        survivor, other = sorted(
            (a, b), key=lambda v: (index.entry(v.file) is None, -len(v.topic.body.encode()), v.file)
        )
        survivor_norm = normalise(survivor.topic.body)
        carried: list[str] = []
        for line in _body_lines(other.topic.body):
            text = _BULLET_MARK.sub("", line).strip()
            if _HEADING.match(line) or not text:
                continue
            if normalise(text) not in survivor_norm and f"- {text}" not in carried:
                carried.append(f"- {text}")
        fingerprint = _fingerprint(ProposalKind.MERGE, survivor.path, [other.path] + [c[2:] for c in carried])
        if fingerprint in rejected:
            continue  # the notes of these topics then route as updates
        merged[fa] = merged[fb] = (survivor, other, carried, fingerprint)

    # 3. route topic notes: existing topic of the same type, else new clusters
    updates: dict[str, list[_Item]] = {}
    pending: list[_Item] = []
    for it in topic_items:
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
            file = merged[best[1]][0].file if best[1] in merged else best[1]
            updates.setdefault(file, []).append(it)

    for survivor, other, carried, fingerprint in sorted(
        {m[0].file: m for m in merged.values()}.values(), key=lambda m: m[0].file
    ):
        notes = updates.pop(survivor.file, [])
        after = _append_all(survivor.data, carried + [it.bullet for it in notes])
        other_entry = index.entry(other.file)
        survivor_line = entry_line(index, survivor.file)
        drafts.append(
            ProposalDraft(
                kind=ProposalKind.MERGE,
                title=f"Merge {other.topic.name} into {survivor.topic.name}",
                summary=f"{other.file} folds into {survivor.file} ({_plural(len(carried), 'line')} carried over, "
                f"{_plural(len(notes), 'new note')}); {other.file} is deleted",
                target=survivor.path,
                files={survivor.path: (survivor.data, after), other.path: (other.data, None)},
                index_path=index_rel,
                index_edits=(
                    (survivor.file, survivor_line, survivor_line),
                    (other.file, other_entry.raw if other_entry else None, None),
                ),
                evidence=_evidence(notes),
                fingerprint=fingerprint,
                review=review_id,
                created=now,
            )
        )

    for file, notes in sorted(updates.items()):
        v = by_file[file]
        current = entry_line(index, file)
        after = _append_all(v.data, [it.bullet for it in notes])
        add(
            ProposalDraft(
                kind=ProposalKind.UPDATE,
                title=f"Add {_plural(len(notes), 'note')} to {v.topic.name}",
                summary="; ".join(_clip(it.note.title, 80) for it in notes),
                target=v.path,
                files={v.path: (v.data, after)},
                index_path=index_rel,
                index_edits=((file, current, current),),
                evidence=_evidence(notes),
                fingerprint=_fingerprint(ProposalKind.UPDATE, v.path, [it.key for it in notes]),
                review=review_id,
                created=now,
            )
        )

    # 4. clusters of new notes become new topics
    clusters: list[list[_Item]] = []
    for it in pending:
        home = next(
            (
                c
                for c in clusters
                if c[0].note.type == it.note.type and any(jaccard(it.words, o.words) >= SIMILARITY for o in c)
            ),
            None,
        )
        if home is None:
            clusters.append([it])
        else:
            home.append(it)
    taken = {n.casefold() for n in (*snapshot.topics, *snapshot.refused, INDEX_NAME)}
    taken |= {e.file.casefold() for e in index.entries}
    simulated = snapshot.index
    for cluster in clusters:
        strongest = max(cluster, key=lambda it: it.strength)
        name = _clip(strongest.note.title, NAME_MAX)
        body_line = one_line(strongest.note.body)
        description = _clip(body_line if normalise(body_line) != normalise(name) else name, DESCRIPTION_MAX)
        file = topic_filename(name)
        stem, n = file[: -len(".md")], 2
        while file.casefold() in taken:
            suffix = f"-{n}"
            file = f"{stem[: 57 - len(suffix)].rstrip('-')}{suffix}.md"
            n += 1
        kind = strongest.note.type
        body = "\n" + "".join(it.bullet + "\n" for it in cluster)
        data = render_topic(name, description, kind, body)
        admitted = admit_entry(simulated, name, file, description)
        if admitted is None:
            continue
        simulated, line = admitted
        taken.add(file.casefold())
        path = path_of(file)
        add(
            ProposalDraft(
                kind=ProposalKind.CREATE,
                title=f"New {kind} memory: {name}",
                summary="; ".join(_clip(it.note.title, 80) for it in cluster),
                target=path,
                files={path: (None, data)},
                index_path=index_rel,
                index_edits=((file, None, line),),
                evidence=_evidence(cluster),
                fingerprint=_fingerprint(ProposalKind.CREATE, path, [it.key for it in cluster]),
                review=review_id,
                created=now,
            )
        )

    drafts += index_maintenance(
        snapshot, drafts, root_rel=root_rel, index_rel=index_rel, rejected=rejected, now=now, review_id=review_id
    )
    drafts.sort(key=lambda d: (_KIND_ORDER[d.kind], d.target))
    return drafts


# -- index maintenance (rules 7 and 8) ----------------------------------------------------


def _maintenance_fingerprint(rule: str, index_rel: str, file: str) -> str:
    """The identity of one index repair: its rule, its index and the file name, nothing else."""
    h = hashlib.sha256()
    for part in ("index-maintenance", rule, index_rel, file):
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def _is_topic_name(file: str) -> bool:
    try:
        check_topic_file(file)
    except CairnError:
        return False
    return True


def _linked_name(link: str) -> str:
    """The root file an entry's link names, for comparisons: anchor and ``./`` dropped, casefolded."""
    return posixpath.normpath(link.split("#", 1)[0] or ".").casefold()


def index_maintenance(
    snapshot: MemorySnapshot,
    drafts: Sequence[ProposalDraft],
    *,
    root_rel: str,
    index_rel: str,
    rejected: set[str],
    now: float,
    review_id: str,
) -> list[ProposalDraft]:
    """Rules 7 and 8: DELETE drafts for dangling entries, UPDATE drafts restoring orphans' entries.

    ``drafts`` are the review's other drafts for this root, already without
    rejected ones: files they touch are left alone, and the entries they add
    count against the index bound before any restored entry. Deterministic:
    entries in index order, orphans by file name. Drafts whose fingerprint
    is in ``rejected`` are not returned (and take no room in the index).
    """
    index = snapshot.parsed_index()

    def path_of(file: str) -> str:
        return posixpath.join(root_rel, file) if root_rel else file

    touched_paths = {p.casefold() for d in drafts for p in d.files}
    touched_entries = {f.casefold() for d in drafts if d.index_path == index_rel for f, _, _ in d.index_edits}

    def touched(file: str) -> bool:
        return file.casefold() in touched_entries or path_of(file).casefold() in touched_paths

    present = {n.casefold() for n in (*snapshot.topics, *snapshot.refused)}
    out: list[ProposalDraft] = []

    # 7. entries linking a topic file the root does not have
    seen: set[str] = set()
    for entry in index.entries:
        if entry.file in seen:
            continue  # a later duplicate is an ordinary line, never "the entry"
        seen.add(entry.file)
        if not _is_topic_name(entry.file) or entry.file.casefold() in present or touched(entry.file):
            continue
        fingerprint = _maintenance_fingerprint("dangling-entry", index_rel, entry.file)
        if fingerprint in rejected:
            continue
        path = path_of(entry.file)
        out.append(
            ProposalDraft(
                kind=ProposalKind.DELETE,
                title=f"Remove the index entry for missing {entry.file}",
                summary=f"{INDEX_NAME} line {entry.line + 1} links {entry.file}, which is not in the memory "
                "root; only that entry is removed",
                target=path,
                files={path: (None, None)},  # guard: the file must still be absent
                index_path=index_rel,
                index_edits=((entry.file, entry.raw, None),),
                evidence=(),
                fingerprint=fingerprint,
                review=review_id,
                created=now,
            )
        )

    # 8. parsed topics no entry links, after the entries the review's other drafts add
    simulated = snapshot.index
    for d in drafts:
        added = [e for e in d.index_edits if e[1] is None and e[2] is not None]
        if d.index_path == index_rel and added:
            simulated = apply_index_edits(simulated, added)
    linked = {_linked_name(e.file) for e in index.entries}
    for file, tf in sorted(snapshot.topics.items()):
        if tf.topic is None or not _is_topic_name(file) or file.casefold() in linked or touched(file):
            continue
        fingerprint = _maintenance_fingerprint("orphan-topic", index_rel, file)
        if fingerprint in rejected:
            continue
        name = _clip(tf.topic.name, NAME_MAX)
        description = _clip(tf.topic.description, DESCRIPTION_MAX)
        admitted = admit_entry(simulated, name, file, description)
        if admitted is None:
            continue
        simulated, line = admitted
        path = path_of(file)
        out.append(
            ProposalDraft(
                kind=ProposalKind.UPDATE,
                title=f"Add the missing index entry for {file}",
                summary=f"{file} ({tf.topic.type}) has no entry in {INDEX_NAME}, so agents reading the index "
                "never load it; the entry gives its name and description",
                target=path,
                files={path: (tf.data, tf.data)},  # guard: the topic must keep its bytes; it is not written
                index_path=index_rel,
                index_edits=((file, None, line),),
                evidence=(),
                fingerprint=fingerprint,
                review=review_id,
                created=now,
            )
        )
    return out
