"""The ``remember`` provider: a remembered text is its own note, typed as the user asked.

A ``remember`` capture (:mod:`worker.memory.remember`) freezes the policy
``ModelPolicy(provider="remember", model=TYPE)``: its one turn's user text is
the note, of the requested type (``model`` empty: the embedded classifier's
type, else ``project``), titled by its first line. The digest published in
the journal and the focused review that runs at once therefore read the
same note, so the general review that later covers that digest proposes
nothing new (its fingerprints and memory already hold it). Offline and
deterministic like the extractive engine; notes are cleaned and redacted by
:func:`worker.providers.notes.finalize`.
"""

from __future__ import annotations

from cairn.protocol.digest import DigestInput, DigestOutput
from cairn.protocol.vocab import NoteType
from cairn.worker.providers.extractive import classify, session_secrets
from cairn.worker.providers.notes import Draft, finalize, one_line

NAME = "remember"


def note_type(text: str, requested: str) -> tuple[NoteType, str]:
    """(type, title) of a remembered text: the requested type, else the embedded classifier's, else project."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    first = one_line(lines[0]) if lines else ""
    guess = classify(first)
    title = guess[1] if guess else first
    if first[:1].isupper() and title[:1].islower() and not first.startswith(title):
        title = title[:1].upper() + title[1:]  # "From now on use X" is classified as "use X"; "npm …" stays
    if requested in NoteType._value2member_map_:
        return NoteType(requested), title
    return (guess[0] if guess else NoteType.PROJECT), title


def digest(inp: DigestInput, requested: str) -> DigestOutput:
    drafts = []
    for i, t in enumerate(inp.turns):
        ntype, title = note_type(t.user, requested)
        drafts.append(Draft(type=ntype, title=title, body=t.user, turn_ids=(t.turn_id,), position=i))
    # a value recognised by its label anywhere in the text is hidden where the text repeats it bare
    return DigestOutput(notes=finalize(drafts, {t.turn_id: i for i, t in enumerate(inp.turns)},
                                       session_secrets(inp, drafts)))
