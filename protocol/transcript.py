"""Sessions and completed root turns, as read from a transcript or sent by an editor.

A turn's identity is a stable fork-point id: taken from the source (a message
uuid) or derived from content and the parent turn id, never a list position,
because rewinds and edits repeat positions. Two imports of the same file give
the same ids; a grown file keeps the ids of the turns it already had.
"""

from __future__ import annotations

import datetime as _dt

import attrs


@attrs.frozen(kw_only=True)
class Turn:
    """One completed root turn: what the user asked and what the assistant finally said."""

    turn_id: str
    parent_turn_id: str | None
    user: str
    assistant: str
    completed_at: str | None = None  # ISO 8601 (UTC, "Z") when the source says


@attrs.frozen(kw_only=True)
class Session:
    """One conversation from one source file (a file may hold several).

    ``tail`` is the session's last turn when nothing has closed it yet: its
    prompt is answered (the reply's text is in the file) but neither the
    format's completion signal nor a next prompt follows. It is not one of
    ``turns``; an import admits it (:meth:`sealed`) once the file is sealed:
    quiet for the idle period, or the session said to be over. Its id is the
    one it would have if a completion signal or a next prompt closed it, so
    a session resumed after its tail was admitted captures it once.
    """

    session_id: str
    source_format: str
    title: str | None
    turns: tuple[Turn, ...]
    tail: Turn | None = None

    def sealed(self) -> Session:
        """This session as read from a sealed file: its tail (if any) is its last turn."""
        if self.tail is None:
            return self
        return attrs.evolve(self, turns=(*self.turns, self.tail), tail=None)


def utc_instant(text: object) -> _dt.datetime | None:
    """The instant an ISO 8601 date-time with a zone names (``Z`` or an offset), in UTC; else None.

    A time without a zone is None: it names no instant (which zone it was
    written in is unknown). So is anything that is not such a text.
    """
    if not isinstance(text, str) or not 10 < len(text) <= 64:
        return None
    try:
        stamp = _dt.datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    if stamp.tzinfo is None:
        return None
    try:
        utc = stamp.astimezone(_dt.UTC)
    except (OverflowError, ValueError):
        return None
    return utc if 1000 <= utc.year else None  # four-digit years only: the text form sorts as the time does


def utc_stamp(text: object) -> str | None:
    """``text`` as :attr:`Turn.completed_at` holds a time: ISO 8601 UTC with milliseconds and ``Z``
    (``2025-04-28T09:15:02.000Z``); None when it is not a date-time with a zone (:func:`utc_instant`)."""
    stamp = utc_instant(text)
    if stamp is None:
        return None
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"
