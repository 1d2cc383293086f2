"""Shared working notes: consolidated into memory by a general review, then disposed of through a proposal.

Working notes are untracked, machine-local Markdown files that several
sessions write into (``notesDirs``, default ``.agents/notes``; each entry a
workspace-relative folder, files ``*.md`` directly inside it). They are not
journal input: a general review reads them whole and treats each as one
more source of notes beside the digests.

* **Admission** (:func:`read_notes`). A note is admitted when it is a
  regular UTF-8 file of at most :data:`NOTE_MAX_BYTES`, quiet (unchanged for
  :data:`QUIET_SECONDS`, so a note being written is left alone) and every
  item fits a note body; at most :data:`MAX_NOTES` per review, least
  recently changed first, so no note starves behind others. A notes folder
  (or a component of it) that is a symlink or not a directory is never
  followed: the review goes on without it and reports the code. A note is
  never read through a symlink either.
* **Items** (:func:`items`). Each bullet and each paragraph (headings and
  front matter dropped) is one ``project`` note whose evidence is the
  note's id ``n<sha256[:16]>`` of its exact bytes.
* **Disposition** (:func:`dispositions`). Once a review's drafts exist, a
  note is *fully consolidated* when every item is either already said by
  memory (the engine's known texts) or carried verbatim by a draft of this
  review. Such a note gets one DISPOSITION draft that deletes it: its
  before-state is the note's exact bytes, its ``requires`` the fingerprints
  of the drafts that carry its items. A note cited by name in memory or an
  instruction file is never disposed of, nor one with an item nothing
  carries (it waits until memory holds it, e.g. after its extraction is
  applied, and is proposed again then).

Application is the ordinary checked write of :mod:`worker.memory.apply`: a
disposition applies only once every required proposal is applied, the
note's bytes must still be exactly the recorded ones (a changed note makes
the proposal stale and is never removed), and the removed bytes stay in the
private, content-addressed bundle store, so undo restores the note byte for
byte. An undone disposition is not proposed again for the same bytes.
"""

from __future__ import annotations

import hashlib
import re
import stat
from collections.abc import Iterable, Mapping

import attrs
from cairn.protocol.digest import Note
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.journal import PublicDigest
from cairn.protocol.memory import ProposalKind
from cairn.protocol.vocab import NoteType, Trigger
from cairn.state.fsdir import PinnedDir
from cairn.worker.memory.drafts import ProposalDraft, ReviewScope, clip, draft, plural
from cairn.worker.memory.fingerprints import fingerprint
from cairn.worker.memory.similarity import normalise
from cairn.worker.memory.store import notes_dirs

QUIET_SECONDS = 300.0
MAX_NOTES = 10
NOTE_MAX_BYTES = 64 << 10
ITEM_MAX = 2000  # a note body's bound
TITLE_MAX = 120

_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")


@attrs.frozen(kw_only=True)
class WorkingNote:
    path: str  # workspace-relative
    data: bytes
    changed: float  # mtime
    items: tuple[str, ...]

    @property
    def sha(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def id(self) -> str:
        return "n" + self.sha[:16]

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


def items(text: str) -> tuple[str, ...]:
    """Bullets and paragraphs of a Markdown note, one line each (headings and front matter dropped)."""
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":
        end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), None)
        if end is not None:
            lines = lines[end + 1:]
    out: list[str] = []
    para: list[str] = []

    def flush() -> None:
        if para:
            out.append(" ".join(p.strip() for p in para).strip())
            para.clear()

    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            flush()
            continue
        m = _BULLET.match(line)
        if m:
            flush()
            para.append(line[m.end():])
        else:
            para.append(line)
    flush()
    return tuple(t for t in out if normalise(t))


def read_notes(root: PinnedDir, dirs: Iterable[str], now: float) -> tuple[list[WorkingNote], list[str]]:
    """The admitted notes (see the module docstring) and one problem line (code first) per refusal."""
    good, problems = notes_dirs(dirs)
    found: list[WorkingNote] = []
    for rel in good:
        try:
            d = root.descend(rel)
        except CairnError as exc:
            if exc.code is not ErrorCode.NOT_FOUND:
                problems.append(f"{exc.code}: notes folder {rel} not read")
            continue
        with d:
            for entry in sorted(d.scandir(), key=lambda e: e.name):
                if not entry.name.endswith(".md") or entry.name.startswith("."):
                    continue
                st = entry.stat(follow_symlinks=False)
                if not stat.S_ISREG(st.st_mode) or st.st_size > NOTE_MAX_BYTES or st.st_mtime > now - QUIET_SECONDS:
                    continue
                try:
                    data = d.read(entry.name, limit=NOTE_MAX_BYTES)
                    text = data.decode("utf-8") if data is not None else None
                except (CairnError, UnicodeDecodeError):
                    continue
                if text is None:
                    continue
                parts = items(text)
                if any(len(p) > ITEM_MAX for p in parts):
                    continue
                found.append(WorkingNote(path=f"{rel}/{entry.name}", data=data or b"", changed=st.st_mtime,
                                         items=parts))
    found.sort(key=lambda n: (n.changed, n.path))
    return found[:MAX_NOTES], problems


def as_digest(note: WorkingNote) -> PublicDigest:
    """A note as the review engines take their input: one ``project`` note per item."""
    return PublicDigest(
        id=note.id, capture=note.id, session_id=note.path, title=note.path, trigger=Trigger.SESSION_END,
        created=note.changed, provider="notes", turn_ids=(note.id,),
        notes=tuple(Note(type=NoteType.PROJECT, title=clip(t, TITLE_MAX), body=t, turn_ids=(note.id,))
                    for t in note.items),
    )


def _carried(draft_: ProposalDraft) -> str:
    texts = [after.decode("utf-8", "replace") for _before, after in draft_.files.values() if after is not None]
    return normalise(" ".join(texts))


def dispositions(
    notes: list[WorkingNote], drafts: list[ProposalDraft], known: list[str], cited: Mapping[str, bytes],
    scope: ReviewScope,
) -> list[ProposalDraft]:
    """One DISPOSITION per fully consolidated, uncited note (see the module docstring)."""
    carried = [(d, _carried(d)) for d in drafts if d.kind is not ProposalKind.DISPOSITION]
    out = []
    for note in notes:
        if any(note.name.encode() in data for data in cited.values()):
            continue
        requires: set[str] = set()
        held = 0
        for item in note.items:
            key = normalise(item)
            if any(key in k for k in known):
                held += 1
                continue
            hits = [d.fingerprint for d, text in carried if key in text]
            if not hits:
                break
            requires.update(hits)
        else:
            summary = (f"{plural(len(note.items), 'item')}: {held} already in memory, "
                       f"{len(note.items) - held} in {plural(len(requires), 'proposal')} of this review")
            out.append(attrs.evolve(draft(
                scope, ProposalKind.DISPOSITION, title=f"Dispose of working note {note.name} (consolidated)",
                summary=summary, target=note.path, files={note.path: (note.data, None)}, index_edits=(),
                evidence=(note.id,), fingerprint=fingerprint(ProposalKind.DISPOSITION, note.path, [note.sha]),
            ), requires=tuple(sorted(requires))))
    return out
