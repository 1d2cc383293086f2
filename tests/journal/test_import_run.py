"""`cairn import` as a person runs it: Ctrl-C at a batch boundary, then resume."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

from tests.journal.helpers import J, batches, cairn, cairn_json
from tests.support import PYTHON, REPO, child_env
from tests.support.generated import write_session

TURNS = 3000


def _ready_turns(ws: Path) -> list[str]:
    caps = ws / J / "captures"
    return [t for cap in sorted(caps.iterdir()) for b in batches(cap) for t in b.turn_ids] if caps.exists() else []


def test_sigint_stops_at_a_batch_boundary_keeps_the_turns_and_a_rerun_resumes(workspace: Path, tmp_path: Path) -> None:
    src = write_session(tmp_path / "long.jsonl", 1, TURNS)
    env = child_env(CAIRN_CAPTURE_BATCH_TURNS="10")
    proc = subprocess.Popen([PYTHON, "-m", "cairn.server", "import", str(src), "-w", str(workspace), "--json"],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # the first ready batch on disk is the signal (a bounded wait loop, not a sleep as synchronisation)
        end = time.monotonic() + 60
        while not list(workspace.glob(f"{J}/captures/*/b-*")):
            assert proc.poll() is None and time.monotonic() < end, "import ended before its first batch was seen"
            time.sleep(0.005)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    first = json.loads(out)
    assert first["interrupted"] and 0 < first["captured"] < TURNS
    assert "Resume with: cairn import" in err and "Traceback" not in err
    kept = _ready_turns(workspace)
    assert len(kept) == first["captured"] and first["captured"] % 10 == 0  # whole batches only
    assert cairn(workspace, "doctor", check=False).returncode == 0
    again = cairn_json(workspace, "import", str(src))
    assert not again["interrupted"] and (again["captured"], again["skipped"]) == (TURNS - len(kept), len(kept))
    all_turns = _ready_turns(workspace)
    assert len(all_turns) == TURNS == len(set(all_turns))


def test_piped_import_prints_a_summary_and_no_bar(workspace: Path, tmp_path: Path) -> None:
    src = write_session(tmp_path / "s.jsonl", 2, 30)
    r = cairn(workspace, "import", str(src))
    assert r.stdout == "imported 1 file(s) (claude-code), 1 session(s): 30 new turn(s), 0 already captured\n"
    assert r.stderr == ""


def test_a_tuning_knob_that_is_not_a_number_is_reported_and_the_import_runs(workspace: Path, tmp_path: Path) -> None:
    """A typo in a tuning variable used to fail every command with E_INTERNAL when the module loaded."""
    src = write_session(tmp_path / "s.jsonl", 2, 30)
    knobs = {"CAIRN_IMPORT_WORKERS": "eight", "CAIRN_IMPORT_PROCESSES": "two", "CAIRN_IMPORT_SPLIT_MIN": "1e3",
             "CAIRN_CAPTURE_BATCH_TURNS": "lots", "CAIRN_DIGEST_GROUP": "x"}
    r = cairn(workspace, "import", str(src), env=knobs)
    assert r.stdout == "imported 1 file(s) (claude-code), 1 session(s): 30 new turn(s), 0 already captured\n"
    assert "Traceback" not in r.stderr and "E_INTERNAL" not in r.stderr
    for name in ("CAIRN_IMPORT_WORKERS", "CAIRN_IMPORT_PROCESSES", "CAIRN_IMPORT_SPLIT_MIN", "CAIRN_CAPTURE_BATCH_TURNS"):
        assert f"E_CONFIG_INVALID: {name} is not a whole number; the default" in r.stderr, r.stderr
    assert not any(value in r.stderr for value in knobs.values() if len(value) > 2)  # the value is not echoed
    assert cairn(workspace, "process", env=knobs).returncode == 0


def test_on_a_terminal_the_import_draws_a_progress_bar(workspace: Path, tmp_path: Path) -> None:
    import os
    import pty

    src = write_session(tmp_path / "s.jsonl", 3, 400)
    master, slave = pty.openpty()
    try:
        r = subprocess.run([PYTHON, "-m", "cairn.server", "import", str(src), "-w", str(workspace)], cwd=REPO,
                           env=child_env(CAIRN_CAPTURE_BATCH_TURNS="10", COLUMNS="120", TERM="xterm"),
                           stdout=subprocess.PIPE, stderr=slave, text=True, timeout=120)
        os.close(slave)
        drawn = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(master)
    assert r.returncode == 0
    assert b"turns/s" in drawn and b"ETA" in drawn and b"/400" in drawn
    assert r.stdout.startswith("imported 1 file(s) (claude-code), 1 session(s): 400 new turn(s)")


def test_a_file_that_grows_during_the_import_loses_and_repeats_nothing(workspace: Path, tmp_path: Path) -> None:
    full = write_session(tmp_path / "full.jsonl", 5, 1200).read_text().splitlines(keepends=True)
    first_part = 1 + 4 * 1000  # the summary line, then four records per turn
    src = tmp_path / "live.jsonl"
    src.write_text("".join(full[:first_part]))
    proc = subprocess.Popen([PYTHON, "-m", "cairn.server", "import", str(src), "-w", str(workspace), "--json"],
                            cwd=REPO, env=child_env(CAIRN_CAPTURE_BATCH_TURNS="10"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 60
        while not list(workspace.glob(f"{J}/captures/*/b-*")):
            assert proc.poll() is None and time.monotonic() < end, "import ended before its first batch was seen"
            time.sleep(0.005)
        # the agent keeps writing: whole records, then half a record (a write in progress)
        with src.open("a") as fh:
            fh.write("".join(full[first_part:-1]))
            fh.write(full[-1][: len(full[-1]) // 2])
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    first = json.loads(out)
    assert first["captured"] >= 1000
    again = cairn_json(workspace, "import", str(src))
    assert first["captured"] + again["captured"] == 1199  # the last turn's answer is still half written
    turns = _ready_turns(workspace)
    assert len(turns) == 1199 == len(set(turns))
    assert cairn(workspace, "doctor", check=False).returncode == 0


def test_the_bar_runs_no_thread_before_the_import_counts() -> None:
    """The bar's refresh thread starts at the first count: until then the command runs one thread, so a helper
    process for the last files can be a fork of it (docs/adr/0013, "A forked helper")."""
    import threading

    from cairn.server.cli import import_run

    def refreshing() -> list[threading.Thread]:  # rich's own thread (other tests' threads come and go meanwhile)
        return [t for t in threading.enumerate() if type(t).__name__ == "_RefreshThread" and t.is_alive()]

    before = refreshing()
    with import_run._bar(True) as update:
        assert refreshing() == before
        update(1, 10)
        started = [t for t in refreshing() if t not in before]
        assert len(started) == 1
        update(2, 10)
        assert [t for t in refreshing() if t not in before] == started
    started[0].join(10)  # told to stop when the bar closed
    assert not started[0].is_alive()
