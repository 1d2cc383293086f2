"""Batch continuation (more=True), explicit drain around active turns, and shutdown."""

from __future__ import annotations

from cairn.server.scheduler.events import Drain, Enqueue, Notify, Shutdown, TurnActive

from .helpers import Clocked, cancels, only_start, started, starts, timers


def test_more_requeues_at_the_back_of_its_workspace_queue() -> None:
    h = Clocked()
    clean = only_start(h.at(0, Enqueue("/a", "cleanup"))).job_id
    h.send(Enqueue("/a", "process"))
    # the batch limit was reached: process (queued meanwhile) goes first, then the next batch
    assert started(h.finish(1, clean, more=True)) == [("/a", "process")]
    proc = h.running()[0]
    nxt = only_start(h.finish(2, proc))
    assert (nxt.job_id, nxt.kind) == (clean, "cleanup")  # same job id, next batch


def test_cleanup_never_feeds_itself_without_a_batch_limit() -> None:
    h = Clocked()
    clean = only_start(h.at(0, Enqueue("/a", "cleanup"))).job_id
    done = h.finish(1, clean)  # a shorter batch: stop
    assert starts(done) == [] and h.c.store.jobs == ()
    quiet = []
    for t in range(2, 3700, 5):
        quiet += h.tick(t)
    assert starts(quiet) == [] and [t for t in timers(quiet) if t is not None] == []


def test_a_failed_batch_is_a_failure_even_if_it_asks_for_more() -> None:
    h = Clocked()
    clean = only_start(h.at(0, Enqueue("/a", "cleanup"))).job_id
    assert starts(h.finish(1, clean, "failed", "E_IO_FAILED", more=True)) == []
    assert (h.job(clean).state, h.job(clean).attempts) == ("retry-waiting", 1)


def test_more_starts_a_fresh_attempt_budget() -> None:
    h = Clocked()
    job = only_start(h.at(0, Drain("/a"))).job_id
    h.finish(1, job, "failed", "E_PROVIDER_FAILED")
    h.finish(32, only_start(h.tick(31)).job_id, "failed", "E_PROVIDER_FAILED")
    assert h.job(job).attempts == 2
    again = h.finish(153, only_start(h.tick(152)).job_id, more=True)
    assert only_start(again).job_id == job  # the next batch starts at once
    assert h.job(job).attempts == 0


def test_drain_runs_batches_until_nothing_is_left_and_waits_for_active_turns() -> None:
    h = Clocked()
    h.at(0, TurnActive("/a", True))
    assert starts(h.send(Drain("/a"))) == []  # waits for the turn
    # other kinds in the same workspace may run meanwhile
    proc = only_start(h.at(1, Enqueue("/a", "process")))
    assert proc.kind == "process"
    assert starts(h.finish(2, proc.job_id)) == []
    assert started(h.at(3, Notify("/b", ("process",)))) == [("/b", "process")]  # and elsewhere
    drain = only_start(h.at(5, TurnActive("/a", False)))
    assert drain.kind == "drain"

    # a turn starts mid-batch: the running batch finishes, the next one waits
    h.at(6, TurnActive("/a", True))
    assert starts(h.finish(7, drain.job_id, more=True)) == []
    assert only_start(h.at(8, TurnActive("/a", False))).job_id == drain.job_id
    assert starts(h.finish(9, drain.job_id, more=True)) != []
    h.finish(10, drain.job_id)  # nothing left
    assert h.c.job(drain.job_id) is None


def test_drain_yields_to_queued_work_between_batches() -> None:
    h = Clocked()
    drain = only_start(h.at(0, Drain("/a"))).job_id
    h.send(Enqueue("/a", "review"))
    assert started(h.finish(1, drain, more=True)) == [("/a", "review")]


def test_shutdown_starts_nothing_and_cancels_at_the_deadline_as_a_failure() -> None:
    h = Clocked()
    job = only_start(h.at(0, Enqueue("/a", "process"))).job_id
    h.send(Enqueue("/b", "review"))
    h.send(Enqueue("/c", "review"))
    other = h.running()[1]
    after = h.at(10, Shutdown())
    after += h.at(11, Enqueue("/d", "process"))
    after += h.at(11, Notify("/e", ("process",)))
    after += h.finish(12, other)  # a finishing worker frees a slot, but nothing starts
    for t in range(13, 120):
        after += h.tick(t)
    assert starts(after) == [] and cancels(after) == []
    assert {j.workspace for j in h.c.store.jobs} == {"/a", "/c"}  # the rest stays durable
    at_deadline = h.tick(120)
    assert [(c.job_id, c.reason) for c in cancels(at_deadline)] == [(job, "deadline")]
    assert timers(at_deadline) == [None]  # nothing left to wake for
    end = h.finish(121, job, "cancelled")
    assert starts(end) == [] and h.c.next_wakeup() is None
    assert (h.job(job).state, h.job(job).attempts) == ("retry-waiting", 1)


def test_a_shutdown_grace_cancellation_is_an_interruption_not_an_attempt() -> None:
    h = Clocked()
    job = only_start(h.at(0, Enqueue("/a", "process"))).job_id
    assert timers(h.at(10, Shutdown(grace=5.0))) == [15.0]
    assert cancels(h.tick(14.9)) == []
    assert [(c.job_id, c.reason) for c in cancels(h.tick(15))] == [(job, "shutdown")]
    h.finish(16, job, "cancelled")
    assert (h.job(job).state, h.job(job).attempts) == ("idle", 0)
