"""Sessions begun while ``cairn watch`` or ``cairn serve`` runs are followed, without a restart.

A synthetic home holds a Codex store with one session of the workspace. While the watcher runs, new
session files appear in the stores: this workspace's are followed and imported, another workspace's are
remembered as such (its later writes cost no discovery), an empty file is looked at again once written.
The watcher is driven by real files (scans called directly, the native watcher, the polling watcher, the
``cairn watch`` process); nothing waits on a clock: each step waits, bounded, for the event it causes.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import re
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from cairn.server.cli.watch import Headless
from cairn.server.watch.core import Seen
from cairn.server.watch.files import FileWatcher, plan
from cairn.worker.ingest.importers import load
from pytest_lsp import LanguageClient

from tests.server.test_watch_live import status_until
from tests.support import PYTHON, REPO, child_env
from tests.support.transcripts import FIXTURES

CODEX = next((FIXTURES / "codex").glob("rollout-*.jsonl"))
CODEX_ID, CODEX_CWD = "0197a3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b", "/home/dana/src/cairn-demo"
CODEX_TURNS = sum(len(s.turns) for s in load(CODEX))  # completed turns of the Codex fixture
TRANSCRIPT = next((FIXTURES / "cursor-transcript").rglob("*.jsonl"))
CLAUDE = FIXTURES / "claude-code" / "session.jsonl"
CLAUDE_CWD = next(json.loads(line)["cwd"] for line in CLAUDE.read_text().splitlines() if '"cwd"' in line)
WAIT = 60.0
RELOCATIONS = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "OPENCODE_DB", "CLINE_DIR", "COPILOT_HOME",
               "GOOSE_PATH_ROOT", "CONTINUE_GLOBAL_DIR", "APPDATA", "XDG_DATA_HOME")


def codex_session(home: Path, day: str, n: int, cwd: str) -> Path:
    """A Codex rollout of ``cwd`` in the day folder ``day`` (``2025/07/14``), session number ``n``."""
    path = home / ".codex" / "sessions" / day / f"rollout-2025-07-14T16-00-0{n}-{n:08d}-x.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(CODEX.read_text().replace(CODEX_CWD, cwd).replace(CODEX_ID, f"{n:08d}-5d6e-7f80-9a1b-2c3d4e5f6a7b"))
    return path


@pytest.fixture
def home(tmp_path: Path, workspace: Path) -> Path:
    home = tmp_path / "home"
    codex_session(home, "2025/07/14", 1, str(workspace))
    return home


def env_of(home: Path) -> dict[str, str]:
    return {"HOME": str(home)}


def replanner(workspace: Path, home: Path) -> Any:
    probes: dict[Any, Any] = {}
    return lambda: plan({str(workspace): []}, home=str(home), env=env_of(home), probes=probes)


@pytest.mark.asyncio
async def test_a_session_begun_later_is_followed_and_anothers_is_settled_once(workspace: Path, home: Path,
                                                                             tmp_path: Path) -> None:
    ws, other = str(workspace), str(tmp_path / "other")
    replan = replanner(workspace, home)
    found = replan()
    assert [os.path.basename(p) for p in found.roots[ws]] == ["rollout-2025-07-14T16-00-01-00000001-x.jsonl"]
    assert str(home / ".codex" / "sessions") in found.stores
    delivered: list[Any] = []
    watcher = FileWatcher(found.roots, delivered.extend, polling=True, stores=found.stores, foreign=found.foreign,
                          replan=replan)

    def seen() -> list[str]:
        names = [os.path.basename(e.path) for e in delivered if isinstance(e, Seen)]
        delivered.clear()
        return names

    assert await watcher.rescan() is True and len(seen()) == 1 and watcher.replans == 0
    mine = codex_session(home, "2025/07/15", 2, ws)  # a new day's folder, a new session of this workspace
    assert await watcher.rescan() is True
    assert seen() == [mine.name] and watcher.replans == 1
    theirs = codex_session(home, "2025/07/15", 3, other)
    assert await watcher.rescan() is False and watcher.replans == 2  # discovered once, and not followed
    with theirs.open("a") as f:
        f.write('{"timestamp":"2025-07-15T10:00:00.000Z","type":"event_msg","payload":{"type":"token_count"}}\n')
    assert await watcher.rescan() is False and await watcher.rescan({str(theirs)}) is False
    assert watcher.replans == 2  # known to be another's: its writes cost no discovery
    empty = home / ".codex" / "sessions" / "2025" / "07" / "15" / "rollout-2025-07-15T09-00-00-00000004-x.jsonl"
    empty.touch()  # created, not yet written: no workspace to read
    assert await watcher.rescan() is False and watcher.replans == 3
    assert await watcher.rescan() is False and watcher.replans == 3  # still empty: not looked at again
    empty.write_text(codex_session(tmp_path / "scratch", "d", 4, ws).read_text())
    assert await watcher.rescan() is True and seen() == [empty.name] and watcher.replans == 4


@pytest.mark.asyncio
async def test_new_stores_of_other_tools_are_followed_too(workspace: Path, home: Path) -> None:
    """Claude Code's first session of this workspace (a new project folder) and a Cursor agent transcript."""
    replan = replanner(workspace, home)
    claude = home / ".claude" / "projects"
    claude.mkdir(parents=True)  # the stores exist, without a session of this workspace yet
    cursor = home / ".cursor" / "projects"
    cursor.mkdir(parents=True)
    found = replan()
    delivered: list[Any] = []
    watcher = FileWatcher(found.roots, delivered.extend, polling=True, stores=found.stores, foreign=found.foreign,
                          replan=replan)
    await watcher.rescan()
    delivered.clear()
    session = claude / re.sub(r"[^A-Za-z0-9]", "-", str(workspace)) / "5f0c2a8e.jsonl"  # as Claude Code names it
    session.parent.mkdir()
    session.write_text(CLAUDE.read_text().replace(CLAUDE_CWD, str(workspace)))
    folder = re.sub(r"[^A-Za-z0-9]+", "-", str(workspace)).strip("-")  # as Cursor names it
    transcript = cursor / folder / "agent-transcripts" / TRANSCRIPT.name
    transcript.parent.mkdir(parents=True)
    transcript.write_text(TRANSCRIPT.read_text())
    assert await watcher.rescan() is True
    assert sorted(os.path.basename(e.path) for e in delivered if isinstance(e, Seen)) == sorted(
        [session.name, transcript.name])
    assert watcher.replans == 1


class Run:
    def __init__(self, ws: Path, home: Path, *, polling: bool) -> None:
        replan = replanner(ws, home)
        found = replan()
        self.seen: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.watch = Headless(str(ws), found.roots[str(ws)], {"sealIdleMinutes": 20.0}, polling=polling,
                              say=lambda line: None, observe=lambda kind, detail: self.seen.put_nowait((kind, detail)),
                              stores=found.stores, foreign=found.foreign, replan=replan)
        self.task = asyncio.ensure_future(self.watch.run())

    async def next_import(self) -> Any:
        while True:
            kind, detail = await asyncio.wait_for(self.seen.get(), WAIT)
            if kind == "import":
                return detail

    async def stop(self) -> None:
        self.watch.stop()
        await asyncio.wait_for(self.task, WAIT)


@pytest.mark.asyncio
@pytest.mark.parametrize("polling", [False, True], ids=["native", "polling"])
async def test_the_watcher_imports_a_session_begun_after_it_started(workspace: Path, home: Path,
                                                                   polling: bool) -> None:
    run = Run(workspace, home, polling=polling)
    try:
        assert (await run.next_import()).captured == CODEX_TURNS
        codex_session(home, "2025/07/16", 5, str(workspace))
        assert (await run.next_import()).captured == CODEX_TURNS
        assert run.watch.totals["captured"] == 2 * CODEX_TURNS
    finally:
        await run.stop()



@pytest.fixture
def served_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``home`` as the home of the server the ``client`` fixture starts (named before it)."""
    monkeypatch.setenv("HOME", str(home))
    for name in RELOCATIONS:
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.mark.asyncio
async def test_the_server_follows_a_session_begun_after_it_started(served_home: Path, client: LanguageClient,
                                                                   workspace: Path) -> None:
    first = await status_until(client, workspace, lambda s: s["watch"]["captured"] >= CODEX_TURNS)
    assert first["watch"]["captured"] == CODEX_TURNS and first["watch"]["files"] == 1
    codex_session(served_home, "2025/07/18", 7, str(workspace))  # begun after the server started
    grown = await status_until(client, workspace, lambda s: s["watch"]["captured"] >= 2 * CODEX_TURNS)
    assert grown["watch"]["captured"] == 2 * CODEX_TURNS and grown["watch"]["files"] == 2


def test_cairn_watch_follows_a_session_begun_after_it_started(workspace: Path, home: Path) -> None:
    env = child_env(HOME=str(home), **dict.fromkeys(RELOCATIONS, ""))
    proc = subprocess.Popen([PYTHON, "-m", "cairn.server", "watch", "-w", str(workspace)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    out = proc.stdout

    def read() -> None:
        for line in out:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    try:
        assert lines.get(timeout=WAIT).split(" ", 1)[1].strip() == f"captured {CODEX_TURNS} turn(s) from 1 file(s)"
        codex_session(home, "2025/07/17", 6, str(workspace))  # begun after the watch started
        assert lines.get(timeout=WAIT).split(" ", 1)[1].strip() == f"captured {CODEX_TURNS} turn(s) from 1 file(s)"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=WAIT) == 130  # stdout is the reader thread's to the end
        assert proc.stderr is not None and "Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
