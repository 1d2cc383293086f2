"""Target locks: ``flock(2)`` on a ``.lock`` file inside the locked directory.

``flock`` locks belong to an open file description, so two threads of one
process that each open the lock file exclude each other, as do two
processes. (POSIX ``fcntl``/``lockf`` locks, which ``fasteners`` uses, are
per process: every thread of the holder "has" the lock, and closing any
descriptor of the file drops it. That is why claim locks do not use them.)
The lock file is never deleted: deleting a lock file lets a second holder
lock a new inode while the first still holds the old one.
"""

from __future__ import annotations

import fcntl
import os

from cairn.state.fsdir import PinnedDir


class TargetLock:
    def __init__(self, directory: PinnedDir) -> None:
        self.directory = directory
        self.fd = -1

    def acquire(self) -> None:
        fd = os.open(".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=self.directory.fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd

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
