"""Turn provider drafts into final digest notes: the one place notes are cleaned.

Every provider's output goes through :func:`finalize`, so whichever engine
ran, a digest obeys the same contract:

* control characters are removed (:func:`protocol.text.clean_text`: an ANSI
  sequence whole, its words kept), whatever the provider sent;
* whitespace is normalised (titles are one line, bodies keep no runs of spaces);
* secrets are redacted *before* clipping, so a clip can never cut a secret
  into a piece the redactor no longer recognises; with the values known in
  the session (:class:`worker.redaction.redact.KnownSecrets`), a value recognised in
  one turn is hidden in a note that quotes it bare;
* titles are at most 120 characters, bodies at most 2000;
* identical notes (same type and same statement, ignoring case, spacing and
  final punctuation) are merged: the merged note cites the union of their
  turn ids in transcript order. The embedded engine's merge keeps the
  longest body (the one that also gave a reason), ties going to the
  earliest; a model digest's (``prefer="latest"``) keeps the latest
  statement, the one with the highest ``position`` (a later window's note
  under an earlier note's title restates or corrects it);
* notes are ordered by type (user, feedback, project, reference), then by
  where their evidence first appears, then by title: a pure function of the
  input, so the same input always serialises to the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import attrs
from cairn.protocol.digest import Note
from cairn.protocol.text import clean_text
from cairn.protocol.vocab import NoteType
from cairn.worker.redaction.redact import KnownSecrets, redact_known
from cairn.worker.redaction.redact import redact as gate

TITLE_MAX = 120
BODY_MAX = 2000
TYPE_ORDER: dict[NoteType, int] = {
    NoteType.USER: 0,
    NoteType.FEEDBACK: 1,
    NoteType.PROJECT: 2,
    NoteType.REFERENCE: 3,
}

_WS = re.compile(r"\s+")


@attrs.frozen(kw_only=True)
class Draft:
    """A note before cleaning.

    ``position`` orders notes whose evidence starts in the same turn;
    ``statement`` is what identity is judged on (default: the body), so a
    rule repeated with and without its reason is still one note.
    """

    type: NoteType
    title: str
    body: str
    turn_ids: tuple[str, ...]
    position: int = 0
    statement: str = ""


def one_line(text: str) -> str:
    return _WS.sub(" ", text).strip()


def clip(text: str, limit: int) -> str:
    """Cut ``text`` to ``limit`` characters at a word boundary, marking the cut with an ellipsis."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "…"


def _key(note_type: NoteType, statement: str) -> tuple[NoteType, str]:
    return note_type, one_line(statement).casefold().rstrip(" .!")


def finalize(drafts: Iterable[Draft], turn_order: Mapping[str, int],
             known: KnownSecrets | None = None, *, prefer: str = "longest") -> tuple[Note, ...]:
    """Clean, redact, clip, merge and order drafts; see the module docstring.

    ``turn_order`` maps every turn id of the evidence to its index; drafts
    citing ids outside it must have been refused by the caller. ``known``:
    the secret values of the session, hidden wherever a note quotes them.
    ``prefer``: which of merged notes gives the title and body, ``longest``
    or ``latest`` (the highest position).
    """

    def redact(text: str) -> str:
        return gate(text) if known is None else redact_known(text, known)

    latest = prefer == "latest"
    merged: dict[tuple[NoteType, str], tuple[str, str, list[str], tuple[int, int]]] = {}
    spoke: dict[tuple[NoteType, str], int] = {}  # the position of the statement kept (``latest``)
    for draft in drafts:
        title = clip(one_line(redact(clean_text(draft.title))), TITLE_MAX)
        body = clip(one_line(redact(clean_text(draft.body))), BODY_MAX)
        if not title or not body or not draft.turn_ids:
            continue
        first = min(turn_order[t] for t in draft.turn_ids)
        rank = (first, draft.position)
        key = _key(draft.type, redact(clean_text(draft.statement)) if draft.statement else body)
        if key in merged:
            old_title, old_body, ids, old_rank = merged[key]
            ids.extend(t for t in draft.turn_ids if t not in ids)
            if latest:
                if draft.position > spoke[key]:
                    old_title, old_body, spoke[key] = title, body, draft.position
            elif (len(body), -rank[0], -rank[1]) > (len(old_body), -old_rank[0], -old_rank[1]):
                old_title, old_body = title, body
            merged[key] = (old_title, old_body, ids, min(rank, old_rank))
        else:
            merged[key] = (title, body, list(dict.fromkeys(draft.turn_ids)), rank)
            spoke[key] = draft.position
    ordered = sorted(
        merged.items(),
        key=lambda item: (TYPE_ORDER[item[0][0]], item[1][3], item[1][0], item[1][1]),
    )
    return tuple(
        Note(
            type=note_type,
            title=title,
            body=body,
            turn_ids=tuple(sorted(ids, key=lambda t: turn_order[t])),
        )
        for (note_type, _), (title, body, ids, _) in ordered
    )
