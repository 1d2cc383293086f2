"""Bounded, symlink-safe listing of a store and bounded reads of its files.

A store is listed with ``os.scandir`` without following any symlink: a link
inside a store (to a file or a directory) is never listed, so discovery never
leaves the store it was pointed at. The store's own root may be a link (a
user who moved ``~/.claude`` elsewhere); it is resolved once. Work per store
is bounded: a depth limit, at most :data:`MAX_FILES` files, at most
:data:`HEAD_BYTES` read from each file, and a directory that vanishes or
cannot be read while it is listed is skipped, not fatal.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator

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


def files(root: str, depth: int, keep: Callable[[str, str], bool], *,
          limit: int | None = None) -> Iterator[tuple[str, os.stat_result]]:
    """``(path, lstat)`` of the regular files under ``root`` at most ``depth`` directories down
    whose ``keep(parent_dir, name)`` is true; symlinks are neither listed nor entered."""
    limit = MAX_FILES if limit is None else limit
    count = 0
    stack: list[tuple[str, int]] = [(root, 0)]
    while stack:
        current, level = stack.pop()
        try:
            with os.scandir(current) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue  # vanished or unreadable while listed: skip
        subdirs: list[tuple[str, int]] = []
        for entry in entries:
            try:
                if entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if level < depth:
                        subdirs.append((entry.path, level + 1))
                    continue
                if not entry.is_file(follow_symlinks=False) or not keep(current, entry.name):
                    continue
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            yield entry.path, info
            count += 1
            if count >= limit:
                return
        stack.extend(reversed(subdirs))


def head(path: str, size: int = HEAD_BYTES) -> bytes:
    """The first ``size`` bytes of a regular file, never through a symlink; ``b""`` on any failure."""
    from pathlib import Path

    from cairn.protocol.errors import CairnError
    from cairn.worker.importers._common import open_source

    try:
        fd, _ = open_source(Path(path), follow_symlinks=False)
    except CairnError:
        return b""
    try:
        return os.read(fd, size)
    except OSError:
        return b""
    finally:
        os.close(fd)
