"""Crash injection for sweeps: die at the Nth mutating file-system operation.

Off by default. With ``CAIRN_CRASH_AT=N`` in the environment the process
SIGKILLs itself immediately *before* its Nth mutating primitive (temp write,
fsync, link, rename, unlink, mkdir), so every intermediate on-disk state a
real crash could leave can be produced on purpose. With
``CAIRN_CRASH_LOG=FILE`` each mutating primitive appends its label to FILE,
which is how a sweep learns how many crash points a run has.

Only mutating primitives count: reads and clock touches cannot corrupt state.
"""

from __future__ import annotations

import os
import signal

_crash_at = int(os.environ.get("CAIRN_CRASH_AT", "0") or "0")
_log_path = os.environ.get("CAIRN_CRASH_LOG") or None
_count = 0


def point(label: str) -> None:
    """Mark one mutating primitive about to happen; maybe die here."""
    global _count
    if not _crash_at and not _log_path:
        return
    _count += 1
    if _log_path:
        with open(_log_path, "a", encoding="utf-8") as fh:
            fh.write(f"{_count} {label}\n")
    if _crash_at and _count >= _crash_at:
        os.kill(os.getpid(), signal.SIGKILL)


def reset_for_tests(crash_at: int = 0, log_path: str | None = None) -> None:
    """Re-read the configuration (in-process tests only; sweeps use the environment)."""
    global _crash_at, _log_path, _count
    _crash_at, _log_path, _count = crash_at, log_path, 0
