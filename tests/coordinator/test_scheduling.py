"""Caps, queue order, no overtaking of delayed retries, attention blocks nothing, ticks."""

from __future__ import annotations

from cairn.server.scheduler.events import CoordinatorConfig, Enqueue, Tick

from .helpers import Clocked, only_start, started, starts, timers


def test_one_worker_per_workspace_and_a_global_cap_of_two() -> None:
    h = Clocked()
    z1 = only_start(h.at(0, Enqueue("/z", "process")))
    assert started(h.send(Enqueue("/z", "review"))) == []  # /z is busy
    b1 = only_start(h.send(Enqueue("/b", "process")))
    assert started(h.send(Enqueue("/c", "process"))) == []  # cap of two reached
    assert sorted(h.running()) == sorted([z1.job_id, b1.job_id])

    # the freed slot goes to the oldest waiting head: /z review (queued before /c), not the alphabetically first
    assert started(h.finish(1, z1.job_id)) == [("/z", "review")]
    assert started(h.finish(2, b1.job_id)) == [("/c", "process")]
    assert len(h.running()) == 2


def test_cap_is_configurable() -> None:
    h = Clocked(CoordinatorConfig(max_workers=3))
    for ws in ("/a", "/b", "/c", "/d"):
        h.send(Enqueue(ws, "process"))
    assert len(h.running()) == 3


def test_runnable_jobs_keep_queue_order_within_a_workspace() -> None:
    h = Clocked()
    first = only_start(h.at(0, Enqueue("/a", "recover")))
    h.send(Enqueue("/a", "process"))
    h.send(Enqueue("/a", "review"))
    h.send(Enqueue("/a", "cleanup"))
    order = [first.kind]
    job_id = first.job_id
    for t in range(1, 4):
        nxt = only_start(h.finish(t, job_id))
        order.append(nxt.kind)
        job_id = nxt.job_id
    assert order == ["recover", "process", "review", "cleanup"]


def test_a_delayed_retry_holds_back_its_workspace_but_not_others() -> None:
    h = Clocked()
    proc = only_start(h.at(0, Enqueue("/a", "process")))
    h.send(Enqueue("/a", "review"))
    # the failure makes process retry-waiting until 31; review must not overtake it
    assert started(h.finish(1, proc.job_id, "failed", "E_PROVIDER_FAILED")) == []
    assert h.job(proc.job_id).not_before == 31.0
    assert started(h.at(2, Enqueue("/b", "process"))) == [("/b", "process")]  # other workspaces run
    for t in (5, 10, 20, 30.9):
        assert started(h.tick(t)) == []
    retry = only_start(h.tick(31))
    assert (retry.job_id, retry.kind) == (proc.job_id, "process")
    assert started(h.finish(32, proc.job_id)) == [("/a", "review")]


def test_a_capture_may_overtake_a_delayed_retry_but_nothing_else_does() -> None:
    """Captures depend on no earlier job and hold an editor turn in memory: they must not wait 30-120 s."""
    h = Clocked()
    proc = only_start(h.at(0, Enqueue("/a", "process")))
    h.send(Enqueue("/a", "review"))
    h.send(Enqueue("/a", "capture", {"session": "s1", "turn": "t1"}))
    assert started(h.finish(1, proc.job_id, "failed", "E_PROVIDER_FAILED")) == [("/a", "capture")]
    cap = next(j for j in h.running())
    assert started(h.finish(2, cap)) == []  # the review still waits behind the delayed retry
    assert [k for _ws, k in started(h.tick(31))] == ["process"]


def test_exhausted_and_attention_jobs_are_not_runnable_and_block_nothing() -> None:
    h = Clocked(CoordinatorConfig(max_attempts=1))
    proc = only_start(h.at(0, Enqueue("/a", "process")))
    h.send(Enqueue("/a", "review"))
    h.send(Enqueue("/a", "recover"))
    # exhausted on its only attempt: the next /a job starts in the same step
    review = only_start(h.finish(1, proc.job_id, "failed", "E_PROVIDER_FAILED"))
    assert review.kind == "review"
    assert h.job(proc.job_id).state == "exhausted"
    # a failure retrying cannot fix goes to attention at once, and blocks nothing either
    recover = only_start(h.finish(2, review.job_id, "failed", "E_RECORD_MALFORMED"))
    assert recover.kind == "recover"
    assert h.job(review.job_id).state == "attention"
    h.finish(3, recover.job_id)
    for t in range(4, 600, 7):
        assert starts(h.tick(t)) == []
    assert h.c.snapshot(600)["counts"] == {
        "pending": 0, "running": 0, "retryWaiting": 0, "attention": 1, "exhausted": 1, "dismissed": 0,
    }


def test_ticks_during_execution_never_start_the_running_job_again() -> None:
    h = Clocked()
    proc = only_start(h.at(0, Enqueue("/a", "process")))
    h.send(Enqueue("/a", "review"))
    for t in (0, 0.5, 1, 30, 60, 119.9):
        assert starts(h.tick(t)) == []
        assert starts(h.at(t, Tick(at=t))) == []
    assert h.running() == [proc.job_id]


def test_completion_itself_schedules_the_next_opportunity() -> None:
    h = Clocked()
    proc = only_start(h.at(0, Enqueue("/a", "process")))
    h.send(Enqueue("/a", "review"))
    actions = h.finish(5, proc.job_id)
    assert started(actions) == [("/a", "review")]  # no timer round trip needed
    assert timers(actions) == [125.0]  # the only timer left is the new worker's deadline


def test_a_tick_without_timestamp_uses_now_not_an_old_saved_time() -> None:
    h = Clocked()
    proc = only_start(h.at(0, Enqueue("/a", "process")))
    h.finish(0, proc.job_id, "failed", "E_PROVIDER_FAILED")  # eligible again at 30
    # the coordinator last saw t=0; a bare tick at now=45 must use 45
    assert [s.job_id for s in starts(h.c.handle(Tick(), 45.0))] == [proc.job_id]


def test_an_explicit_tick_timestamp_is_honoured() -> None:
    h = Clocked()
    proc = only_start(h.at(0, Enqueue("/a", "process")))
    h.finish(0, proc.job_id, "failed", "E_PROVIDER_FAILED")
    assert starts(h.at(10, Tick(at=29.0))) == []
    assert [s.job_id for s in starts(h.at(10, Tick(at=30.0)))] == [proc.job_id]


def test_worker_deadline_is_the_per_kind_budget() -> None:
    h = Clocked(CoordinatorConfig(budgets={"review": 300.0}))
    assert only_start(h.at(10, Enqueue("/a", "process"))).deadline == 130.0
    assert only_start(h.at(11, Enqueue("/b", "review"))).deadline == 311.0
