"""The transcript fixtures and helpers to look at what an importer kept."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cairn.worker.ingest.importers import load

from tests.support import REPO

FIXTURES = REPO / "tests" / "fixtures" / "transcripts"


def all_text(sessions: Iterable[Any]) -> str:
    """Every user and assistant text of the sessions, for noise checks."""
    return "\n".join(t.user + "\n" + t.assistant for s in sessions for t in s.turns)


def assert_absent(sessions: Iterable[Any], markers: Iterable[str]) -> str:
    """No marker appears in any kept text; the kept text is returned for further checks."""
    text = all_text(sessions)
    present = [m for m in markers if m in text]
    assert not present, present
    return text


def grow(path: Path, tail: str) -> tuple[list[Any], list[Any]]:
    """The sessions of ``path`` before and after ``tail`` is appended to it.

    Loading the unchanged file twice gives the same sessions (stable ids),
    which is checked on the way.
    """
    before = load(path)
    assert load(path) == before
    with path.open("a") as f:
        f.write(tail)
    return before, load(path)
