"""Read-only access to the SQLite stores some tools keep (Cursor, opencode, Goose).

A tool that is running holds its database open and may be writing to it, so
cairn never takes a write lock and never creates files beside it:

- the database is opened with ``mode=ro`` (a WAL database is read with its
  log, so recent turns are seen); a WAL database with no log beside it (the
  tool is closed: its last connection folded the log in and removed it) is
  opened with ``immutable=1`` at once, since SQLite would otherwise create
  the ``-wal`` and ``-shm`` files beside it, in the tool's folder, even to
  read (and, run as root, change their owner on every open); if an open or the first read fails
  because the file is locked or its shared-memory file cannot be made (a
  read-only directory), it is opened again with ``immutable=1``, which reads
  the main file as it is, without locks (turns still only in the log appear
  after the tool's next checkpoint);
- a symlink is refused (``E_PATH_SYMLINK``): a store file, or a folder on
  its way, replaced by a link must not send the reader elsewhere (the path
  is walked without following links, :mod:`cairn.worker.ingest.storefile`, and the
  file SQLite opened is checked to be the one walked to);
- errors map to fixed codes: a file that is not a database or is corrupt is
  ``E_IMPORT_MALFORMED``, one that cannot be opened ``E_IMPORT_UNREADABLE``,
  one locked even for an immutable read ``E_IMPORT_LOCKED``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cairn.protocol import boundedjson
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.worker.ingest.storefile import lstat

from ._common import SQLITE_MAGIC

MAGIC = SQLITE_MAGIC


def _uri(path: Path, immutable: bool) -> str:
    quoted = urllib.parse.quote(os.path.abspath(path))
    return f"file:{quoted}?mode=ro" + ("&immutable=1" if immutable else "")


def _check_file(path: Path) -> os.stat_result:
    try:
        info = lstat(str(path))
    except OSError as exc:
        raise CairnError(ErrorCode.IMPORT_UNREADABLE, f"{path.name}: cannot open ({exc.strerror})", path=str(path)) from None
    if stat.S_ISLNK(info.st_mode):
        raise CairnError(ErrorCode.PATH_SYMLINK, f"{path.name}: a symlink, not read", path=str(path))
    if not stat.S_ISREG(info.st_mode):
        raise CairnError(ErrorCode.IMPORT_UNREADABLE, f"{path.name}: not a regular file", path=str(path))
    if not os.access(path, os.R_OK):
        raise CairnError(ErrorCode.IMPORT_UNREADABLE, f"{path.name}: cannot open (permission denied)", path=str(path))
    return info


def _same_file(path: Path, info: os.stat_result) -> None:
    """The file SQLite opened by name is still the one :func:`_check_file` reached without links."""
    try:
        now = os.stat(path)
    except OSError as exc:
        raise CairnError(ErrorCode.IMPORT_UNREADABLE, f"{path.name}: cannot open ({exc.strerror})", path=str(path)) from None
    if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
        raise CairnError(ErrorCode.PATH_SYMLINK, f"{path.name}: replaced while opened, not read", path=str(path))


def translate(path: Path, exc: sqlite3.Error) -> CairnError:
    """The fixed-code error for a SQLite failure on ``path`` (no database text in the message)."""
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return CairnError(ErrorCode.IMPORT_LOCKED, f"{path.name}: database is locked", path=str(path))
    if "not a database" in text or "malformed" in text or "corrupt" in text or "no such table" in text:
        return CairnError(ErrorCode.IMPORT_MALFORMED, f"{path.name}: not a readable database", path=str(path))
    return CairnError(ErrorCode.IMPORT_UNREADABLE, f"{path.name}: cannot read database", path=str(path))


def _wal_without_log(path: Path) -> bool:
    """Whether ``path`` is a WAL database (header bytes 18-19 are 2) with no ``-wal`` file beside it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return False  # the open below says why
    try:
        header = os.pread(fd, 20, 0)
    except OSError:
        return False
    finally:
        os.close(fd)
    return header[18:20] == b"\x02\x02" and not os.path.lexists(f"{path}-wal")


def _connect(path: Path, immutable: bool) -> sqlite3.Connection:
    con = sqlite3.connect(_uri(path, immutable), uri=True, timeout=0.0, check_same_thread=False)
    try:
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except BaseException:
        con.close()
        raise
    return con


@contextlib.contextmanager
def open_ro(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to ``path``, closed on exit; failures carry fixed codes."""
    path = Path(path)
    info = _check_file(path)
    try:
        try:
            con = _connect(path, immutable=_wal_without_log(path))
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if "locked" not in text and "busy" not in text and "unable to open" not in text:
                raise
            con = _connect(path, immutable=True)
    except sqlite3.Error as exc:
        raise translate(path, exc) from None
    try:
        _same_file(path, info)
        yield con
    except sqlite3.Error as exc:
        raise translate(path, exc) from None
    finally:
        con.close()


def tables(con: sqlite3.Connection) -> set[str]:
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in con.execute(f"PRAGMA table_info({table})")}  # table names are ours, never input


def json_value(raw: Any) -> Any:
    """A JSON column value decoded, or ``None`` when it is not JSON text (a row being written)."""
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    if not isinstance(raw, str):
        return None
    try:
        return boundedjson.loads(raw)
    except ValueError:  # not JSON, or nested past the bound
        return None
