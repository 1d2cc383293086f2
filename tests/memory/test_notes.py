"""Shared working notes: consolidated by a review, disposed of after their extractions, restored by undo."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from cairn.protocol.settings import Settings
from cairn.worker.memory import apply
from cairn.worker.memory import review as R
from cairn.worker.memory.notes import QUIET_SECONDS, items
from cairn.worker.memory.store import MemoryStore
from pytest_lsp import LanguageClient

from tests.journal.helpers import cairn, cairn_json

NOTE = (b"# Deploy notes\n\nWe deploy the web app with `make ship`, never by hand.\n\n"
        b"- The staging database is read-only on Fridays for the weekly snapshot\n")


def _note(ws: Path, name: str = "deploy.md", data: bytes = NOTE, folder: str = ".agents/notes") -> Path:
    p = ws / folder / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    quiet = p.stat().st_mtime - QUIET_SECONDS - 60
    os.utime(p, (quiet, quiet))
    return p


def _by_kind(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(r["kind"], []).append(r)
    return out


def test_items_are_bullets_and_paragraphs_without_headings_or_front_matter() -> None:
    text = "---\nname: x\n---\n# T\n\nWe deploy\nwith make.\n\n- one\n* [x] two\n1. three\n\n## H\n"
    assert items(text) == ("We deploy with make.", "one", "two", "three")


def test_a_consolidated_note_is_disposed_of_after_its_extractions_and_undo_restores_it(workspace: Path) -> None:
    note = _note(workspace)
    cairn(workspace, "review")
    rows = _by_kind(cairn_json(workspace, "proposals"))
    (disp,) = rows["disposition"]
    assert disp["target"] == ".agents/notes/deploy.md" and len(rows["create"]) == 2
    # before its extractions are applied, the disposal is refused and changes nothing
    early = cairn(workspace, "accept", disp["id"], check=False)
    assert early.returncode == 2 and "E_PROPOSAL_STATE" in early.stderr and "Traceback" not in early.stderr
    assert note.read_bytes() == NOTE
    cairn(workspace, "accept", *[r["id"] for r in rows["create"]])
    cairn(workspace, "accept", disp["id"])
    assert not note.exists()
    # the removed bytes are kept privately, content-addressed
    sha = hashlib.sha256(NOTE).hexdigest()
    assert (workspace / ".cairn/state/memory/bundles" / sha[:2] / sha).read_bytes() == NOTE
    cairn(workspace, "undo", disp["id"])
    assert note.read_bytes() == NOTE
    # an undone disposal is not proposed again for the same bytes
    _note(workspace)
    cairn(workspace, "review")
    assert len(_by_kind(cairn_json(workspace, "proposals"))["disposition"]) == 1


def test_a_note_changed_since_the_proposal_is_never_disposed_of(workspace: Path) -> None:
    note = _note(workspace, data=b"- We deploy with make ship\n")
    (workspace / ".agents/memory").mkdir(parents=True)
    (workspace / ".agents/memory/deploy.md").write_text(
        "---\nname: Deploy\ndescription: deploying\ntype: project\n---\n- We deploy with make ship\n")
    cairn(workspace, "review")
    (disp,) = _by_kind(cairn_json(workspace, "proposals"))["disposition"]  # memory holds it: nothing required
    note.write_bytes(b"- We deploy with make ship\n- and a new line someone just added\n")
    assert [r["state"] for r in cairn_json(workspace, "proposals") if r["id"] == disp["id"]] == ["stale"]
    r = cairn(workspace, "accept", disp["id"], check=False)
    assert r.returncode == 2 and "E_PROPOSAL_STALE" in r.stderr
    assert note.read_bytes() == b"- We deploy with make ship\n- and a new line someone just added\n"


def test_cited_busy_and_unconsolidated_notes_are_kept(workspace: Path) -> None:
    (workspace / "AGENTS.md").write_text("# Agents\n\nSee .agents/notes/cited.md for the runbook.\n")
    _note(workspace, "cited.md", b"- The runbook lives in the wiki under ops\n")
    busy = workspace / ".agents/notes/busy.md"
    busy.write_bytes(b"- Someone is writing this note right now\n")  # not quiet: not read at all
    with MemoryStore(str(workspace), Settings()) as ms:
        result, _ = R.general_review(ms, automatic=False)
        props = [apply.load_proposal(ms, pid) for pid in apply.proposal_ids(ms)]
    assert result.notes == 1
    assert [p.kind for p in props] == ["create"]  # the cited note's content, not its removal
    assert "Someone is writing" not in json.dumps([p.summary for p in props])


def test_auto_mode_applies_the_extractions_then_disposes_of_the_note(workspace: Path) -> None:
    note = _note(workspace, "ops.md", b"- Logs of the api service go to the ops bucket\n", folder="scratch")
    with MemoryStore(str(workspace), Settings(mode="auto", notesDirs=("scratch",))) as ms:
        result, _ = R.general_review(ms, automatic=True)
    assert result.applied is not None and len(result.applied) == 2 and not note.exists()
    assert "Logs of the api service" in "".join(p.read_text() for p in (workspace / ".agents/memory").glob("*.md"))


def test_a_symlinked_notes_folder_is_never_followed(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    _note(outside, "secret.md", b"- The outside note must stay where it is\n", folder=".")
    (workspace / ".agents").mkdir()
    (workspace / ".agents/notes").symlink_to(outside)
    with MemoryStore(str(workspace), Settings()) as ms:
        result, _ = R.general_review(ms, automatic=False)
    assert result.review is None and result.notesProblems == (
        "E_PATH_SYMLINK: notes folder .agents/notes not read",)
    assert (outside / "secret.md").exists()


def test_a_folder_swapped_for_a_symlink_after_the_review_fails_closed(workspace: Path, tmp_path: Path) -> None:
    note = _note(workspace, data=b"- We deploy with make ship\n")
    (workspace / ".agents/memory").mkdir(parents=True)
    (workspace / ".agents/memory/deploy.md").write_text(
        "---\nname: Deploy\ndescription: deploying\ntype: project\n---\n- We deploy with make ship\n")
    cairn(workspace, "review")
    (disp,) = _by_kind(cairn_json(workspace, "proposals"))["disposition"]
    moved = tmp_path / "moved"
    (workspace / ".agents/notes").rename(moved)
    (workspace / ".agents/notes").symlink_to(moved)
    r = cairn(workspace, "accept", disp["id"], check=False)
    assert r.returncode == 2 and "E_PATH_SYMLINK" in r.stderr and "Traceback" not in r.stderr
    assert (moved / "deploy.md").read_bytes() == b"- We deploy with make ship\n"
    assert note.is_symlink() is False


@pytest.fixture
def deploy_note(workspace: Path) -> Path:
    """A note that memory already carries, written before the server starts."""
    note = _note(workspace, data=b"- We deploy with make ship\n")
    (workspace / ".agents/memory").mkdir(parents=True)
    (workspace / ".agents/memory/deploy.md").write_text(
        "---\nname: Deploy\ndescription: deploying\ntype: project\n---\n- We deploy with make ship\n")
    return note


@pytest.mark.asyncio
@pytest.mark.lsp_options({"mode": "propose"})
async def test_the_editor_reviews_accepts_and_undoes_a_disposition(workspace: Path, deploy_note: Path,
                                                                    client: LanguageClient) -> None:
    from tests.server.lsp_harness import command, plain, request, until

    note = deploy_note
    await command(client, "cairn.review", {"workspace": str(workspace)})

    async def candidates() -> list[Any]:
        rows = plain(await request(client, "cairn/cockpit", {"view": "candidates"}))
        return [r for r in rows if r["kind"] == "disposition"]

    (row,) = await until(client, candidates)
    await command(client, "cairn.accept", {"workspace": str(workspace), "ids": [row["id"]]})
    assert not note.exists()
    await command(client, "cairn.undo", {"workspace": str(workspace), "id": row["id"]})
    assert note.read_bytes() == b"- We deploy with make ship\n"
