"""A second process for an import of many files: the machine's second core at work.

An import of many small sessions is bound by CPU, not by the disk: parsing,
the claim programs and the kernel's share of each file creation, and one
process's threads share one interpreter lock. :func:`helper_share` decides
how many of the *last* files given a :class:`Helper` process imports while
this process imports the first ones (docs/adr/0013). Each process runs
:func:`cairn.worker.journal.imports.import_paths` unchanged on its part:
every session is still captured by its own claim generations, so two
processes writing side by side is what an editor's capture during an import
always was.

The contract the caller keeps (``import_paths`` with ``processes=2``):

* *same result*: the helper's counts, sessions and malformed lines are added
  after this process's own, so the summary and ``session_ids`` keep the
  order the files were given;
* *one session in both parts* (a resumed session copied into a second
  file): whichever process elects the session's claim first captures it; the
  other waits for that claim (:data:`SIBLING_WAIT`) instead of failing with
  ``E_CLAIM_BUSY``, then skips what was captured;
* *errors*: an error in this process's part (files given first) stops the
  helper at its next batch boundary and is raised once the helper is done;
  the helper's error is raised after this process's part has finished, as
  one after another;
* *stop*: a stop request (Ctrl-C) is passed on (at once: the importer's
  own thread asks for it every ``imports.POLL`` seconds while it waits for
  its files); both stop at a batch boundary. The helper runs in its own
  session (the terminal's Ctrl-C reaches this process only) and stops by
  itself if this process dies (its request pipe closes).

The helper reports on stdout, one JSON object per line: ``{"progress":
[done, total]}`` now and then, then ``{"result": {...}}`` (its
:class:`~protocol.import_results.ImportTally` record, decoded strictly) or
``{"error": code, "message": ..., "detail": {...}}``. It never writes to the
terminal.

Run as ``python -m cairn.worker.journal.import_split`` (the helper's side).
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import IO, Any

from cairn.protocol import codec
from cairn.protocol.digest import ModelPolicy
from cairn.protocol.errors import CairnError, ErrorCode, os_error
from cairn.protocol.import_results import ImportTally
from cairn.protocol.knobs import env_int
from cairn.state import crash
from cairn.worker.journal.store import Journal

#: files below which an import stays in one process (a helper costs its start-up)
MIN_FILES = env_int("CAIRN_IMPORT_SPLIT_MIN", 32, minimum=2)
#: share of the files the helper takes (it starts later: it pays the interpreter's start-up)
SHARE = 0.45
#: seconds a process waits for its sibling's claim on a session both parts hold, counted from the
#: sibling's latest batch (a long session is waited for while batches keep coming)
SIBLING_WAIT = 30.0  # the same as ``imports.HOLDER_WAIT``, which every import now waits
#: share of the files a forked helper takes (it starts at once, with everything imported)
FORK_SHARE = 0.5
#: the helper's command line
COMMAND = _DEFAULT_COMMAND = [sys.executable, "-m", "cairn.worker.journal.import_split"]


def _cores() -> int:
    """Cores this process may run on (all of them where the system cannot say)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def helper_share(n_files: int, processes: int) -> int:
    """How many of the last files a helper process imports (0: none)."""
    if processes < 2 or n_files < MIN_FILES:
        return 0
    if _cores() < 2:
        return 0
    if os.environ.get("CAIRN_CRASH_AT") or os.environ.get("CAIRN_CRASH_BEFORE"):
        return 0  # injected kill points count the operations of one process
    return max(1, int(n_files * (FORK_SHARE if _may_fork() else SHARE)))


def _stderr() -> int | None:
    """The helper's stderr: discarded, or this process's with ``CAIRN_DEBUG=1`` (tracebacks, as the command's)."""
    return None if os.environ.get("CAIRN_DEBUG") == "1" else subprocess.DEVNULL


def _may_fork() -> bool:
    """Whether the helper may be a fork of this process rather than a new interpreter: on Linux, with the
    default command, while this process runs one thread (a fork copies only the thread that forks: a lock
    another thread held would stay held in the child forever)."""
    if COMMAND is not _DEFAULT_COMMAND or sys.platform != "linux" or os.environ.get("CAIRN_IMPORT_FORK", "1") == "0":
        return False
    try:  # every thread, a native library's too, not only those the threading module started
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


class _Forked:
    """The helper as a fork of this process: what a new interpreter spends on its start-up and imports
    (0.13 s here, as much as 60 small sessions' capture) it skips. The same contract as the spawned helper
    (:data:`COMMAND`): its own session, SIGINT ignored, requests on its stdin, reports on its stdout, stderr
    discarded unless ``CAIRN_DEBUG=1``, crash and fault injection read from the environment as a new process
    reads them (``CAIRN_CRASH_LOG`` left out). The child never returns into the caller's stack: whatever
    happens, it ends with ``os._exit``. Only ``stdin``, ``stdout`` and :meth:`wait` of a ``Popen`` are used."""

    def __init__(self) -> None:
        r_in, w_in = os.pipe()
        r_out, w_out = os.pipe()
        for stream in (sys.stdout, sys.stderr):  # a buffer the child would write out a second time
            with contextlib.suppress(Exception):
                stream.flush()
        parent = os.getpid()
        # no signal is handled between the fork and the child's own handlers: the command's Ctrl-C handler run
        # in the child would raise into the caller's stack (signals pending at the fork are not the child's)
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
        try:
            pid = os.fork()
        except BaseException:
            if os.getpid() != parent:
                os._exit(70)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            for fd in (r_in, w_in, r_out, w_out):
                os.close(fd)
            raise
        if pid == 0:  # the child
            status = 70
            try:
                signal.signal(signal.SIGINT, signal.SIG_IGN)  # the importer that started it decides when to stop
                with contextlib.suppress(ValueError):
                    signal.set_wakeup_fd(-1)  # an event loop's wake-up socket is the parent's, not ours
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
                os.close(w_in)
                os.close(r_out)
                os.setsid()
                # above 0-2 first: a parent whose stdin was closed may have been given fd 0 for a pipe
                low_in, low_out = r_in, w_out
                r_in, w_out = (fcntl.fcntl(fd, fcntl.F_DUPFD, 3) for fd in (low_in, low_out))
                for fd in (low_in, low_out):
                    if fd > 2:
                        os.close(fd)
                os.dup2(r_in, 0)
                os.dup2(w_out, 1)
                os.close(r_in)
                os.close(w_out)
                if os.environ.get("CAIRN_DEBUG") != "1":
                    null = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(null, 2)
                    os.close(null)
                os.environ.pop("CAIRN_CRASH_LOG", None)
                crash.configure_from_environment()
                # fresh streams: the parent's objects may hold data or a lock of the parent's
                sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)))
                sys.stderr = io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "w", closefd=False)), line_buffering=True)
                status = _helper_main()
                sys.stdout.flush()
            finally:
                os._exit(status)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.close(r_in)
        os.close(w_out)
        self.pid = pid
        self.returncode: int | None = None
        self.stdin: IO[bytes] = os.fdopen(w_in, "wb")
        self.stdout: IO[bytes] = os.fdopen(r_out, "rb")

    def wait(self) -> int:
        """The helper's exit status (a signal's number negated, as ``Popen.wait`` gives it)."""
        if self.returncode is None:
            try:
                _pid, status = os.waitpid(self.pid, 0)
                self.returncode = os.waitstatus_to_exitcode(status)
            except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored): as Popen.wait has it, status 0
                self.returncode = 0
        return self.returncode


class Helper:
    """The helper process importing ``paths``; its progress, stop and result."""

    def __init__(self, workspace: str, items: list[tuple[str, str, frozenset[str] | None]], policy: ModelPolicy, *,
                 follow_symlinks: bool, tolerant: bool = False, on_progress: Callable[[], None] | None = None,
                 sealed_before: float | None = None) -> None:
        self.done = self.total = 0
        self._reply: dict[str, Any] | None = None
        self._failed: Exception | None = None  # raised by the progress callback
        self._on_progress = on_progress
        env = dict(os.environ)
        env.pop("CAIRN_CRASH_LOG", None)
        request = {"workspace": workspace, "policy": codec.to_obj(policy), "follow_symlinks": follow_symlinks,
                   "tolerant": tolerant, "sealed_before": sealed_before,
                   "items": [[p, fmt, sorted(only) if only is not None else None] for p, fmt, only in items]}
        proc: subprocess.Popen[bytes] | _Forked | None = None
        if _may_fork():
            with contextlib.suppress(OSError):  # no fork to be had (a process limit, no memory): a new interpreter
                proc = _Forked()
        if proc is None:
            proc = subprocess.Popen(COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=_stderr(), env=env,
                                    start_new_session=True)
        self.proc: subprocess.Popen[bytes] | _Forked = proc
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._stdin: IO[bytes] = self.proc.stdin
        self._stopped = self._sent = False
        self._lock = threading.Lock()  # a stop asked before the request is sent follows it
        self._reader = threading.Thread(target=self._read, args=(json.dumps(request).encode() + b"\n",
                                                                 self.proc.stdout), daemon=True,
                                        name="cairn-import-helper")
        self._reader.start()

    def _read(self, request: bytes, out: IO[bytes]) -> None:
        # the request may exceed the pipe's buffer: sent here, the command's own import starts meanwhile
        with contextlib.suppress(OSError):  # it died already: wait() reports it
            self._stdin.write(request)
            self._stdin.flush()
        with self._lock:
            self._sent = True
            stopped = self._stopped
        if stopped:
            self._send_stop()
        with out:
            self._read_lines(out)

    def _read_lines(self, out: IO[bytes]) -> None:
        for line in out:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if not isinstance(msg, dict):
                continue
            if "progress" in msg:
                self.done, self.total = (int(x) for x in msg["progress"])
                if self._on_progress is not None and self._failed is None:
                    try:
                        self._on_progress()
                    except Exception as exc:  # the caller's error: raised by wait(); the pipe is still drained
                        self._failed = exc
                        self.stop()
            else:
                self._reply = msg

    def stop(self) -> None:
        """Ask the helper to stop at its next batch boundary (idempotent)."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            if not self._sent:
                return  # sent right after the request
        self._send_stop()

    def _send_stop(self) -> None:
        with contextlib.suppress(OSError):
            self._stdin.write(b"stop\n")
            self._stdin.flush()

    def wait(self, stop: Callable[[], bool] | None = None) -> ImportTally:
        """The helper's result, once it has exited; raises its error.

        While waiting, a true ``stop()`` is passed on. A Ctrl-C meanwhile
        stops the helper at its batch boundary and is raised once it has
        exited, so no process is left writing behind the caller's back.
        """
        interrupted: BaseException | None = None
        while self._reader.is_alive():
            try:
                if stop is not None and stop():
                    self.stop()
                self._reader.join(0.05)
            except BaseException as exc:  # Ctrl-C: wait for the helper's batch boundary, then raise
                interrupted = interrupted or exc
                self.stop()
        code = self.proc.wait()
        with contextlib.suppress(OSError):
            self._stdin.close()
        if interrupted is not None:
            raise interrupted
        if self._failed is not None:
            raise self._failed
        reply = self._reply
        if reply is None:
            raise CairnError(ErrorCode.WORKER_CRASHED,
                             f"the second import process ended without a result (exit status {code}); "
                             "run the same import again to finish it", exit_status=code)
        if "error" in reply:
            try:
                err = ErrorCode(str(reply["error"]))
            except ValueError:
                err = ErrorCode.INTERNAL
            raw = reply.get("detail")
            detail: dict[str, Any] = raw if isinstance(raw, dict) else {}
            raise CairnError(err, str(reply.get("message", "")), **detail)
        try:
            return codec.from_obj(reply.get("result"), ImportTally, where="the second import process's result")
        except CairnError as exc:
            raise CairnError(ErrorCode.WORKER_BAD_RESPONSE, exc.message) from None


def read_request(fd: int) -> tuple[bytes, bool]:
    """The request line, read in chunks from ``fd``; and whether a stop already followed it (see ``watch``).

    Unbuffered (``os.read``): the stop watcher reads the same descriptor afterwards. Whatever came
    after the request's newline, or the end of input, is a stop.
    """
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks), True
        head, newline, rest = chunk.partition(b"\n")
        chunks.append(head + newline)
        if newline:
            return b"".join(chunks), bool(rest)


def _seconds(value: Any) -> float | None:
    """``sealed_before`` as the request carries it (JSON keeps an infinite time as ``Infinity``)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _helper_main() -> int:
    """The helper's side: read the request, import, report; never a traceback."""
    from cairn.worker.journal.imports import import_items  # imports imports this module (a cycle)

    out = sys.stdout.buffer
    lock = threading.Lock()

    def send(msg: dict[str, Any]) -> None:
        with lock, contextlib.suppress(OSError):
            out.write(json.dumps(msg).encode() + b"\n")
            out.flush()

    stopping = threading.Event()

    def watch() -> None:
        # unbuffered reads: a thread blocked in a buffered reader would hold its lock at exit
        with contextlib.suppress(OSError):
            while os.read(0, 512):  # any line is "stop"; end of input (the importer died) is too
                stopping.set()
        stopping.set()

    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= 0.05:
            last[0] = now
            send({"progress": [done, total]})

    try:
        line, stopped = read_request(0)
        req = json.loads(line)
        if stopped:
            stopping.set()
        else:
            threading.Thread(target=watch, daemon=True).start()
        policy = codec.from_obj(req["policy"], ModelPolicy, where="import request")
        items = [(str(p), str(fmt), frozenset(only) if only is not None else None) for p, fmt, only in req["items"]]
        counts = [0, 0]

        def tick(done: int, total: int) -> None:
            counts[:] = [done, total]
            progress(done, total)

        with Journal(str(req["workspace"])) as j:
            result = import_items(j, items, policy, follow_symlinks=bool(req["follow_symlinks"]), progress=tick,
                                  stop=stopping.is_set, sibling=True, tolerant=bool(req.get("tolerant")),
                                  sealed_before=_seconds(req.get("sealed_before")))
        send({"progress": counts})
        send({"result": codec.to_obj(result)})
    except (CairnError, OSError) as exc:  # an OSError gets the code the command gives its own (a full disk)
        err = os_error(exc) if isinstance(exc, OSError) else exc
        from cairn.worker.redaction.redact import redact_text  # cold start: every import loads this module

        send({"error": str(err.code), "message": redact_text(err.message),
              "detail": {k: v for k, v in err.detail.items() if isinstance(v, (str, int, float, bool))}})
    except BaseException as exc:  # noqa: BLE001 -- reported as a fixed code; a traceback only with CAIRN_DEBUG=1
        if os.environ.get("CAIRN_DEBUG") == "1":
            traceback.print_exc()
        send({"error": str(ErrorCode.INTERNAL), "message": f"import process failed ({type(exc).__name__})",
              "detail": {}})
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the importer that started it decides when to stop
    status = _helper_main()
    sys.stdout.flush()
    os._exit(status)  # the stop watcher may still be blocked reading: no interpreter shutdown to wait for
