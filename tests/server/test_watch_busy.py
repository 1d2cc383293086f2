"""A watcher started beside a dead one's claim: the session is captured once, whole, with no file change.

Found by restarting ``cairn watch`` right after it was killed (SIGKILL): the dead watcher's claim on a
session holds until its deadline (60 s by default), so the new watcher's first import of that session was
refused with ``E_CLAIM_BUSY``, and so was its idle seal. Both were tried again only at the file's next
change, which an ended session never makes: its last turns waited for an unrelated event, and an idle seal
of another quiet period could close the capture with part of the session, the rest going to a second
capture later.

The dead holder is real: a process elects the session's claim (with a deadline a few seconds ahead, as a
killed watcher leaves one 60 s ahead) and exits, so its pid is gone and no import waits for it. The
headless watcher (:class:`server.cli.watch.Headless`) runs in this test's loop with its real jobs and the
core's back-off (2 s, then 4 s); the session file is never touched after the watcher starts. Each step
waits, bounded, for the report it causes (no sleeps).
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cairn.server import cli
from cairn.server.cli.watch import Headless

from tests.journal.helpers import cairn_json
from tests.support import PYTHON, child_env
from tests.support.generated import write_session

pytestmark = pytest.mark.asyncio

WAIT = 30.0  # bounded waits: the dead claim's deadline is HELD seconds ahead
HELD = 3.0
TURNS, BEFORE = 6, 3  # the session's turns; those the dead watcher had captured
IDLE_MINUTES = 0.01  # sealed 0.6 s after the last change

DEAD_HOLDER = """\
import sys
from pathlib import Path
from cairn.worker.ingest.importers import load
from cairn.worker.journal.store import Journal, session_dir
[s] = load(Path(sys.argv[2]))
j = Journal(sys.argv[1])
j.claims.elect(f'session/{session_dir(s.session_id)}', purpose='capture', ttl=float(sys.argv[3]),
               authority=j.authority)
"""


def leave_dead_claim(ws: Path, path: Path, ttl: float = HELD) -> None:
    """A process elects the claim of ``path``'s session and exits without settling it (as one killed would)."""
    subprocess.run([PYTHON, "-c", DEAD_HOLDER, str(ws), str(path), str(ttl)], env=child_env(), check=True,
                   timeout=60)


class Run:
    """The headless watcher on ``roots``; its import results and its lines, in order, on one queue."""

    def __init__(self, ws: Path, roots: list[str]) -> None:
        self.seen: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.lines: list[str] = []
        self.watch = Headless(str(ws), roots, {"sealIdleMinutes": IDLE_MINUTES}, say=self._say,
                              observe=lambda kind, detail: self.seen.put_nowait((kind, detail)))
        self.task = asyncio.ensure_future(self.watch.run())

    def _say(self, line: str) -> None:
        self.lines.append(line.split(" ", 1)[1])
        self.seen.put_nowait(("say", line.split(" ", 1)[1]))

    async def until(self, kind: str, done: Any) -> list[Any]:
        """The reports of ``kind`` up to the first that is ``done`` (bounded)."""
        got: list[Any] = []
        while True:
            k, detail = await asyncio.wait_for(self.seen.get(), WAIT)
            if k == kind:
                got.append(detail)
                if done(detail):
                    return got

    async def stop(self) -> None:
        self.watch.stop()
        await asyncio.wait_for(self.task, WAIT)


async def test_a_session_held_by_a_dead_watcher_is_captured_whole_once_its_claim_runs_out(
        workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store" / "project"
    store.mkdir(parents=True)
    session = write_session(store / "session.jsonl", 76, TURNS, words=8)
    # the killed watcher had captured the first turns, then died holding the session's claim
    assert cli.main(["import", "-w", str(workspace), str(write_session(tmp_path / "part.jsonl", 76, BEFORE,
                                                                       words=8))]) == 0
    leave_dead_claim(workspace, session)
    stamp = session.stat()
    capsys.readouterr()
    run = Run(workspace, [str(tmp_path / "store")])
    try:
        imports = await run.until("import", lambda r: r is not None)
        assert imports[0] is None  # refused: the dead watcher's claim holds until its deadline
        assert imports[-1].captured == TURNS - BEFORE and imports[-1].failed == ()  # the rest, no repeat
        await run.until("say", lambda line: line.startswith("sealed"))
    finally:
        await run.stop()
    assert (session.stat().st_size, session.stat().st_mtime_ns) == (stamp.st_size, stamp.st_mtime_ns)  # untouched
    assert run.lines == [f"captured {TURNS - BEFORE} turn(s) from 1 file(s)", "sealed 1 capture(s) (idle)"]
    err = capsys.readouterr().err
    assert err.count("E_CLAIM_BUSY") == 1 and "tried again on its own" in err  # said once, not at every retry
    [capture] = cairn_json(workspace, "jobs")  # one capture, whole and sealed: no second one for the rest
    assert capture["turns"] == TURNS and capture["state"] != "open"


async def test_an_idle_seal_refused_busy_is_tried_again_on_its_own(workspace: Path, tmp_path: Path) -> None:
    """The idle seal closes every quiet capture; a dead holder's claim on any of them refused the whole seal,
    which was not tried again before the next change (here: never)."""
    store = tmp_path / "store" / "project"
    store.mkdir(parents=True)
    write_session(store / "session.jsonl", 77, 2, words=8)
    other = write_session(tmp_path / "other.jsonl", 78, 2, words=8)  # captured earlier, not followed here
    assert cli.main(["import", "-w", str(workspace), str(other)]) == 0
    leave_dead_claim(workspace, other)
    run = Run(workspace, [str(tmp_path / "store")])
    try:
        [imported] = await run.until("import", lambda r: r is not None)
        assert imported.captured == 2
        await run.until("say", lambda line: line.startswith("sealed"))
    finally:
        await run.stop()
    assert run.lines[0] == "captured 2 turn(s) from 1 file(s)"
    captures = cairn_json(workspace, "jobs")
    assert [c["turns"] for c in captures] == [2, 2] and "open" not in {c["state"] for c in captures}


DEAD_DIGESTER = """\
import sys
from cairn.worker.journal.store import Journal
from cairn.worker.journal.digest_group import GROUP_SCOPE
j = Journal(sys.argv[1])
j.claims.elect(GROUP_SCOPE, purpose='digest', ttl=float(sys.argv[2]), authority=j.authority)
"""


async def test_captures_a_dead_digester_held_are_digested_with_no_file_change(
        workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Found by killing `cairn watch` while it digested and restarting it: its first digest pass met the dead
    watcher's claim, counted the capture busy without a word, and the capture stayed undigested until some
    file changed and went quiet again."""
    session = write_session(tmp_path / "done.jsonl", 79, 2, words=8)
    assert cli.main(["import", "-w", str(workspace), str(session)]) == 0
    assert cli.main(["seal", "-w", str(workspace)]) == 0
    subprocess.run([PYTHON, "-c", DEAD_DIGESTER, str(workspace), str(HELD)], env=child_env(), check=True, timeout=60)
    (tmp_path / "store").mkdir()
    capsys.readouterr()
    run = Run(workspace, [str(tmp_path / "store")])  # follows nothing that changes
    run.watch.digest_retry = (0.5, 1.0)
    try:
        passes = await run.until("digest", lambda counts: not counts.busy)
        assert passes[0].busy == 1  # the first pass met the dead watcher's claim
    finally:
        await run.stop()
    assert passes[-1].published + passes[-1].all_none == 1 and passes[-1].remaining == 0
    assert [c["state"] for c in cairn_json(workspace, "jobs")] not in (["pending"], ["open"])
    err = capsys.readouterr().err
    assert err.count("E_CLAIM_BUSY") == 1 and "digested on their own" in err


async def test_a_watcher_whose_reader_went_away_ends_instead_of_capturing_nothing(workspace: Path,
                                                                                  tmp_path: Path) -> None:
    """`cairn watch | head -1`: the line after the first raised BrokenPipeError in the watcher's work, which
    ended there while the command waited for Ctrl-C, capturing nothing more and saying nothing. The error ends
    the run now (the command then stops quietly with 141, as every command does when its reader goes away)."""
    store = tmp_path / "store"
    store.mkdir()
    write_session(store / "session.jsonl", 80, 2, words=8)

    def gone(line: str) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    watch = Headless(str(workspace), [str(store)], {"sealIdleMinutes": IDLE_MINUTES}, say=gone)
    with pytest.raises(BrokenPipeError):
        await asyncio.wait_for(watch.run(), WAIT)
