"""Closed stores: nothing of a store is read through a symlink, and nothing of this workspace is skipped silently.

A Claude Code project folder (or a folder on the way) swapped for a link between a look and a read is
refused with ``E_PATH_SYMLINK`` at the read; entries with a session's name that are not read (a link, a
FIFO, a folder) and sessions that cannot be imported are reported one line each, exit status 1, by
``cairn import --all`` and ``cairn watch --once``. The swaps happen in hooks between the look and the
read, never after a sleep.
"""

from __future__ import annotations

import json
import os
import pathlib

import pytest
from cairn.protocol.digest import ModelPolicy
from cairn.protocol.errors import CairnError
from cairn.worker.ingest.sources import discover, walk
from cairn.worker.jobs.importing import import_all, select
from cairn.worker.jobs.watch import Watcher
from cairn.worker.journal.store import Journal

from tests.journal.helpers import cairn

from .home import env_for, make_home

POLICY = ModelPolicy(provider="extractive")


def _setup(tmp_path: pathlib.Path) -> tuple[pathlib.Path, str, pathlib.Path]:
    ws, other = str(tmp_path / "work" / "proj"), str(tmp_path / "work" / "other")
    home = make_home(tmp_path, ws, other)
    return home, ws, home / ".claude" / "projects" / ws.replace("/", "-")


def _elsewhere(tmp_path: pathlib.Path, session: pathlib.Path, cwd: str) -> pathlib.Path:
    """A folder outside every store holding a session of the same name that records ``cwd``."""
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    text = session.read_text()
    recorded = json.loads(next(line for line in text.splitlines() if '"cwd"' in line))["cwd"]
    (outside / session.name).write_text(text.replace(recorded, cwd))
    return outside


def _swap_for_link(folder: pathlib.Path, target: pathlib.Path) -> None:
    os.rename(folder, folder.with_name(folder.name + ".moved"))
    os.symlink(target, folder)


def test_discovery_never_reads_a_head_through_a_folder_swapped_for_a_link(tmp_path, monkeypatch):
    """The project folder becomes a link after it was listed, before the session's head is read."""
    home, ws, folder = _setup(tmp_path)
    session = folder / "a.jsonl"
    secret = str(tmp_path / "secret-project")
    outside = _elsewhere(tmp_path, session, secret)
    real_head = walk.head

    def swap_then_read(path: str, *args, **kwargs) -> bytes:
        if path == str(session) and not folder.is_symlink():
            _swap_for_link(folder, outside)
        return real_head(path, *args, **kwargs)

    monkeypatch.setattr(walk, "head", swap_then_read)
    stores = discover(str(home), env_for(home), workspace=ws)
    (ref,) = [r for st in stores for r in st.sessions if r.path == str(session)]
    assert ref.workspace != secret  # the head was not read through the link
    assert ref in select(stores, ws)  # its project folder still names this workspace: reported, not dropped
    with Journal(ws) as j:
        r = import_all(j, stores, ws, POLICY)
    assert [(f.path, f.code) for f in r.failed] == [(str(session), "E_PATH_SYMLINK")]


def test_watch_once_never_imports_through_a_folder_swapped_for_a_link(tmp_path, monkeypatch):
    """The project folder becomes a link after discovery looked, before the import opens the session."""
    home, ws, folder = _setup(tmp_path)
    session = folder / "a.jsonl"
    outside = _elsewhere(tmp_path, session, ws)
    w = Watcher(str(home), env_for(home), ws, POLICY)
    real_changed = w.changed

    def look_then_swap():
        found = real_changed()
        _swap_for_link(folder, outside)
        return found

    monkeypatch.setattr(w, "changed", look_then_swap)
    with Journal(ws) as j:
        r = w.tick(j)
    assert [(f.path, f.code) for f in r.failed] == [(str(session), "E_PATH_SYMLINK")]
    assert r.captured > 0  # the other sessions of the workspace were imported


def _session_id(path: pathlib.Path) -> str:
    return next(json.loads(line)["sessionId"] for line in path.read_text().splitlines() if '"sessionId"' in line)


def _cli_env(home: pathlib.Path) -> dict[str, str]:
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local" / "share")}
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "OPENCODE_DB", "CLINE_DIR", "COPILOT_HOME",
                "GOOSE_PATH_ROOT", "CONTINUE_GLOBAL_DIR", "APPDATA"):
        env[var] = ""
    return env


@pytest.mark.parametrize("argv", [("import", "--all"), ("watch", "--once")], ids=["import-all", "watch-once"])
def test_unreadable_sessions_of_the_workspace_are_reported(tmp_path, argv):
    """In this workspace's Claude Code project folder: a link, a FIFO and a folder with a session's name,
    and a session the importer refuses; the project's aider history as a link. Each is one ``cairn: E_…``
    line and the exit status is 1; a symlinked folder there is not entered, nothing is read through a link."""
    home, ws, folder = _setup(tmp_path)
    theirs = home / ".claude" / "projects" / str(tmp_path / "work" / "other").replace("/", "-") / "b.jsonl"
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "c.jsonl").write_text(theirs.read_text().replace('sessionId":"b', 'sessionId":"c'))
    os.symlink(theirs, folder / "link.jsonl")  # another workspace's session, through a link
    os.symlink(outside / "deep", folder / "linked")  # a symlinked folder inside the project folder
    os.mkfifo(folder / "fifo.jsonl")
    (folder / "folder.jsonl").mkdir()
    (folder / "bad.jsonl").write_bytes(b"\x00\xff not a transcript\n")
    aider = pathlib.Path(ws) / ".aider.chat.history.md"
    os.replace(aider, outside / aider.name)
    os.symlink(outside / aider.name, aider)  # the project's own aider history, as a link
    expected = {(str(folder / "link.jsonl"), "E_PATH_SYMLINK"), (str(folder / "fifo.jsonl"), "E_PATH_NOT_REGULAR"),
                (str(folder / "folder.jsonl"), "E_PATH_NOT_REGULAR"), (str(folder / "bad.jsonl"), "E_IMPORT_MALFORMED"),
                (str(aider), "E_PATH_SYMLINK")}

    r = cairn(tmp_path / "work" / "proj", *argv, "--json", env=_cli_env(home), check=False)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    out = json.loads(r.stdout)
    assert {(f["path"], f["code"]) for f in out["failed"]} == expected
    lines = r.stderr.splitlines()
    assert len(lines) == len(expected)
    for path, code in expected:
        assert [line for line in lines if line.startswith(f"cairn: {code}: {path}: ")], (code, path)
    sid = _session_id(folder / "a.jsonl")
    assert sid in out["session_ids"]
    assert "b" + sid[1:] not in out["session_ids"] and "c" + sid[1:] not in out["session_ids"]  # nothing via a link


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_one_import_walks_each_folder_once_and_never_through_a_link_swapped_in_after(tmp_path, monkeypatch):
    """Within one import (``storefile.walks``) a file's folder is walked to from ``/`` once; a folder swapped
    for a link after that walk is not entered: the reads go on in the folder walked (the user's own file),
    never in the link's target. Outside the scope the swap is refused again, and no descriptor is left open."""
    from cairn.worker.ingest import storefile

    store = tmp_path / "store" / "project"
    store.mkdir(parents=True)
    (store / "a.jsonl").write_text("mine\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.jsonl").write_text("theirs\n")
    walked: list[str] = []
    real_walk = storefile._walk

    def walk(path: str, parts: list[str]) -> int:
        walked.append(path)
        return real_walk(path, parts)

    monkeypatch.setattr(storefile, "_walk", walk)
    before = _open_fds()

    def read(path: pathlib.Path) -> bytes:
        fd, _ = storefile.open_file(str(path))
        try:
            return os.read(fd, 100)
        finally:
            os.close(fd)

    with storefile.walks():
        assert read(store / "a.jsonl") == b"mine\n"
        _swap_for_link(store, outside)
        assert read(store / "a.jsonl") == b"mine\n"  # the folder walked, now named project.moved
        assert storefile.lstat(str(store / "a.jsonl")).st_size == 5
    assert walked == [str(store / "a.jsonl")]
    with pytest.raises(CairnError) as err:
        read(store / "a.jsonl")
    assert err.value.code == "E_PATH_SYMLINK"
    assert _open_fds() == before


def test_walks_keep_few_folders_open(tmp_path, monkeypatch):
    """A history of many folders (a Codex store keeps one a day) holds at most ``WALKS_KEPT`` descriptors."""
    from cairn.worker.ingest import storefile

    monkeypatch.setattr(storefile, "WALKS_KEPT", 3)
    paths = []
    for d in range(10):
        (tmp_path / f"day{d}").mkdir()
        (p := tmp_path / f"day{d}" / "s.jsonl").write_text("x")
        paths.append(p)
    before = _open_fds()
    with storefile.walks():
        for p in paths * 2:
            os.close(storefile.open_file(str(p))[0])
            assert _open_fds() <= before + 3
    assert _open_fds() == before
