"""The asyncio adapter: real worker subprocesses, a fake clock for every timing decision."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cairn.protocol import codec
from cairn.protocol.jobs import JobState, JobStore
from cairn.server.scheduler.adapter import Adapter
from cairn.server.scheduler.coordinator import Coordinator
from cairn.server.scheduler.events import CoordinatorConfig, Enqueue, Idle, Report, StartWorker
from cairn.server.scheduler.jobstore import read_store, write_store
from cairn.server.scheduler.runner import RunResult, WorkerProcess
from cairn.server.testing import FakeClock

from tests.support import until_changed

pytestmark = pytest.mark.asyncio


class Recorder:
    def __init__(self) -> None:
        self.started: list[tuple[str, str, int]] = []
        self.finished: list[tuple[str, RunResult]] = []
        self.reports: list[Report] = []
        self.changed = asyncio.Event()

    def worker_started(self, start: StartWorker, pid: int) -> None:
        self.started.append((start.job_id, start.kind, pid))
        self.changed.set()

    def worker_finished(self, start: StartWorker, result: RunResult) -> None:
        self.finished.append((start.job_id, result))
        self.changed.set()

    def report(self, report: Report) -> None:
        self.reports.append(report)

    async def until(self, pred: Callable[[], object], bound: float = 30.0) -> None:
        """Wait for a condition, re-checked on every event (bounded, not a sleep)."""
        await until_changed(self.changed, pred, bound)


def make(ws: Path, env: dict[str, str], clock: FakeClock, store: JobStore | None = None,
         **cfg: Any) -> tuple[Adapter, Recorder]:
    rec = Recorder()
    config = CoordinatorConfig(**cfg) if cfg else CoordinatorConfig()
    adapter = Adapter(
        Coordinator(config), clock=clock, listener=rec,
        spawn=lambda request: WorkerProcess.start(request, env=env, grace=0.5),
    )
    if store is not None:
        adapter.restart(store)
    return adapter, rec


def stored(ws: Path) -> JobStore:
    store, code = read_store(str(ws))
    assert code is None and store is not None
    return store


async def test_job_runs_and_leaves_the_durable_store(workspace: Path, test_env: dict[str, str]) -> None:
    clock = FakeClock()
    adapter, rec = make(workspace, test_env, clock)
    adapter.submit(Enqueue(str(workspace), "test-echo", {"x": "1"}))
    await adapter.flush()
    # durable before (and while) it runs
    assert [j.kind for j in stored(workspace).jobs] == ["test-echo"]
    await rec.until(lambda: rec.finished)
    await adapter.flush()
    assert rec.finished[0][1].result["args"] == {"x": "1"}
    assert stored(workspace).jobs == ()
    await adapter.close()


async def test_deadline_on_the_fake_clock_cancels_and_counts_a_failure(workspace: Path, test_env: dict[str, str]) -> None:
    clock = FakeClock()
    adapter, rec = make(workspace, test_env, clock, budgets={"test-sleep": 60.0})
    adapter.submit(Enqueue(str(workspace), "test-sleep", {"seconds": "600"}))
    await rec.until(lambda: rec.started)
    clock.advance(59.0)
    assert not rec.finished and adapter.running  # not before its deadline
    clock.advance(1.0)
    await rec.until(lambda: rec.finished)
    job = adapter.coordinator.store.jobs[0]
    assert job.state is JobState.RETRY_WAITING and job.last_error == "E_WORKER_TIMEOUT" and job.attempts == 1
    assert job.not_before == clock.now() + 30.0
    await adapter.close()


async def test_crash_is_retried_after_the_eligibility_deadline(workspace: Path, test_env: dict[str, str]) -> None:
    clock = FakeClock()
    adapter, rec = make(workspace, test_env, clock)
    adapter.submit(Enqueue(str(workspace), "test-crash"))
    await rec.until(lambda: len(rec.finished) == 1)
    assert rec.finished[0][1].error == "E_WORKER_CRASHED"
    job = adapter.coordinator.store.jobs[0]
    assert job.state is JobState.RETRY_WAITING and job.attempts == 1
    clock.advance(29.0)
    await adapter.flush()
    assert len(rec.started) == 1  # the retry is not eligible yet
    clock.advance(1.0)
    await rec.until(lambda: len(rec.finished) == 2)
    assert len(rec.started) == 2
    clock.advance(120.0)
    await rec.until(lambda: len(rec.finished) == 3)
    await adapter.flush()
    assert adapter.coordinator.store.jobs[0].state is JobState.EXHAUSTED
    assert [r.kind for r in rec.reports] == ["exhausted"]
    assert stored(workspace).jobs[0].state is JobState.EXHAUSTED
    await adapter.close()


async def test_shutdown_interrupts_without_an_attempt_and_restart_resumes(workspace: Path, test_env: dict[str, str]) -> None:
    clock = FakeClock()
    adapter, rec = make(workspace, test_env, clock)
    adapter.submit(Enqueue(str(workspace), "test-sleep", {"seconds": "600"}))
    await rec.until(lambda: rec.started)
    await adapter.shutdown(grace=0.0)
    job = stored(workspace).jobs[0]
    assert job.state is JobState.IDLE and job.attempts == 0  # an interruption is not an attempt
    # a new server session starts it again from the durable store
    adapter2, rec2 = make(workspace, test_env, clock, store=stored(workspace))
    await rec2.until(lambda: rec2.started)
    assert rec2.started[0][0] == job.id
    await adapter2.shutdown(grace=0.0)


async def test_restart_normalises_a_running_job_left_by_a_crashed_server(workspace: Path, test_env: dict[str, str]) -> None:
    clock = FakeClock()
    adapter, rec = make(workspace, test_env, clock)
    adapter.submit(Enqueue(str(workspace), "test-sleep", {"seconds": "600"}))
    await rec.until(lambda: rec.started)
    await adapter.flush()
    left = stored(workspace)  # what a server killed right now leaves behind
    assert left.jobs[0].state is JobState.RUNNING
    await adapter.close()
    adapter2, rec2 = make(workspace, test_env, clock, store=left)
    await rec2.until(lambda: rec2.started)
    assert adapter2.coordinator.store.jobs[0].attempts == 0
    await adapter2.shutdown(grace=0.0)


async def test_quiet_without_debt_for_an_hour(workspace: Path, test_env: dict[str, str]) -> None:
    clock = FakeClock()
    ws = str(workspace)
    throttled = JobStore(cleanup_offered={ws: clock.now()})  # cleanup was offered just now
    adapter, rec = make(workspace, test_env, clock, store=throttled, idle_kinds=("test-echo",),
                        cleanup_interval=7200.0)
    adapter.submit(Idle(600.0, (ws,)))  # one maintenance opportunity
    await rec.until(lambda: len(rec.finished) == 1)
    await adapter.flush()
    for _ in range(60):  # an hour of fake time, minute by minute, the editor still idle
        clock.advance(60.0)
        adapter.submit(Idle(600.0))
        await adapter.flush()
    assert [kind for _, kind, _ in rec.started] == ["test-echo"]  # no second pass, no polling
    assert clock.pending() == [] and adapter.coordinator.next_wakeup() is None
    assert stored(workspace).jobs == ()
    await adapter.close()


async def test_unreadable_store_is_kept_aside(workspace: Path) -> None:
    write_store(str(workspace), b"{not json")
    store, code = read_store(str(workspace))
    assert store is None and code is not None and code.startswith("E_RECORD")
    assert (workspace / ".cairn/state/server/jobs.json.bad").read_bytes() == b"{not json"


async def test_split_and_merge_keep_every_workspace(tmp_path: Path) -> None:
    from cairn.protocol.jobs import Job
    from cairn.server.scheduler.jobstore import merge_stores, split_store
    a = Job(id="job-1", workspace="/a", kind="process", seq=1, state=JobState.IDLE, created=1.0, updated=1.0)
    b = Job(id="job-1", workspace="/b", kind="process", seq=1, state=JobState.IDLE, created=2.0, updated=2.0)
    merged = merge_stores([JobStore(jobs=(a,), next_seq=2), JobStore(jobs=(b,), next_seq=2)])
    assert len({j.id for j in merged.jobs}) == 2 and merged.next_seq == 3
    parts = split_store(merged)
    assert set(parts) == {"/a", "/b"}
    assert codec.decode(codec.encode(parts["/a"]), JobStore).jobs[0].workspace == "/a"
