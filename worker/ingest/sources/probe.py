"""Which workspace a session belongs to, read cheaply from what its store records.

Files are probed from their first :data:`walk.HEAD_BYTES` only, with a regular
expression for the field that names the directory (``cwd``, ``working_dir``,
``workspaceDirectory``, Cline's ``# Current Working Directory (…)``); a
database is asked for its sessions' directories. Gemini CLI names a project
directory by a slug (its ``.project_root`` file holds the path) or, in older
versions, by ``sha256(path)``, matched against the directories already known.
Claude Code names a project folder after the directory (:func:`claude_folder`),
so a session file whose head names none (unreadable, malformed) still belongs
to the workspace whose folder holds it.
Nothing here parses a whole transcript, and nothing raises: a value that
cannot be read is ``None``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import urllib.parse
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from cairn.protocol import boundedjson

from . import walk
from .model import SessionRef

if TYPE_CHECKING:
    from types import ModuleType


def _db() -> ModuleType:
    """The SQLite helpers, loaded when a database store is probed: most homes have none, and ``sqlite3``
    costs an import with nothing new 2 ms of start-up (``python -X importtime``)."""
    from cairn.worker.ingest.importers import _sqlite  # only for a database store: docstring

    return _sqlite

_KEYS = {
    "claude-code": re.compile(rb'"cwd"\s*:\s*"((?:[^"\\]|\\.)*)"'),
    "codex": re.compile(rb'"cwd"\s*:\s*"((?:[^"\\]|\\.)*)"'),
    "qwen-code": re.compile(rb'"cwd"\s*:\s*"((?:[^"\\]|\\.)*)"'),
    "copilot-cli": re.compile(rb'"cwd"\s*:\s*"((?:[^"\\]|\\.)*)"'),
    "goose": re.compile(rb'"working_dir"\s*:\s*"((?:[^"\\]|\\.)*)"'),
    "continue": re.compile(rb'"workspaceDirectory"\s*:\s*"((?:[^"\\]|\\.)*)"'),
    "cline": re.compile(rb"# Current Working Directory \(((?:[^)\\]|\\.)*)\)"),
    "roo-code": re.compile(rb"# Current Working Directory \(((?:[^)\\]|\\.)*)\)"),
}


def normal(path: str | None) -> str | None:
    """A directory as an absolute, normalised path (``file://`` URIs decoded), or ``None``."""
    if not path:
        return None
    if path.startswith("file://"):
        path = urllib.parse.unquote(urllib.parse.urlparse(path).path)
    if not os.path.isabs(path):
        return None
    return os.path.normpath(path)


def _json_string(raw: bytes) -> str | None:
    try:
        value = boundedjson.loads('"' + raw.decode("utf-8", "replace") + '"')
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def claude_folder(directory: str) -> str:
    """The project folder name Claude Code gives ``directory``: each character but a letter or a
    digit becomes ``-`` (a folder name read this way is unchanged)."""
    return re.sub(r"[^A-Za-z0-9]", "-", directory)


def cursor_folder(directory: str) -> str:
    """The project folder name Cursor gives ``directory`` under ``~/.cursor/projects``: each run of
    characters but letters and digits becomes one ``-``, with none at either end (a Windows drive letter
    is written in lower case, so names are compared without case)."""
    return re.sub(r"[^A-Za-z0-9]+", "-", directory).strip("-")


def cursor_project(folder: str, known: Iterable[str]) -> str | None:
    """The directory among ``known`` whose Cursor project folder is named ``folder`` (exact case first)."""
    candidates = list(known)
    for same in (lambda a, b: a == b, lambda a, b: a.lower() == b.lower()):
        for directory in candidates:
            if same(cursor_folder(directory), folder):
                return directory
    return None


def file_workspace(fmt: str, path: str) -> str | None:
    """The directory a session file records, from its head."""
    key = _KEYS.get(fmt)
    if key is None:
        return None
    match = key.search(walk.head(path))
    return normal(_json_string(match.group(1))) if match else None


class GeminiProjects:
    """Gemini CLI project directories → workspace, from ``.project_root``, ``projects.json`` or a hash."""

    def __init__(self, gemini_dir: str, known: Iterable[str]) -> None:
        self.by_slug: dict[str, str] = {}
        self.seen: dict[str, str | None] = {}  # project folder -> workspace, read once per scan
        self.by_hash = {hashlib.sha256(k.encode()).hexdigest(): k for k in known}
        raw = walk.head(os.path.join(gemini_dir, "projects.json"), 1 << 20)
        try:
            projects = boundedjson.loads(raw.decode("utf-8", "replace")).get("projects", {}) if raw else {}
        except (ValueError, AttributeError):
            projects = {}
        if isinstance(projects, dict):
            for root, slug in projects.items():
                if isinstance(root, str) and isinstance(slug, str):
                    self.by_slug[slug] = root

    def workspace(self, chats_dir: str) -> str | None:
        project_dir = os.path.dirname(chats_dir)
        if project_dir not in self.seen:
            slug = os.path.basename(project_dir)
            root = walk.head(os.path.join(project_dir, ".project_root"), 4096).decode("utf-8", "replace").strip()
            self.seen[project_dir] = normal(root or self.by_slug.get(slug) or self.by_hash.get(slug))
        return self.seen[project_dir]


def _stamp(value: object, fallback: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return fallback
    if isinstance(value, str):
        try:
            parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00").replace(" ", "T"))
        except ValueError:
            return fallback
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=dt.UTC)
        return parsed.timestamp()
    return value / 1000.0 if value > 10**11 else float(value)


def opencode_sessions(path: str, mtime: float) -> list[SessionRef]:
    with _db().open_ro(Path(path)) as con:
        cols = _db().columns(con, "session")
        parent = "parent_id" if "parent_id" in cols else "NULL"
        rows = con.execute(f"SELECT id, directory, time_updated, {parent} FROM session").fetchall()
    return [SessionRef(format="opencode", path=path, key=sid, workspace=normal(d), mtime=_stamp(t, mtime))
            for sid, d, t, p in rows if not p]


def goose_sessions(path: str, mtime: float) -> list[SessionRef]:
    with _db().open_ro(Path(path)) as con:
        cols = _db().columns(con, "sessions")
        kind = "session_type" if "session_type" in cols else "NULL"
        updated = "updated_at" if "updated_at" in cols else "NULL"
        wd = "working_dir" if "working_dir" in cols else "NULL"
        rows = con.execute(f"SELECT id, {wd}, {updated}, {kind} FROM sessions").fetchall()
    return [SessionRef(format="goose", path=path, key=f"goose:{sid}", workspace=normal(d), mtime=_stamp(t, mtime))
            for sid, d, t, k in rows if k not in ("SubAgent", "subagent", "Hidden", "hidden")]


def cursor_workspaces(storage: str) -> tuple[dict[str, str], list[tuple[str, str | None, float]]]:
    """(composer id → folder, [(workspace db with old chat tabs, its folder, mtime)]) of ``workspaceStorage``."""
    owners: dict[str, str] = {}
    chat_dbs: list[tuple[str, str | None, float]] = []
    for db, info in walk.files(storage, 1, lambda parent, name: name == "state.vscdb", limit=2000):
        meta = walk.head(os.path.join(os.path.dirname(db), "workspace.json"), 65536)
        try:
            folder = normal(boundedjson.loads(meta.decode("utf-8", "replace")).get("folder")) if meta else None
        except (ValueError, AttributeError):
            folder = None
        try:
            with _db().open_ro(Path(db)) as con:
                if "ItemTable" not in _db().tables(con):
                    continue
                rows = dict(con.execute("SELECT key, value FROM ItemTable WHERE key IN (?, ?)",
                                        ("composer.composerData", "workbench.panel.aichat.view.aichat.chatdata")))
        except Exception:  # noqa: BLE001 - a workspace db that cannot be read names no owner
            continue
        composers = _db().json_value(rows.get("composer.composerData"))
        for c in composers.get("allComposers", []) if isinstance(composers, dict) else []:
            if isinstance(c, dict) and isinstance(c.get("composerId"), str) and folder:
                owners[c["composerId"]] = folder
        chats = _db().json_value(rows.get("workbench.panel.aichat.view.aichat.chatdata"))
        if isinstance(chats, dict) and chats.get("tabs"):
            chat_dbs.append((db, folder, info.st_mtime))
    return owners, chat_dbs


def cursor_sessions(path: str, mtime: float, owners: dict[str, str], folder: str | None = None) -> list[SessionRef]:
    out: list[SessionRef] = []
    with _db().open_ro(Path(path)) as con:
        names = _db().tables(con)
        if "cursorDiskKV" in names:
            # the key range uses the table's index; SQLite extracts the two stamps without Python decoding
            # each composer (some hold a whole conversation inline)
            rows = con.execute("SELECT key, CASE WHEN json_valid(value) THEN coalesce(json_extract(value, "
                               "'$.lastUpdatedAt'), json_extract(value, '$.createdAt')) END FROM cursorDiskKV "
                               "WHERE key >= 'composerData:' AND key < 'composerData;'")
            for key, stamp in rows:
                cid = key.split(":", 1)[1]
                out.append(SessionRef(format="cursor", path=path, key=f"cursor:{cid}", workspace=owners.get(cid),
                                      mtime=_stamp(stamp, mtime)))
        if "ItemTable" in names:
            row = con.execute("SELECT value FROM ItemTable WHERE key = ?",
                              ("workbench.panel.aichat.view.aichat.chatdata",)).fetchone()
            chats = _db().json_value(row[0]) if row else None
            for tab in chats.get("tabs", []) if isinstance(chats, dict) else []:
                if isinstance(tab, dict) and isinstance(tab.get("tabId"), str):
                    out.append(SessionRef(format="cursor", path=path, key=f"cursor:{tab['tabId']}", workspace=folder,
                                          mtime=_stamp(tab.get("lastSendTime"), mtime)))
    return out
