"""The transcript fixtures and a helper to look at what an importer kept."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tests.support import REPO

FIXTURES = REPO / "tests" / "fixtures" / "transcripts"


def all_text(sessions: Iterable[Any]) -> str:
    """Every user and assistant text of the sessions, for noise checks."""
    return "\n".join(t.user + "\n" + t.assistant for s in sessions for t in s.turns)
