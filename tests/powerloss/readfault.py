"""Fail one read of a file below a root with EIO, in a real cairn command's own process.

Run as ``python -m tests.powerloss.readfault LOG ROOT N -- -m module ARGS...``:
wraps ``os.open``/``os.read``/``os.pread`` (what cairn's readers call:
``PinnedDir.read`` and the segment readers), logs each read of a regular file
below ROOT to LOG (its relative path, one line each) and makes the Nth raise
``OSError(EIO)``; ``N`` = 0 only logs. Nothing in production knows of it.
"""

from __future__ import annotations

import errno
import os
import runpy
import stat
import sys
import threading


def install(log_path: str, root: str, n: int) -> None:
    root = os.path.realpath(root)
    log = open(log_path, "a", encoding="utf-8")  # noqa: SIM115 - open for the life of the process
    real_open, real_read, real_pread = os.open, os.read, os.pread
    files: dict[int, str] = {}
    count = [0]
    lock = threading.Lock()

    def w_open(path, flags, mode=0o777, *, dir_fd=None):
        fd = real_open(path, flags, mode, dir_fd=dir_fd)
        p = os.fsdecode(path)
        if dir_fd is not None and not os.path.isabs(p):
            p = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), p)
        p = os.path.normpath(os.path.abspath(p))
        if p.startswith(root + "/") and stat.S_ISREG(os.fstat(fd).st_mode):
            files[fd] = p[len(root) + 1:]
        else:
            files.pop(fd, None)
        return fd

    def hit(fd: int) -> None:
        if fd not in files:
            return
        with lock:
            count[0] += 1
            log.write(f"{count[0]} {files[fd]}\n")
            log.flush()
            if count[0] == n:
                raise OSError(errno.EIO, os.strerror(errno.EIO))

    def w_read(fd, size):
        hit(fd)
        return real_read(fd, size)

    def w_pread(fd, size, offset):
        hit(fd)
        return real_pread(fd, size, offset)

    os.open, os.read, os.pread = w_open, w_read, w_pread


def main() -> None:
    log_path, root, n, sep, *args = sys.argv[1:]
    assert sep == "--" and args[0] == "-m", sys.argv
    install(log_path, root, int(n))
    sys.argv = [args[1], *args[2:]]
    runpy.run_module(args[1], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
