"""The ``command`` provider: one prompt through a local program the user already has.

Settings name an argv list (``command = ["llm", "-m", "MODEL"]``,
``["ollama", "run", "MODEL"]``, ``["claude", "-p"]``, ``["codex", "exec",
"-"]``). Contract, the same as the HTTP exchange's where it can be:

* **No shell.** The argv is executed as given (``PATH`` lookup for the
  first item); nothing is interpolated or split.
* **Prompt on stdin, reply on stdout.** The prompt is the system prompt, a
  blank line, then the request text, UTF-8, both through the redaction
  gate (:func:`worker.redaction.redact.redact_text`) as every HTTP request is. Its size is
  measured against ``policy.max_payload_bytes`` *before* the program starts
  (``E_PAYLOAD_TOO_LARGE``). stdout is capped at
  :data:`~worker.providers.http.MAX_REPLY_BYTES`: more is
  ``E_PROVIDER_INVALID_REPLY`` (the program is stopped at once), a failed
  attempt like any other, never an internal error.
* **The reply** is one JSON object, alone or as the only content of one
  Markdown code fence (```` ```json ... ``` ````, as chat models like to
  answer), surrounding whitespace ignored; anything else is
  ``E_PROVIDER_INVALID_REPLY``. The object then obeys the same strict schema
  as an HTTP reply's content. Error messages never quote the reply.
* **Failures.** A program that cannot be started (not found, not
  executable) → ``E_PROVIDER_FAILED`` naming the program (its first argv
  item, never the rest); a non-zero exit → ``E_PROVIDER_FAILED`` with the
  exit status (or the signal); a program stopped by a signal to its
  supervisor, or a supervisor that could not finish, → ``E_PROVIDER_FAILED``
  as well. stderr is drained and discarded: only its size is reported,
  because an assistant's diagnostics may quote the prompt, and error
  messages reach logs and editors.
* **Time.** ``policy.timeout_seconds`` bounds the whole run
  (``E_PROVIDER_TIMEOUT``).
* **No helper outlives the request.** The program runs under a supervisor
  (:mod:`worker.providers.reaper`, a small Python process in a new session)
  that is a *child subreaper* (Linux ``PR_SET_CHILD_SUBREAPER``): whatever
  the program starts stays in the supervisor's tree, even a process that
  calls ``setsid`` (leaving the process group and the session, so killing
  a group is not enough) or double-forks and whose parent exits. Once the
  program has exited, on timeout, on cancellation of the surrounding trio
  scope (cairn sends the supervisor SIGTERM, and SIGKILLs its group if it
  has not finished within :data:`STOP_GRACE`) and when cairn itself dies
  (``PR_SET_PDEATHSIG``), the supervisor kills every descendant and reaps
  every child: no process and no zombie is left (so the reply also ends
  when the program exits while a helper still holds its stdout). The
  subreaper is a process of its own, not the worker, so cairn's other
  children are never mistaken for the program's
  (docs/adr/0015-command-supervisor.md). Out of reach: a process the
  program has another service start (``systemd-run``, D-Bus activation);
  elsewhere than Linux, a descendant whose parent exited.
* **Where it runs.** The working directory is a fresh empty temporary
  directory (removed afterwards), so an agent CLI finds no project files to
  act on; the environment is the worker's (the program needs its own login
  and ``PATH``). cairn offers no tools, but cannot stop a program from
  using its own: choose a command that only answers.

The program sends the prompt wherever it sends prompts, so ``command`` is a
setting a workspace file may only set when trusted
(:data:`worker.settings.config.OFF_MACHINE`).
"""

from __future__ import annotations

import errno
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence

import trio
from cairn.protocol.digest import ModelPolicy
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.worker.providers import http
from cairn.worker.redaction.redact import redact_text

#: stderr bytes counted at most (the rest is drained unread)
STDERR_COUNT_LIMIT = 1 << 20
#: the supervisor the program runs under (:mod:`worker.providers.reaper`), started by path
REAPER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reaper.py")
#: seconds the supervisor has to end the program and all it started once asked to stop
STOP_GRACE = 5.0
_FENCE = re.compile(r"\A```[A-Za-z0-9_-]*[ \t]*\n(.*)\n```\Z", re.S)


def check(argv: Sequence[str], policy: ModelPolicy) -> None:
    """``E_CONFIG_INVALID`` for an unusable command or limits."""
    if not argv or not all(isinstance(a, str) for a in argv) or not argv[0].strip():
        raise http.config_error('the command provider needs a program: command = ["program", "arg", ...]')
    if any("\0" in a for a in argv):
        raise http.config_error("the command holds a NUL character")
    if not policy.timeout_seconds > 0 or policy.max_payload_bytes <= 0:
        raise http.config_error("timeout and payload limits must be positive")


def prompt_bytes(system: str, user: str) -> bytes:
    """The exact bytes written to the program's stdin, through the redaction gate like every request."""
    return f"{redact_text(system).rstrip()}\n\n{redact_text(user)}\n".encode()


def unfence(text: str) -> str:
    """The reply without surrounding whitespace and without one enclosing code fence."""
    text = text.strip()
    fenced = _FENCE.match(text)
    return fenced.group(1).strip() if fenced else text


def _program(argv: Sequence[str]) -> str:
    return os.path.basename(argv[0])[:60]


async def _feed(stream: trio.abc.SendStream, data: bytes) -> None:
    try:
        async with stream:
            await stream.send_all(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass  # the program exited without reading all of its input: its exit status decides


async def _read_capped(stream: trio.abc.ReceiveStream, into: bytearray) -> bool:
    """Read stdout to its end into ``into``; False as soon as it holds more than the reply bound."""
    async with stream:
        while chunk := await stream.receive_some(65536):
            into += chunk
            if len(into) > http.MAX_REPLY_BYTES:
                return False
    return True


async def _drain(stream: trio.abc.ReceiveStream, count: list[int]) -> None:
    async with stream:
        while chunk := await stream.receive_some(65536):
            count[0] = min(STDERR_COUNT_LIMIT, count[0] + len(chunk))


def _kill_group(proc: trio.Process) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone already


async def _start(argv: Sequence[str], cwd: str) -> tuple[trio.Process, trio.lowlevel.FdStream]:
    """The supervisor running ``argv`` in ``cwd`` (its own session), and the pipe of its status line."""
    status_r, status_w = os.pipe()
    try:
        proc = await trio.lowlevel.open_process(
            [sys.executable, "-I", REAPER, str(status_w), str(os.getpid()), *argv],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=cwd, start_new_session=True, pass_fds=(status_w,),
        )
    except OSError as exc:
        os.close(status_r)
        raise CairnError(ErrorCode.PROVIDER_FAILED,
                         f"the command program {_program(argv)!r} could not start ({exc.strerror or type(exc).__name__})",
                         program=_program(argv)) from None
    finally:
        os.close(status_w)
    return proc, trio.lowlevel.FdStream(status_r)


async def _status_line(stream: trio.lowlevel.FdStream) -> str:
    """The supervisor's one status line (read once it has exited: the pipe then ends)."""
    data = b""
    while len(data) <= 64 and (chunk := await stream.receive_some(64)):
        data += chunk
    return data.decode("ascii", "replace").strip()


async def _stop(proc: trio.Process) -> None:
    """Have the supervisor end the program and all it started; SIGKILL to its group past the grace."""
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
        with trio.move_on_after(STOP_GRACE):
            await proc.wait()
    if proc.returncode is None:
        _kill_group(proc)
        await proc.wait()


def _exit_status(argv: Sequence[str], line: str, proc: trio.Process) -> int:
    """The program's exit status from the supervisor's line; ``E_PROVIDER_FAILED`` if it never ran to its end."""
    kind, _, value = line.partition(" ")
    if kind == "exit" and value.lstrip("-").isdigit():
        return int(value)
    if kind == "nostart" and value.isdigit():
        code = int(value)
        reason = "was not found" if code == errno.ENOENT else f"could not start ({os.strerror(code)})"
        raise CairnError(ErrorCode.PROVIDER_FAILED, f"the command program {_program(argv)!r} {reason}",
                         program=_program(argv))
    if kind != "stopped":
        _kill_group(proc)  # a supervisor that failed to clean up: its group still holds what it left
    how = "was stopped" if kind == "stopped" else f"lost its supervisor (status {proc.returncode})"
    raise CairnError(ErrorCode.PROVIDER_FAILED, f"the command program {_program(argv)!r} {how} before it finished",
                     program=_program(argv))


async def run(argv: Sequence[str], stdin: bytes, policy: ModelPolicy) -> str:
    """Run ``argv`` with ``stdin``; return its stdout as text (exit status 0 only). See the module docstring."""
    check(argv, policy)
    http.check_payload(stdin, policy)
    out = bytearray()
    err = [0]
    with tempfile.TemporaryDirectory(prefix="cairn-command-") as cwd:
        proc, report = await _start(argv, cwd)
        try:
            with trio.fail_after(policy.timeout_seconds):
                assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
                async with trio.open_nursery() as nursery:  # its tasks end quietly: no exception group
                    nursery.start_soon(_feed, proc.stdin, stdin)
                    nursery.start_soon(_drain, proc.stderr, err)
                    if not await _read_capped(proc.stdout, out):
                        nursery.cancel_scope.cancel()  # over the bound: stop feeding and draining too
                if len(out) > http.MAX_REPLY_BYTES:
                    raise http.invalid(f"the command's output exceeds {http.MAX_REPLY_BYTES} bytes")
                await proc.wait()
                line = await _status_line(report)
        except trio.TooSlowError:
            raise CairnError(ErrorCode.PROVIDER_TIMEOUT,
                             f"the command gave no complete reply within {policy.timeout_seconds:g} s") from None
        finally:
            with trio.CancelScope(shield=True):
                await _stop(proc)
                await report.aclose()
        status = _exit_status(argv, line, proc)
    if status != 0:
        how = f"was killed by signal {-status}" if status < 0 else f"exited with status {status}"
        raise CairnError(ErrorCode.PROVIDER_FAILED,
                         f"the command program {_program(argv)!r} {how} ({err[0]} bytes on stderr, not kept)",
                         program=_program(argv), status=status)
    try:
        return bytes(out).decode("utf-8")
    except UnicodeDecodeError:
        raise http.invalid("the command's output is not UTF-8 text") from None
