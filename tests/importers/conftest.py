"""Fixtures shared by the importer tests: copies of the transcript fixtures in a temp dir."""

from __future__ import annotations

import pathlib
import shutil

import pytest

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "transcripts"
REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def fixture_copy(tmp_path: pathlib.Path):
    """Copy a fixture (path relative to tests/fixtures/transcripts) into tmp_path, keeping its name."""

    def copy(rel: str) -> pathlib.Path:
        src = FIXTURES / rel
        dst = tmp_path / src.name
        shutil.copyfile(src, dst)
        return dst

    return copy


def all_text(sessions) -> str:
    """Every user and assistant text of the sessions, for noise checks."""
    return "\n".join(t.user + "\n" + t.assistant for s in sessions for t in s.turns)
