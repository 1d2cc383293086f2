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
(:func:`followed_formats`, from the importers' format records) whose importers
ignore an unterminated last line that does not parse, so a file caught
mid-write never yields a half-written turn. Another regular file's name
given explicitly is ignored with ``E_IMPORT_UNKNOWN_FORMAT``; a symlink, or
a file reached through a symlinked folder, with ``E_PATH_SYMLINK``; another
path that is not a regular file (a FIFO) with ``E_PATH_NOT_REGULAR``.

Sessions begun later: :func:`plan` names, beside what to follow, the store
folders where such files appear (Codex's ``sessions``, Claude Code's
``projects``…; watched recursively, or listed at each poll) and the session
files in them that another workspace owns. A ``.jsonl`` file there that no
group follows and that is not known to be another's makes the watcher run
discovery again (``replan``, in a thread): what it now attributes to a group
is followed from then on, the rest is remembered as another's (an empty file
is looked at again once it is written). So discovery runs when a session
file appears, not on a timer, and an idle watcher stays idle.

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
from typing import Any

import attrs
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
MAX_FILES = 20_000  # per watcher; more are left out (logged once)
MAX_DEPTH = 16  # folders below a watched folder that are entered

Deliver = Callable[[list[FileEvent]], None]


def followed_formats() -> frozenset[str]:
    """Store formats whose ``.jsonl`` session files are followed: those whose importers read them while
    they are written (an unterminated last line that does not parse is ignored), as the importers'
    format records say (``Format.follows``)."""
    from cairn.worker.ingest.importers import LIVE_FORMATS  # cold start: module docstring

    return LIVE_FORMATS


def __getattr__(name: str) -> Any:
    if name == "JSONL_FORMATS":  # the followed formats, under the name this module gave them before
        return followed_formats()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@attrs.frozen
class Plan:
    """What the watchers follow: per group (a workspace) its files and folders; the store folders where a
    session begun later appears; the session files in them that belong to no group (path -> size)."""

    roots: dict[str, list[str]]
    stores: tuple[str, ...] = ()
    foreign: Mapping[str, int] = attrs.field(factory=dict)


Replan = Callable[[], Plan]


def _discovered(wanted: list[str], everywhere: bool, home: str | None, env: Mapping[str, str] | None,
                probes: dict[Any, Any] | None) -> Plan:
    from cairn.worker.ingest.sources import discover, roots, walk  # cold start: module docstring
    from cairn.worker.jobs.importing import select

    home = home or os.path.expanduser("~")
    env = os.environ if env is None else env
    live = followed_formats()
    folders = tuple(dict.fromkeys(found for spec in roots.specs(home, env)
                                  if spec.kind == "tree" and spec.format in live
                                  for found in [walk.real_dir(spec.path)] if found))
    try:
        stores = discover(home, env, workspaces=wanted, probes=probes)
    except (CairnError, OSError) as exc:
        log.warning("watch: store discovery failed (%s)", getattr(exc, "code", type(exc).__name__))
        return Plan(roots={ws: [] for ws in wanted})
    out: dict[str, list[str]] = {}
    followed: set[str] = set()
    for ws in wanted:
        refs = [ref for ref in select(stores, ws, everywhere=everywhere)
                if ref.key is None and ref.format in live and ref.path.endswith(SUFFIX)]
        followed.update(ref.path for ref in refs)
        found = [os.path.dirname(ref.path) if ref.format == "claude-code" else ref.path for ref in refs]
        out[ws] = list(dict.fromkeys(found))
    foreign = {ref.path: ref.size for st in stores if st.format in live for ref in st.sessions + st.refused
               if ref.key is None and ref.path not in followed}
    return Plan(roots=out, stores=folders, foreign=foreign)


def plan(given: Mapping[str, Iterable[str]], *, everywhere: bool = False, home: str | None = None,
         env: Mapping[str, str] | None = None, probes: dict[Any, Any] | None = None) -> Plan:
    """What to follow for each workspace of ``given`` (its watch paths): the paths given (:func:`watch_roots`)
    and the session stores one discovery attributes to it (:func:`stores_by_workspace`), with the store
    folders to watch for sessions begun later and the session files there that are another's. ``probes``
    (kept by the caller between calls) spares re-reading unchanged files. Reads the disk: call it in a thread.
    """
    wanted = list(dict.fromkeys(given))
    found = _discovered(wanted, everywhere, home, env, probes) if wanted else Plan(roots={})
    return attrs.evolve(found, roots={ws: watch_roots(ws, given[ws], stores=found.roots.get(ws, ()))
                                      for ws in wanted})


def stores_by_workspace(workspaces: Iterable[str], *, everywhere: bool = False, home: str | None = None,
                        env: Mapping[str, str] | None = None) -> dict[str, list[str]]:
    """What to follow for each of ``workspaces`` among the session stores one discovery finds
    (:mod:`worker.ingest.sources`): the home is walked once, whatever the number of workspaces.

    Per workspace, its JSONL session files (the formats of :func:`followed_formats`);
    for Claude Code the project folder itself, which holds that workspace's
    sessions only, so a session started later is followed too. Other tools keep
    sessions of every workspace side by side (Codex by day), so only the files
    found are named (:func:`plan` adds the store folders, where a watcher sees
    the sessions begun later). A store that cannot be read is left out
    (``cairn discover`` says why). Reads the disk: call it in a thread.
    """
    wanted = list(dict.fromkeys(workspaces))
    if not wanted:
        return {}
    return _discovered(wanted, everywhere, home, env, None).roots


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
    if not root.endswith(SUFFIX):  # a FIFO or a device named explicitly is no file of any format
        code = ErrorCode.IMPORT_UNKNOWN_FORMAT if stat.S_ISREG(st.st_mode) else (
            ErrorCode.PATH_SYMLINK if stat.S_ISLNK(st.st_mode) else ErrorCode.PATH_NOT_REGULAR)
        return [Refused(group, root, str(code))]
    return [probe(group, root)]


class FileWatcher:
    """Watch ``roots`` (group -> folders and files); deliver the core's events on the loop.

    With ``replan`` (:func:`plan` again, run in a thread), a session file that appears in one of
    ``stores`` and belongs to no group and is not in ``foreign`` (path -> size when it was found to
    be another's) makes the watcher discover again and follow what that finds (module docstring).
    """

    def __init__(self, roots: dict[str, list[str]], deliver: Deliver, *, polling: bool | None = None,
                 poll_max: float | None = None, stores: Iterable[str] = (), foreign: Mapping[str, int] | None = None,
                 replan: Replan | None = None) -> None:
        self.roots = {g: list(dict.fromkeys(r)) for g, r in roots.items()}
        self.deliver = deliver
        self.polling = os.environ.get(POLL_ENV) == "1" if polling is None else polling
        self.poll_max = POLL_MAX if poll_max is None else max(POLL_MIN, poll_max)
        self.mode = "idle"  # "native" or "polling" once running
        self.stores = list(dict.fromkeys(stores)) if replan is not None else []
        self.foreign: dict[str, int] = dict(foreign or {})
        self.replan = replan
        self.replans = 0  # discoveries run for sessions begun later
        self._last: dict[str, FileEvent] = {}  # path -> the last event delivered for it
        self._stop = asyncio.Event()
        self._replanning = asyncio.Lock()
        self._index()

    def stop(self) -> None:
        self._stop.set()

    def files(self, group: str) -> int:
        """Regular files of ``group`` followed now."""
        return sum(1 for e in self._last.values() if isinstance(e, Seen) and e.group == group)

    def followed(self, group: str) -> list[tuple[str, int, int]]:
        """``(path, size, mtime_ns)`` of the regular files of ``group`` followed now, newest change first."""
        seen = [(e.path, e.stamp.size, e.stamp.mtime_ns) for e in self._last.values()
                if isinstance(e, Seen) and e.group == group]
        return sorted(seen, key=lambda t: (-t[2], t[0]))

    async def run(self) -> None:
        """Scan once, then follow changes until :meth:`stop` (or cancellation)."""
        if not any(self.roots.values()) and not self.stores:
            return
        self.roots = await asyncio.to_thread(canonical_roots, self.roots)
        self.stores = (await asyncio.to_thread(canonical_roots, {"": self.stores}))[""]
        self._index()
        await self.rescan()
        if not self.polling:
            try:
                await self._native()
                return
            except (OSError, RuntimeError, ImportError) as exc:  # no inotify, watch limit reached: poll instead
                log.warning("watch: native watcher unavailable (%s); polling", type(exc).__name__)
        await self._poll()

    async def rescan(self, only: set[str] | None = None) -> bool:
        """Scan every root (or only the given paths); deliver what differs. True if something did.

        A session file in a store that no group follows and that is not known to be another's makes
        the watcher discover again (:meth:`_replan`)."""
        events, unknown = await asyncio.to_thread(self._collect, only)
        changed = self._deliver(events)
        if unknown:
            changed = await self._replan(unknown) or changed
        return changed

    async def _replan(self, unknown: dict[str, int]) -> bool:
        """Discover again (in a thread); follow what is now a group's, and remember the other files of
        ``unknown`` as another's at their size. True if something was delivered."""
        assert self.replan is not None
        async with self._replanning:  # one discovery at a time; the files another one settled are left out
            unknown = {p: n for p, n in unknown.items() if self._unsettled(p, n) and self._group_of(p) is None}
            if not unknown:
                return False
            self.replans += 1
            try:
                fresh = await asyncio.to_thread(self.replan)
            except (CairnError, OSError) as exc:
                log.warning("watch: store discovery failed (%s)", getattr(exc, "code", type(exc).__name__))
                fresh = None
            if fresh is not None:
                self.roots = await asyncio.to_thread(canonical_roots, fresh.roots)
                self.foreign.update(fresh.foreign)
                self._index()
            for path, size in unknown.items():
                if self._group_of(path) is None:
                    self.foreign[path] = size  # another's or no one's; an empty file is looked at again once written
            events, _ = await asyncio.to_thread(self._collect, None)
            return self._deliver(events)

    def _collect(self, only: set[str] | None) -> tuple[list[FileEvent], dict[str, int]]:
        """(events for the files followed, {path: size} of session files in the stores that no group
        follows and that are not known to be another's)."""
        if only is not None and any(os.path.isdir(p) for p in only):
            only = None  # a folder appeared or moved: rescan everything
        unknown: dict[str, int] = {}
        if only is None:
            found: list[FileEvent] = []
            for group, roots in self.roots.items():
                for root in roots:
                    found += scan(group, root)
            seen = {e.path for e in found}
            gone = [Vanished(p) for p, e in self._last.items() if p not in seen and not isinstance(e, Vanished)]
            for store in self.stores:
                for path, info, _ in storefile.listing(store, MAX_DEPTH, _candidate, limit=MAX_FILES):
                    if path not in seen and self._unsettled(path, info.st_size) and self._group_of(path) is None:
                        unknown[path] = info.st_size
            return found + gone, unknown
        out: list[FileEvent] = []
        for path in sorted(only):
            owner = self._group_of(path)
            if owner is not None:
                out.append(probe(owner, path))
            elif self._in_store(path) and self._unsettled(path, None):
                try:
                    unknown[path] = os.lstat(path).st_size
                except OSError:
                    continue
                if not self._unsettled(path, unknown[path]):
                    del unknown[path]
        return out, unknown

    def _unsettled(self, path: str, size: int | None) -> bool:
        """Whether ``path`` may be a session of a group: not known as another's, or known only as an empty
        file that has been written since (``size`` None: not looked at yet)."""
        known = self.foreign.get(path)
        return known is None or (known == 0 and (size is None or size > 0))

    def _in_store(self, path: str) -> bool:
        return (bool(self.stores) and _candidate("", os.path.basename(path))
                and any(path.startswith(store) for store in self._store_prefixes))

    def _index(self) -> None:
        """Which group each root file is, and the folder roots' prefixes (recomputed when the roots change)."""
        self._root_files: dict[str, str] = {}
        self._root_folders: list[tuple[str, str]] = []
        for group, roots in self.roots.items():
            for root in roots:
                if root.endswith(SUFFIX):
                    self._root_files.setdefault(root, group)
                else:
                    self._root_folders.append((root.rstrip(os.sep) + os.sep, group))
        self._store_prefixes = [store.rstrip(os.sep) + os.sep for store in self.stores]

    def _group_of(self, path: str) -> str | None:
        """The group of a candidate file ``path``, or None when no root covers it."""
        group = self._root_files.get(path)
        if group is not None or not _candidate("", os.path.basename(path)):
            return group
        for prefix, owner in self._root_folders:
            if path.startswith(prefix):
                return owner
        return None

    def _deliver(self, events: list[FileEvent]) -> bool:
        fresh = [e for e in events if self._last.get(e.path) != e]
        for e in fresh:
            self._last[e.path] = e
        if fresh:
            self.deliver(fresh)
        return bool(fresh)

    def _watch_dirs(self) -> tuple[list[str], list[str]]:
        """Folders to watch recursively (root folders and store folders, none inside another) and flatly
        (the folders of root files outside them)."""
        wanted = {r for roots in self.roots.values() for r in roots if os.path.isdir(r)}
        wanted |= {s for s in self.stores if os.path.isdir(s)}
        folders = sorted(f for f in wanted if not any(f.startswith(o.rstrip(os.sep) + os.sep) for o in wanted))

        def covered(path: str) -> bool:
            return any(path == f or path.startswith(f.rstrip(os.sep) + os.sep) for f in folders)

        parents = sorted({os.path.dirname(r) for roots in self.roots.values() for r in roots
                          if not os.path.isdir(r) and os.path.isdir(os.path.dirname(r))
                          and not covered(os.path.dirname(r))})
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
