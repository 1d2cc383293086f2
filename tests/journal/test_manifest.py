"""The source manifest: a re-run that finds nothing new reads nothing and writes nothing; appended turns
are read from the cut; a rewritten, truncated or replaced file is never skipped (docs/adr/0022).

Every test first shows the manifest at work (a re-run writes no file, which the import before it
always did: a claim pair per session), then the case it guards.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from cairn.protocol import codec
from cairn.protocol.digest import ModelPolicy
from cairn.protocol.sources import SourceEntry
from cairn.worker.ingest import importers, resume
from cairn.worker.journal import imports as I
from cairn.worker.journal import sources as S
from cairn.worker.journal.store import Journal

from tests.importers.formats import build_db
from tests.journal.helpers import J, batches, cairn, cairn_json, ready_evidence
from tests.sources.home import env_for, make_home
from tests.support.generated import session_lines
from tests.support.transcripts import FIXTURES

POLICY = ModelPolicy(provider="extractive")


def snapshot(ws: Path) -> dict[str, str]:
    """Every file under ``.cairn/`` with the sha256 of its bytes (the storage clock's empty file included)."""
    return {str(p.relative_to(ws)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((ws / ".cairn").rglob("*")) if p.is_file()}


def stamps(ws: Path) -> dict[str, int]:
    """Every file's and folder's modification time under ``.cairn/`` (a touch shows here, not in the bytes)."""
    return {str(p.relative_to(ws)): p.stat().st_mtime_ns for p in sorted((ws / ".cairn").rglob("*"))}


def write(path: Path, session: int, turns: int) -> Path:
    path.write_text("".join(line + "\n" for line in session_lines(session, turns, words=12)))
    return path


def grow(path: Path, session: int, turns: int) -> None:
    """Append to ``path`` the records that make its session ``turns`` long (as the tool appends them)."""
    have = path.read_text().count("\n")
    lines = list(session_lines(session, turns, words=12))
    with path.open("a") as fh:
        fh.write("".join(line + "\n" for line in lines[have:]))


def run(ws: Path, *paths: Path, sealed_before: float | None = None, **kw: Any) -> Any:
    with Journal(str(ws)) as j:
        return I.import_paths(j, [str(p) for p in paths], "auto", POLICY, sealed_before=sealed_before, **kw)


def turns_of(ws: Path) -> list[tuple[str, str | None, str, str]]:
    """Every captured turn of the workspace: (id, parent, user, assistant), captures in name order."""
    out = []
    for cap in sorted((ws / J / "captures").iterdir()):
        out += [(e.turn_id, e.parent_turn_id, e.user, e.assistant) for _, e in ready_evidence(ws, cap)]
    return out


def entry(ws: Path) -> tuple[Path, SourceEntry]:
    (path,) = (ws / J / "sources").iterdir()
    return path, codec.decode(path.read_bytes(), SourceEntry)


# -- nothing new: nothing read, nothing written ------------------------------------------------------------

def test_import_all_with_nothing_new_writes_no_file_and_counts_as_a_full_reread(tmp_path: Path) -> None:
    ws = tmp_path / "work" / "proj"
    home = make_home(tmp_path, str(ws), str(tmp_path / "work" / "other"))
    env = env_for(home)
    first = json.loads(cairn(ws, "import", "--all", "--every-workspace", "--json", env=env).stdout)
    assert first["captured"] > 20 and first["sources"] >= 15
    before, stamped = snapshot(ws), stamps(ws)
    again = json.loads(cairn(ws, "import", "--all", "--every-workspace", "--json", env=env).stdout)
    assert snapshot(ws) == before  # no claim pair, no entry, no segment: not one file created or changed
    assert stamps(ws) == stamped  # nor touched: the storage clock's file keeps its time (a backup sees no change)
    assert (again["captured"], again["skipped"], again["sessions"], again["sources"]) == (
        0, first["captured"] + first["skipped"], first["sessions"], first["sources"])
    assert again.get("failed") == first.get("failed") and again.get("pending") == first.get("pending")


def test_import_all_with_no_session_to_read_makes_no_state_folder(tmp_path: Path) -> None:
    """A first `import --all` where this workspace has no session (and `--every-workspace` where the home has
    none) wrote `.cairn/state` (owner, .gitignore, the claims folder): a run that finds nothing writes nothing."""
    ws = tmp_path / "work" / "proj"
    ws.mkdir(parents=True)
    home = make_home(tmp_path, str(tmp_path / "work" / "other"), str(tmp_path / "work" / "third"))
    for argv in (["import", "--all"], ["import", "--all", "--every-workspace"]):
        empty = tmp_path / "empty-home"
        empty.mkdir(exist_ok=True)
        cairn(ws, *argv, "--json", env=env_for(empty))
    cairn(ws, "import", "--all", "--json", env=env_for(home))  # sessions of other workspaces only
    assert not (ws / ".cairn").exists()


def test_a_named_file_with_nothing_new_is_not_read(workspace: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    src = write(tmp_path / "s.jsonl", 1, 12)
    assert run(workspace, src).captured == 12
    before = snapshot(workspace)

    def never(*args: Any, **kw: Any) -> Any:
        raise AssertionError("an unchanged file was read")

    monkeypatch.setattr(importers, "open_report", never)
    monkeypatch.setattr(resume, "whole", never)
    r = run(workspace, src)
    assert (r.captured, r.skipped, r.sessions, r.formats) == (0, 12, 1, ("claude-code",))
    assert snapshot(workspace) == before


def test_a_file_grown_by_no_complete_turn_elects_no_claim(workspace: Path, tmp_path: Path) -> None:
    src = write(tmp_path / "s.jsonl", 1, 6)
    run(workspace, src)
    before = snapshot(workspace)
    with src.open("a") as fh:
        fh.write('{"type":"assistant","message":{"content":[{"type":"text","text":"still wri')  # a write in progress
    r = run(workspace, src)
    assert (r.captured, r.skipped) == (0, 6)
    assert snapshot(workspace) == before


# -- grown: read from the cut ------------------------------------------------------------------------------

def test_appended_turns_are_read_from_the_cut_and_captured_as_a_whole_read_would(
        workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = write(tmp_path / "s.jsonl", 7, 30)
    assert run(workspace, src).captured == 30
    resumed: list[bool] = []
    real = resume.resume

    def spy(*args: Any, **kw: Any) -> Any:
        out = real(*args, **kw)
        resumed.append(out is not None)
        return out

    monkeypatch.setattr(resume, "resume", spy)
    for n in (35, 36, 50):
        grow(src, 7, n)
        r = run(workspace, src)
        assert (r.captured, r.skipped) == (n - {35: 30, 36: 35, 50: 36}[n], {35: 30, 36: 35, 50: 36}[n])
    assert resumed == [True, True, True]
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    run(fresh, src)
    assert turns_of(workspace) == turns_of(fresh)  # same ids, parents and texts as one read of the whole file
    before = snapshot(workspace)
    run(workspace, src)
    assert snapshot(workspace) == before


# -- changed: never skipped wrongly ------------------------------------------------------------------------

def _rewrite_same_size(src: Path, old: str, new: str) -> None:
    """Rewrite ``src`` in place (same inode) with ``old`` replaced by ``new`` (same length) wherever it
    occurs, its mtime kept to the nanosecond."""
    assert len(old) == len(new)
    st = src.stat()
    text = src.read_text()
    assert old in text
    with src.open("r+") as fh:
        fh.write(text.replace(old, new))
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = src.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (st.st_ino, st.st_size, st.st_mtime_ns)


def _last_prompt_uuid(src: Path) -> str:
    recs = [json.loads(line) for line in src.read_text().splitlines()]
    return [r for r in recs if r.get("type") == "user" and isinstance(r["message"]["content"], str)][-1]["uuid"]


def test_a_same_size_rewrite_within_the_same_mtime_is_read_again(workspace: Path, tmp_path: Path) -> None:
    src = write(tmp_path / "s.jsonl", 2, 8)
    run(workspace, src)
    before = snapshot(workspace)
    run(workspace, src)
    assert snapshot(workspace) == before
    uuid = _last_prompt_uuid(src)
    _rewrite_same_size(src, uuid, uuid[:-4] + "beef")  # the last turn edited: a new turn id
    r = run(workspace, src)
    assert (r.captured, r.skipped) == (1, 7)


@pytest.mark.parametrize("where", ["head", "tail"])
def test_a_same_size_rewrite_with_every_stat_mark_equal_is_caught_by_the_hashes(
        workspace: Path, tmp_path: Path, where: str) -> None:
    """Same inode, size, mtime and ctime (the entry's marks made equal to the rewritten file's, as a rewrite
    within one tick of the clock would leave them): the head or tail hash still sees the change."""
    src = write(tmp_path / "s.jsonl", 3, 8)
    run(workspace, src)
    before = snapshot(workspace)
    assert run(workspace, src).captured == 0 and snapshot(workspace) == before
    recs = [json.loads(line) for line in src.read_text().splitlines()]
    uuid = recs[1]["uuid"] if where == "head" else _last_prompt_uuid(src)
    _rewrite_same_size(src, uuid, uuid[:-4] + "beef")
    path, old = entry(workspace)
    path.write_bytes(codec.encode(codec.evolve(old, mark=S.file_mark(src.stat()))))
    r = run(workspace, src)
    assert r.captured == 1  # the edited turn, read again under its new id


def test_a_truncated_file_is_read_whole(workspace: Path, tmp_path: Path) -> None:
    src = write(tmp_path / "s.jsonl", 4, 10)
    run(workspace, src)
    before = snapshot(workspace)
    assert run(workspace, src).captured == 0 and snapshot(workspace) == before
    lines = src.read_text().splitlines(keepends=True)
    with src.open("r+") as fh:  # cut back to 6 turns, then another conversation grows it past its old size
        fh.truncate(len("".join(lines[:1 + 4 * 6])))
    other = [json.loads(line) for line in session_lines(4, 12, words=40)][1 + 4 * 6:]
    fresh = {r["uuid"] for r in other}
    with src.open("a") as fh:  # the same chain of records under other ids, with other words
        for r in other:
            r["uuid"], r["parentUuid"] = "x" + r["uuid"], ("x" if r["parentUuid"] in fresh else "") + r["parentUuid"]
            fh.write(json.dumps(r) + "\n")
    assert src.stat().st_size > len("".join(lines))
    r = run(workspace, src)
    assert r.captured == 6 and r.skipped == 6


def test_a_replaced_file_is_read_as_new(workspace: Path, tmp_path: Path) -> None:
    src = write(tmp_path / "s.jsonl", 5, 8)
    run(workspace, src)
    st = src.stat()
    uuid = _last_prompt_uuid(src)
    new = tmp_path / "new.jsonl"
    new.write_text(src.read_text().replace(uuid, uuid[:-4] + "beef"))
    os.utime(new, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(new, src)  # same name, size and mtime; another inode
    assert (src.stat().st_size, src.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    assert run(workspace, src).captured == 1


def test_a_torn_segment_makes_the_next_import_read_the_file(workspace: Path, tmp_path: Path) -> None:
    src = write(tmp_path / "s.jsonl", 6, 8)
    run(workspace, src)
    (cap,) = (workspace / J / "captures").iterdir()
    (b,) = batches(cap)
    seg = workspace / J / "segments" / b.segment[:2] / b.segment
    seg.write_bytes(seg.read_bytes()[:10])
    assert run(workspace, src).repaired == 1


def test_tails_left_pending_are_admitted_once_the_file_is_sealed(workspace: Path, tmp_path: Path) -> None:
    src = tmp_path / "rollout.jsonl"
    src.write_bytes((FIXTURES / "codex" / "0.60" / "rollout-2025-11-23T11-12-40-019ab3e1-4c2d-7a80-b6f1-2d9e5c7a8b31.jsonl")
                    .read_bytes())
    first = run(workspace, src)
    assert first.pending == 1
    before = snapshot(workspace)
    again = run(workspace, src)
    assert (again.captured, again.pending, again.skipped) == (0, 1, first.captured) and snapshot(workspace) == before
    sealed = run(workspace, src, sealed_before=math.inf)
    assert (sealed.captured, sealed.pending) == (1, 0)
    before = snapshot(workspace)
    assert run(workspace, src, sealed_before=math.inf).captured == 0 and snapshot(workspace) == before


def test_another_reader_reads_the_file_again(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = write(tmp_path / "s.jsonl", 8, 4)
    run(workspace, src)
    before = snapshot(workspace)
    run(workspace, src)
    assert snapshot(workspace) == before
    monkeypatch.setattr(S, "_READER", "0123456789abcdef")  # the importers changed (an upgrade, an edit)
    read: list[str] = []
    real = resume.whole

    def whole(reader: Any) -> Any:
        read.append("whole")
        return real(reader)

    monkeypatch.setattr(resume, "whole", whole)
    assert run(workspace, src).skipped == 4 and read == ["whole"]


def test_a_database_is_read_again_only_once_it_changed(workspace: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    db = build_db("opencode/opencode.sql", tmp_path / "opencode.db")
    first = run(workspace, db)
    assert first.captured > 0
    before = snapshot(workspace)
    assert run(workspace, db).captured == 0 and snapshot(workspace) == before
    con = sqlite3.connect(db)
    con.execute("UPDATE session SET title = title || '.'")
    con.commit()
    con.close()
    opened: list[str] = []
    real = importers.open_report

    def open_report(p: Any, *a: Any, **k: Any) -> Any:
        opened.append(str(p))
        return real(p, *a, **k)

    monkeypatch.setattr(importers, "open_report", open_report)
    assert run(workspace, db).skipped == first.captured and opened == [str(db)]


def test_unchanged_files_start_no_helper_process(workspace: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    srcs = [write(tmp_path / f"s{i:02d}.jsonl", 100 + i, 2) for i in range(40)]
    monkeypatch.setenv("CAIRN_IMPORT_SPLIT_MIN", "32")
    assert run(workspace, *srcs).captured == 80
    grow(srcs[3], 103, 3)

    def no_helper(*args: Any, **kw: Any) -> Any:
        raise AssertionError("a helper process for files that need no reading")

    from cairn.worker.journal import import_split
    monkeypatch.setattr(import_split, "Helper", no_helper)
    r = run(workspace, *srcs, processes=2)
    assert (r.captured, r.skipped, r.files) == (1, 80, 40)


def test_the_cli_says_the_same_of_a_rerun(workspace: Path, tmp_path: Path) -> None:
    src = write(tmp_path / "s.jsonl", 9, 5)
    cairn(workspace, "import", str(src))
    out = cairn_json(workspace, "import", str(src))
    assert (out["captured"], out["skipped"], out["sessions"], out["formats"]) == (0, 5, 1, ["claude-code"])
