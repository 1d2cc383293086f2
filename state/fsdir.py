"""Pinned directory handles and the durable primitives built on them.

Every path below a root is opened one component at a time, relative to its
parent's file descriptor, with ``O_NOFOLLOW | O_DIRECTORY``. A component that
is a symlink or not a directory fails closed (``E_PATH_SYMLINK`` /
``E_PATH_NOT_DIRECTORY``): a directory swapped for a symlink between two
operations can never redirect a write into another tree. Names are
restricted to ``[A-Za-z0-9._-]`` (not ``.``/``..``) so a caller's string can
never be interpreted as a path.

Durability: a published file is written completely to a temp name, fsynced,
then ``link()``-ed (exclusive: EEXIST means another writer won) or
``rename()``-d (replace) to its final name, and the directory is fsynced.
A visible record is therefore never torn. Temps are named
``.tmp-<pid>-<random>`` so a collector can tell whose they were.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.state import crash, stateroot

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

NAME_RE = re.compile(r"^[A-Za-z0-9._-]{1,255}$")
TEMP_PREFIX = ".tmp-"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC


def check_name(name: str) -> str:
    if not NAME_RE.match(name) or name in (".", ".."):
        raise CairnError(ErrorCode.PATH_INVALID_NAME, f"invalid path component {name!r}"[:120])
    return name


def split_rel(rel: str) -> list[str]:
    """Split a '/'-separated relative path into validated components ('' = none)."""
    if rel in ("", "."):
        return []
    if rel.startswith("/"):
        raise CairnError(ErrorCode.PATH_OUTSIDE_ROOT, f"absolute path {rel!r} where a relative one is required"[:160])
    return [check_name(p) for p in rel.split("/")]


def not_regular(where: str, mode: int) -> CairnError:
    """The refusal of a FIFO, device, socket or directory where a regular file belongs."""
    kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a directory" if stat.S_ISDIR(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "not a regular file")
    return CairnError(ErrorCode.PATH_NOT_REGULAR, f"{where} is {kind}, not a regular file; refusing it", path=where)


def _classify_open_error(parent_fd: int, name: str, exc: OSError, where: str) -> CairnError:
    try:
        st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    except OSError:
        st = None
    if st is not None and stat.S_ISLNK(st.st_mode):
        return CairnError(ErrorCode.PATH_SYMLINK, f"{where}: component {name!r} is a symlink; refusing to follow")
    if st is not None and not stat.S_ISDIR(st.st_mode):
        return CairnError(ErrorCode.PATH_NOT_DIRECTORY, f"{where}: component {name!r} is not a directory")
    if exc.errno == errno.ENOENT:
        return CairnError(ErrorCode.NOT_FOUND, f"{where}: {name!r} does not exist")
    return CairnError(ErrorCode.IO_FAILED, f"{where}: cannot open {name!r}: {exc.strerror}")


_pool: ThreadPoolExecutor | None = None
_entry_synced: set[tuple[int, int]] = set()  # directories whose entry this process knows durable (fsynced or not empty)


def fsync_all(fds: list[int], label: str) -> None:
    """fsync every descriptor, concurrently (a crash point ``label`` before each, in order).

    Waiting on several fsyncs at once lets the file system commit them
    together (ext4's journal commits all waiting transactions as one), so
    making N independent files or directories durable costs about one
    commit, not N. Raises the first error after every fsync has returned.
    """
    global _pool
    for _ in fds:
        crash.point(label)
    if len(fds) <= 1:
        for fd in fds:
            os.fsync(fd)
        return
    if _pool is None:
        from concurrent.futures import ThreadPoolExecutor  # the first time several fsyncs wait together
        _pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="cairn-fsync")
    errors = [f.exception() for f in [_pool.submit(os.fsync, fd) for fd in fds]]
    first = next((e for e in errors if e is not None), None)
    if first is not None:
        raise first


def _is_empty(fd: int) -> bool:
    """Whether the directory ``fd`` holds nothing (its first entry read, not the whole listing)."""
    with os.scandir(fd) as it:
        return next(it, None) is None


class PinnedDir:
    """An open directory file descriptor; children are reached only through it."""

    __slots__ = ("fd", "path")

    def __init__(self, fd: int, path: str) -> None:
        self.fd = fd
        self.path = path  # for messages only; never used to reach files

    @classmethod
    def open_root(cls, path: str | os.PathLike[str], *, create: bool = False) -> PinnedDir:
        """Open a root chosen by the user (its own path may contain symlinks)."""
        p = os.fspath(path)
        if create:
            os.makedirs(p, exist_ok=True)
        try:
            fd = os.open(p, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            raise CairnError(ErrorCode.NOT_FOUND, f"directory {p} does not exist") from None
        except NotADirectoryError:
            raise CairnError(ErrorCode.PATH_NOT_DIRECTORY, f"{p} is not a directory") from None
        return cls(fd, p)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> PinnedDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    # -- navigation -------------------------------------------------------
    def child(self, name: str, *, create: bool = False, mode: int = 0o700,
              defer: list[PinnedDir] | None = None) -> PinnedDir:
        """Open (or create) the directory ``name`` here.

        ``defer``: a directory made here is not followed by this directory's
        fsync; this directory is appended to ``defer`` instead, and the caller
        fsyncs it before putting anything in the new one (several made at once
        share their parents' fsyncs).

        A private state root (``.cairn/state``) is checked before it is handed
        out (:func:`state.stateroot.verify`, ``E_STATE_FOREIGN``): every path
        into private state passes through here.
        """
        check_name(name)
        where = f"{self.path}/{name}"
        created = False
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=self.fd)
        except OSError as exc:
            if exc.errno == errno.ENOENT and create:
                crash.point(f"mkdir {name}")
                try:
                    os.mkdir(name, mode, dir_fd=self.fd)
                except FileExistsError:
                    pass
                else:
                    created = True
                    try:
                        if defer is not None:
                            defer.append(self)
                        else:
                            self._sync_dir()
                    except BaseException:
                        # fatal for this write (ADR 0021): drop the new, empty directory so the next
                        # attempt makes it afresh and fsyncs its parent again, never trusting this fsync
                        try:
                            os.rmdir(name, dir_fd=self.fd)
                        except OSError:
                            pass
                        raise
                try:
                    fd = os.open(name, _DIR_FLAGS, dir_fd=self.fd)
                except OSError as exc2:
                    raise _classify_open_error(self.fd, name, exc2, where) from None
            else:
                raise _classify_open_error(self.fd, name, exc, where) from None
        else:
            if create:
                # an empty directory may be one a killed writer made but never fsynced its parent for
                # (it is empty until that fsync returns): make its entry durable before anything goes
                # in (once per directory and process). A directory seen holding something had its
                # entry made durable by whoever put the first thing in it, so it is not listed again
                # (listing the sessions' or captures' folder on every open made each capture cost
                # the number of sessions)
                try:
                    info = os.fstat(fd)
                    key = (info.st_dev, info.st_ino)
                    if key not in _entry_synced:
                        if _is_empty(fd):
                            self._sync_dir()
                        _entry_synced.add(key)
                except BaseException:
                    os.close(fd)
                    raise
        d = PinnedDir(fd, where)
        if stateroot.is_state_root(self.path, name):
            try:
                stateroot.verify(d, created=created)
            except BaseException:
                d.close()
                raise
        return d

    def descend(self, rel: str, *, create: bool = False) -> PinnedDir:
        """Open a relative directory path component by component (caller closes it)."""
        parts = split_rel(rel)
        if not parts:
            return PinnedDir(os.dup(self.fd), self.path)
        cur = self.child(parts[0], create=create)
        for part in parts[1:]:
            nxt = cur.child(part, create=create)
            cur.close()
            cur = nxt
        return cur

    # -- reads ------------------------------------------------------------
    def read(self, name: str, *, limit: int = 64 << 20, follow: bool = False) -> bytes | None:
        """Bytes of a regular file, or None if absent.

        Symlinks fail closed (``E_PATH_SYMLINK``) unless ``follow`` (a file
        the user links on purpose, such as a dotfile): its target must then
        pass the same checks. The open never blocks (``O_NONBLOCK``: a FIFO
        put in a file's place would otherwise hang the reader until a writer
        appears) and anything that is not a regular file once opened -- a
        FIFO, a device, a directory -- is refused with ``E_PATH_NOT_REGULAR``
        before a byte is read. More than ``limit`` bytes is
        ``E_RECORD_TOO_LARGE``; any other failure to open is ``E_IO_FAILED``
        (``detail["reason"]``: the system's reason).
        """
        check_name(name)
        where = f"{self.path}/{name}"
        try:
            fd = os.open(name, _READ_FLAGS & ~os.O_NOFOLLOW if follow else _READ_FLAGS, dir_fd=self.fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _classify_open_error(self.fd, name, exc, where) from None
            raise CairnError(ErrorCode.IO_FAILED, f"{where}: cannot open ({exc.strerror})",
                             reason=exc.strerror or "") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise not_regular(where, st.st_mode)
            if st.st_size > limit:
                raise CairnError(ErrorCode.RECORD_TOO_LARGE, f"{where}: {st.st_size} bytes exceeds {limit}")
            first = os.read(fd, st.st_size + 1)  # one call for a file that did not grow
            if len(first) <= st.st_size:
                return first
            chunks = [first]
            while True:
                b = os.read(fd, 1 << 20)
                if not b:
                    break
                chunks.append(b)
                if sum(map(len, chunks)) > limit:
                    raise CairnError(ErrorCode.RECORD_TOO_LARGE, f"{where} grew past {limit} bytes")
            return b"".join(chunks)
        finally:
            os.close(fd)

    def listdir(self) -> list[str]:
        return os.listdir(self.fd)

    def scandir(self) -> Iterator[os.DirEntry[str]]:
        return os.scandir(self.fd)

    def exists(self, name: str) -> bool:
        check_name(name)
        try:
            os.stat(name, dir_fd=self.fd, follow_symlinks=False)
            return True
        except FileNotFoundError:
            return False

    def stat(self, name: str) -> os.stat_result | None:
        check_name(name)
        try:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def clock(self) -> float:
        """The storage's own clock: touch ``.clock`` here and read its mtime."""
        try:
            os.utime(".clock", dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            fd = os.open(".clock", os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=self.fd)
            os.close(fd)
            os.utime(".clock", dir_fd=self.fd, follow_symlinks=False)
        return os.stat(".clock", dir_fd=self.fd, follow_symlinks=False).st_mtime_ns / 1e9

    # -- durable writes ---------------------------------------------------
    def _write_temp(self, data: bytes, mode: int, exact: int | None = None) -> str:
        tmp, fd = self.stage(data, mode=mode)
        try:
            if exact is not None:
                os.fchmod(fd, exact)  # the umask does not apply: the mode the replaced file had
            crash.point("fsync-temp")
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            self.unlink_quiet(tmp)
            raise
        os.close(fd)
        return tmp

    def stage(self, data: bytes, *, mode: int = 0o600) -> tuple[str, int]:
        """Write ``data`` to a new temp here, not yet fsynced: ``(temp name, open descriptor)``.

        The caller fsyncs the descriptor (:func:`fsync_all`) before linking
        the temp (:meth:`link_staged`), and closes it.
        """
        tmp = f"{TEMP_PREFIX}{os.getpid()}-{os.urandom(6).hex()}"
        crash.point("write-temp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=self.fd)
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
        except BaseException:
            os.close(fd)
            self.unlink_quiet(tmp)  # a failed write (no space) leaves no temp behind
            raise
        return tmp, fd

    def link_staged(self, tmp: str, name: str) -> bool:
        """Link a complete, fsynced temp to ``name`` (exclusive) and drop the temp; False if ``name`` existed.

        The directory is not fsynced: the caller does it before relying on the name.
        """
        check_name(name)
        try:
            crash.point(f"link {name}")
            os.link(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd, follow_symlinks=False)
            won = True
        except FileExistsError:
            won = False
        finally:
            try:
                crash.point("unlink-temp")
                self.unlink_quiet(tmp)
            except OSError:
                pass  # the link decided the outcome; a temp left behind is collected later
        return won

    def unlink_quiet(self, name: str) -> None:
        try:
            os.unlink(name, dir_fd=self.fd)
        except FileNotFoundError:
            pass

    def publish(self, name: str, data: bytes, *, mode: int = 0o600, sync: bool = True) -> bool:
        """Exclusively publish complete bytes under ``name``. False if it already existed.

        With ``sync=False`` the directory is not fsynced: the caller fsyncs it
        once after several publications (:meth:`sync`) before relying on them.
        """
        check_name(name)
        won = self.link_staged(self._write_temp(data, mode), name)
        if sync:
            # also when the name was there: it may be one a writer linked and then lost (killed, or its
            # directory fsync failed) before the fsync that makes it durable; the caller relies on it now
            self._sync_dir()
        return won

    def replace(self, name: str, data: bytes, *, mode: int = 0o600, keep_mode: bool = False) -> None:
        """Durably replace ``name`` with complete bytes (temp, fsync, rename, fsync dir). ``keep_mode``: a
        file that exists keeps its permission bits exactly (a user's 0600 settings file stays private);
        ``mode`` is then only for a new file."""
        check_name(name)
        st = self.stat(name)
        if st is not None and stat.S_ISLNK(st.st_mode):
            raise CairnError(ErrorCode.PATH_SYMLINK, f"{self.path}/{name} is a symlink; refusing to replace it")
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise not_regular(f"{self.path}/{name}", st.st_mode)
        kept = stat.S_IMODE(st.st_mode) if keep_mode and st is not None else None
        tmp = self._write_temp(data, mode if kept is None else kept & 0o600, exact=kept)
        try:
            crash.point(f"rename {name}")
            os.rename(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            self.unlink_quiet(tmp)
            raise
        self._sync_dir()

    def create_empty(self, name: str, *, mode: int = 0o600, sync: bool = True) -> bool:
        """Exclusively create an empty file (a marker). False if it existed.

        ``sync=False``: this directory is not fsynced; the caller does it before relying on the marker."""
        check_name(name)
        crash.point(f"create {name}")
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=self.fd)
        except FileExistsError:
            if sync:
                self._sync_dir()  # it may be one a writer made but lost before this fsync (see publish)
            return False
        os.close(fd)
        if sync:
            self._sync_dir()
        return True

    def remove(self, name: str, *, sync: bool = True) -> bool:
        """Remove a file; False if it was already absent."""
        if not self._drop(name, "unlink", os.unlink):
            return False
        if sync:
            self._sync_dir()
        return True

    def remove_dir(self, name: str) -> bool | None:
        """Remove an empty directory: True; False if absent; None if not empty (left alone).

        ``rmdir`` never follows a symlink and never removes a directory with
        anything in it, so only an empty directory can ever go.
        """
        try:
            if not self._drop(name, "rmdir", os.rmdir):
                return False
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                return None
            raise
        self._sync_dir()
        return True

    def _drop(self, name: str, label: str, drop: Callable[..., None]) -> bool:
        """``drop(name)`` under a crash point; False if ``name`` was already absent."""
        check_name(name)
        crash.point(f"{label} {name}")
        try:
            drop(name, dir_fd=self.fd)
        except FileNotFoundError:
            return False
        return True

    def _sync_dir(self) -> None:
        """Make this directory's entries durable (a crash point first)."""
        crash.point("fsync-dir")
        os.fsync(self.fd)

    def sync(self) -> None:
        self._sync_dir()

    def collect_temps(self, *, older_than: float = 3600.0, now: float | None = None) -> int:
        """Remove stray temps whose writer is dead or that are older than ``older_than`` seconds."""
        removed = 0
        now = time.time() if now is None else now
        import psutil  # here: 10 ms of every process's start (python -X importtime) for a rare sweep

        for name in self.listdir():
            if not name.startswith(TEMP_PREFIX):
                continue
            try:
                pid = int(name[len(TEMP_PREFIX):].split("-", 1)[0])
            except ValueError:
                pid = -1
            st = self.stat(name)
            if st is None:
                continue
            if (pid > 0 and pid != os.getpid() and not psutil.pid_exists(pid)) or now - st.st_mtime > older_than:
                if self.remove(name, sync=False):
                    removed += 1
        if removed:
            self._sync_dir()
        return removed


def refusal(base: PinnedDir | str) -> CairnError | None:
    """The refusal of ``base``'s ``.cairn/state`` (``base`` holds ``.cairn``), or None if it is ours or absent.

    Opens it the ordinary way (:mod:`state.stateroot` checks it), so an earlier version's folder is adopted
    here too. Long-running entry points (the language server, ``cairn watch``) ask once at their start, to say
    it once rather than per job.
    """
    try:
        if isinstance(base, str):
            with PinnedDir.open_root(base) as root:
                root.descend(f"{stateroot.CAIRN_NAME}/{stateroot.STATE_NAME}").close()
        else:
            base.descend(f"{stateroot.CAIRN_NAME}/{stateroot.STATE_NAME}").close()
    except CairnError as exc:
        return exc if exc.code is ErrorCode.STATE_FOREIGN else None  # anything else: each use says it
    return None
