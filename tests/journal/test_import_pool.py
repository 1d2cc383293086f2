"""Importing many files: sessions captured side by side, each exactly as alone (docs/adr/0010)."""

from __future__ import annotations

import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from cairn.protocol.digest import ModelPolicy
from cairn.protocol.import_results import FailedFile

from tests import sweep
from tests.journal.helpers import J, batches
from tests.support import child_env
from tests.support.generated import write_session
from tests.support.warm import run_python

POLICY = ModelPolicy(provider="extractive")


@pytest.fixture(autouse=True)
def each_file_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool's own behaviour: small files are not grouped here (groups: ``test_import_group.py``)."""
    from cairn.worker.journal import imports as I

    monkeypatch.setattr(I, "GROUP_FILES", 1)


def _ready(ws: Path) -> dict[str, list[str]]:
    caps = ws / J / "captures"
    return {cap.name: [t for b in batches(cap) for t in b.turn_ids] for cap in sorted(caps.iterdir())}


def _files(tmp_path: Path, n: int, turns: int) -> list[str]:
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    return [str(write_session(src / f"s{i}.jsonl", 40 + i, turns, words=8)) for i in range(n)]


def test_files_are_captured_side_by_side_and_reported_in_order(workspace: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from cairn.worker.journal import capture as C
    from cairn.worker.journal import imports as I
    from cairn.worker.journal.store import Journal

    paths = _files(tmp_path, 4, 3)
    together = threading.Barrier(4, timeout=20)  # passes only when four sessions are in flight at once
    real = C._write_batch

    def meet_then_write(*args: Any, **kw: Any) -> None:
        together.wait()
        real(*args, **kw)

    monkeypatch.setattr(C, "_write_batch", meet_then_write)
    with Journal(str(workspace)) as j:
        out = I.import_paths(j, paths, "auto", POLICY, workers=4)
    assert (out.files, out.sessions, out.captured, out.interrupted) == (4, 4, 12, False)
    from cairn.worker.ingest.importers import load

    assert list(out.session_ids) == [load(Path(p))[0].session_id for p in paths]  # the order given
    assert sorted(len(v) for v in _ready(workspace).values()) == [3, 3, 3, 3]


def test_the_same_session_in_two_files_is_never_captured_twice_at_once(workspace: Path, tmp_path: Path) -> None:
    from cairn.worker.journal import imports as I
    from cairn.worker.journal.store import Journal

    (one,) = _files(tmp_path, 1, 5)
    copy = tmp_path / "copy.jsonl"
    shutil.copy(one, copy)
    with Journal(str(workspace)) as j:
        out = I.import_paths(j, [one, str(copy), one], "auto", POLICY, workers=4)  # no E_CLAIM_BUSY
    assert (out.captured, out.skipped) == (5, 10)
    assert [len(v) for v in _ready(workspace).values()] == [5]


def test_an_error_in_one_file_stops_the_others_at_a_batch_boundary(workspace: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from cairn.protocol.errors import CairnError, ErrorCode
    from cairn.worker.journal import capture as C
    from cairn.worker.journal import imports as I
    from cairn.worker.journal.store import Journal

    paths = _files(tmp_path, 3, 9)
    real = C._write_batch
    calls = {"n": 0}
    lock = threading.Lock()

    def fail_once(j: Any, claim: Any, session: Any, *args: Any, **kw: Any) -> None:
        with lock:
            calls["n"] += 1
            first = calls["n"] == 1
        if first:
            raise CairnError(ErrorCode.IO_FAILED, "disk said no")
        real(j, claim, session, *args, **kw)

    monkeypatch.setattr(C, "_write_batch", fail_once)
    monkeypatch.setattr(C, "BATCH_TURNS", 2)
    with Journal(str(workspace)) as j, pytest.raises(CairnError) as err:
        I.import_paths(j, paths, "auto", POLICY, workers=3)
    assert err.value.code is ErrorCode.IO_FAILED
    for turns in _ready(workspace).values():  # whatever landed is whole batches, in session order
        assert len(turns) % 2 == 0 or len(turns) == 9
    monkeypatch.setattr(C, "_write_batch", real)
    with Journal(str(workspace)) as j:
        again = I.import_paths(j, paths, "auto", POLICY, workers=3)
    assert again.captured + again.skipped == 27
    assert sorted(len(v) for v in _ready(workspace).values()) == [9, 9, 9]


def _import(ws: Path, *paths: str, **env: str) -> subprocess.CompletedProcess[str]:
    env.setdefault("CAIRN_CAPTURE_BATCH_TURNS", "2")
    env.setdefault("CAIRN_IMPORT_WORKERS", "3")
    return run_python(["-m", "cairn.server", "import", *paths, "-w", str(ws), "--json"], env=child_env(**env), timeout=120)


@pytest.mark.slow
def test_killing_an_import_of_several_files_in_flight_at_every_point_converges(tmp_path: Path) -> None:
    paths = _files(tmp_path, 3, 3)
    ref = tmp_path / "reference"
    ref.mkdir()
    log = tmp_path / "points.log"
    assert _import(ref, *paths, CAIRN_CRASH_LOG=str(log)).returncode == 0
    expected = _ready(ref)
    assert sorted(len(v) for v in expected.values()) == [3, 3, 3]
    for _, ws, killed_at in sweep.killed_runs(len(log.read_text().splitlines()), tmp_path, None, _import, *paths):
        where = f"crash at {killed_at}"
        again = _import(ws, *paths, CAIRN_TEST_CLOCK_OFFSET="1000")
        assert again.returncode == 0, (where, again.stderr[-800:])
        assert _ready(ws) == expected, where  # every turn once, in session order, in its own capture
        doctor = run_python(["-m", "cairn.server", "doctor", "-w", str(ws)], env=child_env())
        assert doctor.returncode == 0, (where, doctor.stdout)
        pins = {p.name[4:] for p in (ws / J / "captures").glob("*/pin-*")}
        stored = {p.name for p in (ws / J / "segments").glob("*/*") if not p.name.startswith(".")}
        assert stored <= pins, where  # no segment of a batch cut short is left unpinned
        shutil.rmtree(ws)


def test_a_file_that_cannot_be_opened_lets_the_files_given_before_it_finish(workspace: Path, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from cairn.protocol.errors import CairnError, ErrorCode
    from cairn.worker.ingest import importers
    from cairn.worker.journal import capture as C
    from cairn.worker.journal import imports as I
    from cairn.worker.journal.store import Journal

    (first,) = _files(tmp_path, 1, 9)
    missing = str(tmp_path / "gone.jsonl")
    refused = threading.Event()
    real_open, real_write = importers.open_report, C._write_batch

    def open_report(path: Path, *args: Any, **kw: Any) -> Any:
        if str(path) == missing:
            refused.set()  # the first file is still in flight: its batches wait for this
        return real_open(path, *args, **kw)

    def write_after_refusal(*args: Any, **kw: Any) -> None:
        assert refused.wait(20)
        real_write(*args, **kw)

    monkeypatch.setattr(importers, "open_report", open_report)
    monkeypatch.setattr(C, "_write_batch", write_after_refusal)
    monkeypatch.setattr(C, "BATCH_TURNS", 2)
    with Journal(str(workspace)) as j, pytest.raises(CairnError) as err:
        I.import_paths(j, [first, missing], "auto", POLICY, workers=2)
    assert err.value.code is ErrorCode.IMPORT_UNREADABLE
    assert [len(v) for v in _ready(workspace).values()] == [9]  # not stopped half-way by the later file's error


def test_an_error_of_a_file_in_flight_is_raised_before_a_later_file_that_cannot_be_opened(
        workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cairn.protocol.errors import CairnError, ErrorCode
    from cairn.worker.ingest import importers
    from cairn.worker.journal import capture as C
    from cairn.worker.journal import imports as I
    from cairn.worker.journal.store import Journal

    (first,) = _files(tmp_path, 1, 9)
    missing = str(tmp_path / "gone.jsonl")
    refused = threading.Event()
    real_open = importers.open_report

    def open_report(path: Path, *args: Any, **kw: Any) -> Any:
        if str(path) == missing:
            refused.set()
        return real_open(path, *args, **kw)

    def fail_after_refusal(*args: Any, **kw: Any) -> None:
        assert refused.wait(20)
        raise CairnError(ErrorCode.IO_FAILED, "disk said no")

    monkeypatch.setattr(importers, "open_report", open_report)
    monkeypatch.setattr(C, "_write_batch", fail_after_refusal)
    with Journal(str(workspace)) as j, pytest.raises(CairnError) as err:
        I.import_paths(j, [first, missing], "auto", POLICY, workers=2)
    # one file after another, the first file's failure is the one reported (the second is never opened)
    assert err.value.code is ErrorCode.IO_FAILED


def test_an_interrupt_while_waiting_for_the_oldest_file_stops_it_at_its_batch_boundary(
        workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import signal
    from concurrent.futures import Future, ThreadPoolExecutor

    from cairn.worker.ingest import importers
    from cairn.worker.journal import capture as C
    from cairn.worker.journal import imports as I
    from cairn.worker.journal.store import Journal

    first, second = _files(tmp_path, 2, 9)
    monkeypatch.setattr(importers._registry(), "streamed", ())  # sessions in memory: nothing else ends the file early
    monkeypatch.setattr(C, "BATCH_TURNS", 2)
    waiting = threading.Event()

    class Watched(Future[Any]):
        def result(self, timeout: float | None = None) -> Any:
            waiting.set()  # the import's own thread now waits for the oldest file
            return super().result(timeout)

        def exception(self, timeout: float | None = None) -> BaseException | None:
            waiting.set()  # ... in short waits, between which Python runs its signal handlers
            return super().exception(timeout)

    class Pool(ThreadPoolExecutor):
        def submit(self, fn: Any, /, *args: Any, **kw: Any) -> Any:
            out: Future[Any] = Watched()
            inner = super().submit(fn, *args, **kw)
            inner.add_done_callback(lambda d: out.set_exception(e) if (e := d.exception()) else out.set_result(
                d.result()))
            return out

    real = C._write_batch
    sent = threading.Event()

    def interrupt_once(j: Any, claim: Any, session: Any, *args: Any, **kw: Any) -> None:
        if session.session_id == importers.load(Path(first))[0].session_id and not sent.is_set():
            assert waiting.wait(20)
            sent.set()
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)  # Ctrl-C, no stop callback
        real(j, claim, session, *args, **kw)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    monkeypatch.setattr(I, "_thread_pool", lambda n: Pool(max_workers=n, thread_name_prefix="cairn-import"))
    monkeypatch.setattr(C, "_write_batch", interrupt_once)
    try:
        with Journal(str(workspace)) as j, pytest.raises(KeyboardInterrupt):
            I.import_paths(j, [first, second], "auto", POLICY, workers=2)
    finally:
        signal.signal(signal.SIGINT, previous)
    from cairn.worker.journal.store import session_dir

    sdir = session_dir(importers.load(Path(first))[0].session_id)
    (turns,) = [v for cap, v in _ready(workspace).items() if cap.startswith(sdir)]
    assert 0 < len(turns) < 9  # the oldest file stopped at a batch boundary too, not at its end


def test_live_files_one_that_vanished_is_listed_and_a_journal_failure_fails_the_job(
        workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The watcher's import (``each``): a file's own failure is listed and the others are imported; a
    failure of the journal itself is raised, once the others are done, so the job is retried."""
    from cairn.protocol.errors import CairnError, ErrorCode
    from cairn.worker.journal import capture as C
    from cairn.worker.journal import imports as I
    from cairn.worker.journal.store import Journal

    first, second = _files(tmp_path, 2, 3)
    gone = str(tmp_path / "gone.jsonl")
    with Journal(str(workspace)) as j:
        out = I.import_each(j, [first, gone, second], "auto", POLICY)
    assert out.failed == (FailedFile(file="gone.jsonl", code="E_IMPORT_UNREADABLE"),)
    assert (out.files, out.captured) == (2, 6)

    (third,) = [str(write_session(tmp_path / "src" / "later.jsonl", 90, 3, words=8))]

    def full(*args: Any, **kw: Any) -> None:
        raise CairnError(ErrorCode.NO_SPACE, "no space left on the device (ENOSPC)")

    monkeypatch.setattr(C, "_write_batch", full)
    with Journal(str(workspace)) as j, pytest.raises(CairnError) as err:
        I.import_each(j, [first, third], "auto", POLICY)
    assert err.value.code is ErrorCode.NO_SPACE
