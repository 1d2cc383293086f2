"""``import --all``: the workspace's sessions, once; a bad source fails alone with its fixed code."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest
from cairn.protocol.digest import ModelPolicy
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.worker.ingest.importers import _sqlite, load
from cairn.worker.ingest.sources import discover
from cairn.worker.jobs.importing import import_all, import_sources, select, sources
from cairn.worker.journal.store import Journal

from tests.importers.formats import build_db
from tests.journal.helpers import cairn

from .home import env_for, make_home

POLICY = ModelPolicy(provider="extractive")


def _setup(tmp_path):
    ws, other = str(tmp_path / "work" / "proj"), str(tmp_path / "work" / "other")
    return make_home(tmp_path, ws, other), ws


def _run(home, ws, **kw):
    stores = discover(str(home), env_for(home), workspace=ws)
    with Journal(ws) as j:
        return import_all(j, stores, ws, POLICY, **kw)


def _failed(r):
    return {(f.format, f.code) for f in r.failed}


def test_imports_the_workspace_sessions_once(tmp_path):
    home, ws = _setup(tmp_path)
    seen = []
    chosen = sources(select(discover(str(home), env_for(home), workspace=ws), ws))
    with Journal(ws) as j:
        first = import_sources(j, chosen, POLICY, lambda done, total: seen.append((done, total)))
    assert first.failed == () and first.captured > 0 and first.sources == len(chosen) >= 10
    assert seen[-1] == (first.captured, first.captured)  # the progress bar counts turns
    again = _run(home, ws)
    assert (again.captured, again.skipped) == (0, first.captured)
    wider = _run(home, ws, everywhere=True)
    assert wider.captured > 0 and wider.skipped == first.captured


def test_a_bad_source_fails_alone_and_nothing_is_captured_twice(tmp_path):
    home, ws = _setup(tmp_path)
    stores = discover(str(home), env_for(home), workspace=ws)
    chosen = sources(select(stores, ws))
    by_fmt = {fmt: path for fmt, path, _ in chosen}
    cont = by_fmt["continue"]
    whole = open(cont, "rb").read()
    with open(cont, "wb") as f:  # cut short while the tool rewrites it
        f.write(whole[: len(whole) // 2])
    codex = by_fmt["codex"]
    target = str(tmp_path / "elsewhere.jsonl")
    os.replace(codex, target)
    os.symlink(target, codex)  # the session file became a link after discovery
    os.unlink(by_fmt["qwen-code"])  # the store changed under the reader
    with open(by_fmt["opencode"], "r+b") as g:  # a corrupt database
        g.seek(100)
        g.write(b"\xff" * 3000)
    with Journal(ws) as j:
        r = import_sources(j, chosen, POLICY)
    assert _failed(r) == {("continue", "E_IMPORT_MALFORMED"), ("codex", "E_PATH_SYMLINK"),
                          ("qwen-code", "E_IMPORT_UNREADABLE"), ("opencode", "E_IMPORT_MALFORMED")}
    assert r.sources == len(chosen) - 4 and r.captured > 0
    assert not any("NOISE" in f.message or ws in f.message for f in r.failed)
    with open(cont, "wb") as f:  # the tool finished writing
        f.write(whole)
    again = _run(home, ws)
    assert again.captured == 2  # only the two Continue turns are new
    assert again.skipped == r.captured


def test_a_locked_database_is_read_without_waiting(tmp_path):
    home, ws = _setup(tmp_path)
    db = home / ".local" / "share" / "opencode" / "opencode.db"
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # the tool is writing
    try:
        (s,) = load(db)
        assert len(s.turns) == 2
        r = _run(home, ws)
        assert r.failed == () and "ses_01a2b3c4d5e6ABCDEFGHIJKLMN" in r.session_ids
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_sqlite_failures_map_to_fixed_codes(tmp_path):
    path = tmp_path / "x.db"
    assert _sqlite.translate(path, sqlite3.OperationalError("database is locked")).code == ErrorCode.IMPORT_LOCKED
    assert _sqlite.translate(path, sqlite3.DatabaseError("file is not a database")).code == ErrorCode.IMPORT_MALFORMED
    assert _sqlite.translate(path, sqlite3.OperationalError("disk I/O error")).code == ErrorCode.IMPORT_UNREADABLE
    os.symlink(build_db("cursor/state.sql", tmp_path / "elsewhere.db"), path)
    assert load(path, "cursor")  # an explicit path given by the user may be a link
    for fmt in ("cursor", "auto"):
        with pytest.raises(CairnError) as err:
            load(path, fmt, follow_symlinks=False)
        assert err.value.code == ErrorCode.PATH_SYMLINK


def test_the_database_is_never_written(tmp_path):
    home, ws = _setup(tmp_path)
    db = home / ".local" / "share" / "opencode" / "opencode.db"
    before = (db.read_bytes(), sorted(os.listdir(db.parent)))
    _run(home, ws)
    assert (db.read_bytes(), sorted(os.listdir(db.parent))) == before


def test_cli_discover_and_import_all(tmp_path):
    home, ws = _setup(tmp_path)
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local" / "share")}
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "OPENCODE_DB", "CLINE_DIR", "COPILOT_HOME",
                "GOOSE_PATH_ROOT", "CONTINUE_GLOBAL_DIR", "APPDATA"):
        env[var] = ""
    out = json.loads(cairn(tmp_path / "work" / "proj", "discover", "--json", env=env).stdout)
    assert out["workspace"] == ws and {st["format"] for st in out["stores"]} >= {"claude-code", "cursor", "opencode"}
    human = cairn(tmp_path / "work" / "proj", "discover", env=env).stdout
    assert "claude-code" in human and "HERE" in human
    # each per-workspace row says what its number counts and what the path is
    assert f"session(s) in workspace {ws}" in human, human
    r = cairn(tmp_path / "work" / "proj", "import", "--all", env=env)
    assert "new turn(s)" in r.stdout
    # the files were just written: a last turn with no end signal waits; `run` ends the sessions and takes it
    pending = json.loads(cairn(tmp_path / "work" / "proj", "import", "--all", "--json", env=env).stdout).get("pending", 0)
    r = cairn(tmp_path / "work" / "proj", "run", "--all", env=env)  # the same import, then the other stages
    assert r.stdout.startswith(f"imported {pending} new turn(s)") and "sealed" in r.stdout and "Traceback" not in r.stderr
    with open(home / ".continue" / "sessions" / "0e4a.json", "w") as f:
        f.write(json.dumps({"sessionId": "x", "workspaceDirectory": ws})[:-1] + ', "history": [')
    r = cairn(tmp_path / "work" / "proj", "import", "--all", "--since", "2000-01-01", env=env, check=False)
    assert r.returncode == 1 and "E_IMPORT_MALFORMED" in r.stderr and "Traceback" not in r.stderr
    r = cairn(tmp_path / "work" / "proj", "import", "--all", "--since", "yesterday", env=env, check=False)
    assert r.returncode == 2 and "E_USAGE" in r.stderr
    r = cairn(tmp_path / "work" / "proj", "import", env=env, check=False)
    assert r.returncode == 2 and "E_USAGE" in r.stderr


def test_locked_even_for_an_immutable_read_is_a_fixed_code(tmp_path, monkeypatch):
    home, ws = _setup(tmp_path)

    def locked(path, immutable):
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(_sqlite, "_connect", locked)
    r = _run(home, ws)
    assert ("opencode", "E_IMPORT_LOCKED") in _failed(r) and ("cursor", "E_IMPORT_LOCKED") in _failed(r)
    assert r.captured > 0  # the file stores went on


@pytest.mark.skipif(os.geteuid() == 0, reason="permissions do not bind root")
def test_an_unreadable_database_is_a_fixed_code(tmp_path):
    home, ws = _setup(tmp_path)
    db = home / ".local" / "share" / "opencode" / "opencode.db"
    db.chmod(0)
    try:
        with pytest.raises(CairnError) as err:
            load(db, "opencode")
        assert err.value.code == ErrorCode.IMPORT_UNREADABLE
    finally:
        db.chmod(0o600)


def test_an_unforeseen_record_shape_fails_that_source_alone(tmp_path, monkeypatch):
    from cairn.worker.ingest import importers

    home, ws = _setup(tmp_path)

    def broken(text, *, source_name):
        raise AttributeError("'list' object has no attribute 'get'")

    monkeypatch.setitem(importers._tables("continue").parsers, "continue", broken)  # the reader of a store's format
    r = _run(home, ws)
    assert _failed(r) == {("continue", "E_IMPORT_MALFORMED")} and r.captured > 0
    assert "list" not in r.failed[0].message


def test_ctrl_c_stops_import_all_at_a_batch_boundary_and_says_how_to_resume(tmp_path):
    """A heavy user's first ``import --all``: many sources at once, Ctrl-C keeps what is captured."""
    import subprocess

    from tests.journal.helpers import J
    from tests.journal.test_import_split import _first_batch_then_sigint
    from tests.support import PYTHON, REPO, child_env
    from tests.support.generated import write_session

    home = tmp_path / "home"
    store = home / ".claude" / "projects" / "-elsewhere"
    store.mkdir(parents=True)
    for i in range(40):
        write_session(store / f"s{i:02d}.jsonl", 200 + i, 40, words=8)
    ws = tmp_path / "ws"
    ws.mkdir()
    env = child_env(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), CAIRN_CAPTURE_BATCH_TURNS="2",
                    CAIRN_IMPORT_SPLIT_MIN="4")
    argv = [PYTHON, "-m", "cairn.server", "import", "--all", "--every-workspace", "-w", str(ws)]
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _first_batch_then_sigint(proc, ws)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert f"Resume with: cairn import --all --every-workspace -w {ws}" in err and "Traceback" not in err
    again = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    turns = [p for p in (ws / J / "captures").glob("*/b-*")]
    assert len(turns) == 40 * 20  # every batch of every session exactly once
