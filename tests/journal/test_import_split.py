"""An import of many files in two processes: the same result as one (docs/adr/0013)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cairn.protocol.digest import ModelPolicy
from cairn.protocol.import_results import ImportTally

from tests.journal.helpers import J, batches
from tests.support import PYTHON, REPO, child_env
from tests.support.generated import write_session

POLICY = ModelPolicy(provider="extractive")


def _ready(ws: Path) -> dict[str, list[str]]:
    caps = ws / J / "captures"
    if not caps.is_dir():
        return {}
    return {cap.name: [t for b in batches(cap) for t in b.turn_ids] for cap in sorted(caps.iterdir())}


def _files(tmp_path: Path, n: int, turns: int) -> list[str]:
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    return [str(write_session(src / f"s{i:02d}.jsonl", 70 + i, turns, words=8)) for i in range(n)]


def _claim_pids(ws: Path) -> set[int]:
    return {json.loads(p.read_bytes())["pid"] for p in (ws / J / "claims").glob("session_*/*.claim")}


@pytest.fixture
def split(monkeypatch: pytest.MonkeyPatch) -> None:
    """Split imports of 4 files and more (the helper gets a share of them)."""
    from cairn.worker.journal import import_split

    monkeypatch.setattr(import_split, "MIN_FILES", 4)
    monkeypatch.setattr(import_split, "_cores", lambda: 2)  # as on a two-core machine
    # a fork only while this process runs one thread, which a test process may not: the spawned helper here,
    # the forked one in the commands run below as their own processes
    monkeypatch.setenv("CAIRN_IMPORT_FORK", "0")


def _import(ws: Path, paths: list[str], **kw: Any) -> ImportTally:
    from cairn.worker.journal import imports as I
    from cairn.worker.journal.store import Journal

    ws.mkdir(exist_ok=True)
    with Journal(str(ws)) as j:
        return I.import_paths(j, paths, "auto", POLICY, **kw)


def test_two_processes_give_the_result_of_one(tmp_path: Path, split: None) -> None:
    paths = _files(tmp_path, 10, 3)
    one = _import(tmp_path / "one", paths)
    two = _import(tmp_path / "two", paths, processes=2)
    assert two == one  # counts, malformed lines, and sessions in the order given
    assert _ready(tmp_path / "two") == _ready(tmp_path / "one")
    assert len(_claim_pids(tmp_path / "two")) == 2  # the last files were captured by another process
    assert _claim_pids(tmp_path / "one") == {os.getpid()}


def test_progress_counts_both_processes(tmp_path: Path, split: None) -> None:
    paths = _files(tmp_path, 8, 4)
    seen: list[tuple[int, int]] = []
    _import(tmp_path / "ws", paths, processes=2, progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (32, 32)


def test_a_session_in_both_parts_is_captured_once(tmp_path: Path, split: None) -> None:
    paths = _files(tmp_path, 4, 5)
    copy = tmp_path / "copy.jsonl"
    shutil.copy(paths[0], copy)  # the helper's last file holds the first file's session
    out = _import(tmp_path / "ws", [*paths, str(copy)], processes=2)
    assert (out.captured, out.skipped, out.sessions) == (20, 5, 5)
    assert sorted(len(v) for v in _ready(tmp_path / "ws").values()) == [5, 5, 5, 5]


def test_a_capture_waits_for_a_live_claim_of_the_other_process(workspace: Path, tmp_path: Path) -> None:
    """While the other half holds the session's claim, the capture waits for it instead of failing."""
    from cairn.protocol.vocab import OutcomeKind
    from cairn.worker.ingest.importers import load
    from cairn.worker.journal.capture import capture_session
    from cairn.worker.journal.store import Journal, session_dir

    (path,) = _files(tmp_path, 1, 3)
    session = load(Path(path))[0]
    with Journal(str(workspace)) as other, Journal(str(workspace)) as j:
        held = other.claims.elect(f"session/{session_dir(session.session_id)}", purpose="capture", ttl=60,
                                  authority=other.authority)
        asked: list[int] = []

        def stop() -> bool:  # asked while waiting: the other process finishes its batch now
            if not asked:
                other.claims.settle(held, OutcomeKind.COMPLETED)
            asked.append(1)
            return False

        r = capture_session(j, session, source="import:claude-code", policy=POLICY, stop=stop, busy_wait=30)
        assert (r.captured, r.interrupted, len(asked) >= 1) == (3, False, True)

        # the session grows by a turn: there is something to capture again, so the claim is needed
        write_session(Path(path), 70, 4, words=8)
        grown = load(Path(path))[0]
        held = other.claims.elect(f"session/{session_dir(session.session_id)}", purpose="capture", ttl=60,
                                  authority=other.authority)
        r = capture_session(j, grown, source="import:claude-code", policy=POLICY, stop=lambda: True,
                            busy_wait=30)
        assert (r.captured, r.interrupted) == (0, True)  # Ctrl-C while waiting: nothing captured, nothing lost
        from cairn.protocol.errors import CairnError, ErrorCode

        with pytest.raises(CairnError) as err:  # without the wait (one process): busy at once, as before
            capture_session(j, grown, source="import:claude-code", policy=POLICY)
        assert err.value.code is ErrorCode.CLAIM_BUSY
        # with nothing new to capture, no claim is needed: the holder does not stand in the way
        r = capture_session(j, session, source="import:claude-code", policy=POLICY)
        assert (r.captured, r.skipped, r.interrupted) == (0, 3, False)


def test_an_error_in_the_helpers_files_comes_after_the_first_files_finish(tmp_path: Path, split: None) -> None:
    from cairn.protocol.errors import CairnError, ErrorCode

    paths = _files(tmp_path, 6, 3)
    missing = str(tmp_path / "gone.jsonl")
    with pytest.raises(CairnError) as err:
        _import(tmp_path / "ws", [*paths, missing], processes=2)
    assert err.value.code is ErrorCode.IMPORT_UNREADABLE
    assert "gone.jsonl" in err.value.message
    with pytest.raises(CairnError) as alone:
        _import(tmp_path / "alone", [*paths, missing])
    assert (alone.value.code, alone.value.message) == (err.value.code, err.value.message)
    assert _ready(tmp_path / "ws") == _ready(tmp_path / "alone")  # every file given before it is whole


def test_an_error_in_the_first_files_stops_the_helper_at_a_batch_boundary(tmp_path: Path, split: None,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from cairn.protocol.errors import CairnError, ErrorCode

    monkeypatch.setenv("CAIRN_CAPTURE_BATCH_TURNS", "2")  # the helper's batches
    paths = _files(tmp_path, 8, 9)
    missing = str(tmp_path / "gone.jsonl")
    with pytest.raises(CairnError) as err:
        _import(tmp_path / "ws", [missing, *paths], processes=2)
    assert err.value.code is ErrorCode.IMPORT_UNREADABLE
    for turns in _ready(tmp_path / "ws").values():  # whatever the helper wrote is whole batches
        assert len(turns) % 2 == 0 or len(turns) == 9
    again = _import(tmp_path / "ws", paths, processes=2)
    assert again.captured + again.skipped == 72
    assert sorted(len(v) for v in _ready(tmp_path / "ws").values()) == [9] * 8


def test_a_stop_reaches_the_helper_and_a_rerun_finishes(tmp_path: Path, split: None,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAIRN_CAPTURE_BATCH_TURNS", "2")
    from cairn.worker.journal import capture as C

    monkeypatch.setattr(C, "BATCH_TURNS", 2)
    paths = _files(tmp_path, 8, 9)
    seen: list[int] = []
    out = _import(tmp_path / "ws", paths, processes=2, progress=lambda done, total: seen.append(done),
                  stop=lambda: bool(seen))  # Ctrl-C once the first batch is in
    assert out.interrupted and 0 < out.captured < 72
    for turns in _ready(tmp_path / "ws").values():
        assert len(turns) % 2 == 0 or len(turns) == 9
    again = _import(tmp_path / "ws", paths, processes=2)
    assert (again.interrupted, out.captured + again.captured) == (False, 72)
    assert sorted(len(v) for v in _ready(tmp_path / "ws").values()) == [9] * 8


def test_a_helper_that_dies_is_a_fixed_error_and_a_rerun_finishes(tmp_path: Path, split: None,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from cairn.protocol.errors import CairnError, ErrorCode
    from cairn.worker.journal import import_split

    paths = _files(tmp_path, 6, 3)
    monkeypatch.setattr(import_split, "COMMAND", [sys.executable, "-c", "import os; os._exit(3)"])
    with pytest.raises(CairnError) as err:
        _import(tmp_path / "ws", paths, processes=2)
    assert err.value.code is ErrorCode.WORKER_CRASHED
    assert "exit status 3" in err.value.message and "again" in err.value.message
    monkeypatch.undo()
    again = _import(tmp_path / "ws", paths)
    assert again.captured + again.skipped == 18
    assert sorted(len(v) for v in _ready(tmp_path / "ws").values()) == [3] * 6


def test_with_a_failed_list_a_helper_that_dies_fails_its_files_only(tmp_path: Path, split: None,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """``cairn import --all``: the helper's files are listed failed; the command's own files are imported."""
    from cairn.worker.journal import import_split
    from cairn.worker.journal import imports as I
    from cairn.worker.journal.store import Journal

    paths = _files(tmp_path, 6, 3)
    monkeypatch.setattr(import_split, "COMMAND", [sys.executable, "-c", "import os; os._exit(3)"])
    (tmp_path / "ws").mkdir()
    with Journal(str(tmp_path / "ws")) as j:
        out = I.import_items(j, [(p, "auto", None) for p in paths], POLICY, processes=2, tolerant=True)
    k = import_split.helper_share(6, 2)
    assert [(f.index, f.code) for f in out.failed] == [(i, "E_WORKER_CRASHED") for i in range(6 - k, 6)]
    assert (out.files, out.captured) == (6 - k, 3 * (6 - k))


@pytest.mark.parametrize("fork", ["1", "0"], ids=["forked", "spawned"])
def test_the_command_prints_the_same_summary_in_two_processes(tmp_path: Path, fork: str) -> None:
    paths = _files(tmp_path, 8, 3)

    def run(ws: Path, processes: str) -> subprocess.CompletedProcess[str]:
        ws.mkdir()
        return subprocess.run([PYTHON, "-m", "cairn.server", "import", *paths, "-w", str(ws)], cwd=REPO,
                              env=child_env(CAIRN_IMPORT_PROCESSES=processes, CAIRN_IMPORT_SPLIT_MIN="4",
                                            CAIRN_IMPORT_FORK=fork),
                              capture_output=True, text=True, timeout=120)

    one, two = run(tmp_path / "one", "1"), run(tmp_path / "two", "2")
    assert (two.returncode, two.stdout, two.stderr) == (one.returncode, one.stdout, one.stderr) == (
        0, "imported 8 file(s) (claude-code), 8 session(s): 24 new turn(s), 0 already captured\n", "")
    from cairn.worker.journal.import_split import _cores

    if _cores() >= 2:
        assert len(_claim_pids(tmp_path / "two")) == 2


def test_files_that_fail_are_listed_by_index_from_both_processes(tmp_path: Path, split: None) -> None:
    """``cairn import --all``: each bad source is listed once, at its place; the others are imported."""
    from cairn.worker.journal import imports as I
    from cairn.worker.journal.store import Journal

    paths = _files(tmp_path, 8, 3)
    (tmp_path / "junk.jsonl").write_text("not json\n")
    items: list[I.Item] = [(p, "auto", None) for p in paths]
    items.insert(1, (str(tmp_path / "gone.jsonl"), "auto", None))  # in this process's part
    items.append((str(tmp_path / "junk.jsonl"), "claude-code", None))  # in the helper's part
    (tmp_path / "ws").mkdir()
    with Journal(str(tmp_path / "ws")) as j:
        out = I.import_items(j, items, POLICY, processes=2, tolerant=True)
    assert [(f.index, f.code) for f in out.failed] == [
        (1, "E_IMPORT_UNREADABLE"), (9, "E_IMPORT_MALFORMED")]
    assert (out.files, out.captured) == (8, 24)
    assert len(_claim_pids(tmp_path / "ws")) == 2


def _first_batch_then_sigint(proc: subprocess.Popen[str], ws: Path) -> int:
    """SIGINT once a batch is on disk (a bounded wait loop, not a sleep as synchronisation); the helper's pid."""
    import signal
    import time

    import psutil

    end = time.monotonic() + 60
    helper = None
    while not list(ws.glob(f"{J}/captures/*/b-*")) or helper is None:
        assert proc.poll() is None and time.monotonic() < end, "import ended before its first batch was seen"
        kids = psutil.Process(proc.pid).children()
        helper = helper or (kids[0].pid if kids else None)
        time.sleep(0.002)
    proc.send_signal(signal.SIGINT)
    return helper


def test_ctrl_c_stops_both_processes_at_a_batch_boundary_and_a_rerun_resumes(tmp_path: Path) -> None:
    import psutil

    paths = _files(tmp_path, 40, 40)
    ws = tmp_path / "ws"
    ws.mkdir()
    env = child_env(CAIRN_CAPTURE_BATCH_TURNS="2", CAIRN_IMPORT_SPLIT_MIN="4")
    proc = subprocess.Popen([PYTHON, "-m", "cairn.server", "import", *paths, "-w", str(ws), "--json"], cwd=REPO,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        helper = _first_batch_then_sigint(proc, ws)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert not psutil.pid_exists(helper) or psutil.Process(helper).status() == psutil.STATUS_ZOMBIE
    first = json.loads(out)
    assert first["interrupted"] and 0 < first["captured"] < 1600
    assert "Resume with: cairn import" in err and "Traceback" not in err
    kept = [t for turns in _ready(ws).values() for t in turns]
    assert len(kept) == first["captured"]  # the helper's batches are counted too
    for turns in _ready(ws).values():
        assert len(turns) % 2 == 0
    again = subprocess.run([PYTHON, "-m", "cairn.server", "import", *paths, "-w", str(ws), "--json"], cwd=REPO,
                           env=env, capture_output=True, text=True, timeout=120)
    second = json.loads(again.stdout)
    assert (second["interrupted"], second["captured"] + first["captured"]) == (False, 1600)
    assert sorted(len(v) for v in _ready(ws).values()) == [40] * 40


def test_the_share_needs_no_linux_only_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """``os.sched_getaffinity`` exists on Linux only: elsewhere the core count decides."""
    from cairn.worker.journal import import_split

    monkeypatch.setattr(import_split, "_may_fork", lambda: False)
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert import_split.helper_share(100, 2) == 45
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert import_split.helper_share(100, 2) == 0
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert import_split.helper_share(100, 2) == 0


def test_a_long_request_is_read_in_few_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The helper reads its request (every path of its share) in chunks, not one byte per call."""
    from cairn.worker.journal import import_split

    calls = [0]
    real_read = os.read

    def counting_read(fd: int, n: int) -> bytes:
        calls[0] += 1
        return real_read(fd, n)

    r, w = os.pipe()
    try:
        line = json.dumps({"paths": [f"/p/{i:05d}.jsonl" for i in range(2000)]}).encode() + b"\n"
        os.write(w, line[:30000])  # a pipe holds at least 64 KiB
        os.write(w, line[30000:] + b"stop\n")  # a stop sent right after the request is not lost
        monkeypatch.setattr(import_split.os, "read", counting_read)
        got, stop = import_split.read_request(r)
    finally:
        os.close(r)
        os.close(w)
    assert (got, stop) == (line, True)
    assert calls[0] < 10


def test_a_sibling_still_capturing_is_waited_for_past_the_wait(workspace: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The wait counts from the other process's last batch: a long session in both parts is not E_CLAIM_BUSY."""
    from cairn.protocol.errors import CairnError, ErrorCode
    from cairn.worker.ingest.importers import load
    from cairn.worker.journal import capture as C
    from cairn.worker.journal.store import Journal

    class Clock:  # sleeping advances the clock: no real wait
        now = 0.0

        def monotonic(self) -> float:
            return self.now

        def sleep(self, s: float) -> None:
            self.now += s

    monkeypatch.setattr(C, "time", Clock())
    (path,) = _files(tmp_path, 1, 3)
    session = load(Path(path))[0]
    with Journal(str(workspace)) as j:
        real = j.claims.elect
        polls, step = [0], [10]

        def elect(scope: str, **kw: Any) -> Any:  # the sibling captures batch after batch, one per 10 waits
            polls[0] += 1
            if polls[0] <= 500:
                raise CairnError(ErrorCode.CLAIM_BUSY, "held", generation=polls[0] // step[0], deadline=60.0)
            return real(scope, **kw)

        monkeypatch.setattr(j.claims, "elect", elect)
        r = C.capture_session(j, session, source="import:claude-code", policy=POLICY, busy_wait=1.0)
        assert (r.captured, r.interrupted) == (3, False)

        polls[0], step[0] = 0, 1000  # a sibling stuck on one batch is given up on after the wait
        write_session(Path(path), 70, 4, words=8)  # a turn more: something to capture, so the claim is needed
        with pytest.raises(CairnError) as err:
            C.capture_session(j, load(Path(path))[0], source="import:claude-code", policy=POLICY, busy_wait=1.0)
        assert err.value.code is ErrorCode.CLAIM_BUSY


def test_a_stop_before_the_first_batch_reaches_the_helper(tmp_path: Path, split: None) -> None:
    """Ctrl-C at once: the helper is told before it starts, and captures nothing either."""
    paths = _files(tmp_path, 8, 3)
    out = _import(tmp_path / "ws", paths, processes=2, stop=lambda: True)
    assert (out.interrupted, out.captured, _ready(tmp_path / "ws")) == (True, 0, {})
    again = _import(tmp_path / "ws", paths, processes=2)
    assert (again.interrupted, again.captured) == (False, 24)


def test_a_full_disk_in_the_helper_is_the_code_of_one_process(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An ``OSError`` in the helper's part is ``E_NO_SPACE``/``E_IO_FAILED``, as the command reports its own."""
    import errno
    import io

    from cairn.protocol import codec
    from cairn.protocol.errors import CairnError, ErrorCode
    from cairn.worker.journal import import_split
    from cairn.worker.journal import imports as I

    def full(*a: Any, **kw: Any) -> Any:
        raise OSError(errno.ENOSPC, "No space left on device", str(workspace / "x"))

    monkeypatch.setattr(I, "import_items", full)
    request = {"workspace": str(workspace), "items": [], "policy": codec.to_obj(POLICY), "follow_symlinks": True,
               "tolerant": False}
    out = io.TextIOWrapper(io.BytesIO())
    monkeypatch.setattr(sys, "stdout", out)
    r, w = os.pipe()
    saved = os.dup(0)
    try:
        os.write(w, json.dumps(request).encode() + b"\nstop\n")  # stopped already: no watcher is left on fd 0
        os.dup2(r, 0)
        assert import_split._helper_main() == 0
    finally:
        os.dup2(saved, 0)
        for fd in (saved, r, w):
            os.close(fd)
    reply = json.loads(out.buffer.getvalue().decode().splitlines()[-1])
    assert reply["error"] == str(ErrorCode.NO_SPACE)
    err = CairnError(ErrorCode(reply["error"]), reply["message"])
    assert "x" in err.message and "Traceback" not in err.message


def test_a_failing_progress_callback_is_raised_and_the_helper_waited_for(workspace: Path, tmp_path: Path) -> None:
    """The helper's progress goes through the caller's callback: its error is the caller's, not a lost result."""
    from cairn.worker.journal.import_split import Helper

    paths = _files(tmp_path, 3, 3)

    def boom() -> None:
        raise ValueError("progress failed")

    helper = Helper(str(workspace), [(p, "auto", None) for p in paths], POLICY, follow_symlinks=True,
                    on_progress=boom)
    with pytest.raises(ValueError, match="progress failed"):
        helper.wait()
    assert helper.proc.returncode is not None  # exited, and reaped


def test_both_processes_wait_for_a_session_held_elsewhere(tmp_path: Path, split: None) -> None:
    """A session in both parts, held by a third capture: each process waits for it, then one captures it."""
    import threading as th

    from cairn.protocol.vocab import OutcomeKind
    from cairn.worker.ingest.importers import load
    from cairn.worker.journal.store import Journal, session_dir

    paths = _files(tmp_path, 4, 5)
    copy = tmp_path / "copy.jsonl"
    shutil.copy(paths[0], copy)  # the helper's last file holds the first file's session
    ws = tmp_path / "ws"
    ws.mkdir()
    sid = load(Path(paths[0]))[0].session_id
    seen = [0]
    lock = th.Lock()
    with Journal(str(ws)) as other:
        held: list[Any] = [other.claims.elect(f"session/{session_dir(sid)}", purpose="capture", ttl=600,
                                              authority=other.authority)]

        def stop() -> bool:  # once the helper has captured its other file, its copy waits too: let go
            with lock:
                if held and seen[0] >= 15:
                    other.claims.settle(held.pop(), OutcomeKind.COMPLETED)
            return False

        def progress(done: int, total: int) -> None:
            seen[0] = max(seen[0], done)

        out = _import(ws, [*paths, str(copy)], processes=2, stop=stop, progress=progress)
    assert not held
    assert (out.captured, out.skipped, out.sessions) == (20, 5, 5)
    assert sorted(len(v) for v in _ready(ws).values()) == [5, 5, 5, 5]


def test_with_cairn_debug_the_helpers_traceback_reaches_stderr(workspace: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capfd: pytest.CaptureFixture[str]) -> None:
    """``CAIRN_DEBUG=1`` shows an internal error's traceback (cli.py): the helper's too, not only its code."""
    from cairn.protocol import codec
    from cairn.protocol.errors import CairnError, ErrorCode
    from cairn.worker.journal import import_split

    request = json.dumps({"workspace": str(workspace), "items": 5, "policy": codec.to_obj(POLICY),
                          "follow_symlinks": True})  # items that are not a list: an internal error
    for debug, shown in (("1", True), ("0", False)):
        done = subprocess.run(import_split.COMMAND, input=request + "\n", capture_output=True, text=True, cwd=REPO,
                              env=child_env(CAIRN_DEBUG=debug), timeout=60)
        assert json.loads(done.stdout.splitlines()[-1])["error"] == str(ErrorCode.INTERNAL)
        assert ("Traceback" in done.stderr) is shown
    monkeypatch.setenv("CAIRN_DEBUG", "1")
    monkeypatch.setattr(import_split, "COMMAND", [sys.executable, "-c", "import sys; sys.stderr.write('said\\n')"])
    capfd.readouterr()
    with pytest.raises(CairnError):
        import_split.Helper(str(workspace), [], POLICY, follow_symlinks=True).wait()
    assert "said" in capfd.readouterr().err


def test_a_long_request_does_not_hold_the_command_until_the_helper_has_started(
        workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The request (every path of the helper's share) can exceed a pipe's buffer: it is sent beside the command's
    own import, not before it, and a stop asked meanwhile still follows it."""
    import threading as th

    from cairn.worker.journal import import_split

    gate = tmp_path / "gate"
    os.mkfifo(gate)
    fake = ("import json, os, sys; os.read(os.open(sys.argv[1], os.O_RDONLY), 1); "
            "req = json.loads(sys.stdin.buffer.readline()); stop = sys.stdin.buffer.readline().decode(); "
            "print(json.dumps({'result': {'record': 'import-tally', 'v': 1, 'files': len(req['items']), "
            "'session_ids': [stop]}}), flush=True)")  # the counts carry what it was sent
    monkeypatch.setattr(import_split, "COMMAND", [sys.executable, "-c", fake, str(gate)])
    items: list[Any] = [(f"/a/long/path/to/a/session/store/{i:06d}.jsonl", "auto", None) for i in range(4000)]
    made: list[import_split.Helper] = []
    start = th.Thread(target=lambda: made.append(import_split.Helper(str(workspace), items, POLICY,
                                                                      follow_symlinks=True)), daemon=True)
    start.start()
    start.join(10)  # a bound, not a synchronisation: the helper reads nothing before the gate opens
    blocked = start.is_alive()
    if not blocked:
        made[0].stop()
    fd = os.open(gate, os.O_WRONLY)  # open the gate
    os.write(fd, b"x")
    os.close(fd)
    start.join()
    reply = made[0].wait(stop=lambda: True)
    assert not blocked
    assert (reply.files, reply.session_ids) == (4000, ("stop\n",))


_FORKED_IMPORT = """
import json, sys
from cairn.protocol.digest import ModelPolicy
from cairn.worker.journal import import_split, imports
from cairn.worker.journal.store import Journal

how = []
start = import_split.Helper.__init__
def spy(self, *a, **kw):
    start(self, *a, **kw)
    how.append(type(self.proc).__name__)
import_split.Helper.__init__ = spy
import_split.MIN_FILES, import_split._cores = 4, lambda: 2
with Journal(sys.argv[1]) as j:
    out = imports.import_items(j, [(p, "auto", None) for p in sys.argv[2:]], ModelPolicy(provider="extractive"),
                               processes=2)
print(json.dumps({"how": how, "captured": out.captured, "sessions": sorted(out.session_ids)}))
"""


def test_a_forked_helper_gives_the_result_of_one_process(tmp_path: Path) -> None:
    """A process that runs one thread forks its helper (no second interpreter start-up): the same captures
    as one process, and the helper's share of the files is half."""
    from cairn.worker.journal import import_split

    paths = _files(tmp_path, 8, 3)
    one = _import(tmp_path / "one", paths)
    ws = tmp_path / "two"
    ws.mkdir()
    run = subprocess.run([PYTHON, "-c", _FORKED_IMPORT, str(ws), *paths], cwd=REPO, env=child_env(),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout)
    assert got == {"how": ["_Forked"], "captured": one.captured, "sessions": sorted(one.session_ids)}
    assert _ready(ws) == _ready(tmp_path / "one")
    assert len(_claim_pids(ws)) == 2  # two processes captured
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(import_split, "_may_fork", lambda: True)
        assert import_split.helper_share(100, 2) == 50
