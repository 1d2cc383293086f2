"""The watcher: each tick imports only what changed, retries what failed, seals what went idle."""

from __future__ import annotations

import json

from cairn.protocol.digest import ModelPolicy
from cairn.worker.ingest.sources import discover, probe
from cairn.worker.jobs.watch import Watcher
from cairn.worker.journal.store import Journal

from tests.journal.helpers import cairn

from .home import env_for, make_home

POLICY = ModelPolicy(provider="extractive")


def _setup(tmp_path):
    ws, other = str(tmp_path / "work" / "proj"), str(tmp_path / "work" / "other")
    home = make_home(tmp_path, ws, other)
    return home, ws, Watcher(str(home), env_for(home), ws, POLICY)


def _tick(w, ws, **journal):
    with Journal(ws, **journal) as j:
        return w.tick(j)


def test_a_tick_imports_only_what_changed(tmp_path):
    home, ws, w = _setup(tmp_path)
    first = _tick(w, ws)
    assert first.failed == () and first.captured > 0 and first.changed >= 10
    quiet = _tick(w, ws)
    assert (quiet.changed, quiet.sources, quiet.captured) == (0, 0, 0)
    chat = next((home / ".gemini" / "tmp" / "proj" / "chats").glob("*.jsonl"))
    with chat.open("a") as f:  # the live session completes one more turn
        f.write(json.dumps({"id": "u-9", "type": "user", "content": "Also pin the Node version in .nvmrc."}) + "\n")
        f.write(json.dumps({"id": "g-9", "type": "gemini", "content": "Pinned Node 22 in .nvmrc.",
                            "tokens": {"total": 5}}) + "\n")
    grown = _tick(w, ws)
    # the new prompt also completes the turn the file ended on (the user moved on after its tool call)
    assert (grown.changed, grown.sources, grown.captured) == (1, 1, 2)


def test_a_failed_source_is_tried_again(tmp_path):
    home, ws, w = _setup(tmp_path)
    session = home / ".continue" / "sessions" / "0e4a.json"
    whole = session.read_text()
    session.write_text(whole[: whole.index('"history"')] + '"history": [')  # being rewritten by the tool
    first = _tick(w, ws)
    assert [(f.format, f.code) for f in first.failed] == [("continue", "E_IMPORT_MALFORMED")]
    again = _tick(w, ws)  # unchanged, still failing: tried again, reported again
    assert again.changed == 1 and [f.format for f in again.failed] == ["continue"]
    session.write_text(whole)
    fixed = _tick(w, ws)
    assert fixed.failed == () and fixed.captured == 2
    assert _tick(w, ws).changed == 0


def test_idle_captures_are_sealed(tmp_path):
    home, ws, w = _setup(tmp_path)
    assert _tick(w, ws).sealed == ()  # just captured: not idle
    later = _tick(w, ws, clock_offset=w.idle + 60)
    assert later.changed == 0 and len(later.sealed) >= 10
    assert _tick(w, ws, clock_offset=w.idle + 120).sealed == ()  # sealed once


def test_unchanged_files_are_not_probed_again(tmp_path, monkeypatch):
    home, ws, w = _setup(tmp_path)
    probes: dict = {}
    discover(str(home), env_for(home), workspace=ws, probes=probes)
    calls: list[str] = []
    real = probe.file_workspace

    def counted(fmt: str, path: str) -> str | None:
        calls.append(path)
        return real(fmt, path)

    monkeypatch.setattr(probe, "file_workspace", counted)
    again = discover(str(home), env_for(home), workspace=ws, probes=probes)
    assert calls == [] and sum(len(st.sessions) for st in again) > 10


def test_cli_watch_once(tmp_path):
    home, ws, _ = _setup(tmp_path)
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local" / "share")}
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "OPENCODE_DB", "CLINE_DIR", "COPILOT_HOME",
                "GOOSE_PATH_ROOT", "CONTINUE_GLOBAL_DIR", "APPDATA"):
        env[var] = ""
    out = json.loads(cairn(tmp_path / "work" / "proj", "watch", "--once", "--idle", "0", "--json", env=env).stdout)
    assert out["captured"] > 0 and out["sealed"] and out["process"]["published"] >= 1
    r = cairn(tmp_path / "work" / "proj", "watch", "--interval", "0", env=env, check=False)
    assert r.returncode == 2 and "E_USAGE" in r.stderr


def test_live_watching_follows_this_workspaces_jsonl_stores_only(tmp_path):
    """stores_for: Claude Code's project folder of this workspace, the other tools' JSONL session files of
    this workspace; never another workspace's folder, never a database or a JSON file."""
    from cairn.server.watch.files import stores_for

    home, ws, _ = _setup(tmp_path)
    roots = stores_for(ws, home=str(home), env=env_for(home))
    claude = str(home / ".claude" / "projects" / ws.replace("/", "-"))
    assert claude in roots and all(r == claude or r.endswith(".jsonl") for r in roots)
    assert any("/.codex/sessions/" in r for r in roots) and any("/.gemini/" in r for r in roots)
    assert not any("other" in r.replace(str(tmp_path), "") for r in roots)


def test_one_discovery_serves_every_workspace(tmp_path, monkeypatch):
    """stores_by_workspace walks the home once and gives each workspace what stores_for gives it alone."""
    import cairn.worker.ingest.sources as sources_pkg
    from cairn.server.watch.files import stores_by_workspace, stores_for

    home, ws, _ = _setup(tmp_path)
    other = str(tmp_path / "work" / "other")
    alone = {w: stores_for(w, home=str(home), env=env_for(home)) for w in (ws, other)}
    calls: list[object] = []
    real = sources_pkg.discover

    def counted(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(sources_pkg, "discover", counted)
    together = stores_by_workspace([ws, other], home=str(home), env=env_for(home))
    assert len(calls) == 1
    assert together == alone and together[ws] != together[other] and all(together.values())
