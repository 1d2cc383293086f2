"""What discovery finds: stores of sessions, and the sessions in them."""

from __future__ import annotations

import time

import attrs


@attrs.frozen(kw_only=True)
class SessionRef:
    """One session on disk: a file (``key`` is ``None``) or one session of a database (``key`` is
    the session id the importer gives it)."""

    format: str
    path: str
    key: str | None = None
    workspace: str | None = None  # the directory the session ran in, when the store records it
    mtime: float = 0.0  # last activity (seconds since the epoch)
    size: int = 0  # bytes of the file (a database's sessions share its size and report 0)
    # a fixed ``E_…`` code when the entry is not read (a symlink, a FIFO or a folder with a session's name)
    error: str | None = None
    message: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"format": self.format, "path": self.path, "key": self.key, "workspace": self.workspace,
                "mtime": round(self.mtime, 3), "size": self.size, "error": self.error, "message": self.message}


@attrs.frozen(kw_only=True)
class Store:
    """A place where one tool keeps sessions: a directory tree or a database file."""

    format: str
    path: str
    sessions: tuple[SessionRef, ...] = ()
    size: int = 0
    error: str | None = None  # a fixed ``E_…`` code when the store could not be read (others go on)
    message: str | None = None
    truncated: bool = False  # more files than the per-store bound; the rest was not listed
    refused: tuple[SessionRef, ...] = ()  # entries with a session's name that are not read (each with its code)

    @property
    def first(self) -> float | None:
        return min((s.mtime for s in self.sessions), default=None)

    @property
    def last(self) -> float | None:
        return max((s.mtime for s in self.sessions), default=None)

    def to_json(self, *, with_sessions: bool = True) -> dict[str, object]:
        out: dict[str, object] = {
            "format": self.format, "path": self.path, "sessions": len(self.sessions), "size": self.size,
            "first": _day(self.first), "last": _day(self.last), "error": self.error, "message": self.message,
            "truncated": self.truncated, "workspaces": workspace_counts(self.sessions),
            "refused": len(self.refused),
        }
        if with_sessions:
            out["items"] = [s.to_json() for s in self.sessions]
            out["refused_items"] = [s.to_json() for s in self.refused]
        return out


def workspace_counts(sessions: tuple[SessionRef, ...] | list[SessionRef]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for s in sessions:
        key = s.workspace or ""
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _day(stamp: float | None) -> str | None:
    return None if stamp is None else time.strftime("%Y-%m-%d", time.gmtime(stamp))
