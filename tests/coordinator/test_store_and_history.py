"""Restart normalisation, the strict durable store, history, snapshot and diagnostics."""

from __future__ import annotations

import json
from typing import Any

import pytest
from cairn.protocol.codec import decode, encode
from cairn.protocol.errors import CairnError
from cairn.protocol.jobs import Job, JobState, JobStore
from cairn.server.scheduler.coordinator import Coordinator
from cairn.server.scheduler.events import (
    ClearHistory,
    CoordinatorConfig,
    Discard,
    Dismiss,
    Enqueue,
    Restart,
    Retry,
    Tick,
)

from .helpers import Clocked, only_start, persists, reports, started, starts

DAY = 86400.0


def _job(n: int, ws: str, kind: str, state: JobState, **kw: Any) -> Job:
    fields: dict[str, Any] = {"created": 0.0, "updated": 0.0}
    fields.update(kw)
    return Job(id=f"job-{n}", workspace=ws, kind=kind, seq=n, state=state, **fields)


def test_restart_normalises_interrupted_jobs_and_keeps_everything_else() -> None:
    before = JobStore(
        jobs=(
            _job(1, "/a", "process", JobState.RUNNING, attempts=2, last_error="E_PROVIDER_FAILED"),
            _job(2, "/b", "review", JobState.RETRY_WAITING, attempts=1, not_before=500.0),
            _job(3, "/c", "process", JobState.EXHAUSTED, attempts=3, last_error="E_PROVIDER_FAILED"),
            _job(4, "/c", "recover", JobState.ATTENTION, attempts=1, last_error="E_CLAIM_CORRUPT"),
            _job(5, "/d", "cleanup", JobState.DISMISSED, attempts=3, updated=50.0,
                 checkpoint={"published": "x"}),
        ),
        next_seq=6,
        cleanup_offered={"/a": 10.0},
    )
    loaded = decode(encode(before), JobStore)  # through the strict codec, as the adapter does
    h = Clocked(store=loaded, now=100.0)
    actions = h.tick(100.0)

    # the interrupted job is idle again with its attempts intact, and it runs
    assert started(actions) == [("/a", "process")]
    assert h.job("job-1").attempts == 2
    # the retry deadline is kept: /b waits until 500
    assert h.job("job-2").state == "retry-waiting" and h.c.next_wakeup() == 220.0  # job-1's deadline
    assert starts(h.tick(499)) == []
    assert started(h.tick(500)) == [("/b", "review")]
    # attention and exhaustion are kept and reported once in this server session
    assert sorted((r.kind, r.job_id) for r in reports(actions)) == [("attention", "job-4"), ("exhausted", "job-3")]
    # dismissed history and its checkpoint are kept and never run
    assert h.job("job-5").state == "dismissed" and h.job("job-5").checkpoint == {"published": "x"}
    assert h.c.store.cleanup_offered == {"/a": 10.0}
    assert persists(actions)  # the normalisation itself was made durable


def test_an_interruption_alone_never_consumes_an_attempt() -> None:
    store = JobStore(jobs=(_job(1, "/a", "process", JobState.IDLE),), next_seq=2)
    for round_ in range(6):  # more crashes than the attempt budget
        c = Coordinator(store=store)
        actions = c.handle(Tick(), 1000.0 * round_)
        assert [s.job_id for s in starts(actions)] == ["job-1"]
        store = persists(actions)[-1].store  # what was durable when the server died
        assert store.jobs[0].state == "running"
    after = Coordinator(store=store)
    after.handle(Tick(), 9000.0)
    revived = after.job("job-1")
    assert revived is not None and revived.attempts == 0


def test_a_new_session_reports_exhaustion_again_but_once() -> None:
    store = JobStore(jobs=(_job(1, "/a", "process", JobState.EXHAUSTED, attempts=3),), next_seq=2)
    h = Clocked(store=store)
    assert len(reports(h.tick(1))) == 1
    assert reports(h.tick(2)) == []
    assert len(reports(h.at(3, Restart(store)))) == 1


def test_a_corrupt_store_is_refused_with_a_code() -> None:
    good = encode(JobStore(jobs=(_job(1, "/a", "process", JobState.IDLE),), next_seq=2))
    obj = json.loads(good)
    obj["jobs"][0]["state"] = "paused"
    with pytest.raises(CairnError) as err:
        decode(json.dumps(obj).encode(), JobStore)
    assert err.value.code == "E_RECORD_INVALID_FIELD"
    obj = json.loads(good)
    obj["jobs"][0]["payload"] = "x"
    with pytest.raises(CairnError) as err:
        decode(json.dumps(obj).encode(), JobStore)
    assert err.value.code == "E_RECORD_UNKNOWN_FIELD"
    with pytest.raises(CairnError) as err:
        decode(good[: len(good) // 2], JobStore)
    assert err.value.code == "E_RECORD_TRUNCATED"
    dup = JobStore(jobs=(_job(1, "/a", "process", JobState.IDLE), _job(1, "/b", "process", JobState.IDLE)))
    with pytest.raises(CairnError) as err:
        Coordinator(store=dup)
    assert err.value.code == "E_RECORD_INVALID_FIELD"


def test_dismissed_jobs_never_run_nor_count_and_are_not_revived_by_an_identical_enqueue() -> None:
    h = Clocked()
    job = only_start(h.at(0, Enqueue("/a", "process", {"capture": "c1"}))).job_id
    h.finish(1, job, "failed", "E_PROVIDER_FAILED", checkpoint={"published": "p1"})
    h.at(2, Dismiss(job))
    snap = h.c.snapshot(2)
    assert snap["counts"]["dismissed"] == 1
    assert snap["counts"]["pending"] == snap["counts"]["retryWaiting"] == snap["counts"]["attention"] == 0
    assert [row["id"] for row in snap["dismissed"]] == [job]
    assert snap["dismissed"][0]["checkpoint"] == {"published": "p1"}
    for t in range(3, 400, 10):
        assert starts(h.tick(t)) == []
    fresh = only_start(h.at(400, Enqueue("/a", "process", {"capture": "c1"})))
    assert fresh.job_id != job and h.job(job).state == "dismissed"


def test_retry_restores_a_dismissed_job_and_discard_removes_a_record() -> None:
    h = Clocked()
    job = only_start(h.at(0, Enqueue("/a", "review"))).job_id
    h.finish(1, job, "failed", "E_RECORD_MALFORMED")
    h.at(2, Dismiss(job))
    assert only_start(h.at(3, Retry(job))).job_id == job
    with pytest.raises(CairnError) as err:
        h.at(4, Dismiss(job))
    assert err.value.code == "E_JOB_STATE"  # running work is not dismissed under a worker
    with pytest.raises(CairnError) as err:
        h.at(4, Discard("job-999"))
    assert err.value.code == "E_NOT_FOUND"
    h.finish(5, job, "failed", "E_RECORD_MALFORMED")
    h.at(6, Discard(job))
    assert h.c.store.jobs == ()


def test_history_keeps_at_most_500_records() -> None:
    jobs = tuple(
        _job(n, f"/w{n}", "process", JobState.DISMISSED, updated=float(n)) for n in range(1, 502)
    )
    h = Clocked(store=JobStore(jobs=jobs, next_seq=502), now=1000.0)
    actions = h.tick(1000.0)  # startup prune
    kept = [j.id for j in h.c.store.jobs]
    assert len(kept) == 500 and "job-1" not in kept and "job-501" in kept
    assert persists(actions)
    # a dismissal prunes too: the new record stays, the oldest goes
    live = only_start(h.at(1001, Enqueue("/x", "process"))).job_id
    h.finish(1002, live, "failed", "E_RECORD_MALFORMED")
    h.at(1003, Dismiss(live))
    kept = [j.id for j in h.c.store.jobs]
    assert len(kept) == 500 and live in kept and "job-2" not in kept


def test_history_keeps_nothing_older_than_90_days() -> None:
    h = Clocked()
    job = only_start(h.at(0, Enqueue("/a", "process"))).job_id
    h.finish(1, job, "failed", "E_RECORD_MALFORMED")
    h.at(10, Dismiss(job))
    h.tick(10 + 90 * DAY)
    assert h.c.job(job) is not None  # exactly 90 days old is still kept
    h.tick(11 + 90 * DAY)
    assert h.c.job(job) is None


def test_clear_history_removes_only_dismissed_records() -> None:
    h = Clocked(CoordinatorConfig(max_attempts=1))
    a = only_start(h.at(0, Enqueue("/a", "process"))).job_id
    h.finish(1, a, "failed", "E_PROVIDER_FAILED")  # exhausted
    b = only_start(h.at(2, Enqueue("/b", "process"))).job_id
    h.finish(3, b, "failed", "E_PROVIDER_FAILED")
    h.at(4, Dismiss(b))
    h.at(5, ClearHistory())
    assert [j.id for j in h.c.store.jobs] == [a]


def test_snapshot_counts_every_state() -> None:
    h = Clocked(CoordinatorConfig(max_attempts=1))
    only_start(h.at(0, Enqueue("/a", "process")))
    h.send(Enqueue("/a", "review"))
    b = only_start(h.send(Enqueue("/b", "process"))).job_id
    h.finish(1, b, "busy")
    snap = h.c.snapshot(1)
    assert snap["counts"] == {
        "pending": 1, "running": 1, "retryWaiting": 1, "attention": 0, "exhausted": 0, "dismissed": 0,
    }
    waiting = {row["kind"] + row["workspace"]: row["waiting"] for row in snap["jobs"]}
    assert waiting == {"process/a": None, "review/a": "queued", "process/b": "retry-delay"}


def test_the_diagnostic_report_carries_no_argument_or_checkpoint_values() -> None:
    h = Clocked()
    secret_arg = "capture-of-private-prompt-text"
    secret_checkpoint = "memory-body-excerpt"
    job = only_start(h.at(0, Enqueue("/a", "process", {"capture": secret_arg}))).job_id
    h.finish(1, job, "failed", "E_PROVIDER_FAILED", checkpoint={"published": secret_checkpoint})
    report = h.c.diagnostic_report(2)
    text = json.dumps(report)
    assert secret_arg not in text and secret_checkpoint not in text
    row = report["jobs"][0]
    assert row["argKeys"] == ["capture"] and row["checkpointKeys"] == ["published"]
    assert (row["id"], row["workspace"], row["kind"], row["state"], row["attempts"], row["lastError"]) == (
        job, "/a", "process", "retry-waiting", 1, "E_PROVIDER_FAILED",
    )
    assert row["created"] == 0.0 and row["updated"] == 1.0 and row["notBefore"] == 31.0
