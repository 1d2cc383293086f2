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
canonical root): every component is walked without following links. Within a
:func:`walks` scope (an import) a folder is walked to once and its descriptor
kept for the next files in it.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
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


#: at most this many folders' descriptors are kept by :func:`walks` (the oldest is closed first)
WALKS_KEPT = 64
#: folders already walked to in the current :func:`walks` scope: path -> descriptor (``None``: no scope)
_walked: dict[str, int] | None = None
_walk_depth = 0
_walk_lock = threading.Lock()


@contextlib.contextmanager
def walks() -> Iterator[None]:
    """A scope in which each folder is walked to from ``/`` once: later opens of files in it start
    from the descriptor the first walk opened (a duplicate of it), not from ``/`` again.

    An import opens each session file up to three times (discovery's head read, the manifest's
    survey, the read itself), each time walking every folder from ``/``: about 20 opens per file.
    The descriptor kept was reached without following a link, so reading through it still never
    leaves the store; a folder swapped for a link during the scope is not noticed (the reads go on
    in the folder that was walked, as one read in flight would). Scopes nest and are shared by
    threads; the descriptors are closed when the outermost scope ends."""
    global _walked, _walk_depth
    with _walk_lock:
        if _walk_depth == 0:
            _walked = {}
        _walk_depth += 1
    try:
        yield
    finally:
        with _walk_lock:
            _walk_depth -= 1
            if _walk_depth == 0:
                held, _walked = _walked or {}, None
                for fd in held.values():
                    os.close(fd)


def _parent(path: str) -> tuple[int, str]:
    """An open descriptor of ``path``'s folder, reached from ``/`` without following a link, and
    the last component's name. Raises ``E_PATH_SYMLINK``, or the ``OSError`` of a folder that
    cannot be opened."""
    parts = [p for p in os.path.abspath(path).split(os.sep) if p]
    if not parts:
        raise IsADirectoryError(21, "Is a directory", path)
    folder = os.sep + os.sep.join(parts[:-1])
    with _walk_lock:
        known = _walked.get(folder) if _walked is not None else None
        if known is not None:
            return os.dup(known), parts[-1]
    fd = _walk(path, parts)
    with _walk_lock:
        if _walked is not None and folder not in _walked:
            if len(_walked) >= WALKS_KEPT:  # a history of many folders (Codex keeps one a day) holds few
                os.close(_walked.pop(next(iter(_walked))))
            _walked[folder] = os.dup(fd)
    return fd, parts[-1]


def _walk(path: str, parts: list[str]) -> int:
    """A descriptor of the folder holding ``parts[-1]``, each folder opened in its parent."""
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
    return fd


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
