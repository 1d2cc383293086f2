"""Detection matrix: every fixture of every format is detected as its own format and as no other,
and no parser reads a foreign fixture into turns (except tools that share one file shape)."""

from __future__ import annotations

import pytest
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.worker.ingest.importers import DB_PARSERS, FORMATS, PARSERS, detect, load

from .formats import DB_FIXTURES, TEXT_FIXTURES, neutral_copies

# Tools whose files share one shape: the parser of one reads the other's files (detection
# still tells them apart, by content markers and by where the file lives).
SHARED = {("cline", "roo-code"), ("roo-code", "cline"), ("gemini-cli", "qwen-code")}


def test_every_format_has_a_fixture():
    assert set(TEXT_FIXTURES) | set(DB_FIXTURES) == set(FORMATS)
    assert len(FORMATS) >= 15


def test_each_fixture_detects_as_its_own_format_only(tmp_path):
    for fmt, rel, path in neutral_copies(tmp_path):
        assert detect(path, path.read_bytes()[:65536]) == fmt, rel
        sessions = load(path)
        assert sessions and all(s.source_format == fmt and s.sealed().turns for s in sessions), rel


def test_no_parser_reads_a_foreign_fixture(tmp_path):
    read_by: dict[str, list[str]] = {}
    for own, rel, path in neutral_copies(tmp_path):
        for other in FORMATS:
            if other == own or (own, other) in SHARED:
                continue
            try:
                sessions = load(path, other)
            except CairnError as exc:
                assert exc.code in (ErrorCode.IMPORT_MALFORMED, ErrorCode.IMPORT_UNKNOWN_FORMAT,
                                    ErrorCode.IMPORT_WRONG_FORMAT), (rel, other, exc.code)
                continue
            if any(s.turns for s in sessions):
                read_by.setdefault(rel, []).append(other)
    assert read_by == {}


@pytest.mark.parametrize("fmt", sorted(DB_PARSERS))
def test_database_formats_refuse_text(fmt, tmp_path):
    path = tmp_path / "x.db"
    path.write_text("{}\n")
    if fmt in PARSERS:  # goose: the text parser reads it and finds nothing
        assert load(path, fmt) == []
    else:
        with pytest.raises(CairnError) as err:
            load(path, fmt)
        assert err.value.code == ErrorCode.IMPORT_UNKNOWN_FORMAT
