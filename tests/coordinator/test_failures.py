"""Only the coordinator counts failures and chooses what follows."""

from __future__ import annotations

import pytest
from cairn.protocol.codec import encode
from cairn.protocol.errors import CairnError
from cairn.server.scheduler.events import CoordinatorConfig, Enqueue, Notify, Retry

from .helpers import Clocked, cancels, only_start, reports, started, starts, timers


def test_backoff_is_30_then_120_seconds_then_exhausted_and_reported_once() -> None:
    h = Clocked()
    job = only_start(h.at(0, Enqueue("/a", "process"))).job_id

    actions = h.finish(5, job, "failed", "E_PROVIDER_FAILED")
    rec = h.job(job)
    assert (rec.state, rec.attempts, rec.not_before, rec.last_error) == (
        "retry-waiting", 1, 35.0, "E_PROVIDER_FAILED",
    )
    assert timers(actions) == [35.0]
    assert starts(h.tick(34.9)) == []
    assert only_start(h.tick(35)).job_id == job

    actions = h.finish(40, job, "failed", "E_PROVIDER_TIMEOUT")
    assert (h.job(job).attempts, h.job(job).not_before) == (2, 160.0)
    assert timers(actions) == [160.0]
    assert starts(h.tick(159.99)) == []
    assert only_start(h.tick(160)).job_id == job

    actions = h.finish(161, job, "failed", "E_PROVIDER_FAILED")
    assert h.job(job).state == "exhausted"
    assert h.job(job).attempts == 3
    assert [(r.kind, r.job_id, r.code) for r in reports(actions)] == [("exhausted", job, "E_PROVIDER_FAILED")]
    assert timers(actions) == [None]

    # waits for explicit retry: no automatic start, no second report, and an
    # identical notification coalesces into it instead of queueing a twin
    later = []
    for t in range(162, 4000, 13):
        later += h.tick(t)
    later += h.at(4000, Notify("/a", ("process",)))
    assert starts(later) == [] and reports(later) == []
    assert [j.id for j in h.c.store.jobs] == [job]

    again = only_start(h.at(4001, Retry(job)))
    assert again.job_id == job and h.job(job).attempts == 0


def test_busy_waits_the_minimum_spacing_without_consuming_an_attempt() -> None:
    h = Clocked()
    job = only_start(h.at(0, Enqueue("/a", "cleanup"))).job_id
    for round_ in range(5):  # more busy replies than the attempt budget
        t0 = round_ * 100.0 + 1
        h.finish(t0, job, "busy", "E_CLAIM_BUSY")
        rec = h.job(job)
        assert (rec.state, rec.attempts, rec.not_before) == ("retry-waiting", 0, t0 + 30)
        assert starts(h.tick(t0 + 29)) == []
        assert only_start(h.tick(t0 + 30)).job_id == job
    assert h.job(job).state == "running"


def test_retry_delays_below_thirty_seconds_are_refused() -> None:
    with pytest.raises(CairnError) as err:
        CoordinatorConfig(retry_delays=(5.0, 120.0))
    assert err.value.code == "E_CONFIG_INVALID"
    with pytest.raises(CairnError):
        CoordinatorConfig(busy_delay=1.0)
    with pytest.raises(CairnError):
        CoordinatorConfig(max_workers=0)


def test_free_text_never_enters_the_store_as_an_error() -> None:
    h = Clocked()
    job = only_start(h.at(0, Enqueue("/a", "process"))).job_id
    h.finish(1, job, "failed", "provider said: here is the private prompt")
    assert h.job(job).last_error == "E_WORKER_BAD_RESPONSE"
    assert b"private prompt" not in encode(h.c.store)


def test_a_deadline_cancellation_is_a_failed_attempt_and_keeps_the_workspace_busy() -> None:
    h = Clocked()
    job = only_start(h.at(0, Enqueue("/a", "process"))).job_id
    h.send(Enqueue("/a", "review"))
    actions = h.tick(120)
    assert [(c.job_id, c.reason) for c in cancels(actions)] == [(job, "deadline")]
    # until the worker has exited nothing else starts in /a, and no second cancel is sent
    assert starts(actions) == []
    assert cancels(h.tick(130)) == [] and starts(h.tick(131)) == []
    h.finish(132, job, "cancelled", "E_CANCELLED")
    rec = h.job(job)
    assert (rec.state, rec.attempts, rec.last_error) == ("retry-waiting", 1, "E_WORKER_TIMEOUT")


def test_only_the_coordinator_chooses_a_failures_follow_up_for_unknown_jobs() -> None:
    h = Clocked()
    with pytest.raises(CairnError) as err:
        h.finish(0, "job-404", "failed")
    assert err.value.code == "E_WORKER_UNKNOWN_JOB"
    assert started(h.send(Enqueue("/a", "process"))) == [("/a", "process")]
