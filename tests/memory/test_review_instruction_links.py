"""An instruction file a review cannot take (a symlink, a FIFO, a folder) never fails the review.

It is left out of the review's instruction scope (no instruction edit is proposed for it, nothing is read
or written through a link), said once with its code, and every topic proposal goes through as usual.
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from pathlib import Path

import pytest
from cairn.protocol.settings import Settings
from cairn.worker.memory import review as R
from cairn.worker.memory.store import MemoryStore

from tests.journal.helpers import cairn, cairn_json

CLAUDE = b"# Claude\n\n- Run the tests with make check\n"


def _linked_to_claude(ws: Path) -> None:
    (ws / "CLAUDE.md").write_bytes(CLAUDE)
    (ws / "AGENTS.md").symlink_to("CLAUDE.md")


def _linked_outside(ws: Path, tmp_path: Path) -> Path:
    outside = tmp_path / "elsewhere" / "AGENTS.md"
    outside.parent.mkdir()
    outside.write_bytes(b"# Elsewhere\n\n- Keep this file as it is\n")
    (ws / "AGENTS.md").symlink_to(outside)
    return outside


def _warned(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if "AGENTS.md" in ln and "E_PATH_SYMLINK" in ln]


@pytest.mark.parametrize("layout", ["inside", "outside"])
def test_cli_remember_goes_through_when_agents_md_is_a_symlink(workspace: Path, tmp_path: Path, layout: str) -> None:
    outside = _linked_outside(workspace, tmp_path) if layout == "outside" else None
    if outside is None:
        _linked_to_claude(workspace)
    before = (outside or workspace / "CLAUDE.md").read_bytes()
    r = cairn(workspace, "remember", "--type", "user", "I prefer short commit messages", "--json", check=False)
    assert r.returncode == 0, r.stderr
    assert len(_warned(r.stderr)) == 1, r.stderr  # said once, with its code
    out = json.loads(r.stdout)
    assert out["reviewed"] and [p["kind"] for p in out["proposals"]] == ["create"]
    assert "skippedNotes" not in out  # no note was left out: the instruction file was
    # a standing rule would have been an instruction edit of AGENTS.md: it is a topic now, the link untouched
    r = cairn(workspace, "remember", "--type", "feedback", "Never push straight to main", "--json", check=False)
    assert r.returncode == 0, r.stderr
    [p] = json.loads(r.stdout)["proposals"]
    assert p["kind"] == "create" and "AGENTS.md" not in p["target"]
    for row in cairn_json(workspace, "proposals"):
        assert row["kind"] != "instruction"
        cairn(workspace, "accept", row["id"])
    assert (workspace / "AGENTS.md").is_symlink() and (outside or workspace / "CLAUDE.md").read_bytes() == before
    assert not (workspace / "CLAUDE.md").exists() or (workspace / "CLAUDE.md").read_bytes() == CLAUDE


@pytest.mark.parametrize("layout", ["inside", "outside"])
def test_cli_review_goes_through_when_agents_md_is_a_symlink(workspace: Path, tmp_path: Path, layout: str) -> None:
    if layout == "outside":
        _linked_outside(workspace, tmp_path)
    else:
        _linked_to_claude(workspace)
    # a remembered text is captured, and its digest reviewed by a general review
    assert cairn(workspace, "remember", "--type", "project", "The staging database lives in eu-west-2",
                 check=False).returncode == 0
    cairn(workspace, "process")
    r = cairn(workspace, "review", check=False)
    assert r.returncode == 0, r.stderr
    assert len(_warned(r.stderr)) == 1, r.stderr
    assert (workspace / "AGENTS.md").is_symlink()
    assert [p["kind"] for p in cairn_json(workspace, "proposals")] == ["create"]


def test_general_review_leaves_out_a_linked_instruction_file(workspace: Path, caplog: pytest.LogCaptureFixture) -> None:
    _linked_to_claude(workspace)
    ms = MemoryStore(str(workspace), Settings(instructionFiles=("AGENTS.md", "CLAUDE.md")))
    try:
        with caplog.at_level(logging.WARNING, logger="cairn.worker.memory.review"):
            files = R._instruction_files(ms)
        # the file the link leads to is configured itself: read as a file of its own, the link is not
        assert files == {"CLAUDE.md": CLAUDE}
        result, _ = R.general_review(ms, automatic=False)
        assert result.skippedNotes is None
    finally:
        ms.close()
    assert [r.getMessage() for r in caplog.records if "E_PATH_SYMLINK" in r.getMessage()][:1]


@pytest.mark.parametrize("kind", ["fifo", "folder", "dangling"])
def test_an_instruction_file_that_is_no_file_is_left_out(workspace: Path, kind: str,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    agents = workspace / "AGENTS.md"
    if kind == "fifo":
        os.mkfifo(agents)
    elif kind == "folder":
        agents.mkdir()
    else:
        agents.symlink_to("nowhere.md")
    ms = MemoryStore(str(workspace), Settings())
    try:
        with caplog.at_level(logging.WARNING, logger="cairn.worker.memory.review"):
            assert R._instruction_files(ms) == {}
            skipped: Counter[str] = Counter()
            drafts = R.draft_review(ms, [], review_id="r0", now=ms.now(), housekeeping=True, skipped=skipped)
        assert drafts == [] and not skipped
    finally:
        ms.close()
    said = [r.getMessage() for r in caplog.records if r.name == "cairn.worker.memory.review"]
    assert said and all("AGENTS.md" in s for s in said)
