"""Sessions and completed root turns, as read from a transcript or sent by an editor.

A turn's identity is a stable fork-point id: taken from the source (a message
uuid) or derived from content and the parent turn id, never a list position,
because rewinds and edits repeat positions. Two imports of the same file give
the same ids; a grown file keeps the ids of the turns it already had.
"""

from __future__ import annotations

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
    """One conversation from one source file (a file may hold several)."""

    session_id: str
    source_format: str
    title: str | None
    turns: tuple[Turn, ...]
