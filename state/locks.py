"""Target locks: ``flock(2)`` on a ``.lock`` file inside the locked directory, with a bounded wait.

``flock`` locks belong to an open file description, so two threads of one
process that each open the lock file exclude each other, as do two
processes. (POSIX ``fcntl``/``lockf`` locks, which the job-store lock uses, are
per process: every thread of the holder "has" the lock, and closing any
descriptor of the file drops it. That is why claim locks do not use them.)
The lock file is never deleted: deleting a lock file lets a second holder
lock a new inode while the first still holds the old one.

**Waits are bounded** (ADR 0002). A holder keeps the lock for one control
program — a few file operations, milliseconds — but a holder that is
stopped (``SIGSTOP``, a debugger, a frozen VM) keeps it indefinitely, and a
blocking ``flock`` would then hang every other writer of that target with
it. So the lock is taken with ``LOCK_NB`` and retried with a short backoff
until :attr:`LockWait.seconds` have passed on :attr:`LockWait.clock`; then
``E_CLAIM_BUSY`` is raised and nothing of the program has run. Giving up is
always safe: the program's precondition is proven under the lock, so a
program that never got the lock changed nothing, and busy work is retried.
Tests inject ``clock`` and ``sleep`` instead of waiting.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable

import attrs
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.state.fsdir import PinnedDir

LOCK_WAIT_SECONDS = 10.0  # far above any program's hold time, far below the shortest claim TTL (60 s)
_FIRST_DELAY = 0.001
_MAX_DELAY = 0.05


@attrs.frozen
class LockWait:
    """How long, and on which clock, to wait for a target lock another holder has."""

    seconds: float = LOCK_WAIT_SECONDS
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


DEFAULT_WAIT = LockWait()


class TargetLock:
    def __init__(self, directory: PinnedDir, wait: LockWait = DEFAULT_WAIT, *, name: str = "") -> None:
        self.directory = directory
        self.wait = wait
        self.name = name or directory.path
        self.fd = -1

    def acquire(self) -> None:
        """Take the lock, or raise ``E_CLAIM_BUSY`` once the bounded wait is over."""
        fd = os.open(".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=self.directory.fd)
        try:
            self._take(fd)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd

    def _take(self, fd: int) -> None:
        if _try_lock(fd):
            return
        w = self.wait
        end = w.clock() + w.seconds
        delay = _FIRST_DELAY
        while True:
            left = end - w.clock()
            if left <= 0:
                raise CairnError(
                    ErrorCode.CLAIM_BUSY,
                    f"{self.name}: the target lock stayed held for {w.seconds:g} s (its holder may be stopped "
                    "or hung); nothing was done, try again",
                    wait=w.seconds,
                )
            w.sleep(min(delay, left))
            delay = min(delay * 2, _MAX_DELAY)
            if _try_lock(fd):
                return

    def release(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def __enter__(self) -> TargetLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # EWOULDBLOCK: another open file description holds it
        return False
    return True
