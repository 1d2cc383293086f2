"""Watching real files: appended turns are captured, a half-written line is not, a symlink is ignored.

Nothing is read through a link: not a file the native watcher names inside a symlinked folder, not a
file or folder swapped for a link between the watcher's look and the import (the swap is made in a
hook between the two, not after a sleep).

The headless watcher (:class:`server.cli.watch.Headless`, the same core and
file watcher as the server) runs in this test's loop with its real import
jobs; the test appends to a copy of the Claude Code fixture and waits for
each import's report (bounded waits, no sleeps).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from cairn.server.cli.watch import Headless
from cairn.server.watch import files as watch
from cairn.server.watch.core import Refused, Seen
from cairn.server.watch.files import FileWatcher

from tests.support.live import FIXTURE_TURNS, append, start_session, turn_lines

pytestmark = pytest.mark.asyncio

WAIT = 60.0


class Run:
    def __init__(self, ws: Path, roots: list[str], *, polling: bool) -> None:
        self.seen: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.lines: list[str] = []
        self.watch = Headless(str(ws), roots, {"sealIdleMinutes": 20.0}, polling=polling, say=self.lines.append,
                              observe=lambda kind, detail: self.seen.put_nowait((kind, detail)))
        self.task = asyncio.ensure_future(self.watch.run())

    async def next(self, kind: str) -> Any:
        while True:
            got, detail = await asyncio.wait_for(self.seen.get(), WAIT)
            if got == kind:
                return detail

    async def next_any(self) -> tuple[str, Any]:
        """The next import result or ignored path, whichever comes first."""
        return await asyncio.wait_for(self.seen.get(), WAIT)

    async def stop(self) -> None:
        self.watch.stop()
        await asyncio.wait_for(self.task, WAIT)


@pytest.mark.parametrize("polling", [False, True], ids=["native", "polling"])
async def test_appended_turns_are_captured_and_a_half_written_line_only_once_complete(
        workspace: Path, tmp_path: Path, polling: bool) -> None:
    live = start_session(tmp_path / "store" / "project" / "session.jsonl")
    run = Run(workspace, [str(tmp_path / "store")], polling=polling)
    try:
        first = await run.next("import")
        assert first.captured == FIXTURE_TURNS and first.failed == ()
        append(live, turn_lines(1))  # its prompt also completes the turn the fixture ended on
        assert (await run.next("import")).captured == 2
        whole = turn_lines(2)
        cut = whole.index("\n") + 1 + 40  # the prompt, then the answer's line cut short
        append(live, whole[:cut])
        assert (await run.next("import")).captured == 0  # a half-written last line is no turn
        append(live, whole[cut:])
        assert (await run.next("import")).captured == 1
        assert run.watch.totals == {"batches": 3, "captured": FIXTURE_TURNS + 3, "sealed": 0}
        assert [line.split(" ", 1)[1] for line in run.lines] == [
            f"captured {FIXTURE_TURNS} turn(s) from 1 file(s)", "captured 2 turn(s) from 1 file(s)",
            "captured 1 turn(s) from 1 file(s)"]
    finally:
        await run.stop()


async def test_a_file_replaced_by_a_symlink_is_ignored_with_a_fixed_code(workspace: Path, tmp_path: Path) -> None:
    live = start_session(tmp_path / "store" / "session.jsonl")
    elsewhere = start_session(tmp_path / "elsewhere" / "other.jsonl")
    append(elsewhere, turn_lines(1))
    run = Run(workspace, [str(tmp_path / "store")], polling=False)
    try:
        assert (await run.next("import")).captured == FIXTURE_TURNS
        link = tmp_path / "store" / "link.tmp"
        os.symlink(elsewhere, link)
        os.replace(link, live)  # the session file is now a symlink to another file
        ignored = await run.next("ignored")
        assert (ignored.path, ignored.code) == (str(live), "E_PATH_SYMLINK")
        assert run.watch.totals["captured"] == FIXTURE_TURNS  # nothing read through the link
    finally:
        await run.stop()


async def test_a_symlinked_folder_inside_a_watched_folder_is_not_entered(
        workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The native watcher follows links into a linked folder and names the files there: they are refused
    (``E_PATH_SYMLINK``), never imported."""
    import watchfiles.main

    armed = asyncio.Event()
    real_notify = watchfiles.main.RustNotify

    def arming(*args: Any, **kwargs: Any) -> Any:
        notify = real_notify(*args, **kwargs)  # the kernel watches exist once it returns
        armed.set()
        return notify

    monkeypatch.setattr(watchfiles.main, "RustNotify", arming)
    monkeypatch.setattr(watch, "GAP_SECONDS", 0.0)
    project = tmp_path / "store" / "project"
    start_session(project / "session.jsonl")
    elsewhere = start_session(tmp_path / "elsewhere" / "session.jsonl")
    os.symlink(tmp_path / "elsewhere", project / "linked")
    run = Run(workspace, [str(project)], polling=False)
    rescan, full_scans, gap_done = run.watch.watcher.rescan, [0], asyncio.Event()

    async def counted(only: set[str] | None = None) -> bool:
        changed = await rescan(only)
        full_scans[0] += only is None
        if full_scans[0] >= 2:  # the first scan, then the one once the native watches are armed
            gap_done.set()
        return changed

    run.watch.watcher.rescan = counted  # type: ignore[method-assign]
    try:
        assert (await run.next("import")).captured == FIXTURE_TURNS
        await asyncio.wait_for(armed.wait(), WAIT)
        await asyncio.wait_for(gap_done.wait(), WAIT)
        append(elsewhere, turn_lines(1))  # reported by the native watcher as project/linked/session.jsonl
        kind, detail = await run.next_any()
        assert kind == "ignored", detail
        assert (detail.path, detail.code) == (str(project / "linked" / "session.jsonl"), "E_PATH_SYMLINK")
        assert run.watch.totals["captured"] == FIXTURE_TURNS
    finally:
        await run.stop()


@pytest.mark.parametrize("swap", ["file", "folder"])
async def test_a_session_swapped_for_a_link_after_the_watcher_looked_is_not_read(
        workspace: Path, tmp_path: Path, swap: str) -> None:
    """The watcher saw a regular file; before the import opens it, it (or its folder) becomes a link to
    another session: the import refuses it (``E_PATH_SYMLINK``) and reads nothing through the link."""
    project = tmp_path / "store" / "project"
    live = start_session(project / "session.jsonl")
    elsewhere = start_session(tmp_path / "elsewhere" / "session.jsonl")
    append(elsewhere, turn_lines(1))
    run = Run(workspace, [str(tmp_path / "store")], polling=True)
    deliver = run.watch.watcher.deliver
    swapped: list[str] = []

    def look_then_swap(events: list[Any]) -> None:
        if not swapped and any(isinstance(e, Seen) and e.path == str(live) for e in events):
            swapped.append(swap)
            if swap == "file":
                os.symlink(elsewhere, project / "link.tmp")
                os.replace(project / "link.tmp", live)
            else:
                os.rename(project, project.with_name("project.moved"))
                os.symlink(tmp_path / "elsewhere", project)
        deliver(events)

    run.watch.watcher.deliver = look_then_swap
    try:
        first = await run.next("import")
        assert swapped == [swap]
        assert first.captured == 0 and [(f.file, f.code) for f in first.failed or ()] == [("session.jsonl", "E_PATH_SYMLINK")]
        assert run.watch.totals["captured"] == 0
    finally:
        await run.stop()


async def test_an_idle_watcher_delivers_nothing(tmp_path: Path) -> None:
    """Rescans of unchanged files deliver no event (the core is not even called)."""
    start_session(tmp_path / "store" / "a.jsonl")
    (tmp_path / "store" / "notes.md").write_text("not a session\n")
    delivered: list[list[Any]] = []
    watcher = FileWatcher({"ws": [str(tmp_path / "store"), str(tmp_path / "store" / "notes.md")]},
                          delivered.append, polling=True)
    assert await watcher.rescan() is True
    assert sorted(type(e).__name__ for e in delivered[0]) == ["Refused", "Seen"]
    assert [e.code for e in delivered[0] if isinstance(e, Refused)] == ["E_IMPORT_UNKNOWN_FORMAT"]
    assert await watcher.rescan() is False and len(delivered) == 1
    assert all(isinstance(e, Seen) or isinstance(e, Refused) for e in delivered[0])


async def test_without_inotify_the_watcher_polls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The native watcher cannot start (watch limit reached): a change is still seen, by polling."""
    import watchfiles

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OSError(28, "inotify watch limit reached")

    monkeypatch.setattr(watchfiles, "awatch", refuse)
    live = start_session(tmp_path / "store" / "a.jsonl")
    got: asyncio.Queue[list[Any]] = asyncio.Queue()
    watcher = FileWatcher({"ws": [str(tmp_path / "store")]}, got.put_nowait)
    task = asyncio.ensure_future(watcher.run())
    try:
        assert [type(e).__name__ for e in await asyncio.wait_for(got.get(), WAIT)] == ["Seen"]
        append(live, turn_lines(1))
        (grown,) = await asyncio.wait_for(got.get(), WAIT)
        assert isinstance(grown, Seen) and grown.stamp.size == live.stat().st_size
        assert watcher.mode == "polling"
    finally:
        watcher.stop()
        await asyncio.wait_for(task, WAIT)


async def test_polling_is_forced_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAIRN_WATCH_POLL", "1")
    assert FileWatcher({}, lambda events: None).polling is True
    monkeypatch.delenv("CAIRN_WATCH_POLL")
    assert FileWatcher({}, lambda events: None).polling is False


def test_a_fifo_or_device_named_explicitly_is_not_regular_not_of_an_unknown_format(tmp_path: Path) -> None:
    """`cairn watch FIFO` said E_IMPORT_UNKNOWN_FORMAT (whose advice, pass --format, watch has no way to follow)
    where `cairn import FIFO` and a FIFO in a watched folder say the path is not a regular file."""
    from cairn.server.watch.files import scan

    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "notes.md").write_text("not a session\n")
    (tmp_path / "link").symlink_to(tmp_path / "notes.md")
    def codes(path: str) -> list[str]:
        return [e.code if isinstance(e, Refused) else type(e).__name__ for e in scan("ws", path)]

    assert codes(str(tmp_path / "fifo")) == ["E_PATH_NOT_REGULAR"]
    assert codes("/dev/null") == ["E_PATH_NOT_REGULAR"]
    assert codes(str(tmp_path / "link")) == ["E_PATH_SYMLINK"]
    assert codes(str(tmp_path / "notes.md")) == ["E_IMPORT_UNKNOWN_FORMAT"]
