"""Following live session files: the file-system side of :mod:`server.watch.core`.

:class:`FileWatcher` turns folders and files into the core's events and
calls ``deliver(events)`` on the event loop, only when something differs
from what it last delivered (no change, no call). Two ways to learn of a
change:

- ``watchfiles`` (inotify on Linux, FSEvents, ReadDirectoryChangesW): the
  task sleeps in the kernel until a watched folder changes, so an idle
  watcher costs no CPU. Folders are watched recursively; a file given by
  name is watched through its parent folder (non-recursively), so a file
  replaced by rename is still followed.
- Polling with backoff, when the native watcher cannot start (no inotify,
  watch limit reached) or :data:`POLL_ENV` is set: a rescan every
  :data:`POLL_MIN` seconds while files change, doubling to
  :data:`POLL_MAX` while nothing does.

Which files count: ``*.jsonl`` under a watched folder (but ``agent-*``), or
a file named explicitly that ends in ``.jsonl``. Those are the formats
(:data:`JSONL_FORMATS`) whose importers ignore an unterminated last line that does not parse,
so a file caught mid-write never yields a half-written turn. Another name
given explicitly is ignored with ``E_IMPORT_UNKNOWN_FORMAT``; a symlink, or
a file reached through a symlinked folder, with ``E_PATH_SYMLINK``; another
path that is not a regular file (a FIFO) with ``E_PATH_NOT_REGULAR``.

Closed stores: the roots are made canonical once (a folder given as a link
is resolved then), and below them nothing follows a link: folders are
listed through :func:`cairn.worker.ingest.storefile.listing` (a symlinked folder is
never entered) and a changed file the native watcher names (it does follow
links into linked folders) is looked at with
:func:`cairn.worker.ingest.storefile.lstat`, walked from ``/`` without following
one. The import that follows opens the file the same way, so a file or a
folder swapped for a link between this look and the import is refused
there, never read through the link. All stat calls run in a thread, never
on the loop.

:func:`stores_by_workspace` names what one store discovery found for each
workspace (Claude Code's project folder, other tools' JSONL session files);
it joins the explicit paths.

Imports inside functions: the language server and every CLI command import
this module at their start, and only a watch that discovers stores needs
the discovery (the importers, sqlite3) or ``watchfiles``. Measured with
``python -X importtime``: the discovery at the top adds 40 ms to the language
server's start and 74 ms to ``cairn --help``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
from collections.abc import Callable, Iterable, Mapping

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.server.watch.core import FileEvent, Refused, Seen, Stamp, Vanished
from cairn.worker.ingest import storefile

log = logging.getLogger("cairn.server.watch.files")

POLL_ENV = "CAIRN_WATCH_POLL"
"""Set to ``1`` to poll instead of using the native watcher (tests, network file systems)."""
POLL_MIN = 0.5
POLL_MAX = 8.0
DEBOUNCE_MS = 200  # watchfiles: the longest a burst of file-system events is grouped
STEP_MS = 50  # watchfiles: a burst ends after this much quiet; also its idle wake-up period
GAP_SECONDS = 1.0  # after starting the native watcher, one rescan (see FileWatcher._close_gap)
SUFFIX = ".jsonl"
SKIP_PREFIX = "agent-"  # Claude Code's sub-agent sidechains: part of a session, not one (discovery skips them too)
JSONL_FORMATS = frozenset({"claude-code", "codex", "copilot-cli", "gemini-cli", "goose", "qwen-code"})
"""Store formats whose importers read JSONL through ``iter_jsonl``: an unterminated last line that
does not parse is ignored, so a file caught mid-write yields no half-written turn."""
MAX_FILES = 20_000  # per watcher; more are left out (logged once)
MAX_DEPTH = 16  # folders below a watched folder that are entered

Deliver = Callable[[list[FileEvent]], None]


def stores_by_workspace(workspaces: Iterable[str], *, everywhere: bool = False, home: str | None = None,
                        env: Mapping[str, str] | None = None) -> dict[str, list[str]]:
    """What to follow for each of ``workspaces`` among the session stores one discovery finds
    (:mod:`worker.ingest.sources`): the home is walked once, whatever the number of workspaces.

    Per workspace, its JSONL session files (the formats in :data:`JSONL_FORMATS`);
    for Claude Code the project folder itself, which holds that workspace's
    sessions only, so a session started later is followed too. Other tools keep
    sessions of every workspace side by side (Codex by day), so only the files
    found are named. A store that cannot be read is left out (``cairn discover``
    says why). Reads the disk: call it in a thread.
    """
    from cairn.worker.ingest.sources import discover  # cold start: module docstring
    from cairn.worker.jobs.importing import select

    wanted = list(dict.fromkeys(workspaces))
    if not wanted:
        return {}
    try:
        stores = discover(home or os.path.expanduser("~"), os.environ if env is None else env, workspaces=wanted)
    except (CairnError, OSError) as exc:
        log.warning("watch: store discovery failed (%s)", getattr(exc, "code", type(exc).__name__))
        return {ws: [] for ws in wanted}
    out: dict[str, list[str]] = {}
    for ws in wanted:
        found = [os.path.dirname(ref.path) if ref.format == "claude-code" else ref.path
                 for ref in select(stores, ws, everywhere=everywhere)
                 if ref.key is None and ref.format in JSONL_FORMATS and ref.path.endswith(SUFFIX)]
        out[ws] = list(dict.fromkeys(found))
    return out


def stores_for(workspace: str, *, everywhere: bool = False, home: str | None = None,
               env: Mapping[str, str] | None = None) -> list[str]:
    """:func:`stores_by_workspace` for one workspace. Reads the disk: call it in a thread."""
    return stores_by_workspace([workspace], everywhere=everywhere, home=home, env=env)[workspace]


def watch_roots(workspace: str, paths: Iterable[str], *, stores: Iterable[str] = ()) -> list[str]:
    """``paths`` (relative ones against the workspace, ``~`` expanded) then ``stores``, deduplicated."""
    out = [os.path.normpath(os.path.join(workspace, os.path.expanduser(p))) for p in paths if p]
    out += [os.path.normpath(p) for p in stores]
    return list(dict.fromkeys(out))


def canonical_roots(roots: dict[str, list[str]]) -> dict[str, list[str]]:
    """``roots`` with each path canonical (:func:`cairn.worker.ingest.storefile.canonical`). Reads the disk."""
    return {g: list(dict.fromkeys(storefile.canonical(r) for r in rs)) for g, rs in roots.items()}


def _event(group: str, path: str, st: os.stat_result) -> FileEvent:
    if stat.S_ISLNK(st.st_mode):
        return Refused(group, path, str(ErrorCode.PATH_SYMLINK))
    if not stat.S_ISREG(st.st_mode):
        return Refused(group, path, str(ErrorCode.PATH_NOT_REGULAR))
    return Seen(group, path, Stamp(st.st_size, st.st_mtime_ns, st.st_ino))


def probe(group: str, path: str) -> FileEvent:
    """The core's event for ``path`` now (never follows a symlink, on its way either)."""
    try:
        st = storefile.lstat(path)
    except CairnError as exc:
        return Refused(group, path, str(exc.code))
    except FileNotFoundError:
        return Vanished(path)
    except OSError:
        return Refused(group, path, str(ErrorCode.IMPORT_UNREADABLE))
    return _event(group, path, st)


def _candidate(parent: str, name: str) -> bool:
    return name.endswith(SUFFIX) and not name.startswith(SKIP_PREFIX)


def scan(group: str, root: str) -> list[FileEvent]:
    """Events for every candidate file under ``root`` (a folder, recursively) or for ``root`` (a file)."""
    try:
        st = os.lstat(root)
    except OSError:
        return []  # absent for now: it may appear
    if stat.S_ISDIR(st.st_mode):
        return [_event(group, path, info)
                for path, info, _ in storefile.listing(root, MAX_DEPTH, _candidate, limit=MAX_FILES)]
    if not root.endswith(SUFFIX):
        return [Refused(group, root, str(ErrorCode.IMPORT_UNKNOWN_FORMAT))]
    return [probe(group, root)]


class FileWatcher:
    """Watch ``roots`` (group -> folders and files); deliver the core's events on the loop."""

    def __init__(self, roots: dict[str, list[str]], deliver: Deliver, *, polling: bool | None = None,
                 poll_max: float | None = None) -> None:
        self.roots = {g: list(dict.fromkeys(r)) for g, r in roots.items()}
        self.deliver = deliver
        self.polling = os.environ.get(POLL_ENV) == "1" if polling is None else polling
        self.poll_max = POLL_MAX if poll_max is None else max(POLL_MIN, poll_max)
        self.mode = "idle"  # "native" or "polling" once running
        self._last: dict[str, FileEvent] = {}  # path -> the last event delivered for it
        self._stop = asyncio.Event()

    def stop(self) -> None:
        self._stop.set()

    def files(self, group: str) -> int:
        """Regular files of ``group`` followed now."""
        return sum(1 for e in self._last.values() if isinstance(e, Seen) and e.group == group)

    async def run(self) -> None:
        """Scan once, then follow changes until :meth:`stop` (or cancellation)."""
        if not any(self.roots.values()):
            return
        self.roots = await asyncio.to_thread(canonical_roots, self.roots)
        await self.rescan()
        if not self.polling:
            try:
                await self._native()
                return
            except (OSError, RuntimeError, ImportError) as exc:  # no inotify, watch limit reached: poll instead
                log.warning("watch: native watcher unavailable (%s); polling", type(exc).__name__)
        await self._poll()

    async def rescan(self, only: set[str] | None = None) -> bool:
        """Scan every root (or only the given paths); deliver what differs. True if something did."""
        events = await asyncio.to_thread(self._collect, only)
        return self._deliver(events)

    def _collect(self, only: set[str] | None) -> list[FileEvent]:
        if only is not None and any(os.path.isdir(p) for p in only):
            only = None  # a folder appeared or moved: rescan everything
        if only is None:
            found: list[FileEvent] = []
            for group, roots in self.roots.items():
                for root in roots:
                    found += scan(group, root)
            seen = {e.path for e in found}
            gone = [Vanished(p) for p, e in self._last.items() if p not in seen and not isinstance(e, Vanished)]
            return found + gone
        out: list[FileEvent] = []
        for path in sorted(only):
            owner = self._group_of(path)
            if owner is not None:
                out.append(probe(owner, path))
        return out

    def _group_of(self, path: str) -> str | None:
        """The group of a candidate file ``path``, or None when no root covers it."""
        for group, roots in self.roots.items():
            for root in roots:
                if path == root:
                    return group if root.endswith(SUFFIX) else None
                if (path.startswith(root.rstrip(os.sep) + os.sep) and path.endswith(SUFFIX)
                        and not os.path.basename(path).startswith(SKIP_PREFIX) and os.path.isdir(root)):
                    return group
        return None

    def _deliver(self, events: list[FileEvent]) -> bool:
        fresh = [e for e in events if self._last.get(e.path) != e]
        for e in fresh:
            self._last[e.path] = e
        if fresh:
            self.deliver(fresh)
        return bool(fresh)

    def _watch_dirs(self) -> tuple[list[str], list[str]]:
        """Folders to watch recursively (root folders) and flatly (the folders of root files)."""
        folders = sorted({r for roots in self.roots.values() for r in roots if os.path.isdir(r)})
        parents = sorted({os.path.dirname(r) for roots in self.roots.values() for r in roots
                          if not os.path.isdir(r) and os.path.isdir(os.path.dirname(r))} - set(folders))
        return folders, parents

    async def _native(self) -> None:
        folders, parents = await asyncio.to_thread(self._watch_dirs)
        if not folders and not parents:
            raise RuntimeError("nothing to watch natively")
        self.mode = "native"
        tasks = [asyncio.ensure_future(self._follow(folders, recursive=True)) if folders else None,
                 asyncio.ensure_future(self._follow(parents, recursive=False)) if parents else None,
                 asyncio.ensure_future(self._close_gap())]
        live = [t for t in tasks if t is not None]
        try:
            done, _ = await asyncio.wait(live, return_when=asyncio.FIRST_EXCEPTION)
            for t in done:
                t.result()
        finally:
            for t in live:
                t.cancel()
            for t in live:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await t

    async def _close_gap(self) -> None:
        """One rescan once the native watches are armed: a change between the first scan and
        the arming would otherwise wait for the file's next change."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), timeout=GAP_SECONDS)
        if not self._stop.is_set():
            await self.rescan()

    async def _follow(self, paths: list[str], *, recursive: bool) -> None:
        import watchfiles  # here: a server without watch paths never loads it (module docstring)

        async for changes in watchfiles.awatch(*paths, recursive=recursive, debounce=DEBOUNCE_MS, step=STEP_MS,
                                               stop_event=self._stop, force_polling=False):
            await self.rescan({os.path.normpath(p) for _, p in changes})  # stat calls run in the thread

    async def _poll(self) -> None:
        self.mode = "polling"
        interval = POLL_MIN
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=interval)
            if self._stop.is_set():
                return
            changed = await self.rescan()
            interval = POLL_MIN if changed else min(self.poll_max, interval * 2)
