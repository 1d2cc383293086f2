"""Crash injection for sweeps: die at the Nth mutating file-system operation.

Off by default. With ``CAIRN_CRASH_AT=N`` in the environment the process
SIGKILLs itself immediately *before* its Nth mutating primitive (temp write,
fsync, link, rename, unlink, mkdir), so every intermediate on-disk state a
real crash could leave can be produced on purpose. With
``CAIRN_CRASH_LOG=FILE`` each mutating primitive appends its label to FILE,
which is how a sweep learns how many crash points a run has. With
``CAIRN_CRASH_BEFORE=LABEL`` it dies before the first primitive labelled
exactly LABEL: a test about one named step does not depend on how many
steps come before it (content-addressed shard folders make that vary).
``CAIRN_CRASH_NTH=N`` makes that the Nth primitive so labelled (the third
``rename MEMORY.md`` of a run), and ``CAIRN_CRASH_OFFSET=D`` moves the kill
D primitives past it (1: just after that step, before the next primitive).

Fault injection works the same way: with ``CAIRN_FAULT_AT=N`` (and
``CAIRN_FAULT_ERRNO``, a symbolic name, ``ENOSPC`` by default) the Nth
mutating primitive raises that ``OSError`` instead of running, once: a full
disk that frees up again, so a sweep can prove every failure is reported
with its code, leaves every file whole and blocks no later attempt.
``CAIRN_FAULT_BEFORE=LABEL`` with ``CAIRN_FAULT_NTH`` and
``CAIRN_FAULT_OFFSET`` place the fault as their ``CAIRN_CRASH_*`` namesakes
place the kill: by label, not by a number that shifts from run to run.

Only mutating primitives count: reads and clock touches cannot corrupt state.
Counting, logging and dying happen under one lock, so with several threads
(an import capturing files side by side) the log still ends exactly at the
point the process died at.
"""

from __future__ import annotations

import errno
import os
import signal
import threading

_crash_at = 0
_log_path: str | None = None
_crash_before: str | None = None
_crash_nth = 1
_crash_offset = 0
_seen = 0  # primitives labelled ``_crash_before`` so far
_die_at = 0  # the count to die at, once the ``_crash_nth`` of them has been seen
_fault_at = 0
_fault_before: str | None = None
_fault_nth = 1
_fault_offset = 0
_fault_seen = 0
_fault_count = 0  # the count to fail at, once the ``_fault_nth`` point labelled ``_fault_before`` is seen
_fault_errno = errno.ENOSPC
_count = 0
_lock = threading.Lock()


def configure_from_environment() -> None:
    """Read the ``CAIRN_CRASH_*`` and ``CAIRN_FAULT_*`` variables (done once, on import).

    Called again by a process forked from one that had imported this module
    with another environment (the test suite's warm interpreter), so crash
    and fault injection follow the child's own environment.
    """
    reset_for_tests(int(os.environ.get("CAIRN_CRASH_AT", "0") or "0"), os.environ.get("CAIRN_CRASH_LOG") or None,
                    fault_at=int(os.environ.get("CAIRN_FAULT_AT", "0") or "0"),
                    fault_errno=int(getattr(errno, os.environ.get("CAIRN_FAULT_ERRNO", "ENOSPC"), errno.ENOSPC)),
                    crash_before=os.environ.get("CAIRN_CRASH_BEFORE") or None,
                    crash_nth=int(os.environ.get("CAIRN_CRASH_NTH", "1") or "1"),
                    crash_offset=int(os.environ.get("CAIRN_CRASH_OFFSET", "0") or "0"),
                    fault_before=os.environ.get("CAIRN_FAULT_BEFORE") or None,
                    fault_nth=int(os.environ.get("CAIRN_FAULT_NTH", "1") or "1"),
                    fault_offset=int(os.environ.get("CAIRN_FAULT_OFFSET", "0") or "0"))


def point(label: str) -> None:
    """Mark one mutating primitive about to happen; maybe die here."""
    global _count, _seen, _die_at, _fault_seen, _fault_count
    if not _crash_at and not _log_path and not _fault_at and not _crash_before and not _fault_before:
        return
    with _lock:
        _count += 1
        if _log_path:
            with open(_log_path, "a", encoding="utf-8") as fh:
                fh.write(f"{_count} {label}\n")
        if label == _crash_before and not _die_at:
            _seen += 1
            if _seen == _crash_nth:
                _die_at = _count + _crash_offset
        if (_crash_at and _count >= _crash_at) or (_die_at and _count >= _die_at):
            os.kill(os.getpid(), signal.SIGKILL)
        if label == _fault_before and not _fault_count:
            _fault_seen += 1
            if _fault_seen == _fault_nth:
                _fault_count = _count + _fault_offset
        fault = (_fault_at and _count == _fault_at) or (_fault_count and _count == _fault_count)
    if fault:
        raise OSError(_fault_errno, os.strerror(_fault_errno))


def reset_for_tests(crash_at: int = 0, log_path: str | None = None, *, fault_at: int = 0,
                    fault_errno: int = errno.ENOSPC, crash_before: str | None = None, crash_nth: int = 1,
                    crash_offset: int = 0, fault_before: str | None = None, fault_nth: int = 1,
                    fault_offset: int = 0) -> None:
    """Re-read the configuration (in-process tests only; sweeps use the environment)."""
    global _crash_at, _log_path, _count, _fault_at, _fault_errno, _crash_before, _crash_nth, _crash_offset
    global _seen, _die_at, _fault_before, _fault_nth, _fault_offset, _fault_seen, _fault_count
    _crash_at, _log_path, _count, _fault_at, _fault_errno = crash_at, log_path, 0, fault_at, fault_errno
    _crash_before, _crash_nth, _crash_offset, _seen, _die_at = crash_before, max(1, crash_nth), max(0, crash_offset), 0, 0
    _fault_before, _fault_nth, _fault_offset = fault_before, max(1, fault_nth), max(0, fault_offset)
    _fault_seen = _fault_count = 0


def count() -> int:
    """Mutating primitives counted so far (while crash or fault injection is configured)."""
    return _count


configure_from_environment()
