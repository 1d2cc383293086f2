"""The watch core's rules with a fake clock (no files, no sleeps)."""

from __future__ import annotations

from typing import Any

from cairn.server.watch.core import (
    Busy,
    Ignored,
    Import,
    Imported,
    Refused,
    Seal,
    SealIdle,
    Seen,
    Stamp,
    Tick,
    Vanished,
    WatchCore,
)
from hypothesis import given
from hypothesis import strategies as st

WS = "/ws"


def seen(path: str, size: int, inode: int = 1) -> Seen:
    return Seen(WS, path, Stamp(size, size * 10, inode))


def test_a_first_change_is_imported_at_once_and_an_unchanged_stat_does_nothing() -> None:
    core = WatchCore(window=1.0, seal_idle=600.0)
    assert core.handle(seen("/a.jsonl", 10), 0.0) == [Import(WS, ("/a.jsonl",))]
    assert core.handle(Imported(WS, ("/a.jsonl",)), 0.2) == []
    assert core.handle(seen("/a.jsonl", 10), 0.5) == []  # same stamp: no change
    assert core.handle(Tick(), 0.6) == []


def test_changes_during_an_import_and_its_window_make_one_batch() -> None:
    core = WatchCore(window=1.0, seal_idle=600.0)
    core.handle(seen("/a.jsonl", 10), 0.0)
    assert core.handle(seen("/b.jsonl", 5), 0.1) == []  # waits for the running import
    assert core.handle(seen("/a.jsonl", 20), 0.2) == []
    assert core.handle(Imported(WS, ("/a.jsonl",)), 0.3) == []  # within the window after it
    assert core.next_wakeup() == 1.3
    assert core.handle(seen("/c.jsonl", 5), 0.9) == []
    assert core.handle(Tick(), 1.3) == [Import(WS, ("/a.jsonl", "/b.jsonl", "/c.jsonl"))]
    assert core.next_wakeup() is None  # running: its report is the next opportunity


def test_a_grown_file_is_imported_again_and_a_replaced_one_too() -> None:
    core = WatchCore(window=1.0, seal_idle=600.0)
    core.handle(seen("/a.jsonl", 10), 0.0)
    core.handle(Imported(WS, ("/a.jsonl",)), 0.1)
    assert core.handle(seen("/a.jsonl", 10, inode=2), 5.0) == [Import(WS, ("/a.jsonl",))]  # new inode


def test_idle_seal_once_per_quiet_period_with_a_fake_clock() -> None:
    core = WatchCore(window=1.0, seal_idle=600.0)
    assert core.next_wakeup() is None  # nothing seen: nothing to wait for
    core.handle(seen("/a.jsonl", 10), 100.0)
    assert core.next_wakeup() is None  # an import is running
    core.handle(Imported(WS, ("/a.jsonl",)), 100.5)
    assert core.next_wakeup() == 700.0
    assert core.handle(Tick(), 699.0) == []
    assert core.handle(Tick(), 700.0) == [SealIdle(WS, 600.0, ("/a.jsonl",))]  # read again as sealed
    assert core.next_wakeup() is None and core.handle(Tick(), 5000.0) == []  # quiet: sealed once
    core.handle(seen("/b.jsonl", 30), 6000.0)
    core.handle(Imported(WS, ("/b.jsonl",)), 6000.1)
    assert core.handle(Tick(), 6600.0) == [SealIdle(WS, 600.0, ("/b.jsonl",))]  # a new quiet period, its files


def test_seal_idle_is_per_group() -> None:
    core = WatchCore(window=1.0, seal_idle=600.0)
    core.configure(WS, seal_idle=60.0)
    core.handle(seen("/a.jsonl", 10), 0.0)
    core.handle(Imported(WS, ("/a.jsonl",)), 0.0)
    assert core.handle(Tick(), 60.0) == [SealIdle(WS, 60.0, ("/a.jsonl",))]


def test_the_formats_own_session_end_seals_that_session() -> None:
    core = WatchCore()
    core.handle(seen("/a.jsonl", 10), 0.0)
    assert core.handle(Imported(WS, ("/a.jsonl",), ended=("s1", "s1")), 0.1) == [Seal(WS, "s1", "session-end")]


def test_a_path_that_is_not_a_regular_file_is_ignored_once_with_its_code() -> None:
    core = WatchCore()
    core.handle(seen("/a.jsonl", 10), 0.0)
    core.handle(Imported(WS, ("/a.jsonl",)), 0.1)
    assert core.handle(Refused(WS, "/a.jsonl", "E_PATH_NOT_REGULAR"), 3.0) == [Ignored("/a.jsonl", "E_PATH_NOT_REGULAR")]
    assert core.handle(Refused(WS, "/a.jsonl", "E_PATH_NOT_REGULAR"), 4.0) == []
    assert core.known("/a.jsonl") is None
    assert core.handle(seen("/a.jsonl", 10), 5.0) == [Import(WS, ("/a.jsonl",))]  # regular again


def test_a_vanished_file_is_forgotten_and_not_imported() -> None:
    core = WatchCore()
    core.handle(seen("/a.jsonl", 10), 0.0)
    core.handle(seen("/b.jsonl", 10), 0.1)
    core.handle(Vanished("/b.jsonl"), 0.2)
    assert core.handle(Imported(WS, ("/a.jsonl",)), 0.3) == []
    assert core.handle(Tick(), 2.0) == []


def test_an_import_refused_busy_is_tried_again_without_a_change_and_nothing_is_sealed_before() -> None:
    """A watcher restarted after one was killed meets the dead one's claim (``E_CLAIM_BUSY`` until its
    deadline, 60 s). The file of an ended session never changes again: it was imported again only at its next
    change, and an idle seal in between could close the capture with part of the session's turns."""
    core = WatchCore(window=1.0, seal_idle=60.0, retry=2.0, retry_max=16.0)
    assert core.handle(seen("/a.jsonl", 10), 0.0) == [Import(WS, ("/a.jsonl",))]
    assert core.handle(Imported(WS, ("/a.jsonl",), busy=True), 0.5) == []
    assert core.next_wakeup() == 2.5  # the retry after the first back-off, no file change needed
    assert core.handle(Tick(), 2.4) == []
    now, waits = 2.5, []
    while True:  # refused again and again: the back-off doubles up to retry_max
        assert core.handle(Tick(), now) == [Import(WS, ("/a.jsonl",))]
        assert core.next_wakeup() is None  # running: its report is the next opportunity
        now += 0.5
        assert core.handle(Imported(WS, ("/a.jsonl",), busy=True), now) == []
        wake = core.next_wakeup()
        assert wake is not None
        waits.append(wake - now)
        if now < 60.0 < wake:
            assert core.handle(Tick(), 60.0) == []  # the idle seal is due, but waits for the import
        now = wake
        if now > 60.0:  # the dead holder's deadline has passed
            break
    assert waits == [4.0, 8.0, 16.0, 16.0, 16.0]
    assert core.handle(Tick(), now) == [Import(WS, ("/a.jsonl",))]
    # imported at last: the idle seal follows at once (quiet long enough), naming the file to read as sealed
    assert core.handle(Imported(WS, ("/a.jsonl",)), now + 0.5) == [SealIdle(WS, 60.0, ("/a.jsonl",))]
    assert core.next_wakeup() is None


def test_no_idle_seal_while_a_refused_import_waits_for_its_retry() -> None:
    """The group's quiet period ends while one of its files waits to be imported again: the idle seal (which
    closes every quiet capture of the workspace) waits for that import, then names both files."""
    core = WatchCore(window=1.0, seal_idle=3.0, retry=2.0, retry_max=16.0)
    assert core.handle(seen("/a.jsonl", 10), 0.0) == [Import(WS, ("/a.jsonl",))]
    assert core.handle(seen("/b.jsonl", 10), 0.2) == []
    assert core.handle(Imported(WS, ("/a.jsonl",)), 0.3) == []
    assert core.handle(Tick(), 1.3) == [Import(WS, ("/b.jsonl",))]
    assert core.handle(Imported(WS, ("/b.jsonl",), busy=True), 1.4) == []
    assert core.handle(Tick(), 3.4) == [Import(WS, ("/b.jsonl",))]  # the retry
    assert core.handle(Imported(WS, ("/b.jsonl",), busy=True), 3.5) == []
    assert core.next_wakeup() == 7.5  # the next retry; the quiet period ended at 3.2
    assert core.handle(Tick(), 5.0) == []  # no idle seal while b waits
    assert core.handle(Tick(), 7.5) == [Import(WS, ("/b.jsonl",))]
    assert core.handle(Imported(WS, ("/b.jsonl",)), 7.6) == [SealIdle(WS, 3.0, ("/a.jsonl", "/b.jsonl"))]


def test_a_seal_refused_busy_is_issued_again_after_the_back_off() -> None:
    core = WatchCore(window=1.0, seal_idle=60.0, retry=2.0, retry_max=16.0)
    core.handle(seen("/a.jsonl", 10), 0.0)
    core.handle(Imported(WS, ("/a.jsonl",)), 0.1)
    idle = SealIdle(WS, 60.0, ("/a.jsonl",))
    assert core.handle(Tick(), 60.0) == [idle]
    assert core.handle(Busy(idle), 60.5) == []
    assert core.next_wakeup() == 62.5
    assert core.handle(Tick(), 62.5) == [idle]  # the same files, read again as sealed
    assert core.next_wakeup() is None  # done once it is not refused again
    end = Seal(WS, "s1", "session-end")
    assert core.handle(Busy(end), 63.0) == []
    assert core.handle(Tick(), 67.0) == [end]  # the second refusal in a row waits 4 s


def test_a_success_resets_the_back_off_and_a_vanished_file_is_not_retried() -> None:
    core = WatchCore(window=1.0, seal_idle=600.0, retry=2.0, retry_max=16.0)
    core.handle(seen("/a.jsonl", 10), 0.0)
    core.handle(Imported(WS, ("/a.jsonl",), busy=True), 0.5)
    assert core.handle(Tick(), 2.5) == [Import(WS, ("/a.jsonl",))]
    core.handle(Imported(WS, ("/a.jsonl",)), 3.0)
    assert core.handle(seen("/a.jsonl", 20), 10.0) == [Import(WS, ("/a.jsonl",))]
    core.handle(Imported(WS, ("/a.jsonl",), busy=True), 10.5)
    assert core.next_wakeup() == 12.5  # 2 s again, not 4
    core.handle(Vanished("/a.jsonl"), 11.0)
    assert core.handle(Tick(), 12.5) == []


@given(st.lists(st.tuples(st.sampled_from(["seen", "done", "tick", "gone"]), st.integers(0, 3),
                          st.integers(0, 2), st.floats(0.0, 900.0)), max_size=40))
def test_properties_batching_window_and_quiet(steps: list[tuple[str, int, int, float]]) -> None:
    """At most one import runs per group; imports are window-spaced; every changed file is
    imported; the timer is never in the past; equal stats change nothing."""
    core = WatchCore(window=1.0, seal_idle=600.0)
    now, running, last_end = 0.0, None, None
    changed: set[str] = set()
    for kind, n, size, dt in steps:
        now += dt
        wake = core.next_wakeup()
        if wake is not None and wake <= now:  # the adapter's timer fires first
            out = core.handle(Tick(), wake)
            for a in out:
                if isinstance(a, Import):
                    assert running is None
                    running = a.paths
                    changed -= set(a.paths)
        path = f"/f{n}.jsonl"
        if kind == "seen":
            before = core.known(path)
            out = core.handle(seen(path, size), now)
            if before == seen(path, size).stamp:
                assert out == []
            elif not out:
                changed.add(path)
        elif kind == "done" and running is not None:
            out = core.handle(Imported(WS, running), now)
            running, last_end = None, now
        elif kind == "gone":
            out = core.handle(Vanished(path), now)
            changed.discard(path)
        else:
            out = core.handle(Tick(), now)
        for a in out:
            if isinstance(a, Import):
                assert running is None and (last_end is None or now >= last_end + 1.0)
                running = a.paths
                changed -= set(a.paths)
        wake = core.next_wakeup()
        assert wake is None or wake > now  # never a timer in the past (no busy loop)
    if running is not None:
        core.handle(Imported(WS, running), now)
    if changed:
        out = core.handle(Tick(), now + 1.0)
        assert set().union(*(a.paths for a in out if isinstance(a, Import))) >= changed


@given(st.lists(st.tuples(st.sampled_from(["seen", "done", "busy", "tick"]), st.integers(0, 3),
                          st.integers(0, 2), st.floats(0.0, 100.0)), max_size=40))
def test_properties_refused_imports_are_retried_and_hold_the_seals(steps: list[tuple[str, int, int, float]]) -> None:
    """Whatever the order of changes, refusals (``busy``) and imports: a refused file is imported again with no
    change of it, within ``retry_max`` of its refusal, and no idle seal comes while a refused file has not been
    imported since; the timer is never in the past."""
    core = WatchCore(window=1.0, seal_idle=30.0, retry=2.0, retry_max=16.0)
    now, running = 0.0, None
    owed: set[str] = set()  # files whose last import was refused

    def act(out: list[Any]) -> None:
        nonlocal running
        for a in out:
            if isinstance(a, Import):
                assert running is None
                running = a.paths
            elif isinstance(a, SealIdle):
                assert not owed, f"sealed while {sorted(owed)} wait to be imported"

    def report(busy: bool) -> None:
        nonlocal running
        assert running is not None
        paths, running = running, None
        owed.update(paths) if busy else owed.difference_update(paths)
        act(core.handle(Imported(WS, paths, busy=busy), now))
        if busy:
            wake = core.next_wakeup()
            assert wake is not None and now < wake <= now + 16.0

    for kind, n, size, dt in steps:
        end = now + dt
        while (wake := core.next_wakeup()) is not None and wake <= end:  # the adapter's timer fires first
            now = wake
            act(core.handle(Tick(), now))
            assert core.next_wakeup() != now  # never a timer in the past (no busy loop)
        now = end
        if kind == "seen":
            act(core.handle(seen(f"/f{n}.jsonl", size), now))
        elif kind in ("done", "busy") and running is not None:
            report(kind == "busy")
        else:
            act(core.handle(Tick(), now))
    for _ in range(200):  # no more changes, and no more refusals: every owed file is imported again
        if running is not None:
            report(False)
        wake = core.next_wakeup()
        if wake is None:
            break
        now = max(now, wake)
        act(core.handle(Tick(), now))
    assert running is None and not owed
