"""Ctrl-C during an import of many files: no file starts after it, in either process, and the command stops.

Found on a terminal: Ctrl-C during `cairn run --all` over 200 small sessions printed "stopping after the
current batch" and the import ran on to its end, then sealed, digested and reviewed (exit 0). Three causes:
the kernel gives a process's SIGINT to any of its threads, and one given to a capture thread did not wake
the command's main thread, blocked waiting for the oldest file, so Python's handler ran only once that file
was done (the stop was seen late, and the helper process was told only when the command's own part ended);
a file or group of small files whose task started after the stop still captured its sessions' first
batches; and an import the stop reached after its last file was reported complete.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from cairn.protocol.digest import ModelPolicy

from tests.journal.helpers import J, batches
from tests.support import PYTHON, REPO, child_env
from tests.support.generated import write_session

POLICY = ModelPolicy(provider="extractive")
BOUND = 10.0  # a bounded wait for what a fixed import does at once


def _ready(ws: Path) -> dict[str, list[str]]:
    caps = ws / J / "captures"
    if not caps.is_dir():
        return {}
    return {cap.name: [t for b in batches(cap) for t in b.turn_ids] for cap in sorted(caps.iterdir())}


def _files(tmp_path: Path, n: int, turns: int) -> list[str]:
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    return [str(write_session(src / f"s{i:02d}.jsonl", 300 + i, turns, words=8)) for i in range(n)]


def _sid(path: str) -> str:
    from cairn.worker.ingest.importers import load

    return load(Path(path))[0].session_id


def _captured(ws: Path, path: str) -> list[str]:
    from cairn.worker.journal.store import session_dir

    sdir = session_dir(_sid(path))
    return [t for cap, turns in _ready(ws).items() if cap.startswith(sdir) for t in turns]


def _on_first_write(monkeypatch: pytest.MonkeyPatch, sid: str, then: Any) -> None:
    """``then()`` in the capture thread writing ``sid``'s first batch (alone or in a group), before it writes."""
    from cairn.worker.journal import capture as C

    once = threading.Lock()
    real_batch, real_group = C._write_batch, C._write_group

    def write_batch(j: Any, claim: Any, session: Any, *args: Any, **kw: Any) -> None:
        if session.session_id == sid and once.acquire(blocking=False):
            then()
        real_batch(j, claim, session, *args, **kw)

    def write_group(j: Any, claims: Any, todo: Any, policy: Any) -> None:
        if any(t[1].session_id == sid for t in todo) and once.acquire(blocking=False):
            then()
        real_group(j, claims, todo, policy)

    monkeypatch.setattr(C, "_write_batch", write_batch)
    monkeypatch.setattr(C, "_write_group", write_group)


def _settling(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Set once the import's own thread waits for its oldest file."""
    from cairn.worker.journal import imports as I

    event = threading.Event()
    real = I._Import.settle

    def settle(self: Any, f: Any) -> None:
        event.set()
        real(self, f)

    monkeypatch.setattr(I._Import, "settle", settle)
    return event


@pytest.mark.parametrize("group", [1, 2], ids=["alone", "grouped"])
def test_a_ctrl_c_the_kernel_gives_a_capture_thread_stops_the_import_at_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, group: int) -> None:
    """The real SIGINT and the command's own handler; the signal goes to the thread capturing the first file
    while the command's thread waits for that file. Two tasks in flight: the third (a file, or a group of two)
    is handed out after the Ctrl-C and must capture nothing."""
    from cairn.server.cli import import_run as R
    from cairn.worker.journal import imports as I

    monkeypatch.setattr(I, "GROUP_FILES", group)
    monkeypatch.setattr(I, "WORKERS", 2)
    monkeypatch.setattr(R, "PROCESSES", 1)
    paths = _files(tmp_path, 3 * group, 3)
    ws = tmp_path / "ws"
    ws.mkdir()
    asked = threading.Event()

    class Stop(R._Stop):
        def __setattr__(self, name: str, value: Any) -> None:
            super().__setattr__(name, value)
            if name == "requested" and value:
                asked.set()

    monkeypatch.setattr(R, "_Stop", Stop)
    settling = _settling(monkeypatch)
    seen: list[bool] = []

    def ctrl_c() -> None:
        assert settling.wait(BOUND)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # the process's Ctrl-C, given to this thread
        seen.append(asked.wait(BOUND))

    _on_first_write(monkeypatch, _sid(paths[0]), ctrl_c)
    out = R.run_import(str(ws), paths, "auto", {}, show_bar=False)
    assert seen == [True]  # the command's thread ran the handler while it waited
    assert out.interrupted
    assert len(_captured(ws, paths[0])) == 3  # the batch under way ended
    assert all(_captured(ws, p) == [] for p in paths[2 * group:])  # handed out after the Ctrl-C: not started
    kept = sum(len(v) for v in _ready(ws).values())
    assert out.captured == kept
    again = R.run_import(str(ws), paths, "auto", {}, show_bar=False)
    assert (again.interrupted, again.captured + kept) == (False, 9 * group)
    assert sorted(len(v) for v in _ready(ws).values()) == [3] * 3 * group


def test_a_stop_reaches_the_helper_while_the_command_waits_for_its_own_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stop was passed on to the helper only when the command looked at it between its own files; once
    every file of its part was handed out, the helper heard of it when the command's part was done."""
    from cairn.worker.journal import import_split as S
    from cairn.worker.journal import imports as I
    from cairn.worker.journal.store import Journal

    monkeypatch.setattr(S, "MIN_FILES", 4)
    monkeypatch.setattr(S, "_cores", lambda: 2)
    monkeypatch.setenv("CAIRN_IMPORT_FORK", "0")  # this process runs threads: a spawned helper
    monkeypatch.setattr(I, "GROUP_FILES", 1)
    monkeypatch.setattr(I, "WORKERS", 2)
    paths = _files(tmp_path, 4, 3)  # three for the command (two in flight, the third waiting), one for the helper
    told = threading.Event()
    real_stop = S.Helper.stop

    def stop(self: Any) -> None:
        told.set()
        real_stop(self)

    monkeypatch.setattr(S.Helper, "stop", stop)
    settling = _settling(monkeypatch)
    ctrl_c = threading.Event()
    seen: list[bool] = []

    def press() -> None:
        assert settling.wait(BOUND)
        ctrl_c.set()
        seen.append(told.wait(BOUND))

    _on_first_write(monkeypatch, _sid(paths[0]), press)
    ws = tmp_path / "ws"
    ws.mkdir()
    with Journal(str(ws)) as j:
        out = I.import_paths(j, paths, "auto", POLICY, processes=2, stop=ctrl_c.is_set)
    assert seen == [True] and out.interrupted
    with Journal(str(ws)) as j:
        again = I.import_paths(j, paths, "auto", POLICY, processes=2)
    assert (again.interrupted, again.captured + out.captured) == (False, 12)
    assert sorted(len(v) for v in _ready(ws).values()) == [3] * 4


def test_a_stop_that_comes_once_every_file_is_captured_still_stops_the_command(tmp_path: Path) -> None:
    """``cairn run`` goes on to seal, digest and review only after an import nobody asked to stop."""
    from cairn.worker.journal import imports as I
    from cairn.worker.journal.store import Journal

    paths = _files(tmp_path, 2, 3)
    ws = tmp_path / "ws"
    ws.mkdir()
    counted: list[int] = [0]
    with Journal(str(ws)) as j:
        out = I.import_paths(j, paths, "auto", POLICY, progress=lambda done, total: counted.append(done),
                             stop=lambda: counted[-1] == 6)  # Ctrl-C as the last batch lands
    assert (out.interrupted, out.captured) == (True, 6)


def test_ctrl_c_on_a_run_of_many_small_sessions_stops_both_processes_and_the_run(tmp_path: Path) -> None:
    """`cairn run --all` in its own process group (as on a terminal, whose Ctrl-C reaches every process of
    the group), with its forked helper and groups of small sessions: exit 130, the resume line, nothing
    sealed or digested; a re-run captures the rest, every turn once."""
    import psutil

    home = tmp_path / "home"
    store = home / ".claude" / "projects" / "-p"
    store.mkdir(parents=True)
    for i in range(200):
        write_session(store / f"s{i:03d}.jsonl", 500 + i, 10, words=8)
    ws = tmp_path / "ws"
    ws.mkdir()
    env = child_env(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local"),
                    XDG_CACHE_HOME=str(home / ".cache"), XDG_STATE_HOME=str(home / ".state"))
    argv = [PYTHON, "-m", "cairn.server", "run", "--all", "--every-workspace", "-w", str(ws)]
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        end = time.monotonic() + 60
        helper = None
        # the first batch on disk and the helper started (a bounded wait loop, not a sleep as synchronisation)
        while not list(ws.glob(f"{J}/captures/*/b-*")) or helper is None:
            assert proc.poll() is None and time.monotonic() < end, "the run ended before its first batch was seen"
            kids = psutil.Process(proc.pid).children()
            helper = helper or (kids[0].pid if kids else None)
            time.sleep(0.002)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, (out[-400:], err[-400:])
    assert not psutil.pid_exists(helper) or psutil.Process(helper).status() == psutil.STATUS_ZOMBIE
    assert "cairn: interrupted" in err and "Traceback" not in err  # and the line that says how to go on
    assert "sealed" not in out and not list(ws.glob(f"{J}/captures/*/seal"))  # no seal, no digest, no review
    assert not list((ws / ".cairn" / "journal").glob("*.json"))
    kept = sum(len(v) for v in _ready(ws).values())
    again = subprocess.run([PYTHON, "-m", "cairn.server", "import", "--all", "--every-workspace", "--json", "-w",
                            str(ws)], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    second = json.loads(again.stdout)
    assert (second["interrupted"], second["captured"] + kept) == (False, 2000)
    turns = [t for v in _ready(ws).values() for t in v]
    assert len(turns) == 2000 == len(set(turns))
    doctor = subprocess.run([PYTHON, "-m", "cairn.server", "doctor", "-w", str(ws)], env=env, capture_output=True)
    assert doctor.returncode == 0, doctor.stdout.decode()[-400:]
