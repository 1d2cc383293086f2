"""Score published notes against the corpus labels: the matcher, the reviewed list, the figures.

The matcher is deterministic and documented here because the figures mean
nothing without it. A published note *matches* a durable label when

1. the label's evidence turn is one of the note's cited turns, and
2. ``max(containment, similarity) >= MATCH_THRESHOLD`` (0.5), where
   ``containment`` is the share of the label evidence's word tokens found in
   the note (title + body) — an extractive note quotes the user, so it
   contains the evidence — and ``similarity`` is the share of the label
   statement's content tokens (stop words removed) found in the note — a
   paraphrasing provider restates the item rather than quoting it.

Tokens are lower-cased runs of letters and digits (any script), so the
matcher works on the Czech, Portuguese and Chinese transcripts as well. A
note may match several labels (one sentence can carry two items); a label is
recalled when any note matches it. The type is not part of the match: a
fact filed as feedback is still remembered; type agreement is reported
apart.

A note that matches no label is looked up in the *reviewed list*
(``tests/corpus/reviewed.json``), keyed by :func:`note_key` (file id and a
hash of the note's normalised body, so the list carries no transcript
text). A human verdict ``durable`` counts the note as correct (the labels
missed an item), ``not-durable`` counts it against precision. An unmatched
note nobody has reviewed yet also counts against precision, and is listed
so it can be reviewed: precision can only go up by review, never by default.

A *tempting* item is kept when a note cites its turn and contains its
evidence (containment ≥ 0.5); the count is reported, since keeping none of
them is the point. Items of kind ``task`` (a request for work: "add …",
"initialize …", a feature to build) are also counted on their own, as the
"task requests kept" row.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from cairn.protocol.digest import Note

from bench.quality_corpus import CORPUS, CorpusFile, Label

MATCH_THRESHOLD = 0.5
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_STOP = frozenset(
    """a an the and or of to in on for with by is are be as at it its this that these those from into
    not no do does should must we our us you your i my me they their them he she was were will would
    can could so if then than all any each every only just also more most some such there here what
    which who how when where why use uses used using""".split()
)


def tokens(text: str) -> list[str]:
    found = [t.casefold() for t in _TOKEN.findall(text)]
    # scripts without spaces (Chinese, Japanese) become one token per character
    out: list[str] = []
    for t in found:
        if any("\u3000" <= ch <= "\u9fff" for ch in t):
            out.extend(t)
        else:
            out.append(t)
    return out


def _share(part: Iterable[str], whole: set[str]) -> float:
    items = list(dict.fromkeys(part))
    if not items:
        return 0.0
    return sum(1 for t in items if t in whole) / len(items)


def match_score(note: Note, label: Label) -> float:
    """0 when the note does not cite the label's turn, else max(containment, similarity)."""
    if label.turn not in note.turn_ids:
        return 0.0
    text = set(tokens(f"{note.title} {note.body}"))
    containment = _share(tokens(label.evidence), text)
    similarity = _share((t for t in tokens(label.statement) if t not in _STOP), text)
    return max(containment, similarity)


def note_key(file_id: str, note: Note) -> str:
    body = " ".join(tokens(note.body))
    return hashlib.sha256(f"{file_id}\n{body}".encode()).hexdigest()[:16]


def load_reviewed(path: pathlib.Path = CORPUS / "reviewed.json") -> dict[str, str]:
    """``{note key: "durable" | "not-durable"}`` from the reviewed list (empty when absent)."""
    if not path.is_file():
        return {}
    doc = json.loads(path.read_text(encoding="utf-8"))
    return {entry["key"]: entry["verdict"] for entry in doc.get("notes", [])}


@dataclass
class Tally:
    labels: int = 0
    recalled: int = 0
    notes: int = 0
    correct: int = 0  # matched, or unmatched but reviewed durable
    type_agree: int = 0

    def add(self, other: Tally) -> None:
        self.labels += other.labels
        self.recalled += other.recalled
        self.notes += other.notes
        self.correct += other.correct
        self.type_agree += other.type_agree

    @property
    def recall(self) -> float:
        return self.recalled / self.labels if self.labels else 1.0

    @property
    def precision(self) -> float:
        return self.correct / self.notes if self.notes else 1.0


@dataclass
class FileResult:
    file: CorpusFile
    notes: list[Note]
    tally: Tally
    by_label_type: dict[str, Tally]
    by_note_type: dict[str, Tally]
    unmatched: list[tuple[str, Note, str | None]]  # key, note, verdict (None: not reviewed)
    missed: list[Label]
    tempting_kept: int
    tasks: int = 0  # tempting items of kind "task": requests for work
    tasks_kept: int = 0


def score_file(f: CorpusFile, notes: Sequence[Note], reviewed: Mapping[str, str]) -> FileResult:
    by_label_type: dict[str, Tally] = defaultdict(Tally)
    by_note_type: dict[str, Tally] = defaultdict(Tally)
    tally = Tally(labels=len(f.labels), notes=len(notes))
    matched_notes: set[int] = set()
    missed: list[Label] = []
    for label in f.labels:
        best = max(((match_score(n, label), i) for i, n in enumerate(notes)), default=(0.0, -1))
        hit = best[0] >= MATCH_THRESHOLD
        by_label_type[label.type].labels += 1
        if hit:
            tally.recalled += 1
            by_label_type[label.type].recalled += 1
            matched_notes.update(i for i, n in enumerate(notes) if match_score(n, label) >= MATCH_THRESHOLD)
            if notes[best[1]].type.value == label.type:
                tally.type_agree += 1
                by_label_type[label.type].type_agree += 1
        else:
            missed.append(label)
    unmatched: list[tuple[str, Note, str | None]] = []
    for i, note in enumerate(notes):
        kind = by_note_type[note.type.value]
        kind.notes += 1
        if i in matched_notes:
            tally.correct += 1
            kind.correct += 1
            continue
        key = note_key(f.id, note)
        verdict = reviewed.get(key)
        unmatched.append((key, note, verdict))
        if verdict == "durable":
            tally.correct += 1
            kind.correct += 1
    kept = tasks = tasks_kept = 0
    for item in f.tempting:
        ev = set(tokens(item["evidence"]))
        is_task = item.get("kind") == "task"
        tasks += is_task
        if any(item["turn"] in n.turn_ids and _share(ev, set(tokens(f"{n.title} {n.body}"))) >= MATCH_THRESHOLD for n in notes):
            kept += 1
            tasks_kept += is_task
    return FileResult(f, list(notes), tally, dict(by_label_type), dict(by_note_type), unmatched, missed, kept,
                      tasks, tasks_kept)


@dataclass
class Summary:
    total: Tally = field(default_factory=Tally)
    by_format: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    by_label_type: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    by_note_type: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    files: int = 0
    tempting: int = 0
    tempting_kept: int = 0
    tasks: int = 0
    tasks_kept: int = 0
    unreviewed: int = 0


def summarize(results: Iterable[FileResult]) -> Summary:
    s = Summary()
    for r in results:
        s.files += 1
        s.total.add(r.tally)
        s.by_format[r.file.format].add(r.tally)
        for k, t in r.by_label_type.items():
            s.by_label_type[k].add(t)
        for k, t in r.by_note_type.items():
            s.by_note_type[k].add(t)
        s.tempting += len(r.file.tempting)
        s.tempting_kept += r.tempting_kept
        s.tasks += r.tasks
        s.tasks_kept += r.tasks_kept
        s.unreviewed += sum(1 for _, _, v in r.unmatched if v is None)
    return s
