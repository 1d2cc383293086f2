"""The worker runner against real subprocesses (test-only job kinds)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import psutil
import pytest
from cairn.protocol.worker import WorkerRequest, WorkerStatus
from cairn.server.scheduler.runner import WorkerProcess, run_worker

from tests.support import PYTHON
from tests.support.workers import STRAY_SCRIPT

pytestmark = pytest.mark.asyncio


def req(kind: str, **args: object) -> WorkerRequest:
    return WorkerRequest(job=kind, workspace="/nonexistent", args=dict(args), job_id="job-1")


async def test_echo_roundtrip_and_lower_priority(test_env: dict[str, str]) -> None:
    res = await run_worker(req("test-echo", x="1"), env=test_env, timeout=30)
    assert res.status is WorkerStatus.OK
    assert res.result["args"] == {"x": "1"}
    assert res.result["nice"] >= os.nice(0) + 1  # the worker yields to the server
    assert res.strays == 0


async def test_deadline_kills_and_reports_timeout(test_env: dict[str, str]) -> None:
    proc = await WorkerProcess.start(req("test-sleep", seconds=600), env=test_env, grace=0.5)
    res = await proc.wait(timeout=1.0)
    assert res.status is WorkerStatus.FAILED
    assert res.error == "E_WORKER_TIMEOUT"
    assert not psutil.pid_exists(proc.pid) or psutil.Process(proc.pid).status() == psutil.STATUS_ZOMBIE


async def test_cancel_stops_the_worker(test_env: dict[str, str]) -> None:
    proc = await WorkerProcess.start(req("test-sleep", seconds=600), env=test_env, grace=0.5)
    waiter = asyncio.ensure_future(proc.wait(timeout=60))
    proc.cancel()
    res = await asyncio.wait_for(waiter, 30)
    assert res.status is WorkerStatus.CANCELLED and res.error == "E_CANCELLED"


async def test_crash_is_a_reported_failure(test_env: dict[str, str]) -> None:
    res = await run_worker(req("test-crash"), env=test_env, timeout=30)
    assert res.status is WorkerStatus.FAILED
    assert res.error == "E_WORKER_CRASHED"
    assert res.returncode is not None and res.returncode < 0


async def test_stderr_noise_is_not_the_result(test_env: dict[str, str]) -> None:
    res = await run_worker(req("test-noise"), env=test_env, timeout=30)
    assert res.status is WorkerStatus.OK and res.result == {"ok": True}
    assert b"diagnostic noise" in res.stderr_tail
    assert len(res.stderr_tail) <= 64 << 10


async def test_unknown_kind_is_a_fixed_failure(test_env: dict[str, str]) -> None:
    res = await run_worker(req("no-such-job"), env=test_env, timeout=30)
    assert res.status is WorkerStatus.FAILED and res.error == "E_WORKER_UNKNOWN_JOB"


async def test_garbage_on_stdout_is_a_bad_response(test_env: dict[str, str]) -> None:
    cmd = [PYTHON, "-c", "import sys; sys.stdin.read(); print('{\"not\": \"a response\"}')"]
    res = await run_worker(req("test-echo"), command=cmd, env=test_env, timeout=30)
    assert res.status is WorkerStatus.FAILED and res.error == "E_WORKER_BAD_RESPONSE"


async def test_silent_exit_is_a_bad_response(test_env: dict[str, str]) -> None:
    cmd = [PYTHON, "-c", "import sys; sys.stdin.read()"]
    res = await run_worker(req("test-echo"), command=cmd, env=test_env, timeout=30)
    assert res.status is WorkerStatus.FAILED and res.error == "E_WORKER_BAD_RESPONSE"


async def test_strays_of_a_killed_worker_are_reaped(tmp_path: Path, test_env: dict[str, str]) -> None:
    pidfile = tmp_path / "child.pid"
    cmd = [PYTHON, "-c", STRAY_SCRIPT, str(pidfile)]
    res = await run_worker(req("test-echo"), command=cmd, env=test_env, timeout=30, grace=0.5)
    assert res.status is WorkerStatus.FAILED and res.error == "E_WORKER_CRASHED"
    assert res.strays == 1
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 10  # init reaps the orphan; bounded wait for it to vanish
    while psutil.pid_exists(child) and time.monotonic() < deadline:
        try:
            if psutil.Process(child).status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        await asyncio.sleep(0.05)
    gone = not psutil.pid_exists(child)
    if not gone:
        gone = psutil.Process(child).status() == psutil.STATUS_ZOMBIE
    assert gone
