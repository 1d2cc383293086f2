"""Control programs: a batch of file-system operations run in one process.

A program is a list of operations against one pinned base directory. Each
operation reports exactly one :class:`~protocol.vocab.OpStatus`. The program
stops at the first operation that is not ``ok`` unless that operation is
``optional``; the rest report ``skipped``. An optional operation may be
refused (absent, conflict) but never fail: ``failed`` (an I/O error, no
space) stops every program, so nothing after it depends on a missing effect. A program may hold a target lock
for its whole run, which is what makes a compare-and-set real: the ``verify``
that proves a precondition and the writes that depend on it cannot be
separated by another holder of the same lock.

Operations (paths are '/'-separated, relative to the base, validated):

``verify``      file bytes or sha256 equal / file absent / claim ownership
``read``        file bytes (``absent`` if missing)
``create``      exclusive creation of an empty marker file
``write``       durable replace: temp + fsync + rename + fsync dir
``link``        exclusive durable publish: temp + fsync + link + fsync dir
``remove``      unlink (optionally only if the bytes hash to an expected value); rmdir of an empty directory
``list``        names in a directory (temps and dot-files excluded)
``clock``       the storage's own clock read in a directory
``ensure-dir``  create a directory chain (0700) if missing
``sync``        fsync a directory (after links published with ``sync=False``)
``link-all``    several exclusive durable publishes at once (reported as ``link``): every
                temp written, all fsynced together, each linked, every directory fsynced together
``create-all``  several exclusive creations of empty markers (reported as ``create``), their
                directories fsynced together
``ensure-dirs`` several directory chains (reported as ``ensure-dir``), the parents of those
                created fsynced together

Batched durability: several ``link``s into one directory with ``sync=False``
followed by one ``sync`` of that directory pay one directory fsync instead of
one each; each file's bytes are still fsynced before its link. Nothing may
depend on those links being durable before the ``sync``.
"""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import attrs
from cairn.protocol import codec
from cairn.protocol.claims import ClaimRecord
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.vocab import OpStatus
from cairn.state.fsdir import PinnedDir, check_name, fsync_all, split_rel
from cairn.state.locks import DEFAULT_WAIT, LockWait, TargetLock

_NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})


def os_error_code(exc: OSError) -> ErrorCode:
    """``E_NO_SPACE`` for a full device or an exhausted quota, else ``E_IO_FAILED``."""
    return ErrorCode.NO_SPACE if exc.errno in _NO_SPACE else ErrorCode.IO_FAILED


def os_error_message(exc: OSError) -> str:
    """The error's text with its symbolic name (``ENOSPC`` …), never a path's content."""
    name = errno.errorcode.get(exc.errno or 0, "")
    text = exc.strerror or str(exc)
    return f"{text} ({name})" if name else text


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@attrs.frozen
class Step:
    """What every operation has: ``optional`` (keyword only) and its ``op`` name, a class constant."""

    optional: bool = attrs.field(default=False, kw_only=True)
    op: ClassVar[str] = ""


@attrs.frozen
class Verify(Step):
    path: str
    sha256: str | None = None  # expected hash of the bytes
    data: bytes | None = None  # expected exact bytes
    absent: bool = False  # expect no file at all
    op = "verify"


@attrs.frozen
class VerifyOwner(Step):
    """Claim ownership, proven afresh: newest generation is ``generation``,
    its claim is ours (``nonce``), it has no outcome, and its deadline has not
    passed on the target clock."""

    scope_dir: str
    generation: int
    nonce: str
    deadline: float
    clock_offset: float = 0.0
    claim_bytes: bytes | None = None  # when known, compared instead of decoding the claim
    #: read the target clock in this directory instead of the scope's, once per program: a program
    #: proving several claims under all their locks (ADR 0023) reads one clock, not one per scope
    clock_dir: str | None = None
    op = "verify"


@attrs.frozen
class VerifyNewest(Step):
    """The newest claim generation in ``scope_dir`` is exactly ``generation``."""

    scope_dir: str
    generation: int
    op = "verify"


@attrs.frozen
class FindNewest(Step):
    """The newest claim generation in ``scope_dir`` (reported as a ``list``).

    Generations are contiguous at the top (N+1 is elected only while N is
    the newest, and pruning never removes the newest), so from a remembered
    ``hint`` the newest is found by probing names instead of listing a
    directory whose size grows with history.
    """

    scope_dir: str
    hint: int | None = None
    op = "list"


@attrs.frozen
class Read(Step):
    path: str
    limit: int = 64 << 20
    op = "read"


@attrs.frozen
class Create(Step):
    path: str
    op = "create"


@attrs.frozen
class Write(Step):
    path: str
    data: bytes
    mode: int = 0o600
    keep_mode: bool = False  # an existing file keeps its permission bits (``mode``: a new file's)
    op = "write"


@attrs.frozen
class Link(Step):
    """``data`` may be a function of the latest ``clock`` value read earlier in
    the same program, so a record can carry a time read under the lock."""

    path: str
    data: bytes | Callable[[float | None], bytes]
    mode: int = 0o600
    sync: bool = True  # False: the directory fsync is left to a later Sync of the same directory
    op = "link"


@attrs.frozen
class LinkAll(Step):
    """Exclusive durable publication of several files, in any directories, with batched durability.

    The same guarantee per file as :class:`Link` (its bytes are whole on disk
    before its name appears; its directory is fsynced before the operation
    reports), but the temps' fsyncs are waited on together, then the
    directories' (:func:`fsdir.fsync_all`): N files cost about two journal
    commits, not 2N. ``value`` is one flag per item, true when linked (false:
    the name existed). Status ``conflict`` when any name existed.
    """

    items: tuple[tuple[str, bytes | Callable[[float | None], bytes]], ...]
    mode: int = 0o600
    op = "link"


@attrs.frozen
class CreateAll(Step):
    """Exclusive creation of several empty markers, their directories fsynced together.

    The guarantee per marker of :class:`Create`; ``value`` is one flag per
    path, true when created (false: it existed). Status ``conflict`` when any
    existed.
    """

    paths: tuple[str, ...]
    op = "create"


@attrs.frozen
class EnsureDirs(Step):
    """:class:`EnsureDir` of several chains: the directories made, then their parents fsynced together."""

    paths: tuple[str, ...]
    op = "ensure-dir"


@attrs.frozen
class Remove(Step):
    path: str
    sha256: str | None = None
    sync: bool = True
    op = "remove"


@attrs.frozen
class RemoveDir(Step):
    """Remove an empty directory (``absent`` if missing, ``conflict`` if anything is in it)."""

    path: str
    op = "remove"


@attrs.frozen
class ListDir(Step):
    path: str
    op = "list"


@attrs.frozen
class Clock(Step):
    path: str
    offset: float = 0.0
    op = "clock"


@attrs.frozen
class Sync(Step):
    path: str
    op = "sync"


@attrs.frozen
class EnsureDir(Step):
    path: str
    op = "ensure-dir"


Op = (Verify | VerifyOwner | VerifyNewest | FindNewest | Read | Create | Write | Link | LinkAll | Remove | RemoveDir
      | ListDir | Clock | EnsureDir | Sync | CreateAll | EnsureDirs)


@attrs.frozen
class OpResult:
    op: str
    status: OpStatus
    value: Any = None  # bytes for read, list[str] for list, float for clock
    code: ErrorCode | None = None
    message: str = ""


@attrs.frozen
class ProgramResult:
    results: tuple[OpResult, ...]

    @property
    def ok(self) -> bool:
        """True when every operation reported ``ok`` (optional ones included)."""
        return all(r.status is OpStatus.OK for r in self.results)

    @property
    def failed_at(self) -> int | None:
        for i, r in enumerate(self.results):
            if r.status not in (OpStatus.OK,):
                return i
        return None

    def __getitem__(self, i: int) -> OpResult:
        return self.results[i]

    def raise_failed(self) -> None:
        """Raise the first ``failed`` operation's error; conflicts, absences and skips are the caller's to judge."""
        for r in self.results:
            if r.status is OpStatus.FAILED:
                raise CairnError(r.code or ErrorCode.IO_FAILED, r.message)


def _dirname(path: str) -> tuple[str, str]:
    parts = split_rel(path)
    if not parts:
        raise CairnError(ErrorCode.PATH_INVALID_NAME, "empty path")
    return "/".join(parts[:-1]), parts[-1]


class _Dirs:
    """Opened directories of one program run, reused across its operations."""

    def __init__(self, base: PinnedDir) -> None:
        self.base = base
        self.cache: dict[str, PinnedDir] = {}
        self.clock: float | None = None
        self.clocks: dict[str, float] = {}  # target clock read once per directory (``VerifyOwner.clock_dir``)

    def get(self, rel: str, *, create: bool = False, defer: list[PinnedDir] | None = None) -> PinnedDir:
        """The pinned directory ``rel``, opened from its nearest already-opened ancestor.

        Every component is still opened relative to its parent's pinned
        descriptor (:meth:`PinnedDir.child`); a program touching several
        directories under one parent opens that parent once, not once each.
        """
        if rel in ("", "."):
            return self.base
        d = self.cache.get(rel)
        if d is not None:
            return d
        parts = split_rel(rel)
        i = len(parts) - 1
        while i > 0 and "/".join(parts[:i]) not in self.cache:
            i -= 1
        cur = self.cache["/".join(parts[:i])] if i > 0 else self.base
        for k in range(i, len(parts)):
            cur = cur.child(parts[k], create=create, defer=defer)
            self.cache["/".join(parts[:k + 1])] = cur
        return cur

    def forget(self, rel: str) -> None:
        """Drop ``rel`` (just removed) and anything opened below it: a later step reopens them."""
        rel = "/".join(split_rel(rel))
        for k in [k for k in self.cache if k == rel or k.startswith(rel + "/")]:
            self.cache.pop(k).close()

    def close(self) -> None:
        for d in self.cache.values():
            d.close()
        self.cache.clear()


def _is_plain(name: str) -> bool:
    return not name.startswith(".")


def newest_generation(names: list[str]) -> int:
    best = 0
    for n in names:
        if n.endswith(".claim"):
            stem = n[:-6]
            if stem.isdigit():
                best = max(best, int(stem))
    return best


def probe_newest(d: PinnedDir, hint: int | None) -> int:
    """Newest generation, walking up from ``hint`` (or listing when there is none)."""
    if hint is None or hint < 0:
        return newest_generation(d.listdir())
    n = hint
    if n > 0 and not d.exists(f"{n}.claim"):
        # the hinted generation is gone (pruned): it was not the newest; list once
        return newest_generation(d.listdir())
    while d.exists(f"{n + 1}.claim"):
        n += 1
    return n


def _read_or_none(dirs: _Dirs, d: str, name: str, limit: int = 64 << 20) -> bytes | None:
    """A file's bytes; None when it or a parent directory does not exist."""
    try:
        pd = dirs.get(d)
    except CairnError as exc:
        if exc.code is ErrorCode.NOT_FOUND:
            return None
        raise
    return pd.read(name, limit=limit)


def _run_one(dirs: _Dirs, op: Op) -> OpResult:
    if isinstance(op, Verify):
        d, name = _dirname(op.path)
        data = _read_or_none(dirs, d, name)
        if op.absent:
            return OpResult(op.op, OpStatus.OK if data is None else OpStatus.CONFLICT)
        if data is None:
            return OpResult(op.op, OpStatus.ABSENT)
        if op.data is not None and data != op.data:
            return OpResult(op.op, OpStatus.MISMATCH)
        if op.sha256 is not None and sha256(data) != op.sha256:
            return OpResult(op.op, OpStatus.MISMATCH)
        return OpResult(op.op, OpStatus.OK, data)
    if isinstance(op, VerifyOwner):
        owner_dir = dirs.get(op.scope_dir)
        newest = probe_newest(owner_dir, op.generation)
        if newest != op.generation:
            return OpResult(op.op, OpStatus.CONFLICT, code=ErrorCode.CLAIM_LOST,
                            message=f"generation {op.generation} superseded by {newest}")
        if owner_dir.exists(f"{op.generation}.outcome"):
            return OpResult(op.op, OpStatus.CONFLICT, code=ErrorCode.CLAIM_LOST,
                            message=f"generation {op.generation} already settled")
        raw = owner_dir.read(f"{op.generation}.claim")
        if raw is None or (raw != op.claim_bytes if op.claim_bytes is not None else codec.decode(
                raw, ClaimRecord, where=f"{op.scope_dir}/{op.generation}.claim").nonce != op.nonce):
            return OpResult(op.op, OpStatus.MISMATCH, code=ErrorCode.CLAIM_LOST,
                            message=f"generation {op.generation} is not ours")
        if op.clock_dir is None:
            now = owner_dir.clock() + op.clock_offset
        else:
            if op.clock_dir not in dirs.clocks:
                dirs.clocks[op.clock_dir] = dirs.get(op.clock_dir).clock()
            now = dirs.clocks[op.clock_dir] + op.clock_offset
        dirs.clock = now
        if now >= op.deadline:
            return OpResult(op.op, OpStatus.CONFLICT, code=ErrorCode.CLAIM_EXPIRED,
                            message=f"generation {op.generation} deadline passed")
        return OpResult(op.op, OpStatus.OK, now)
    if isinstance(op, VerifyNewest):
        newest = probe_newest(dirs.get(op.scope_dir), op.generation)
        return OpResult(op.op, OpStatus.OK if newest == op.generation else OpStatus.CONFLICT, newest)
    if isinstance(op, FindNewest):
        return OpResult(op.op, OpStatus.OK, probe_newest(dirs.get(op.scope_dir), op.hint))
    if isinstance(op, Read):
        d, name = _dirname(op.path)
        data = _read_or_none(dirs, d, name, op.limit)
        return OpResult(op.op, OpStatus.ABSENT if data is None else OpStatus.OK, data)
    if isinstance(op, Create):
        d, name = _dirname(op.path)
        return OpResult(op.op, OpStatus.OK if dirs.get(d).create_empty(name) else OpStatus.CONFLICT)
    if isinstance(op, Write):
        d, name = _dirname(op.path)
        dirs.get(d).replace(name, op.data, mode=op.mode, keep_mode=op.keep_mode)
        return OpResult(op.op, OpStatus.OK)
    if isinstance(op, Link):
        d, name = _dirname(op.path)
        data = op.data(dirs.clock) if callable(op.data) else op.data
        won = dirs.get(d).publish(name, data, mode=op.mode, sync=op.sync)
        return OpResult(op.op, OpStatus.OK if won else OpStatus.CONFLICT)
    if isinstance(op, LinkAll):
        linked = _link_all(dirs, op)
        return OpResult(op.op, OpStatus.OK if all(linked) else OpStatus.CONFLICT, linked)
    if isinstance(op, Remove):
        d, name = _dirname(op.path)
        pd = dirs.get(d)
        if op.sha256 is not None:
            data = pd.read(name)
            if data is None:
                return OpResult(op.op, OpStatus.ABSENT)
            if sha256(data) != op.sha256:
                return OpResult(op.op, OpStatus.MISMATCH)
        return OpResult(op.op, OpStatus.OK if pd.remove(name, sync=op.sync) else OpStatus.ABSENT)
    if isinstance(op, RemoveDir):
        d, name = _dirname(op.path)
        try:
            parent = dirs.get(d)
        except CairnError as exc:
            if exc.code is ErrorCode.NOT_FOUND:
                return OpResult(op.op, OpStatus.ABSENT)
            raise
        gone = parent.remove_dir(name)
        if gone:
            dirs.forget(op.path)
        return OpResult(op.op, OpStatus.OK if gone else OpStatus.ABSENT if gone is False else OpStatus.CONFLICT)
    if isinstance(op, ListDir):
        try:
            pd = dirs.get(op.path)
        except CairnError as exc:
            if exc.code is ErrorCode.NOT_FOUND:
                return OpResult(op.op, OpStatus.ABSENT, [])
            raise
        return OpResult(op.op, OpStatus.OK, sorted(n for n in pd.listdir() if _is_plain(n)))
    if isinstance(op, Clock):
        dirs.clock = dirs.get(op.path).clock() + op.offset
        return OpResult(op.op, OpStatus.OK, dirs.clock)
    if isinstance(op, Sync):
        dirs.get(op.path).sync()
        return OpResult(op.op, OpStatus.OK)
    if isinstance(op, EnsureDir):
        dirs.get(op.path, create=True)
        return OpResult(op.op, OpStatus.OK)
    if isinstance(op, CreateAll):
        made = _create_all(dirs, op)
        return OpResult(op.op, OpStatus.OK if all(made) else OpStatus.CONFLICT, made)
    if isinstance(op, EnsureDirs):
        _ensure_dirs(dirs, op.paths)
        return OpResult(op.op, OpStatus.OK)
    raise TypeError(f"unknown operation {op!r}")


def _link_all(dirs: _Dirs, op: LinkAll) -> tuple[bool, ...]:
    staged: list[tuple[PinnedDir, str, int, str]] = []  # (directory, temp, descriptor, name)
    won: list[bool] = []
    try:
        for path, data in op.items:
            d, name = _dirname(path)
            check_name(name)
            pd = dirs.get(d)
            tmp, fd = pd.stage(data(dirs.clock) if callable(data) else data, mode=op.mode)
            staged.append((pd, tmp, fd, name))
        fsync_all([fd for _, _, fd, _ in staged], "fsync-temp")
        for pd, tmp, _, name in staged:
            won.append(pd.link_staged(tmp, name))
    finally:
        for i, (pd, tmp, fd, _) in enumerate(staged):
            os.close(fd)
            if i >= len(won):  # not linked (an error stopped us): leave no temp behind
                pd.unlink_quiet(tmp)
    # Every directory of an item, linked now or found already there: a rerun after a
    # kill between the links and this fsync must not report names that a power
    # loss could still take away.
    synced: dict[int, PinnedDir] = {}
    for pd, _, _, _ in staged:
        synced.setdefault(id(pd), pd)
    fsync_all([pd.fd for pd in synced.values()], "fsync-dir")
    return tuple(won)


def _create_all(dirs: _Dirs, op: CreateAll) -> tuple[bool, ...]:
    made: list[bool] = []
    synced: dict[int, PinnedDir] = {}
    for path in op.paths:
        d, name = _dirname(path)
        pd = dirs.get(d)
        made.append(pd.create_empty(name, sync=False))
        synced.setdefault(id(pd), pd)
    # every directory, created in or found holding the marker: it may be one a writer made but lost
    # before its directory fsync (see :meth:`PinnedDir.publish`)
    fsync_all([pd.fd for pd in synced.values()], "fsync-dir")
    return tuple(made)


def _ensure_dirs(dirs: _Dirs, paths: Sequence[str]) -> None:
    """Every chain of ``paths`` made; the parents that got a new entry fsynced together, before any
    operation puts something in the new directories (an empty directory found later is one whose entry
    may not be durable: :meth:`PinnedDir.child` fsyncs its parent then)."""
    parents: list[PinnedDir] = []
    for path in paths:
        dirs.get(path, create=True, defer=parents)
    fsync_all([pd.fd for pd in {id(pd): pd for pd in parents}.values()], "fsync-dir")


def run(base: PinnedDir, ops: Sequence[Op], *, lock: str | None = None, wait: LockWait = DEFAULT_WAIT,
        locks: Sequence[str] = ()) -> ProgramResult:
    """Run a control program; see the module docstring for the contract.

    ``lock`` names a directory (relative to ``base``) whose target lock is held
    for the whole program; a lock still held by another after ``wait`` raises
    ``E_CLAIM_BUSY`` before any operation ran. ``locks``: several such
    directories, all held for the whole program, taken in sorted order (two
    programs needing some of the same locks never wait on each other in a
    cycle) and released if one of them cannot be taken. Errors that are not
    statuses (a symlinked component, an I/O error) report ``failed`` with their
    fixed code and stop the program.
    """
    dirs = _Dirs(base)
    results: list[OpResult] = []
    held: list[TargetLock] = []
    try:
        names = sorted({*locks, *([lock] if lock is not None else [])})
        made: list[PinnedDir] = []  # several lock directories made: their parents fsynced together
        where = [dirs.get(name, create=True, defer=made if len(names) > 1 else None) for name in names]
        if made:
            fsync_all([pd.fd for pd in {id(pd): pd for pd in made}.values()], "fsync-dir")
        for name, pd in zip(names, where, strict=True):
            tl = TargetLock(pd, wait, name=name)
            tl.acquire()
            held.append(tl)
        stopped = False
        for op in ops:
            if stopped:
                results.append(OpResult(op.op, OpStatus.SKIPPED))
                continue
            try:
                res = _run_one(dirs, op)
            except CairnError as exc:
                res = OpResult(op.op, OpStatus.FAILED, code=exc.code, message=exc.message)
            except OSError as exc:
                res = OpResult(op.op, OpStatus.FAILED, code=os_error_code(exc), message=os_error_message(exc))
            results.append(res)
            if res.status is OpStatus.FAILED or (res.status is not OpStatus.OK and not op.optional):
                stopped = True  # optional means "may be refused", never "may fail" (no space …)
    finally:
        for tl in reversed(held):
            tl.release()
        dirs.close()
    return ProgramResult(tuple(results))
