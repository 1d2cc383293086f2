"""Index housekeeping: rules 7 and 8 of a review, computed from the snapshot alone.

Decision record: docs/adr/0006-index-housekeeping.md. Both rules run for
every reviewed root whichever provider drafted the other proposals (the
embedded engine, the remote model, or none: a root with no notes gets its
housekeeping only), and carry no evidence.

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
   name), added after the last entry. The topic may be hand-written: its
   name and description enter the index as memory text
   (:func:`~cairn.protocol.text.memory_text`: control characters and ANSI
   sequences removed), and a name left blank by that is the file name. The
   topic is a freshness guard (``files`` maps it to its unchanged bytes)
   and is not written. An entry the index cannot take after the review's
   creates is not proposed.

Both leave alone every file another draft of the same review touches — a
topic being merged away or updated, a created file — so two proposals of
one review never contend for one entry; a later review takes it up. Their
fingerprint (:func:`~worker.memory.fingerprints.repair_fingerprint`)
covers the rule, the index and the file name only: a rejected repair stays
rejected even when the entry's or the topic's wording changes. Pure.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from cairn.protocol.errors import CairnError
from cairn.protocol.memory import ProposalKind
from cairn.protocol.text import blank, memory_text
from cairn.worker.memory.drafts import (
    DESCRIPTION_MAX,
    NAME_MAX,
    ProposalDraft,
    ReviewScope,
    admit_entry,
    clip,
    draft,
)
from cairn.worker.memory.fingerprints import repair_fingerprint
from cairn.worker.memory.model import INDEX_NAME, MemorySnapshot, apply_index_edits, check_topic_file


def _is_topic_name(file: str) -> bool:
    try:
        check_topic_file(file)
    except CairnError:
        return False
    return True


def _linked_name(link: str) -> str:
    """The root file an entry's link names, for comparisons: anchor and ``./`` dropped, casefolded."""
    return posixpath.normpath(link.split("#", 1)[0] or ".").casefold()


def _entry_texts(file: str, name: str, description: str) -> tuple[str, str]:
    """The title and hook of a restored entry: a hand-written topic's name and description as memory text
    (no control character, an ANSI escape sequence removed whole: the index is what agents load and a
    terminal prints), clipped like a create's; a name that is nothing but controls is the file's name."""
    title = clip(memory_text(name), NAME_MAX)
    return (title if not blank(title) else file), clip(memory_text(description), DESCRIPTION_MAX)


class _Touched:
    """Files and entries the review's other drafts of this root touch: housekeeping leaves them alone."""

    def __init__(self, drafts: Sequence[ProposalDraft], scope: ReviewScope) -> None:
        self._scope = scope
        self._paths = {p.casefold() for d in drafts for p in d.files}
        self._entries = {f.casefold() for d in drafts if d.index_path == scope.index_rel for f, _, _ in d.index_edits}

    def __call__(self, file: str) -> bool:
        return file.casefold() in self._entries or self._scope.path(file).casefold() in self._paths


def dangling_entries(snapshot: MemorySnapshot, touched: _Touched, scope: ReviewScope) -> list[ProposalDraft]:
    """Rule 7: a DELETE of each entry linking a topic file the root does not have."""
    present = {n.casefold() for n in (*snapshot.topics, *snapshot.refused)}
    out: list[ProposalDraft] = []
    seen: set[str] = set()
    for entry in snapshot.parsed_index().entries:
        if entry.file in seen:
            continue  # a later duplicate is an ordinary line, never "the entry"
        seen.add(entry.file)
        if not _is_topic_name(entry.file) or entry.file.casefold() in present or touched(entry.file):
            continue
        fingerprint = repair_fingerprint("dangling-entry", scope.index_rel, entry.file)
        if fingerprint in scope.rejected:
            continue
        path = scope.path(entry.file)
        out.append(
            draft(
                scope,
                ProposalKind.DELETE,
                title=f"Remove the index entry for missing {entry.file}",
                summary=f"{INDEX_NAME} line {entry.line + 1} links {entry.file}, which is not in the memory "
                "root; only that entry is removed",
                target=path,
                files={path: (None, None)},  # guard: the file must still be absent
                index_edits=((entry.file, entry.raw, None),),
                evidence=(),
                fingerprint=fingerprint,
            )
        )
    return out


def orphan_topics(
    snapshot: MemorySnapshot, drafts: Sequence[ProposalDraft], touched: _Touched, scope: ReviewScope
) -> list[ProposalDraft]:
    """Rule 8: an UPDATE adding the entry of each parsed topic no entry links.

    The entries ``drafts`` add count against the index bound first.
    """
    simulated = snapshot.index
    for d in drafts:
        added = [e for e in d.index_edits if e[1] is None and e[2] is not None]
        if d.index_path == scope.index_rel and added:
            simulated = apply_index_edits(simulated, added, scope.budget)
    linked = {_linked_name(e.file) for e in snapshot.parsed_index().entries}
    out: list[ProposalDraft] = []
    for file, tf in sorted(snapshot.topics.items()):
        if tf.topic is None or not _is_topic_name(file) or file.casefold() in linked or touched(file):
            continue
        fingerprint = repair_fingerprint("orphan-topic", scope.index_rel, file)
        if fingerprint in scope.rejected:
            continue
        name, description = _entry_texts(file, tf.topic.name, tf.topic.description)
        admitted = admit_entry(simulated, name, file, description, scope.budget, tf.topic.confirmed)
        if admitted is None:
            continue
        simulated, line = admitted
        path = scope.path(file)
        out.append(
            draft(
                scope,
                ProposalKind.UPDATE,
                title=f"Add the missing index entry for {file}",
                summary=f"{file} ({tf.topic.type}) has no entry in {INDEX_NAME}, so agents reading the index "
                "never load it; the entry gives its name and description",
                target=path,
                files={path: (tf.data, tf.data)},  # guard: the topic must keep its bytes; it is not written
                index_edits=((file, None, line),),
                evidence=(),
                fingerprint=fingerprint,
            )
        )
    return out


def index_maintenance(
    snapshot: MemorySnapshot, drafts: Sequence[ProposalDraft], scope: ReviewScope
) -> list[ProposalDraft]:
    """Rules 7 and 8: DELETE drafts for dangling entries, UPDATE drafts restoring orphans' entries.

    ``drafts`` are the review's other drafts for this root, already without
    rejected ones: files they touch are left alone, and the entries they add
    count against the index bound before any restored entry. Deterministic:
    entries in index order, orphans by file name. Drafts whose fingerprint
    is in ``scope.rejected`` are not returned (and take no room in the
    index). An index that cannot be read raises its error code.
    """
    snapshot.parsed_index()
    touched = _Touched(drafts, scope)
    return dangling_entries(snapshot, touched, scope) + orphan_topics(snapshot, drafts, touched, scope)
