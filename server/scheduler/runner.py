"""Run one worker job as a subprocess: ``python -m cairn.worker KIND``.

Contract (docs/ARCHITECTURE.md, "Processes"): the request goes to the worker's stdin, one
JSON response line comes back on stdout, diagnostics go to stderr. The runner
never hangs and never guesses:

- a valid response is returned as it is (``ok``/``failed``/``cancelled``/``busy``);
- the worker exits without a valid response → ``failed`` with
  ``E_WORKER_CRASHED`` (killed or non-zero exit) or ``E_WORKER_BAD_RESPONSE``
  (exit 0 but nothing, or something that is not a response, on stdout);
- the deadline passes → terminate, then kill after ``grace``; ``failed`` with
  ``E_WORKER_TIMEOUT`` (a timeout is never reported as success);
- :meth:`WorkerProcess.cancel` → the same stop sequence; ``cancelled`` with
  ``E_CANCELLED`` unless a valid response arrived first.

stderr is drained continuously into a bounded tail (so a chatty worker can
never block on a full pipe) and is never parsed. stdout is bounded too.

Each worker runs in its own session (process group). When it has exited, any
process still in that group is a stray (e.g. a child of a killed worker):
strays are found with psutil, terminated, killed after the grace and reaped,
and their count is part of the result.

Workers lower their own CPU priority (``worker.priority``): the editor-facing
server must win the scheduler on a small machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import psutil
from cairn.protocol import codec
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.worker import WorkerRequest, WorkerResponse, WorkerStatus
from cairn.worker.redaction.redact import redact_bytes

STDOUT_LIMIT = 1 << 20  # a response holds ids and counts: 1 MiB is generous
STDERR_TAIL = 64 << 10  # keep the last 64 KiB of diagnostics
DEFAULT_GRACE = 2.0  # seconds between terminate and kill

@attrs.frozen(kw_only=True)
class RunResult:
    """What became of one worker run. ``error`` is a fixed code whenever status is not ok."""

    status: WorkerStatus
    result: dict[str, Any] = attrs.field(factory=dict)
    error: str | None = None
    message: str = ""
    more: bool = False
    pid: int | None = None
    returncode: int | None = None
    stderr_tail: bytes = b""  # diagnostics only; never parsed, never a result
    strays: int = 0  # processes left in the worker's group after it exited
    duration: float = 0.0


def worker_command(kind: str, python: str | None = None) -> list[str]:
    return [python or sys.executable, "-m", "cairn.worker", kind]


def worker_env(extra: Mapping[str, str] | None = None, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The worker's environment: the caller's, minus inherited crash injection.

    The worker is ``python -m cairn.worker`` in the same interpreter, so the
    installed package is importable as it is: ``PYTHONPATH`` is never touched
    (prepending a directory would put site-packages ahead of the standard
    library once installed).

    Crash injection (``CAIRN_CRASH_*``) is never inherited by accident; a
    caller that wants it passes it in ``extra``.
    """
    env = {k: v for k, v in (os.environ if base is None else base).items() if not k.startswith("CAIRN_CRASH")}
    env.update(extra or {})
    return env


class _Tail:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.buf = bytearray()

    def add(self, chunk: bytes) -> None:
        self.buf += chunk
        if len(self.buf) > self.limit:
            del self.buf[: len(self.buf) - self.limit]


class WorkerProcess:
    """One running worker. Start with :meth:`start`, then ``await wait()`` exactly once.

    The process is forked in a thread (a fork from a large server costs
    milliseconds, which must not stall the event loop); its pipes are then
    read on the loop and its exit is observed through a pidfd.
    """

    def __init__(self, proc: subprocess.Popen[bytes], payload: bytes, started: float, grace: float) -> None:
        self._proc = proc
        self._payload = payload
        self._started = started
        self._grace = grace
        self._cancel = asyncio.Event()
        self._stderr = _Tail(STDERR_TAIL)

    @property
    def pid(self) -> int:
        return self._proc.pid

    @classmethod
    async def start(
        cls,
        request: WorkerRequest,
        *,
        command: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        grace: float = DEFAULT_GRACE,
    ) -> WorkerProcess:
        """Spawn the worker and hand it the request. Raises ``E_WORKER_CRASHED`` if it cannot start."""
        argv = list(command or worker_command(request.job))
        payload = codec.encode(request)
        try:
            proc = await asyncio.to_thread(
                subprocess.Popen, argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=dict(env) if env is not None else worker_env(), cwd=cwd,
                start_new_session=True,  # own process group: strays are findable and killable
            )
        except OSError as exc:
            raise CairnError(ErrorCode.WORKER_CRASHED, f"worker could not start ({type(exc).__name__})") from exc
        return cls(proc, payload, time.monotonic(), grace)

    def cancel(self) -> None:
        """Ask the worker to stop (terminate, then kill after the grace). Idempotent."""
        self._cancel.set()

    async def _exit_future(self) -> asyncio.Future[int]:
        """Resolves with the return code once the worker has exited (and been reaped)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[int] = loop.create_future()
        proc = self._proc
        try:
            pidfd = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):
            task = loop.run_in_executor(None, proc.wait)

            def reaped(_: asyncio.Future[int]) -> None:
                if not fut.done():
                    fut.set_result(proc.returncode)

            task.add_done_callback(reaped)
            return fut

        def exited() -> None:
            loop.remove_reader(pidfd)
            os.close(pidfd)
            if not fut.done():
                fut.set_result(proc.wait())

        loop.add_reader(pidfd, exited)
        return fut

    async def wait(self, timeout: float | None = None) -> RunResult:
        """Feed stdin, collect stdout/stderr, enforce ``timeout`` (seconds) and cancellation."""
        proc = self._proc
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        loop = asyncio.get_running_loop()
        out = bytearray()
        overflow = False

        async def pipe_reader(f: Any) -> asyncio.StreamReader:
            reader = asyncio.StreamReader(limit=STDOUT_LIMIT)
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), f)
            return reader

        stdout = await pipe_reader(proc.stdout)
        stderr = await pipe_reader(proc.stderr)
        wtransport, wprotocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, proc.stdin)
        writer = asyncio.StreamWriter(wtransport, wprotocol, None, loop)

        async def feed() -> None:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError, OSError):
                writer.write(self._payload)
                await writer.drain()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError, OSError):
                writer.close()

        async def read_out() -> None:
            nonlocal overflow
            while chunk := await stdout.read(65536):
                if len(out) + len(chunk) > STDOUT_LIMIT:
                    overflow = True
                    self.cancel()  # a worker flooding stdout is broken: stop it
                    continue
                out.extend(chunk)

        async def read_err() -> None:
            while chunk := await stderr.read(65536):
                self._stderr.add(chunk)

        io = [asyncio.ensure_future(c) for c in (feed(), read_out(), read_err())]
        exited = await self._exit_future()
        cancelled = asyncio.ensure_future(self._cancel.wait())
        timed_out = False
        try:
            racers: set[asyncio.Future[Any]] = {exited, cancelled}
            done, _ = await asyncio.wait(racers, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if exited not in done:
                timed_out = cancelled not in done
                await self._stop(exited)
            await asyncio.wait(io, timeout=self._grace)  # pipes close once the group is gone
        finally:
            cancelled.cancel()
            for task in io:
                task.cancel()
            wtransport.close()
            for f in (proc.stdout, proc.stderr):
                with contextlib.suppress(OSError):
                    f.close()
        strays = await asyncio.to_thread(_reap_group, proc.pid, self._grace)
        returncode = proc.returncode
        duration = time.monotonic() - self._started
        stderr_tail = redact_bytes(bytes(self._stderr.buf))

        def outcome(status: WorkerStatus, error: str | None, message: str, *,
                    result: dict[str, Any] | None = None, more: bool = False) -> RunResult:
            return RunResult(status=status, result=result if result is not None else {}, error=error,
                             message=message, more=more, pid=proc.pid, returncode=returncode,
                             stderr_tail=stderr_tail, strays=strays, duration=duration)

        response = None if overflow else _parse(bytes(out))
        if response is not None and not timed_out:
            return outcome(response.status, response.error, response.message,
                           result=dict(response.result), more=response.more)
        if timed_out:
            return outcome(WorkerStatus.FAILED, str(ErrorCode.WORKER_TIMEOUT), "worker passed its deadline")
        if self._cancel.is_set() and not overflow:
            return outcome(WorkerStatus.CANCELLED, str(ErrorCode.CANCELLED), "worker cancelled")
        if overflow or returncode == 0:
            return outcome(WorkerStatus.FAILED, str(ErrorCode.WORKER_BAD_RESPONSE),
                           "worker wrote no valid response")
        return outcome(WorkerStatus.FAILED, str(ErrorCode.WORKER_CRASHED), f"worker died (exit {returncode})")

    async def _stop(self, exited: asyncio.Future[int]) -> None:
        """Terminate the worker's group, then kill it after the grace."""
        _signal_group(self._proc.pid, signal.SIGTERM)
        done, _ = await asyncio.wait({exited}, timeout=self._grace)
        if not done:
            _signal_group(self._proc.pid, signal.SIGKILL)
            await exited


def _parse(data: bytes) -> WorkerResponse | None:
    """The response is the one line on stdout; anything else is not a response."""
    text = data.strip()
    if not text or b"\n" in text:
        return None
    try:
        return codec.decode(text, WorkerResponse, where="worker response")
    except CairnError:
        return None


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _group_members(pgid: int) -> list[psutil.Process]:
    members = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            if proc.pid != os.getpid() and os.getpgid(proc.pid) == pgid:
                members.append(proc)
    return members


def _reap_group(pgid: int, grace: float) -> int:
    """Stop every process left in the worker's group; return how many there were."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return 0  # the common case: the group is empty, no scan needed
    strays = _group_members(pgid)
    for proc in strays:
        with contextlib.suppress(psutil.Error):
            proc.terminate()
    _, alive = psutil.wait_procs(strays, timeout=grace)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(alive, timeout=grace)
    return len(strays)


async def run_worker(
    request: WorkerRequest,
    *,
    timeout: float | None = None,
    command: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    grace: float = DEFAULT_GRACE,
) -> RunResult:
    """Start a worker and wait for it: the one-call form (foreground commands, the CLI, tests)."""
    try:
        proc = await WorkerProcess.start(request, command=command, env=env, grace=grace)
    except CairnError as exc:
        return RunResult(status=WorkerStatus.FAILED, error=str(exc.code), message=exc.message)
    return await proc.wait(timeout)
