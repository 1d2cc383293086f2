"""Find the session stores on this machine: :func:`discover`.

For each candidate store of :mod:`.roots` that exists, list its sessions
(:mod:`.walk`: bounded, never through a symlink) and the workspace each
belongs to (:mod:`.probe`). An entry with a session's name that is not read
(a symlink, a FIFO, a folder) is kept in :attr:`Store.refused` with its fixed
code, so the import of its workspace reports it. A store that cannot be read
is reported with a fixed code and the others are still scanned. Projects
known from any store (and the current workspace) are then searched for aider
and SpecStory files. Paths are canonical (a store's root, or a file store's
folder, resolved once; :func:`cairn.worker.ingest.storefile.canonical`), so a reader
walks them without following any link. Read-only: nothing is written, no
database is locked.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping

import attrs
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.worker.ingest.storefile import canonical, kind

from . import probe, walk
from .model import SessionRef, Store
from .roots import Spec, project_specs, specs

MAX_PROJECTS = 500


Probes = dict[tuple[str, int, int], "str | None"]


def discover(home: str, env: Mapping[str, str], *, workspace: str | None = None,
             workspaces: Iterable[str] = (), probes: Probes | None = None) -> list[Store]:
    """Every session store under ``home`` (and ``env``'s relocations), with its sessions.

    ``workspace`` and ``workspaces`` are searched for project stores even when no session
    names them (one discovery serves several workspaces). ``probes`` (a dict kept by the
    caller between calls) remembers the workspace read from each file by ``(path, size,
    mtime_ns)``, so a watcher re-reads only files that changed.
    """
    stores: list[Store] = []
    seen: set[tuple[str, str]] = set()
    cache: Probes = {} if probes is None else probes
    for spec in specs(home, env):
        stores += _scan(spec, seen, stores, cache)
    known = list(dict.fromkeys(w for w in ([workspace] if workspace else []) + list(workspaces) if w))
    known += sorted({s.workspace for st in stores for s in st.sessions if s.workspace} - set(known))
    for project in known[:MAX_PROJECTS]:
        if walk.real_dir(project) is None:
            continue
        for spec in project_specs(project):
            stores += _scan(spec, seen, stores, cache)
    _gemini_hashes(stores, known)
    _cursor_projects(stores, known)
    return [s for s in stores if s.sessions or s.error or s.refused]


def _scan(spec: Spec, seen: set[tuple[str, str]], stores: list[Store], cache: Probes) -> list[Store]:
    if spec.kind in ("db", "file"):
        path = canonical(spec.path)
        if spec.kind == "file" and (spec.format, os.path.realpath(path)) not in seen:
            single = _odd_file(spec.format, path)
            if single is not None:  # a project's own session file that is a link or a FIFO: said, not read
                seen.add((spec.format, os.path.realpath(path)))
                return [single]
        found = walk.real_file(path)
        if found is None or (spec.format, os.path.realpath(path)) in seen:
            return []
        seen.add((spec.format, os.path.realpath(path)))
        return [_db_store(spec.format, path, found[1]) if spec.kind == "db" else
                Store(format=spec.format, path=path, size=found[1].st_size,
                      sessions=(_file_ref(spec.format, path, found[1], cache),))]
    root = walk.real_dir(spec.path)
    if root is None or (spec.format, root) in seen:
        return []
    seen.add((spec.format, root))
    refused: list[tuple[str, os.stat_result, str]] = []
    if spec.kind == "db-dir":
        dbs = [_db_store(spec.format, path, info) for path, info in walk.files(root, 0, spec.keep, refused=refused)]
        return dbs + [Store(format=spec.format, path=path, error=code, message=_refusal(path, info))
                      for path, info, code in refused]
    if spec.kind == "cursor-workspaces":
        return _cursor_workspaces(root, stores)
    refs: list[SessionRef] = []
    size = 0
    listed = walk.files(root, spec.depth, spec.keep, refused=refused)
    for path, info in listed:
        refs.append(_file_ref(spec.format, path, info, cache))
        size += info.st_size
    truncated = len(refs) + len(refused) >= walk.MAX_FILES
    odd = tuple(_refused_ref(spec.format, path, info, code) for path, info, code in refused)
    return [Store(format=spec.format, path=root, sessions=tuple(refs), size=size, truncated=truncated, refused=odd)]


def _refusal(path: str, info: os.stat_result) -> str:
    return f"{os.path.basename(path)}: {kind(info.st_mode)}, not read"


def _located(fmt: str, path: str) -> str | None:
    """The workspace a session's place names (aider's and SpecStory's files live in the project)."""
    if fmt == "aider":
        return os.path.dirname(path)
    if fmt == "specstory":
        return os.path.dirname(os.path.dirname(os.path.dirname(path)))
    return None


def _refused_ref(fmt: str, path: str, info: os.stat_result, code: str) -> SessionRef:
    """An entry with a session's name that is not read: its workspace only from its place."""
    return SessionRef(format=fmt, path=path, workspace=_located(fmt, path), mtime=info.st_mtime, error=code,
                      message=_refusal(path, info))


def _odd_file(fmt: str, path: str) -> Store | None:
    """A store that is one file (aider's history) when that file is a link or not a regular file."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISREG(info.st_mode):
        return None
    code = ErrorCode.PATH_SYMLINK if stat.S_ISLNK(info.st_mode) else ErrorCode.PATH_NOT_REGULAR
    return Store(format=fmt, path=path, refused=(_refused_ref(fmt, path, info, str(code)),))


def _file_ref(fmt: str, path: str, info: os.stat_result, cache: Probes) -> SessionRef:
    workspace = _located(fmt, path)
    if workspace is None:
        key = (path, info.st_size, info.st_mtime_ns)
        if key not in cache:
            cache[key] = probe.file_workspace(fmt, path)
        workspace = cache[key]
    return SessionRef(format=fmt, path=path, workspace=workspace, mtime=info.st_mtime, size=info.st_size)


def _db_store(fmt: str, path: str, info: os.stat_result, owners: dict[str, str] | None = None,
              folder: str | None = None) -> Store:
    try:
        if fmt == "opencode":
            refs = probe.opencode_sessions(path, info.st_mtime)
        elif fmt == "goose":
            refs = probe.goose_sessions(path, info.st_mtime)
        else:
            refs = probe.cursor_sessions(path, info.st_mtime, owners or {}, folder)
    except CairnError as exc:
        return Store(format=fmt, path=path, size=info.st_size, error=str(exc.code), message=exc.message)
    except Exception:  # noqa: BLE001 - an unexpected store shape is that store's problem, not discovery's
        return Store(format=fmt, path=path, size=info.st_size, error=str(ErrorCode.IMPORT_MALFORMED),
                     message=f"{os.path.basename(path)}: not a readable {fmt} store")
    return Store(format=fmt, path=path, sessions=tuple(refs), size=info.st_size)


def _cursor_workspaces(storage: str, stores: list[Store]) -> list[Store]:
    """Name the workspace of each Cursor chat, and list older per-workspace chat stores."""
    owners, chat_dbs = probe.cursor_workspaces(storage)
    for i, st in enumerate(stores):
        if st.format == "cursor" and not st.error and os.path.dirname(os.path.dirname(st.path)) == os.path.dirname(storage):
            refs = tuple(r if r.workspace or r.key is None else
                         SessionRef(format=r.format, path=r.path, key=r.key, workspace=owners.get(r.key[len("cursor:"):]),
                                    mtime=r.mtime, size=r.size) for r in st.sessions)
            stores[i] = attrs.evolve(st, sessions=refs)
    out = []
    for db, folder, _ in chat_dbs:
        found = walk.real_file(db)
        if found is not None:
            out.append(_db_store("cursor", db, found[1], owners, folder))
    return out


def _gemini_hashes(stores: list[Store], known: list[str]) -> None:
    """Gemini CLI projects are named by slug or hash: resolve them once every workspace is known."""
    for i, st in enumerate(stores):
        if st.format not in ("gemini-cli", "qwen-code") or st.error:
            continue
        projects = probe.GeminiProjects(os.path.dirname(st.path), known)
        stores[i] = attrs.evolve(st, sessions=_placed(st.sessions, projects), refused=_placed(st.refused, projects))


def _cursor_projects(stores: list[Store], known: list[str]) -> None:
    """Cursor agent transcripts: the workspace their project folder is named after (among the directories
    known); a conversation a Cursor database also holds (its composer id is the transcript's name) is left
    to the database, whose messages carry ids and times, so it is not captured twice."""
    in_db = {r.key[len("cursor:"):] for st in stores if st.format == "cursor" for r in st.sessions if r.key}
    folders: dict[str, str | None] = {}
    for i, st in enumerate(stores):
        if st.format != "cursor-transcript" or st.error:
            continue
        kept = tuple(_in_project(r, st.path, known, folders) for r in st.sessions
                     if os.path.basename(r.path)[: -len(".jsonl")] not in in_db)
        stores[i] = attrs.evolve(st, sessions=kept, refused=tuple(_in_project(r, st.path, known, folders)
                                                                  for r in st.refused))


def _in_project(ref: SessionRef, root: str, known: list[str], folders: dict[str, str | None]) -> SessionRef:
    """``ref`` with the workspace its project folder (the first folder below ``root``) is named after."""
    rel = os.path.relpath(ref.path, root).split(os.sep)
    if ref.workspace or len(rel) < 3:
        return ref
    key = os.path.join(root, rel[0])
    if key not in folders:
        folders[key] = probe.cursor_project(rel[0], known)
    return attrs.evolve(ref, workspace=folders[key])


def _placed(refs: tuple[SessionRef, ...], projects: probe.GeminiProjects) -> tuple[SessionRef, ...]:
    return tuple(r if r.workspace else attrs.evolve(r, workspace=projects.workspace(os.path.dirname(r.path)))
                 for r in refs)
