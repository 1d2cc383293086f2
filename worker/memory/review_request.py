"""The request text of a remote memory review, and its split into context windows.

:func:`scope` is the user message of a review request, all redacted, as
canonical JSON: the digests in the order their sessions were held
(:func:`protocol.journal.by_session`), each with its id, the session's
``date`` (:attr:`~protocol.journal.PublicDigest.session_day`) and its notes
(type, title, body); the existing memory entries, one per parsed topic of
the root (file, title: the index entry's, else the topic's name; type,
description, ``first_noted`` / ``last_noted``: the earliest and latest
``(noted YYYY-MM-DD)`` date of its bullets when it has any, and the body
clipped to :data:`TOPIC_BODY_MAX` characters), so the model can extend an
entry rather than add a twin; and the names of the instruction files
present (the key is absent when there is none).
:func:`windows` splits the notes of a review into requests that fit the
model's context window (:mod:`worker.providers.window`) next to the topics;
see its docstring. Pure functions: no I/O, no claims.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

import attrs
from cairn.protocol import codec
from cairn.protocol.digest import Note
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.journal import PublicDigest, by_session
from cairn.worker.memory.drafts import present_instructions
from cairn.worker.memory.model import MemorySnapshot, TopicFile
from cairn.worker.providers import window
from cairn.worker.providers.route import Route
from cairn.worker.redaction.redact import redact

#: characters of a topic body sent to the model (the rest is not needed to place a note)
TOPIC_BODY_MAX = 2000
#: the date a review wrote on a topic bullet (``- text (noted 2025-04-28)``)
_NOTED = re.compile(r"\(noted (\d{4}-\d{2}-\d{2})\)")


def note_doc(n: Note) -> dict[str, str]:
    return {"type": str(n.type), "title": redact(n.title), "body": redact(n.body)}


def digest_doc(d: PublicDigest, notes: list[dict[str, str]]) -> dict[str, object]:
    return {"id": d.id, "date": d.session_day, "notes": notes}


def topic_doc(file: str, tf: TopicFile, title: str | None, *, body: bool) -> dict[str, str]:
    """One memory entry as the model sees it (see the module docstring)."""
    assert tf.topic is not None
    noted = sorted(set(_NOTED.findall(tf.topic.body)))
    return {
        "file": file,
        "title": redact(title or tf.topic.name),
        "type": str(tf.topic.type),
        "description": redact(tf.topic.description),
        **({"first_noted": noted[0], "last_noted": noted[-1]} if noted else {}),
        **({"body": redact(tf.topic.body[:TOPIC_BODY_MAX])} if body else {}),
    }


def scope(
    digests: list[PublicDigest], snapshot: MemorySnapshot, instruction_files: Mapping[str, bytes | None],
    *, bodies: bool = True,
) -> str:
    index = snapshot.parsed_index()
    present = list(present_instructions(instruction_files))
    doc = {
        "digests": [digest_doc(d, [note_doc(n) for n in d.notes]) for d in by_session(digests)],
        "topics": [
            topic_doc(name, tf, entry.title if (entry := index.entry(name)) is not None else None, body=bodies)
            for name, tf in sorted(snapshot.topics.items())
            if tf.topic is not None
        ],
        **({"instruction_files": present} if present else {}),
    }
    return json.dumps(doc, ensure_ascii=False, sort_keys=True)


@attrs.frozen
class Window:
    """One review request: some digests (possibly a part of a digest's notes) and how topics are sent."""

    digests: list[PublicDigest]
    bodies: bool


def windows(
    digests: list[PublicDigest], snapshot: MemorySnapshot, instruction_files: Mapping[str, bytes | None],
    route: Route,
    *,
    system: str,
) -> list[Window]:
    """The notes of ``digests`` split into requests that fit ``route.context_tokens`` with the topics.

    Every request carries the topics and instruction files; when they leave
    no room for the largest note, topics are sent without their bodies
    (name, type, description); when even that leaves none, the context
    window is too small for this memory (``E_CONFIG_INVALID``). Notes keep
    their digest id, so a digest split over two requests is cited the same
    way in both.
    """
    room = window.budget(route.context_tokens, system, route.policy.max_output_tokens, what="review")
    units = [(d, n) for d in by_session(digests) for n in d.notes]
    costs = [window.json_tokens(note_doc(n)) + window.json_tokens(digest_doc(d, [])) for d, n in units]
    largest = max(costs, default=0)
    for bodies in (True, False):
        left = room - window.estimate_tokens(scope([], snapshot, instruction_files, bodies=bodies))
        if left >= largest:
            break
    else:
        raise CairnError(ErrorCode.CONFIG_INVALID,
                         f"context_tokens = {route.context_tokens} is too small for the memory topics of this review")
    groups, _ = window.pack(costs, left)
    out = []
    for group in groups:
        notes_of: dict[str, list[Note]] = {}
        for i in group:
            notes_of.setdefault(units[i][0].id, []).append(units[i][1])
        out.append(Window([codec.evolve(d, notes=tuple(notes_of[d.id])) for d in digests if d.id in notes_of],
                          bodies))
    return out
