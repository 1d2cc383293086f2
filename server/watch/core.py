"""Following live session files: a pure, sans-I/O core.

``WatchCore.handle(event, now) -> list[Action]`` is the whole interface; the
adapters (:mod:`server.watch.files` in the language server, ``cairn watch`` on a
terminal) stat files, run the imports and seals, and feed what happened
back. There is no clock, thread or I/O inside, so every rule is tested with
a fake clock (tests/server/test_watch_core.py).

Files belong to a *group* (a workspace): imports and seals are per group.

Rules, and why:

1. A file is known by ``(size, mtime_ns, inode)``. A stat equal to the known
   one is no change and causes nothing: a watcher that wakes up for nothing
   does no work.
2. Changed files are imported in batches: one :class:`Import` names every
   file of the group that changed, and while it runs new changes wait for
   it (its :class:`Imported` report is the next opportunity). After an
   import, the next one waits ``window`` seconds (1 s): a session writing
   continuously costs one import per window, yet a first change after a
   quiet period is imported at once (the latency of a lone turn is one
   import).
3. A half-written last line is never a turn: the importers ignore an
   unterminated last line that does not parse, so a file caught mid-write is
   imported again when it grows (rule 1) and the completed turn arrives then.
4. Idle sealing: ``seal_idle`` seconds after a group's last change, with no
   import pending, running or waiting to be tried again (rule 8), one
   :class:`SealIdle` naming the files that changed since the last one (the
   ``seal-idle`` job reads them again as sealed, so the last turn of a
   session that no completion signal closed is captured, then seals their
   sessions and the captures whose newest turn is that quiet). Once per
   quiet period: the next change re-arms it.
5. The format's own session end: an :class:`Imported` report naming
   ``ended`` sessions gives one :class:`Seal` (trigger ``session-end``) each.
6. A path that is not a regular file (a symlink, a directory, a FIFO) is
   never imported: one :class:`Ignored` with its fixed code, said once until
   the path becomes a regular file again.
7. Quiet when idle: :meth:`next_wakeup` is the earliest moment a rule could
   act (a window end, an idle seal, a retry), or ``None``; nothing polls.
8. A claim another process holds (``E_CLAIM_BUSY``): an import refused for it
   (:class:`Imported` with ``busy``) is tried again on its own, its files
   imported ``retry`` seconds later (2 s, doubling while the refusals go on,
   up to ``retry_max``, 16 s; an import that is not refused starts the
   back-off again), not at their next change: the file of an ended session
   never changes again, and a watcher killed mid-capture leaves a claim that
   holds until its deadline (60 s), a fence the core cannot lift. Until that
   retry is over and its import was not refused, the group seals nothing: an
   idle seal before it would close the capture with part of the session's
   turns, and the rest would start a second capture. A seal refused the same
   way (:class:`Busy`) is issued again once that wait is over (an idle seal:
   its quiet period re-armed with its files, so they are read again as
   sealed). The back-off, not the holder's deadline, decides the moment: the
   job's answer carries no deadline, and a live holder may finish sooner.
"""

from __future__ import annotations

import attrs

WINDOW = 1.0
SEAL_IDLE = 20 * 60.0
RETRY = 2.0  # the first wait after a refusal for a busy claim (rule 8) …
RETRY_MAX = 16.0  # … doubled up to this: a dead holder's claim (60 s) is retried within 16 s of its deadline


@attrs.frozen
class Stamp:
    size: int
    mtime_ns: int
    inode: int


# ---------------------------------------------------------------- events


@attrs.frozen
class Seen:
    """A stat of a watched regular file (new or not): the core decides whether it changed."""

    group: str
    path: str
    stamp: Stamp


@attrs.frozen
class Vanished:
    path: str


@attrs.frozen
class Refused:
    """``path`` is not a regular file (``code``: a fixed error code)."""

    group: str
    path: str
    code: str


@attrs.frozen
class Imported:
    """The import of ``paths`` finished (``ended``: sessions whose format says they ended); ``busy``: it was
    refused because another process holds a claim it needs (``E_CLAIM_BUSY``), so ``paths`` are imported
    again after a back-off, and the group seals nothing before (rule 8)."""

    group: str
    paths: tuple[str, ...]
    ended: tuple[str, ...] = ()
    busy: bool = False


@attrs.frozen
class Busy:
    """A seal the core asked for (``action``) was refused with ``E_CLAIM_BUSY``: issued again after a
    back-off (rule 8). Seals that ran are not reported: nothing waits for them."""

    action: SealIdle | Seal


@attrs.frozen
class Tick:
    """Time passed (a timer at :meth:`WatchCore.next_wakeup` fired)."""


FileEvent = Seen | Vanished | Refused
"""What a look at the file system tells."""
Event = Seen | Vanished | Refused | Imported | Busy | Tick


# ---------------------------------------------------------------- actions


@attrs.frozen
class Import:
    group: str
    paths: tuple[str, ...]


@attrs.frozen
class SealIdle:
    group: str
    quiet_seconds: float
    paths: tuple[str, ...] = ()  # the group's files changed in the quiet period: read again as sealed


@attrs.frozen
class Seal:
    group: str
    session: str
    trigger: str


@attrs.frozen
class Ignored:
    path: str
    code: str


Action = Import | SealIdle | Seal | Ignored


@attrs.define
class _Group:
    pending: set[str] = attrs.field(factory=set)
    running: tuple[str, ...] | None = None
    last_import: float | None = None  # when the last import finished
    last_change: float | None = None
    idle_sealed: bool = True  # nothing to seal until something changed
    changed: set[str] = attrs.field(factory=set)  # files changed since the last idle seal
    # rule 8: refusals for a busy claim, waiting for ``retry_at``
    retry_at: float | None = None
    refused: set[str] = attrs.field(factory=set)  # files whose last import was refused: imported again then
    seals: list[Seal] = attrs.field(factory=list)  # session seals refused: issued again then
    refusals: int = 0  # in a row: the back-off doubles with each

    def sealing_held(self) -> bool:
        """Whether a refused import (or its retry) holds the group's seals back (rule 8)."""
        return self.retry_at is not None or bool(self.refused)


class WatchCore:
    """The watching policy. ``seal_idle`` may differ per group (:meth:`configure`)."""

    def __init__(self, *, window: float = WINDOW, seal_idle: float = SEAL_IDLE, retry: float = RETRY,
                 retry_max: float = RETRY_MAX) -> None:
        self.window = float(window)
        self.seal_idle = float(seal_idle)
        self.retry = float(retry)
        self.retry_max = max(float(retry_max), self.retry)
        self._seal_idle: dict[str, float] = {}
        self._files: dict[str, Stamp] = {}
        self._refused: set[str] = set()
        self._groups: dict[str, _Group] = {}

    def configure(self, group: str, *, seal_idle: float) -> None:
        self._seal_idle[group] = float(seal_idle)

    def known(self, path: str) -> Stamp | None:
        return self._files.get(path)

    def handle(self, event: Event, now: float) -> list[Action]:
        out: list[Action] = []
        match event:
            case Seen(group=group, path=path, stamp=stamp):
                self._refused.discard(path)
                if self._files.get(path) != stamp:
                    self._files[path] = stamp
                    g = self._group(group)
                    g.pending.add(path)
                    g.changed.add(path)
                    g.last_change = now
                    g.idle_sealed = False
            case Vanished(path=path):
                self._files.pop(path, None)
                self._refused.discard(path)
                for g in self._groups.values():
                    g.pending.discard(path)
                    g.changed.discard(path)
                    g.refused.discard(path)
            case Refused(group=group, path=path, code=code):
                self._files.pop(path, None)
                g = self._group(group)
                g.pending.discard(path)
                g.refused.discard(path)
                if path not in self._refused:
                    self._refused.add(path)
                    out.append(Ignored(path, code))
            case Imported(group=group, paths=paths, ended=ended, busy=busy):
                g = self._group(group)
                g.running = None
                g.last_import = now
                if busy:  # a file gone or refused meanwhile is not imported again
                    g.refused.update(p for p in paths if p in self._files)
                    self._back_off(g, now)
                else:
                    g.refused.difference_update(paths)
                    if not g.refused:
                        g.refusals = 0
                out.extend(Seal(group, sid, "session-end") for sid in dict.fromkeys(ended))
            case Busy(action=action):
                g = self._group(action.group)
                if isinstance(action, SealIdle):  # its quiet period again, with its files (rule 4)
                    g.idle_sealed = False
                    g.changed.update(p for p in action.paths if p in self._files)
                elif action not in g.seals:
                    g.seals.append(action)
                self._back_off(g, now)
            case Tick():
                pass
            case _:
                raise TypeError(f"watch core: unknown event {type(event).__name__}")
        for name in sorted(self._groups):
            out.extend(self._pump(name, self._groups[name], now))
        return out

    def next_wakeup(self) -> float | None:
        """The earliest moment a rule could act; ``None`` when nothing waits (rule 7)."""
        times = []
        for name, g in self._groups.items():
            if g.retry_at is not None:
                times.append(g.retry_at)
            if g.pending and g.running is None and g.last_import is not None:
                times.append(g.last_import + self.window)
            if (not g.idle_sealed and g.last_change is not None and g.running is None and not g.pending
                    and not g.sealing_held()):
                times.append(g.last_change + self._quiet(name))
        return min(times) if times else None

    def _back_off(self, g: _Group, now: float) -> None:
        """Rule 8: the refused work waits ``retry`` seconds, doubled with each refusal in a row."""
        g.refusals += 1
        g.retry_at = now + min(self.retry_max, self.retry * 2.0 ** min(g.refusals - 1, 32))

    def _pump(self, name: str, g: _Group, now: float) -> list[Action]:
        out: list[Action] = []
        if g.retry_at is not None and now >= g.retry_at:  # rule 8: the refused files join the next import
            g.retry_at = None
            g.pending |= g.refused
            g.refused.clear()
        if g.pending and g.running is None and (g.last_import is None or now >= g.last_import + self.window):
            g.running = tuple(sorted(g.pending))
            g.pending.clear()
            out.append(Import(name, g.running))
        if g.running is not None or g.pending or g.sealing_held():
            return out  # no seal before the imports are over and none of them refused (rule 8)
        if g.seals:
            out.extend(g.seals)
            g.seals.clear()
        quiet = self._quiet(name)
        if not g.idle_sealed and g.last_change is not None and now >= g.last_change + quiet:
            g.idle_sealed = True
            out.append(SealIdle(name, quiet, tuple(sorted(g.changed))))
            g.changed.clear()
        return out

    def _quiet(self, group: str) -> float:
        return self._seal_idle.get(group, self.seal_idle)

    def _group(self, name: str) -> _Group:
        return self._groups.setdefault(name, _Group())
