"""The watch core's rules with a fake clock (no files, no sleeps)."""

from __future__ import annotations

from cairn.server.watch.core import (
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
