"""An import beside another writer of the same sessions, and an import that rebuilds a damaged capture.

Found by using cairn as a user would: two `cairn import --all` at once made one exit 1 with
``E_CLAIM_BUSY``, a Claude Code ``SessionEnd`` hook that ran during an import of its session lost its seal
(the agent never sends that signal again), and a segment damaged without a change of size or time (a
restore with ``cp -p``, bit rot) was never rebuilt although ``cairn doctor`` said a re-import would.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cairn.protocol.digest import ModelPolicy
from cairn.protocol.vocab import OutcomeKind
from cairn.server import cli

from tests.journal.helpers import J, batches
from tests.support import PYTHON, child_env
from tests.support.generated import write_session

POLICY = ModelPolicy(provider="extractive")


def _held_until_waited_for(ws: Path, path: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[float]]:
    """Another process's journal holding the session of ``path``; it settles its batch the first time the
    capture under test waits (the waits are listed). No real sleep: the wait's sleep is the other's turn."""
    from cairn.worker.ingest.importers import load
    from cairn.worker.journal import capture
    from cairn.worker.journal.store import Journal, session_dir

    [session] = load(Path(path))
    other = Journal(str(ws))
    held = other.claims.elect(f"session/{session_dir(session.session_id)}", purpose="capture", ttl=60,
                              authority=other.authority)
    waited: list[float] = []

    def sleep(seconds: float) -> None:
        if not waited:
            other.claims.settle(held, OutcomeKind.COMPLETED)
        waited.append(seconds)

    monkeypatch.setattr(capture.time, "sleep", sleep)
    return other, waited


def test_an_import_waits_for_another_process_capturing_the_same_session(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cairn.worker.journal import imports as I
    from cairn.worker.journal.store import Journal

    ws = tmp_path / "ws"
    ws.mkdir()
    path = str(write_session(tmp_path / "s.jsonl", 71, 4, words=8))
    other, waited = _held_until_waited_for(ws, path, monkeypatch)
    try:
        with Journal(str(ws)) as j:
            tally = I.import_paths(j, [path], "auto", POLICY)
    finally:
        other.close()
    assert waited and (tally.captured, tally.failed) == (4, ())


def test_a_session_end_hook_during_an_import_of_its_session_still_seals_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    sid = "00000000-0000-0000-0000-0000000000aa"
    path = str(write_session(ws / f"{sid}.jsonl", 72, 3, words=8))  # a hook reads transcripts it may
    other, waited = _held_until_waited_for(ws, path, monkeypatch)
    payload = json.dumps({"session_id": sid, "transcript_path": path, "hook_event_name": "SessionEnd",
                          "cwd": str(ws)})
    r_fd, w_fd = os.pipe()  # the payload on stdin, as the agent gives it
    os.write(w_fd, payload.encode())
    os.close(w_fd)
    monkeypatch.setattr("sys.stdin", os.fdopen(r_fd, "r"))
    try:
        code = cli.main(["hook", "claude-code", "--json", "-w", str(ws)])
    finally:
        other.close()
    out, err = capsys.readouterr()
    assert code == 0 and not err
    r = json.loads(out)
    assert waited and r["captured"] == 3 and len(r["sealed"]) == 1


def test_two_imports_of_the_same_history_at_once_both_succeed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = home / ".claude" / "projects" / "-p"
    store.mkdir(parents=True)
    for i in range(4):
        write_session(store / f"0000000{i}-0000-0000-0000-000000000000.jsonl", 80 + i, 300, words=8)
    ws = tmp_path / "ws"
    ws.mkdir()
    env = child_env(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local"),
                    XDG_CACHE_HOME=str(home / ".cache"), XDG_STATE_HOME=str(home / ".state"))
    argv = [PYTHON, "-m", "cairn.server", "import", "--all", "--every-workspace", "--json", "-w", str(ws)]
    procs = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err.decode()[-400:]
        assert b"E_CLAIM_BUSY" not in err
    got = [json.loads(out) for out, _ in outs]
    assert sum(r["captured"] for r in got) == 1200  # every turn once, by one of them
    doctor = subprocess.run([PYTHON, "-m", "cairn.server", "doctor", "-w", str(ws)], env=env, capture_output=True)
    assert doctor.returncode == 0, doctor.stdout.decode()[-400:]


def test_a_segment_damaged_in_place_is_rebuilt_by_a_reread(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    path = str(write_session(tmp_path / "s.jsonl", 73, 3, words=8))
    assert cli.main(["import", "-w", str(ws), path]) == 0
    [segment] = [p for p in (ws / J / "segments").rglob("*") if p.is_file()]
    st = segment.stat()
    data = bytearray(segment.read_bytes())
    data[len(data) // 2] ^= 0xFF
    segment.write_bytes(bytes(data))
    os.utime(segment, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same time: the manifest sees nothing
    capsys.readouterr()
    assert cli.main(["doctor", "-w", str(ws)]) == 1
    assert "V_SEGMENT_TORN" in (out := capsys.readouterr().out) and "cairn import --reread PATH" in out
    assert cli.main(["import", "-w", str(ws), path]) == 0
    assert "rebuilt" not in capsys.readouterr().out  # skipped on its marks, as a re-run must be
    assert cli.main(["import", "--reread", "-w", str(ws), path]) == 0
    assert "0 new turn(s), 3 already captured, 1 torn segment(s) rebuilt" in capsys.readouterr().out
    assert cli.main(["doctor", "-w", str(ws)]) == 0
    assert cli.main(["import", "--reread", "--all", "-w", str(ws)]) == 2
    assert "E_USAGE" in capsys.readouterr().err


def test_a_holder_that_died_is_not_waited_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A claim whose process is gone on this host holds until its deadline (the fence); waiting for it would
    only delay the same E_CLAIM_BUSY (a hook's agent waited 31 s for nothing)."""
    from cairn.protocol.errors import CairnError, ErrorCode
    from cairn.worker.journal import capture
    from cairn.worker.journal import imports as I
    from cairn.worker.journal.store import Journal

    ws = tmp_path / "ws"
    ws.mkdir()
    path = str(write_session(tmp_path / "s.jsonl", 74, 3, words=8))
    elect = ("import sys\nfrom pathlib import Path\nfrom cairn.worker.ingest.importers import load\n"
             "from cairn.worker.journal.store import Journal, session_dir\n"
             "[s] = load(Path(sys.argv[2]))\nj = Journal(sys.argv[1])\n"
             "j.claims.elect(f'session/{session_dir(s.session_id)}', purpose='capture', ttl=60, "
             "authority=j.authority)\n")
    subprocess.run([PYTHON, "-c", elect, str(ws), path], env=child_env(), check=True)  # elects, then exits

    def sleep(seconds: float) -> None:
        raise AssertionError("waited for a holder that is gone")

    monkeypatch.setattr(capture.time, "sleep", sleep)
    with Journal(str(ws)) as j, pytest.raises(CairnError) as err:
        I.import_paths(j, [path], "auto", POLICY)
    assert err.value.code is ErrorCode.CLAIM_BUSY


HOLDER = """\
import sys
from cairn.protocol.vocab import OutcomeKind
from cairn.worker.journal.store import Journal, session_dir
j = Journal(sys.argv[1])
held = j.claims.elect(f'session/{session_dir(sys.argv[2])}', purpose='seal:session-end', ttl=60,
                      authority=j.authority)
print('held', flush=True)
sys.stdin.readline()
j.claims.settle(held, OutcomeKind.COMPLETED)
print('settled', flush=True)
sys.stdin.readline()
"""


def test_a_seal_waits_for_another_process_holding_the_session(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Two `cairn run --all` at once: one sealed a session while the other wanted to, and the other exited 2
    with E_CLAIM_BUSY and no report, although its import, like the seal it wanted, was done. A seal now waits
    for a live holder as an import does. The holder is another live process (a `cairn run` sealing); it
    settles the first time the seal under test waits (the wait's sleep is its turn: no real sleep)."""
    from cairn.worker.ingest.importers import load
    from cairn.worker.journal import capture

    ws = tmp_path / "ws"
    ws.mkdir()
    path = write_session(tmp_path / "s.jsonl", 75, 3, words=8)
    assert cli.main(["import", "-w", str(ws), str(path)]) == 0
    [session] = load(path)
    holder = subprocess.Popen([PYTHON, "-c", HOLDER, str(ws), session.session_id], env=child_env(),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    waited: list[float] = []
    real_sleep = capture.time.sleep

    def sleep(seconds: float) -> None:
        if not waited:
            assert holder.stdin is not None and holder.stdout is not None
            holder.stdin.write("settle\n")
            holder.stdin.flush()
            assert holder.stdout.readline() == "settled\n"
        waited.append(seconds)

    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        monkeypatch.setattr(capture.time, "sleep", sleep)
        capsys.readouterr()
        code = cli.main(["run", "--json", "-w", str(ws), str(path)])
    finally:
        monkeypatch.setattr(capture.time, "sleep", real_sleep)
        holder.communicate("exit\n", timeout=60)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert waited and "E_CLAIM_BUSY" not in err
    r = json.loads(out)
    assert len(r["sealed"]) == 1 and r["process"]["published"] + r["process"]["all_none"] == 1


def test_two_runs_of_the_same_history_at_once_both_succeed(tmp_path: Path) -> None:
    """The race itself, as found: two `cairn run --all` over many small sessions (a helper process each,
    ADR 0013; groups, ADR 0023), each sealing every session the other also seals."""
    home = tmp_path / "home"
    store = home / ".claude" / "projects" / "-p"
    store.mkdir(parents=True)
    for i in range(200):
        write_session(store / f"s{i:03d}.jsonl", 100 + i, 10, words=8)
    ws = tmp_path / "ws"
    ws.mkdir()
    env = child_env(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local"),
                    XDG_CACHE_HOME=str(home / ".cache"), XDG_STATE_HOME=str(home / ".state"))
    argv = [PYTHON, "-m", "cairn.server", "run", "--all", "--every-workspace", "--json", "-w", str(ws)]
    procs = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err.decode()[-400:]
        assert b"E_CLAIM_BUSY" not in err
    got = [json.loads(out) for out, _ in outs]
    assert sum(r["import"]["captured"] for r in got) == 2000  # every turn once, by one of them
    assert sum(len(r["sealed"]) for r in got) == 200  # every capture sealed once, by one of them
    caps = sorted((ws / J / "captures").iterdir())
    turns = [t for c in caps for b in batches(c) for t in b.turn_ids]
    assert len(caps) == 200 and len(turns) == 2000 == len(set(turns))
    doctor = subprocess.run([PYTHON, "-m", "cairn.server", "doctor", "-w", str(ws)], env=env, capture_output=True)
    assert doctor.returncode == 0, doctor.stdout.decode()[-400:]
