"""Notification coalescing, saved-deadline preemption, idle opportunities and quiet."""

from __future__ import annotations

from cairn.protocol.jobs import Job, JobState, JobStore
from cairn.server.scheduler.events import (
    Dismiss,
    Enqueue,
    Idle,
    Notify,
    Persist,
    SetTimer,
    StartWorker,
    Tick,
    TurnActive,
)

from .helpers import Clocked, only_start, reports, started, starts, timers


def test_first_notification_starts_at_once() -> None:
    h = Clocked()
    assert started(h.at(0, Notify("/a", ("process",)))) == [("/a", "process")]


def test_notifications_after_a_pass_coalesce_for_one_second() -> None:
    h = Clocked()
    first = only_start(h.at(0, Notify("/a", ("process",))))
    done = h.finish(10, first.job_id)
    assert starts(done) == [] and timers(done) == [None]  # the window alone schedules nothing

    burst = h.at(10.2, Notify("/a", ("process",)))
    assert starts(burst) == [] and timers(burst) == [11.0]
    burst += h.at(10.5, Notify("/a", ("process", "review")))
    burst += h.at(10.9, Notify("/a", ("review",)))
    burst += h.tick(10.99)
    assert starts(burst) == []
    assert timers(burst) == [11.0]  # asked once, never pushed back
    assert [j.kind for j in h.c.store.jobs] == ["process", "review"]  # duplicates coalesced

    proc = only_start(h.tick(11.0))
    assert proc.kind == "process"
    # the burst is one pass: the review started with it runs right after, no second window
    assert started(h.finish(11.4, proc.job_id)) == [("/a", "review")]


def test_a_notification_stream_costs_at_most_one_pass_per_window() -> None:
    h = Clocked()
    t, passes, running = 0.0, 0, None
    while t < 60.0:
        actions = h.at(t, Notify("/a", ("process",)))
        if t >= 0.3 and running is not None and t - running[1] >= 0.3:
            actions += h.finish(t, running[0])
            running = None
        for s in starts(actions):
            passes += 1
            running = (s.job_id, t)
        t = round(t + 0.1, 1)
    # each pass takes 0.3 s; without coalescing a notification every 0.1 s would start
    # about 150 passes in 60 s. With a 1 s window after each pass: at most 60 / 1.3 + 1,
    # and the stream is still served (not starved) once per window.
    assert 35 <= passes <= 47, passes


def test_other_workspaces_are_not_held_by_a_window_elsewhere() -> None:
    h = Clocked()
    a = only_start(h.at(0, Notify("/a", ("process",))))
    h.finish(1, a.job_id)
    assert started(h.at(1.1, Notify("/b", ("process",)))) == [("/b", "process")]
    assert started(h.at(1.2, Notify("/a", ("process",)))) == []


def test_notifications_while_a_pass_runs_wait_for_its_window() -> None:
    h = Clocked()
    a = only_start(h.at(0, Notify("/a", ("process",))))
    h.at(0.5, Notify("/a", ("review",)))
    done = h.finish(3, a.job_id)
    assert starts(done) == [] and timers(done) == [4.0]
    assert started(h.tick(4.0)) == [("/a", "review")]


def test_a_saved_deadline_earlier_than_the_window_preempts_it() -> None:
    saved = JobStore(
        jobs=(
            Job(id="job-1", workspace="/a", kind="recover", seq=1, state=JobState.IDLE, created=0, updated=0),
            Job(id="job-2", workspace="/a", kind="process", seq=2, state=JobState.RETRY_WAITING,
                attempts=1, not_before=100.5, last_error="E_PROVIDER_FAILED", created=0, updated=70.5),
        ),
        next_seq=3,
    )
    h = Clocked(store=saved, now=99.0)
    recover = only_start(h.tick(99.0))
    assert recover.job_id == "job-1"
    h.finish(100.0, recover.job_id)  # the window now runs to 101.0
    held = h.at(100.2, Notify("/a", ("review",)))
    assert starts(held) == []
    assert h.c.next_wakeup() == 100.5  # the saved deadline, not the window end
    proc = only_start(h.tick(100.5))
    assert proc.job_id == "job-2"
    # the deadline pass took the held notification with it: no wait for another window
    assert started(h.finish(100.6, proc.job_id)) == [("/a", "review")]


def _settle_with_history(h: Clocked) -> None:
    """Real work to completion, leaving an exhausted job and a dismissed one behind."""
    a = only_start(h.at(0, Notify("/a", ("process",))))
    h.send(Enqueue("/b", "review"))
    b = h.running()[1]
    h.finish(1, a.job_id, "failed", "E_RECORD_MALFORMED")  # attention at once
    h.finish(2, b, "failed", "E_PROVIDER_FAILED")
    for t in (32, 153):  # eligible 30 s after the first failure, 120 s after the second
        h.finish(t, only_start(h.tick(t)).job_id, "failed", "E_PROVIDER_FAILED")
    assert h.job(b).state == "exhausted"
    h.at(160, Dismiss(a.job_id))
    assert h.running() == [] and h.c.next_wakeup() is None


def test_quiet_for_an_hour_of_ticks_when_there_is_no_debt() -> None:
    h = Clocked()
    _settle_with_history(h)
    quiet = []
    t = 160.0
    while t <= 160.0 + 3600.0:
        quiet += h.tick(t)
        t += 0.5
    assert not any(isinstance(a, (StartWorker, Persist)) for a in quiet)
    assert [a for a in quiet if isinstance(a, SetTimer) and a.at is not None] == []
    assert reports(quiet) == []
    assert h.c.next_wakeup() is None


def test_an_idle_opportunity_is_offered_once_per_idle_period() -> None:
    h = Clocked()
    h.at(0, TurnActive("/a", True))
    h.at(1, TurnActive("/a", False))
    offer = h.at(100, Idle(600.0))
    assert started(offer) == [("/a", "process")]
    assert [j.kind for j in h.c.store.jobs] == ["process", "review", "cleanup"]
    t = 101.0
    while h.running():
        h.finish(t, h.running()[0])
        t += 1
    # the adapter repeating Idle in the same idle period, plus an hour of ticks: quiet
    later = []
    for t in range(110, 3800, 10):
        later += h.at(t, Idle(float(t)))
        later += h.at(t, Tick())
    assert starts(later) == [] and h.c.store.jobs == ()
    assert [a for a in later if isinstance(a, SetTimer) and a.at is not None] == []


def test_cleanup_is_offered_at_most_hourly_per_workspace() -> None:
    h = Clocked()
    h.at(0, TurnActive("/a", True))
    h.at(0, TurnActive("/a", False))

    def idle_kinds(now: float) -> list[str]:
        h.at(now, TurnActive("/a", True))  # activity opens a new idle period
        h.at(now, TurnActive("/a", False))
        h.at(now, Idle(300.0))
        kinds = []
        t = now
        while h.running():
            job = h.job(h.running()[0])
            kinds.append(job.kind)
            t += 1
            h.finish(t, job.id)
        return kinds

    assert idle_kinds(10) == ["process", "review", "cleanup"]
    assert idle_kinds(1800) == ["process", "review"]  # throttled
    assert idle_kinds(3610) == ["process", "review", "cleanup"]
    assert h.c.store.cleanup_offered == {"/a": 3610.0}
