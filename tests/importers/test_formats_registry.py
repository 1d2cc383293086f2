"""One description per format: every importer module declares a ``FORMAT`` record, detection asks
each record's tests in one explicit order, and the tables, the docs and discovery agree with them."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest
from cairn.worker.ingest import importers
from cairn.worker.ingest.importers import (
    DB_PARSERS,
    DETECTION_ORDER,
    FORMATS,
    JSONL_FORMATS,
    PARSERS,
    RECORDS,
    STREAMED,
    Format,
)
from cairn.worker.ingest.importers._format import KINDS, PathHint
from cairn.worker.ingest.sources import roots

from tests.support import REPO

MODULES = sorted(m.name for m in pkgutil.iter_modules(importers.__path__) if not m.name.startswith("_"))


@pytest.mark.parametrize("name", MODULES)
def test_every_format_module_declares_a_format_in_the_detection_order(name):
    module = importlib.import_module(f"{importers.__name__}.{name}")
    fmt = getattr(module, "FORMAT", None)
    assert isinstance(fmt, Format), f"{name}.py declares no FORMAT = Format(...)"
    assert fmt.name == module.NAME
    assert any(step is fmt for step, _ in DETECTION_ORDER), f"{fmt.name} is missing from DETECTION_ORDER"
    assert RECORDS[fmt.name] is fmt


def test_formats_and_modules_are_one_to_one():
    assert len(RECORDS) == len(MODULES) == len(FORMATS)
    assert FORMATS == tuple(sorted(RECORDS))


def test_every_test_a_format_declares_is_asked_once_and_every_step_has_its_test():
    steps = [(fmt.name, kind) for fmt, kind in DETECTION_ORDER]
    assert len(steps) == len(set(steps))
    declared = {(fmt.name, kind) for fmt in RECORDS.values() for kind in KINDS if fmt.sniff(kind) is not None}
    assert declared == set(steps)


def test_the_tables_are_derived_from_the_records():
    assert set(PARSERS) == {f.name for f in RECORDS.values() if f.parse}
    assert set(DB_PARSERS) == {f.name for f in RECORDS.values() if f.parse_path}
    assert DB_PARSERS.keys() == {f.name for f, kind in DETECTION_ORDER if kind == "db"}
    assert JSONL_FORMATS == {f.name for f in RECORDS.values() if f.jsonl}
    assert set(STREAMED) == {f.name for f in RECORDS.values() if f.stream} <= JSONL_FORMATS
    for name, parse in PARSERS.items():
        assert parse is RECORDS[name].parse


def test_path_hints_name_formats_of_one_shape():
    hints = {f.name: f.path_hint for f in RECORDS.values() if f.path_hint is not None}
    assert hints == {
        "cline": PathHint(folders=("saoudrizwan.claude-dev",), over=("roo-code",)),
        "roo-code": PathHint(folders=("rooveterinaryinc.roo-cline",), over=("cline",)),
        "qwen-code": PathHint(folders=(".qwen",), over=("gemini-cli",)),
    }
    assert roots.EXTENSIONS == {name: hints[name].folders[0] for name in ("cline", "roo-code")}
    from cairn.worker.ingest.importers import aider, claude_code, codex
    from cairn.worker.ingest.importers._sqlite import MAGIC
    from cairn.worker.ingest.resume import RESUMABLE
    from cairn.worker.journal import sources
    assert roots.AIDER_FILE == aider.FILE_NAME  # discovery names it without importing the reader
    assert {name: importers.RECORDS[name] for name in importers._MODULE_OF} == {
        name: importlib.import_module(f"{importers.__name__}.{module}").FORMAT
        for name, module in importers._MODULE_OF.items()}
    assert sources.RESUMABLE == RESUMABLE == {claude_code.NAME, codex.NAME}
    assert MAGIC.startswith(b"SQLite format 3")


def test_a_format_record_refuses_an_incomplete_description():
    with pytest.raises(ValueError):
        Format(name="x")  # no way to read it
    with pytest.raises(ValueError):
        Format(name="x", parse=lambda text, *, source_name: [])  # no way to recognise it
    with pytest.raises(ValueError):  # a database without sniff_db
        Format(name="x", parse_path=lambda path: [], sniff_json=lambda head: True)


def test_docs_name_every_format():
    """Each format has a ``## <name> — <tool>`` section in docs/formats.md (tools sharing a shape
    share a section: ``## cline, roo-code — …``)."""
    documented: list[str] = []
    for title in re.findall(r"^## (.+)$", (REPO / "docs" / "formats.md").read_text(), re.M):
        names = [n.strip() for n in title.split(" — ", 1)[0].split(",")]
        if all(re.fullmatch(r"[a-z][a-z0-9-]*", n) for n in names):
            documented += names
    assert sorted(documented) == sorted(FORMATS)


def test_discovery_looks_for_the_formats_whose_records_name_stores(tmp_path):
    home = {s.format for s in roots.specs(str(tmp_path), {})}
    project = {s.format for s in roots.project_specs(str(tmp_path))}
    assert home == {f.name for f in RECORDS.values() if f.stores == "home"}
    assert project == {f.name for f in RECORDS.values() if f.stores == "project"}
