"""The real-world transcript corpus of ``tests/corpus``: its manifest, its files and its labels.

Contract: :func:`load_corpus` returns one :class:`CorpusFile` per manifest
entry whose bytes are present (committed under ``files/`` or restored under
``cache/`` by ``tests/corpus/fetch.py``) *and* match the recorded SHA-256;
absent or altered files are counted, never guessed at. Each file becomes the
sessions the provider digests, with turn ids of the form ``<session>.<turn>``
(positions are fine here: the corpus is frozen, and labels name turns the
same way).

Every format goes through :func:`cairn.worker.ingest.importers.load`, so the
bench scores what the product imports: the manifest's ``claude-export-text``
(Claude Code's ``/export`` text) is the importer ``claude-code-export``, whose
turns are the completed ones (a prompt left unanswered at the end of a
scrollback is no turn), and ``cctrace-md`` (cctrace's ``# Claude Code Session
Export`` Markdown) is the importer ``cctrace``.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
from dataclasses import dataclass, field
from typing import Any

from cairn.protocol.digest import DigestInput
from cairn.protocol.transcript import Turn
from cairn.worker.ingest.importers import load

CORPUS = pathlib.Path(__file__).resolve().parent.parent / "tests" / "corpus"


@dataclass(frozen=True)
class Label:
    """One durable item a good digest should publish: type, statement, verbatim evidence, turn."""

    id: str
    type: str
    statement: str
    evidence: str
    turn: str


@dataclass
class CorpusFile:
    id: str
    format: str
    split: str
    inputs: list[DigestInput]
    labels: list[Label]
    tempting: list[dict[str, Any]] = field(default_factory=list)
    user_text: dict[str, str] = field(default_factory=dict)  # turn id -> user text


@dataclass
class Corpus:
    files: list[CorpusFile]
    missing: list[str]  # manifest ids whose bytes are absent
    altered: list[str]  # present, but not the recorded bytes


# ---------------------------------------------------------------- reading

_IMPORTER = {"claude-export-text": "claude-code-export", "cctrace-md": "cctrace"}  # manifest format -> importer format
MINIMAL_FORMATS: tuple[str, ...] = ()  # formats read by a parser of the bench's own: none any more


def sessions_of(path: pathlib.Path, fmt: str) -> list[list[tuple[str, str, str]]]:
    """``[[(turn id, user text, assistant text), ...] per session]`` of a corpus file, read as a sealed file
    is (a corpus file is a session that is over: its last turn counts, as `cairn run` and `--ended` take it)."""
    sessions = [s.sealed() for s in load(path, _IMPORTER.get(fmt, fmt))]
    return [
        [(f"{s}.{t}", turn.user, turn.assistant) for t, turn in enumerate(session.turns)]
        for s, session in enumerate(sessions)
    ]


# ---------------------------------------------------------------- loading

def _locate(entry: dict[str, Any], root: pathlib.Path) -> pathlib.Path | None:
    for folder in ("files", "cache"):
        candidate = root / folder / entry["file"]
        if candidate.is_file():
            return candidate
    return None


def load_corpus(root: pathlib.Path = CORPUS, *, split: str | None = None, committed_only: bool = False) -> Corpus:
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    files: list[CorpusFile] = []
    missing: list[str] = []
    altered: list[str] = []
    for entry in manifest["files"]:
        if split is not None and entry["split"] != split:
            continue
        if committed_only and not entry["committed"]:
            continue
        path = _locate(entry, root)
        if path is None:
            missing.append(entry["id"])
            continue
        if hashlib.sha256(path.read_bytes()).hexdigest() != entry["sha256"]:
            altered.append(entry["id"])
            continue
        label_doc = json.loads((root / "labels" / f"{entry['id']}.json").read_text(encoding="utf-8"))
        labels = [
            Label(id=f"{entry['id']}#{i}", type=d["type"], statement=d["statement"], evidence=d["evidence"], turn=d["turn"])
            for i, d in enumerate(label_doc.get("durable", []))
        ]
        inputs: list[DigestInput] = []
        user_text: dict[str, str] = {}
        for s, session in enumerate(sessions_of(path, entry["format"])):
            turns = tuple(Turn(turn_id=tid, parent_turn_id=None, user=u, assistant=a) for tid, u, a in session)
            user_text.update((tid, u) for tid, u, _ in session)
            if turns:
                inputs.append(DigestInput(session_id=f"{entry['id']}/{s}", title=None, turns=turns))
        files.append(
            CorpusFile(
                id=entry["id"], format=entry["format"], split=entry["split"], inputs=inputs, labels=labels,
                tempting=list(label_doc.get("tempting", [])), user_text=user_text,
            )
        )
    return Corpus(files=files, missing=missing, altered=altered)
