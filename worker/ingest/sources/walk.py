"""Bounded, symlink-safe listing of a store and bounded reads of its files.

A store is listed through :func:`cairn.worker.ingest.storefile.listing`: each
folder is opened relative to its parent without following a link, so a link
inside a store (to a file or a folder) is never entered or read, and
discovery never leaves the store it was pointed at, even when a folder is
swapped for a link while it is listed. A link or a non-regular file that
has a session's name is not read but returned as refused (its fixed code),
so the caller can report it. The store's own root may be a link (a user who
moved ``~/.claude`` elsewhere); it is resolved once. Work per store is
bounded: a depth limit, at most :data:`MAX_FILES` files, at most
:data:`HEAD_BYTES` read from each file (opened without following a link on
its way), and a directory that vanishes or cannot be read while it is
listed is skipped, not fatal.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator

from cairn.protocol.errors import CairnError
from cairn.worker.ingest.storefile import listing, open_file

MAX_FILES = 50_000
HEAD_BYTES = 32 << 10


def real_dir(path: str) -> str | None:
    """``path`` resolved, when it is a directory (a root given as a link is followed once)."""
    try:
        resolved = os.path.realpath(path)
        return resolved if stat.S_ISDIR(os.stat(resolved).st_mode) else None
    except OSError:
        return None


def real_file(path: str) -> tuple[str, os.stat_result] | None:
    """``(path, lstat)`` of a regular file that is not a symlink, else ``None``."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return (path, info) if stat.S_ISREG(info.st_mode) else None


def files(root: str, depth: int, keep: Callable[[str, str], bool], *, limit: int | None = None,
          refused: list[tuple[str, os.stat_result, str]] | None = None) -> Iterator[tuple[str, os.stat_result]]:
    """``(path, lstat)`` of the regular files under ``root`` at most ``depth`` directories down
    whose ``keep(parent_dir, name)`` is true; symlinks are neither listed nor entered. Entries kept
    by name that are not regular files (a symlink, a FIFO, a folder past ``depth``) are appended to
    ``refused`` as ``(path, lstat, code)`` when it is given."""
    for path, info, code in listing(root, depth, keep, limit=MAX_FILES if limit is None else limit):
        if code is None:
            yield path, info
        elif refused is not None:
            refused.append((path, info, code))


def head(path: str, size: int = HEAD_BYTES) -> bytes:
    """The first ``size`` bytes of a regular file, never through a symlink (on its way either);
    ``b""`` on any failure."""
    try:
        fd, info = open_file(path)
    except (CairnError, OSError):
        return b""
    try:
        return os.read(fd, size) if stat.S_ISREG(info.st_mode) else b""
    except OSError:
        return b""
    finally:
        os.close(fd)
