"""Record the file-system operations a real cairn command makes, in its own process.

Run as ``python -m tests.powerloss.recorder LOG ROOT -- ARGS...``: installs
wrappers around the ``os`` functions cairn's durable writers call (``open``,
``write``, ``ftruncate``, ``fsync``, ``rename``, ``replace``, ``link``,
``unlink``, ``mkdir``, ``rmdir``), then runs ``python ARGS`` (``-m module …``)
in this process. Several recorded processes may share one LOG (their calls
are serialised through a lock on it, so it holds them in the order they ran).
Every mutating call and every barrier (an ``fsync`` of a file
or a directory) below ROOT is appended to LOG as one JSON line, in the order
the calls returned, with paths relative to ROOT and files named by inode (a
temp is written under one name and linked or renamed to another). The
production code knows nothing of this: the wrappers replace module attributes
that every writer looks up at call time.
"""

from __future__ import annotations

import fcntl
import json
import os
import runpy
import stat
import sys
import threading


class _Serial:
    """Held around each recorded call and its log line: a thread lock, and an ``flock`` of the log so
    that several recorded processes (two imports side by side) log their calls in the order they ran."""

    def __init__(self) -> None:
        self.thread = threading.RLock()
        self.fd = -1

    def __enter__(self) -> None:
        self.thread.acquire()
        if self.fd >= 0:
            fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        if self.fd >= 0:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        self.thread.release()


_lock = _Serial()


def install(log_path: str, root: str) -> None:
    root = os.path.realpath(root)
    log = open(log_path, "a", encoding="utf-8")  # noqa: SIM115 - open for the life of the process
    _lock.fd = log.fileno()
    real = {n: getattr(os, n) for n in ("open", "write", "ftruncate", "fsync", "rename", "replace", "link",
                                         "unlink", "mkdir", "rmdir", "close")}
    fds: dict[int, tuple[str, str]] = {}  # fd -> (relative path when opened, file id)
    # A file id is its inode number, plus a generation once the run creates it: an inode freed
    # by an unlink and reused by a later file must not merge the two files' data.
    current: dict[int, str] = {}
    created = [0]

    seen = [0]  # how far this process has read the shared log for other processes' creations

    def file_id(ino: int, new: bool) -> str:
        if new:
            created[0] += 1
            current[ino] = f"{ino}.{os.getpid()}.{created[0]}"
        elif ino not in current or seen[0] < os.fstat(log.fileno()).st_size:
            with open(log_path, "rb") as fh:  # a file another recorded process created (under the lock)
                fh.seek(seen[0])
                for line in fh.read().splitlines():
                    rec = json.loads(line)
                    if rec["op"] == "creat":
                        current[int(rec["ino"].split(".", 1)[0])] = rec["ino"]
                seen[0] = fh.tell()
        return current.get(ino, str(ino))

    def rel(path: str) -> str | None:
        if path == root:
            return ""
        return path[len(root) + 1:] if path.startswith(root + "/") else None

    def where(path: str | bytes, dir_fd: int | None) -> str | None:
        p = os.fsdecode(path)
        if dir_fd is not None and not os.path.isabs(p):
            p = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), p)
        return rel(os.path.normpath(os.path.abspath(p)))

    def emit(rec: dict[str, object]) -> None:
        log.write(json.dumps(rec) + "\n")
        log.flush()

    def w_open(path, flags, mode=0o777, *, dir_fd=None):
        r = where(path, dir_fd)
        with _lock:
            existed = r is None or os.path.lexists(os.path.join(root, r))
            fd = real["open"](path, flags, mode, dir_fd=dir_fd)
            if r is not None:
                st = os.fstat(fd)
                new = stat.S_ISREG(st.st_mode) and not existed
                fds[fd] = (r, file_id(st.st_ino, new))
                if new:
                    emit({"op": "creat", "path": r, "ino": fds[fd][1]})
                elif stat.S_ISREG(st.st_mode) and flags & os.O_TRUNC:
                    emit({"op": "truncate", "ino": fds[fd][1], "size": 0})
        return fd

    def w_write(fd, data):
        with _lock:
            n = real["write"](fd, data)
            if fd in fds:
                end = os.lseek(fd, 0, os.SEEK_CUR)
                emit({"op": "write", "ino": fds[fd][1], "off": end - n, "data": bytes(memoryview(data)[:n]).hex()})
        return n

    def w_ftruncate(fd, length):
        with _lock:
            real["ftruncate"](fd, length)
            if fd in fds:
                emit({"op": "truncate", "ino": fds[fd][1], "size": length})

    def w_fsync(fd):
        with _lock:  # serialised with every other call: it covers exactly the calls logged before it
            real["fsync"](fd)
            if fd in fds:
                r, ino = fds[fd]
                if stat.S_ISDIR(os.fstat(fd).st_mode):
                    emit({"op": "fsync-dir", "path": os.readlink(f"/proc/self/fd/{fd}")[len(root) + 1:]
                          if os.readlink(f"/proc/self/fd/{fd}") != root else ""})
                else:
                    emit({"op": "fsync", "ino": ino})

    def w_close(fd):
        with _lock:
            fds.pop(fd, None)
            real["close"](fd)

    def two(name: str):
        def w(src, dst, *, src_dir_fd=None, dst_dir_fd=None, **kw):
            a, b = where(src, src_dir_fd), where(dst, dst_dir_fd)
            with _lock:
                ino = None
                if a is not None:
                    try:
                        ino = file_id(os.lstat(os.path.join(root, a)).st_ino, False)
                    except OSError:
                        pass
                real[name](src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd, **kw)
                if a is not None and b is not None:
                    emit({"op": "link" if name == "link" else "rename", "src": a, "dst": b, "ino": ino})
        return w

    def one(name: str):
        def w(path, *args, dir_fd=None, **kw):
            r = where(path, dir_fd)
            with _lock:
                real[name](path, *args, dir_fd=dir_fd, **kw)
                if r is not None:
                    emit({"op": name, "path": r})
        return w

    os.open = w_open
    os.write = w_write
    os.ftruncate = w_ftruncate
    os.fsync = w_fsync
    os.close = w_close
    os.rename = two("rename")
    os.replace = two("replace")
    os.link = two("link")
    os.unlink = one("unlink")
    os.remove = os.unlink
    os.mkdir = one("mkdir")
    os.rmdir = one("rmdir")


def main() -> None:
    log_path, root, sep, *args = sys.argv[1:]
    assert sep == "--" and args[0] == "-m", sys.argv
    install(log_path, root)
    sys.argv = [args[1], *args[2:]]
    runpy.run_module(args[1], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
