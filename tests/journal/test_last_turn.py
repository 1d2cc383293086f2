"""The last turn of a session no completion signal closed: captured once its file is sealed, never twice.

A turn closes on the format's completion signal, else on the next prompt, else when the file is sealed
(quiet for the idle period, or the session said to be over). Codex CLI up to about 0.60 wrote no
``task_complete``: there the last prompt of every session, with its complete reply, was lost, in
``cairn import``, ``cairn watch`` and ``cairn watch --once`` alike.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from cairn.protocol.digest import ModelPolicy
from cairn.protocol.worker import WorkerRequest
from cairn.worker.entry import run_request
from cairn.worker.jobs.watch import Watcher
from cairn.worker.journal.store import Journal

from tests.journal.helpers import J, batches, cairn, cairn_json
from tests.sources.home import env_for
from tests.support.transcripts import FIXTURES

ROLLOUT = FIXTURES / "codex" / "0.60" / "rollout-2025-11-23T11-12-40-019ab3e1-4c2d-7a80-b6f1-2d9e5c7a8b31.jsonl"
SESSION = "019ab3e1-4c2d-7a80-b6f1-2d9e5c7a8b31"
RESUMED = "".join(json.dumps({"timestamp": "2025-11-24T08:00:00.000Z", "type": kind, "payload": payload}) + "\n"
                  for kind, payload in (
                      ("event_msg", {"type": "user_message", "message": "Now add a pause button.", "images": []}),
                      ("event_msg", {"type": "agent_message", "message": "Added a pause button."}),
                      ("response_item", {"type": "message", "role": "assistant",
                                         "content": [{"type": "output_text", "text": "Added a pause button."}]})))


def _quiet(path: Path, minutes: float = 60) -> None:
    """The file last written ``minutes`` ago (longer than the default idle period of 20 minutes)."""
    then = time.time() - minutes * 60
    os.utime(path, (then, then))


def _turn_ids(ws: Path) -> list[str]:
    caps = ws / J / "captures"
    return [t for cap in sorted(caps.iterdir()) for b in batches(cap) for t in b.turn_ids] if caps.exists() else []


def test_import_captures_the_last_turn_once_the_file_is_quiet_and_a_resumed_session_repeats_nothing(
        workspace: Path, tmp_path: Path) -> None:
    src = tmp_path / ROLLOUT.name
    shutil.copyfile(ROLLOUT, src)
    live = cairn_json(workspace, "import", str(src))  # just written: the last turn waits
    assert (live["captured"], live["pending"], live["formats"]) == (2, 1, ["codex"])
    said = cairn(workspace, "import", str(src)).stdout.splitlines()
    assert said == ["imported 1 file(s) (codex), 1 session(s): 0 new turn(s), 2 already captured",
                    "1 last turn(s) not over yet (no end signal or next prompt after them); captured once the file has "
                    "been quiet 20 minute(s), or now with --ended if the session is over"]
    _quiet(src)
    sealed = cairn_json(workspace, "import", str(src))
    assert (sealed["captured"], sealed["skipped"], sealed.get("pending")) == (1, 2, None)
    with src.open("a") as f:  # the session resumed: a next prompt closes the turn captured at the seal
        f.write(RESUMED)
    resumed = cairn_json(workspace, "import", "--ended", str(src))
    assert (resumed["captured"], resumed["skipped"]) == (1, 3)  # only the new turn: the tail kept its id
    ids = _turn_ids(workspace)
    assert len(ids) == 4 == len(set(ids))


def test_run_ends_the_session_and_takes_its_last_turn(workspace: Path, tmp_path: Path) -> None:
    src = tmp_path / ROLLOUT.name
    shutil.copyfile(ROLLOUT, src)
    out = cairn_json(workspace, "run", str(src))
    assert out["import"]["captured"] == 3 and len(out["sealed"]) == 1


def _codex_home(tmp_path: Path, ws: str) -> Path:
    home = tmp_path / "home"
    day = home / ".codex" / "sessions" / "2025" / "11" / "23"
    day.mkdir(parents=True)
    (day / ROLLOUT.name).write_text(ROLLOUT.read_text().replace("/home/dana/src/chess-clock", ws))
    return home


def test_the_watcher_captures_the_last_turn_and_seals_the_session_when_the_file_goes_quiet(tmp_path: Path) -> None:
    ws = str(tmp_path / "work" / "clock")
    os.makedirs(ws)
    home = _codex_home(tmp_path, ws)
    w = Watcher(str(home), env_for(home), ws, ModelPolicy(provider="extractive"))
    with Journal(ws) as j:
        first = w.tick(j)
    assert (first.captured, first.pending, first.sealed) == (2, 1, ())
    with Journal(ws, clock_offset=w.idle + 60) as j:  # the file has been quiet for the idle period
        later = w.tick(j)
    assert (later.changed, later.captured, later.skipped, len(later.sealed or ())) == (0, 1, 2, 1)
    with Journal(ws, clock_offset=w.idle + 120) as j:
        again = w.tick(j)
    assert (again.sources, again.captured, again.sealed) == (0, 0, ())
    assert len(_turn_ids(Path(ws))) == 3


def test_seal_idle_reads_the_quiet_files_again_and_seals_their_sessions(workspace: Path, tmp_path: Path) -> None:
    """`cairn watch` and the language server: the files of the quiet period go with the seal-idle job."""
    src = tmp_path / ROLLOUT.name
    shutil.copyfile(ROLLOUT, src)
    r = run_request(WorkerRequest(job="import", workspace=str(workspace), args={"paths": [str(src)], "each": True}))
    assert (r.result["captured"], r.result["pending"]) == (2, 1)
    idle = run_request(WorkerRequest(job="seal-idle", workspace=str(workspace),
                                     args={"quiet_seconds": 1200, "paths": [str(src)]}))
    assert idle.result["sealed"] == 0  # not quiet yet: nothing read, nothing sealed
    _quiet(src)
    idle = run_request(WorkerRequest(job="seal-idle", workspace=str(workspace),
                                     args={"quiet_seconds": 1200, "paths": [str(src)]}))
    assert idle.result["sealed"] == 1
    (cap,) = sorted((workspace / J / "captures").iterdir())
    assert json.loads((cap / "seal").read_text())["trigger"] == "idle" and len(_turn_ids(workspace)) == 3


def test_cairn_watch_captures_the_last_turn_when_it_seals_the_quiet_session(workspace: Path, tmp_path: Path) -> None:
    """`cairn watch --idle`: the idle seal reads the quiet file again, so its last turn is captured and sealed."""
    import signal
    import subprocess
    import threading

    from tests.support import PYTHON, REPO, child_env

    store = tmp_path / "store"
    store.mkdir()
    shutil.copyfile(ROLLOUT, store / ROLLOUT.name)
    proc = subprocess.Popen([PYTHON, "-m", "cairn.server", "watch", "-w", str(workspace), "--idle", "0.02", str(store)],
                            cwd=REPO, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watchdog = threading.Timer(60, proc.kill)  # a line that never comes ends the wait, not the suite
    watchdog.start()
    try:
        assert proc.stdout is not None
        # each line blocks until the watcher says it: the import, then the seal
        assert proc.stdout.readline().split(" ", 1)[-1].strip() == "captured 2 turn(s) from 1 file(s)"
        assert proc.stdout.readline().split(" ", 1)[-1].strip() == "sealed 1 capture(s) (idle)"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130 and "Traceback" not in err
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    (cap,) = sorted((workspace / J / "captures").iterdir())
    assert (cap / "seal").exists() and len(_turn_ids(workspace)) == 3
