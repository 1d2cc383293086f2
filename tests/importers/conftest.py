"""Fixtures shared by the importer tests: copies of the transcript fixtures in a temp dir."""

from __future__ import annotations

import pathlib
import shutil
import time

import pytest

from tests.support.transcripts import FIXTURES


@pytest.fixture
def fixture_copy(tmp_path: pathlib.Path):
    """Copy a fixture (path relative to tests/fixtures/transcripts) into tmp_path, keeping its name."""

    def copy(rel: str) -> pathlib.Path:
        src = FIXTURES / rel
        dst = tmp_path / src.name
        shutil.copyfile(src, dst)
        return dst

    return copy


@pytest.fixture
def utc_minus_5(monkeypatch):
    """The reading machine's local zone: UTC-5 with no summer time (formats that write local times)."""
    monkeypatch.setenv("TZ", "EST+5")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()
