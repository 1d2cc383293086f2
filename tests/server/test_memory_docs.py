"""Which documents get cairn diagnostics and code actions, and what they say."""

from __future__ import annotations

import os
from pathlib import Path

from cairn.protocol.settings import Settings
from cairn.server.lsp import memory_docs as md

WS = "/home/u/proj"


def test_memory_documents_are_recognised() -> None:
    s = Settings(memoryRoots=("/home/u/global-memory",), instructionFiles=("AGENTS.md", "docs/CLAUDE.md"))
    assert md.is_memory_document(f"{WS}/.agents/memory/testing.md", WS, s)
    assert md.is_memory_document(f"{WS}/.agents/memory/MEMORY.md", WS, s)
    assert md.is_memory_document("/home/u/global-memory/style.md", WS, s)
    assert md.is_memory_document(f"{WS}/AGENTS.md", WS, s)
    assert md.is_memory_document(f"{WS}/docs/CLAUDE.md", WS, s)
    assert not md.is_memory_document(f"{WS}/src/main.py", WS, s)
    assert not md.is_memory_document(f"{WS}/.agents/memory-old/x.md", WS, s)
    assert not md.is_memory_document(f"{WS}/.agents/memory/notes.txt", WS, s)
    assert not md.is_memory_document("/elsewhere/AGENTS.md", WS, s)


def test_uri_to_path() -> None:
    assert md.uri_to_path("file:///home/u/proj/A%20B.md") == "/home/u/proj/A B.md"
    assert md.uri_to_path("untitled:1") is None


PROPOSALS = [
    {"id": "p1", "title": "Testing rules", "kind": "update", "ranges": [{"startLine": 2, "endLine": 4}]},
    {"id": "p2", "title": "New topic", "kind": "create", "ranges": [{"startLine": 9, "endLine": 9}]},
]


def test_one_information_diagnostic_per_changed_range() -> None:
    diags = md.diagnostics(PROPOSALS, line_count=8)
    assert [d["code"] for d in diags] == ["p1", "p2"]
    assert all(d["severity"] == 3 and d["source"] == "cairn" for d in diags)
    assert diags[0]["range"]["start"]["line"] == 2 and diags[0]["range"]["end"]["line"] == 5
    assert diags[1]["range"]["start"]["line"] == 7  # clamped to the document
    # the message says the title once: the id and the source are the diagnostic's code and source
    assert [d["message"] for d in diags] == ["proposed: Testing rules", "proposed: New topic"]
    two = md.diagnostics([dict(PROPOSALS[0], ranges=[{"startLine": 1, "endLine": 1}, {"startLine": 5, "endLine": 6}])])
    assert [d["message"] for d in two] == ["proposed: Testing rules", "(continued) p1"]


def test_three_actions_per_proposal_nearest_first() -> None:
    actions = md.code_actions(WS, md.overlapping(PROPOSALS, 9, 9))
    assert len(actions) == 6
    assert [a["command"]["command"] for a in actions[:3]] == ["cairn.showProposal", "cairn.accept", "cairn.reject"]
    # grouped per proposal; the harmless one is first and preferred (an editor's default never accepts)
    assert [a["title"] for a in actions[:3]] == [f"cairn p2 (New topic): {v}" for v in ("Show diff", "Accept", "Reject")]
    assert [bool(a.get("isPreferred")) for a in actions] == [True, False, False] * 2
    assert actions[0]["command"]["arguments"] == [{"workspace": WS, "ids": ["p2"], "id": "p2"}]


def test_a_fifo_at_a_memory_document_is_not_read_and_never_blocks(tmp_path: Path) -> None:
    from cairn.server.lsp.features.documents import _read_text

    fifo = tmp_path / "MEMORY.md"
    os.mkfifo(fifo)  # no writer: a blocking open would wait forever
    assert _read_text(str(fifo)) is None
    (tmp_path / "topic.md").write_text("---\nname: x\n---\nbody\n")
    assert _read_text(str(tmp_path / "topic.md")) == "---\nname: x\n---\nbody\n"
    (tmp_path / "dir.md").mkdir()
    assert _read_text(str(tmp_path / "dir.md")) is None


def _key(line: str) -> str:
    return f"k:{line}"


def test_stale_lines_land_on_the_line_that_still_says_it() -> None:
    text = "# Agents\n\n- Lint with `make lint`\n- Build with `make build`\n"
    rows = [{"line": 3, "key": _key("- Lint with `make lint`"), "why": ["no target 'lint' in Makefile"]}]
    d = md.stale_line_diagnostics(text, rows, _key)
    assert [(x["range"]["start"]["line"], x["severity"], x["code"]) for x in d] == [(2, md.WARNING, md.STALE_LINE_CODE)]
    assert "no target 'lint'" in d[0]["message"]
    # lines added above: found where its text now is
    moved = md.stale_line_diagnostics("intro\n\n" + text, rows, _key)
    assert [x["range"]["start"]["line"] for x in moved] == [4]
    # changed, or said twice (which one?), or past the end: nowhere
    assert md.stale_line_diagnostics(text.replace("make lint", "ruff check"), rows, _key) == []
    twice = text + "- Lint with `make lint`\n"
    assert md.stale_line_diagnostics(twice.replace("# Agents\n", ""), rows, _key) == []
    assert md.stale_line_diagnostics(None, rows, _key) == [] and md.stale_line_diagnostics(text, [], _key) == []


def test_a_stale_line_reason_reaches_the_editor_without_control_characters() -> None:
    rows = [{"line": 1, "key": _key("x"), "why": ["\x1b[31mred\x1b[0m target"]}]
    [d] = md.stale_line_diagnostics("x\n", rows, _key)
    assert "\x1b" not in d["message"] and "\\x1b" in d["message"]
