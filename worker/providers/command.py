"""The ``command`` provider: one prompt through a local program the user already has.

Settings name an argv list (``command = ["llm", "-m", "MODEL"]``,
``["ollama", "run", "MODEL"]``, ``["claude", "-p"]``, ``["codex", "exec",
"-"]``). Contract, the same as the HTTP exchange's where it can be:

* **No shell.** The argv is executed as given (``PATH`` lookup for the
  first item); nothing is interpolated or split.
* **Prompt on stdin, reply on stdout.** The prompt is the system prompt, a
  blank line, then the request text, UTF-8, both through the redaction
  gate (:func:`worker.redact.redact_text`) as every HTTP request is. Its size is
  measured against ``policy.max_payload_bytes`` *before* the program starts
  (``E_PAYLOAD_TOO_LARGE``). stdout is capped at
  :data:`~worker.providers.http.MAX_REPLY_BYTES`.
* **The reply** is one JSON object, alone or as the only content of one
  Markdown code fence (```` ```json ... ``` ````, as chat models like to
  answer), surrounding whitespace ignored; anything else is
  ``E_PROVIDER_INVALID_REPLY``. The object then obeys the same strict schema
  as an HTTP reply's content. Error messages never quote the reply.
* **Failures.** A program that cannot be started (not found, not
  executable) → ``E_PROVIDER_FAILED`` naming the program (its first argv
  item, never the rest); a non-zero exit → ``E_PROVIDER_FAILED`` with the
  exit status (or the signal). stderr is drained and discarded: only its
  size is reported, because an assistant's diagnostics may quote the
  prompt, and error messages reach logs and editors.
* **Time.** ``policy.timeout_seconds`` bounds the whole run
  (``E_PROVIDER_TIMEOUT``). The program runs in a new session (its own
  process group); on timeout, cancellation of the surrounding trio scope, or
  once it has exited, the whole group is killed, so no helper it spawned
  outlives the request.
* **Where it runs.** The working directory is a fresh empty temporary
  directory (removed afterwards), so an agent CLI finds no project files to
  act on; the environment is the worker's (the program needs its own login
  and ``PATH``). cairn offers no tools, but cannot stop a program from
  using its own: choose a command that only answers.

The program sends the prompt wherever it sends prompts, so ``command`` is a
setting a workspace file may only set when trusted
(:data:`worker.config.OFF_MACHINE`).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
from collections.abc import Sequence

import trio
from cairn.protocol.digest import ModelPolicy
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.worker.providers import http
from cairn.worker.redact import redact_text

#: stderr bytes counted at most (the rest is drained unread)
STDERR_COUNT_LIMIT = 1 << 20
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


async def _read_capped(stream: trio.abc.ReceiveStream, into: bytearray) -> None:
    async with stream:
        while chunk := await stream.receive_some(65536):
            into += chunk
            if len(into) > http.MAX_REPLY_BYTES:
                raise http.invalid(f"the command's output exceeds {http.MAX_REPLY_BYTES} bytes")


async def _drain(stream: trio.abc.ReceiveStream, count: list[int]) -> None:
    async with stream:
        while chunk := await stream.receive_some(65536):
            count[0] = min(STDERR_COUNT_LIMIT, count[0] + len(chunk))


def _kill_group(proc: trio.Process) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone already


async def run(argv: Sequence[str], stdin: bytes, policy: ModelPolicy) -> str:
    """Run ``argv`` with ``stdin``; return its stdout as text (exit status 0 only). See the module docstring."""
    check(argv, policy)
    http.check_payload(stdin, policy)
    out = bytearray()
    err = [0]
    with tempfile.TemporaryDirectory(prefix="cairn-command-") as cwd:
        try:
            proc = await trio.lowlevel.open_process(
                list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                cwd=cwd, start_new_session=True,
            )
        except OSError as exc:
            reason = "was not found" if isinstance(exc, FileNotFoundError) else f"could not start ({exc.strerror})"
            raise CairnError(ErrorCode.PROVIDER_FAILED, f"the command program {_program(argv)!r} {reason}",
                             program=_program(argv)) from None
        try:
            with trio.fail_after(policy.timeout_seconds):
                assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(_feed, proc.stdin, stdin)
                    nursery.start_soon(_drain, proc.stderr, err)
                    await _read_capped(proc.stdout, out)
                status = await proc.wait()
        except trio.TooSlowError:
            raise CairnError(ErrorCode.PROVIDER_TIMEOUT,
                             f"the command gave no complete reply within {policy.timeout_seconds:g} s") from None
        finally:
            _kill_group(proc)
            with trio.CancelScope(shield=True):
                await proc.wait()
    if status != 0:
        how = f"was killed by signal {-status}" if status < 0 else f"exited with status {status}"
        raise CairnError(ErrorCode.PROVIDER_FAILED,
                         f"the command program {_program(argv)!r} {how} ({err[0]} bytes on stderr, not kept)",
                         program=_program(argv), status=status)
    try:
        return bytes(out).decode("utf-8")
    except UnicodeDecodeError:
        raise http.invalid("the command's output is not UTF-8 text") from None
