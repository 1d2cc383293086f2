"""Discovery over a synthetic home: every store, relocation variables, workspaces, symlinks, bounds."""

from __future__ import annotations

import os
import shutil

from cairn.worker.ingest.importers import RECORDS
from cairn.worker.ingest.sources import discover, walk
from cairn.worker.jobs.importing import select, sources

from .home import by_format, env_for, make_home

DISCOVERABLE = {f.name for f in RECORDS.values() if f.stores}  # not exports, buffers: they have no store


def _setup(tmp_path):
    ws, other = str(tmp_path / "work" / "proj"), str(tmp_path / "work" / "other")
    return make_home(tmp_path, ws, other), ws, other


def test_finds_every_store_and_each_sessions_workspace(tmp_path):
    home, ws, other = _setup(tmp_path)
    stores = discover(str(home), env_for(home), workspace=ws)
    found = by_format(stores)
    assert set(found) == DISCOVERABLE
    assert all(not st.error for st in stores)
    where = {fmt: sorted({r.workspace for r in refs}, key=str) for fmt, refs in found.items()}
    assert where["claude-code"] == sorted([ws, other])
    assert where["gemini-cli"] == sorted([ws, other])  # a .project_root slug, and an old sha256(path) folder
    for fmt in ("codex", "qwen-code", "continue", "cline", "opencode", "aider", "specstory"):
        assert where[fmt] == [ws], fmt
    assert where["copilot-cli"] == [other] and where["roo-code"] == [other]
    # Cursor agent transcripts: the workspace whose path names the project folder; the one of a conversation
    # the Cursor database holds is left to the database
    assert where["cursor-transcript"] == sorted([ws, other])
    assert sorted(os.path.basename(r.path)[:4] for r in found["cursor-transcript"]) == ["6a1f", "7b2e"]
    assert sorted(where["goose"], key=str) == sorted([ws, other])  # a JSONL session here, a database session there
    # Cursor: the composer listed by this workspace's storage is ws's; the generating one is unowned
    assert sorted(str(r.workspace) for r in found["cursor"]) == sorted(map(str, [ws, None, ws]))
    assert len(found["opencode"]) == 1 and found["opencode"][0].key == "ses_01a2b3c4d5e6ABCDEFGHIJKLMN"  # no sub-agent
    assert len(found["goose"]) == 2  # the JSONL session and the database's user session, not its sub-agent
    assert all(st.size > 0 and st.first is not None for st in stores)


def test_relocation_variables_and_xdg(tmp_path):
    home, ws, other = _setup(tmp_path)
    moved = tmp_path / "moved"
    shutil.move(home / ".claude", moved / "claude")
    shutil.move(home / ".codex", moved / "codex")
    shutil.move(home / ".continue", moved / "continue")
    shutil.move(home / ".local" / "share", moved / "data")
    shutil.move(home / ".config", moved / "config")
    assert set(by_format(discover(str(home), env_for(home), workspace=ws))) == {"gemini-cli", "qwen-code", "copilot-cli",
                                                                               "aider", "specstory",
                                                                               "cursor-transcript"}
    env = env_for(home, CLAUDE_CONFIG_DIR=str(moved / "claude"), CODEX_HOME=str(moved / "codex"),
                  CONTINUE_GLOBAL_DIR=str(moved / "continue"), XDG_DATA_HOME=str(moved / "data"),
                  XDG_CONFIG_HOME=str(moved / "config"))
    assert set(by_format(discover(str(home), env, workspace=ws))) == DISCOVERABLE
    shutil.move(moved / "data" / "goose", moved / "gooseroot" / "data")
    env["GOOSE_PATH_ROOT"] = str(moved / "gooseroot")
    assert len(by_format(discover(str(home), env, workspace=ws))["goose"]) == 2


def test_never_follows_a_symlink_out_of_a_store(tmp_path):
    home, ws, other = _setup(tmp_path)
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    shutil.copyfile(home / ".continue" / "sessions" / "0e4a.json", outside / "secret.json")
    shutil.copyfile(home / ".continue" / "sessions" / "0e4a.json", outside / "deep" / "x.json")
    sessions = home / ".continue" / "sessions"
    os.symlink(outside / "secret.json", sessions / "link.json")
    os.symlink(outside / "deep", home / ".claude" / "projects" / "linked-dir")
    stores = discover(str(home), env_for(home), workspace=ws)
    paths = [r.path for st in stores for r in st.sessions]
    assert not any(p.startswith(str(outside)) or p.endswith("link.json") or "linked-dir" in p for p in paths)
    assert len(by_format(stores)["continue"]) == 1


def test_a_root_that_is_a_link_is_followed_once(tmp_path):
    home, ws, other = _setup(tmp_path)
    shutil.move(home / ".continue", tmp_path / "dotfiles-continue")
    os.symlink(tmp_path / "dotfiles-continue", home / ".continue")
    assert len(by_format(discover(str(home), env_for(home), workspace=ws))["continue"]) == 1


def test_bounded_work_per_store(tmp_path, monkeypatch):
    home, ws, other = _setup(tmp_path)
    d = home / ".continue" / "sessions"
    for i in range(20):
        shutil.copyfile(d / "0e4a.json", d / f"s{i:02d}.json")
    monkeypatch.setattr(walk, "MAX_FILES", 5)
    (st,) = [s for s in discover(str(home), env_for(home), workspace=ws) if s.format == "continue"]
    assert len(st.sessions) == 5 and st.truncated


def test_a_corrupt_database_is_reported_and_the_rest_listed(tmp_path):
    home, ws, other = _setup(tmp_path)
    db = home / ".local" / "share" / "opencode" / "opencode.db"
    db.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    stores = discover(str(home), env_for(home), workspace=ws)
    (bad,) = [st for st in stores if st.format == "opencode"]
    assert bad.error == "E_IMPORT_MALFORMED" and not bad.sessions
    assert set(by_format(stores)) == DISCOVERABLE - {"opencode"} | {"opencode"}
    assert len(by_format(stores)["claude-code"]) == 2


def test_selection_defaults_to_the_workspace(tmp_path):
    home, ws, other = _setup(tmp_path)
    stores = discover(str(home), env_for(home), workspace=ws)
    mine = select(stores, ws)
    assert mine and all(r.workspace == ws for r in mine)
    everything = select(stores, ws, everywhere=True)
    assert len(everything) == sum(len(st.sessions) for st in stores) > len(mine)
    assert {r.workspace for r in select(stores, os.path.dirname(ws))} == {ws, other}  # sessions below it count
    assert select(stores, ws, since=4102444800.0) == []  # 2100-01-01: nothing that recent
    grouped = sources(mine)
    db_sources = [(fmt, keys) for fmt, _, keys in grouped if keys is not None]
    assert ("opencode", frozenset({"ses_01a2b3c4d5e6ABCDEFGHIJKLMN"})) in db_sources
