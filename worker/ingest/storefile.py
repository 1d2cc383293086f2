"""Files of a tool's session store, reached without following a symlink anywhere on the way.

A store's root is resolved once (a user who moved ``~/.claude`` elsewhere
links it; :func:`canonical`); below it, every folder is opened relative to
its parent's descriptor with ``O_NOFOLLOW | O_DIRECTORY`` and the file
itself with ``O_NOFOLLOW``, so a folder or a file swapped for a symlink
between a check and an open can never send the reader out of the store: the
open fails with ``E_PATH_SYMLINK`` instead. The same walk serves discovery
(listing and head reads), imports of discovered or watched sessions, and
the watcher's stat of a changed file.

Paths handed to :func:`open_file` and :func:`lstat` are absolute and
canonical (made by :func:`canonical` or listed by :func:`listing` under a
canonical root): every component is walked without following links.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator

from cairn.protocol.errors import CairnError, ErrorCode

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC


def canonical(path: str) -> str:
    """``path`` absolute, with its folder resolved: the form :func:`open_file` accepts. A final
    component that is a link to a folder is resolved too (a root given as a link is followed once);
    a link to anything else stays as named, to be refused."""
    head, tail = os.path.split(os.path.abspath(path))
    out = os.path.join(os.path.realpath(head), tail) if tail else os.path.realpath(head)
    if os.path.islink(out) and os.path.isdir(out):
        return os.path.realpath(out)
    return out


def symlink_refused(path: str, name: str | None = None) -> CairnError:
    """``E_PATH_SYMLINK`` for ``path`` (``name``: the folder on its way that is the link)."""
    base = os.path.basename(path) or path
    what = f"the folder {name!r} on its path is a symlink" if name else "a symlink"
    return CairnError(ErrorCode.PATH_SYMLINK, f"{base}: {what}, not read", path=path)


def kind(mode: int) -> str:
    """What a non-regular file is, for a message."""
    return ("a symlink" if stat.S_ISLNK(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a directory"
            if stat.S_ISDIR(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _parent(path: str) -> tuple[int, str]:
    """An open descriptor of ``path``'s folder, reached from ``/`` without following a link, and
    the last component's name. Raises ``E_PATH_SYMLINK``, or the ``OSError`` of a folder that
    cannot be opened."""
    parts = [p for p in os.path.abspath(path).split(os.sep) if p]
    if not parts:
        raise IsADirectoryError(21, "Is a directory", path)
    fd = os.open(os.sep, DIR_FLAGS)
    try:
        for name in parts[:-1]:
            try:
                child = os.open(name, DIR_FLAGS, dir_fd=fd)
            except OSError:
                if _is_link(name, fd):
                    raise symlink_refused(path, name) from None
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd, parts[-1]


def open_file(path: str) -> tuple[int, os.stat_result]:
    """A read-only, non-blocking descriptor of ``path`` and its ``fstat`` (the caller owns it and
    checks that it is a regular file). ``E_PATH_SYMLINK`` when ``path`` or a folder on its way is
    a symlink; an ``OSError`` when it cannot be opened otherwise."""
    fd = _open_last(path, FILE_FLAGS)
    try:
        return fd, os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise


def lstat(path: str) -> os.stat_result:
    """The status of ``path`` itself (a final symlink is reported, not followed), reached without
    following a link on the way (``E_PATH_SYMLINK``); an ``OSError`` when it cannot be reached."""
    parent, name = _parent(path)
    try:
        return os.stat(name, dir_fd=parent, follow_symlinks=False)
    finally:
        os.close(parent)


def open_dir(path: str) -> int:
    """A descriptor of the folder ``path``, reached without following a link (``E_PATH_SYMLINK``)."""
    if not [p for p in os.path.abspath(path).split(os.sep) if p]:
        return os.open(os.sep, DIR_FLAGS)
    return _open_last(path, DIR_FLAGS)


def _open_last(path: str, flags: int) -> int:
    """The last part of ``path`` opened with ``flags`` in its parent, reached without a link on the way."""
    parent, name = _parent(path)
    try:
        try:
            return os.open(name, flags, dir_fd=parent)
        except OSError:
            if _is_link(name, parent):
                raise symlink_refused(path) from None
            raise
    finally:
        os.close(parent)


Keep = Callable[[str, str], bool]


def listing(root: str, depth: int, keep: Keep, *, limit: int) -> Iterator[tuple[str, os.stat_result, str | None]]:
    """``(path, lstat, code)`` of the entries under ``root`` (at most ``depth`` folders down, at most
    ``limit`` of them) whose ``keep(parent_folder, name)`` is true: ``code`` is ``None`` for a regular
    file, ``E_PATH_SYMLINK`` for a symlink, ``E_PATH_NOT_REGULAR`` for anything else (a FIFO, a
    device, a folder where no folder is entered). Folders are opened relative to their parent with
    ``O_NOFOLLOW``: a symlinked folder is never entered, even one swapped in while listed. A folder
    that vanishes or cannot be read is skipped, and so is a ``root`` that cannot be reached without
    following a link (it is canonical: it became one since)."""
    try:
        fd = open_dir(root)
    except (CairnError, OSError):
        return
    count = [0]
    try:
        yield from _list(fd, root, 0, depth, keep, limit, count)
    finally:
        os.close(fd)


def _list(fd: int, where: str, level: int, depth: int, keep: Keep, limit: int,
          count: list[int]) -> Iterator[tuple[str, os.stat_result, str | None]]:
    try:
        with os.scandir(fd) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return  # vanished or unreadable while listed: skip
    subdirs: list[str] = []
    for entry in entries:
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        mode = info.st_mode
        if stat.S_ISDIR(mode) and level < depth:
            subdirs.append(entry.name)
            continue
        if not keep(where, entry.name):
            continue
        code = (None if stat.S_ISREG(mode) else str(ErrorCode.PATH_SYMLINK) if stat.S_ISLNK(mode)
                else str(ErrorCode.PATH_NOT_REGULAR))
        yield os.path.join(where, entry.name), info, code
        count[0] += 1
        if count[0] >= limit:
            return
    for name in subdirs:
        try:
            child = os.open(name, DIR_FLAGS, dir_fd=fd)
        except OSError:
            continue  # swapped for a link, vanished or unreadable since listed: not entered
        try:
            yield from _list(child, os.path.join(where, name), level + 1, depth, keep, limit, count)
        finally:
            os.close(child)
        if count[0] >= limit:
            return
