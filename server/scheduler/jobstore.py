"""The durable job store: where the coordinator's jobs live between server runs.

One file per workspace, ``<ws>/.cairn/state/server/jobs.json``, holding that
workspace's part of the coordinator's :class:`protocol.jobs.JobStore`
(``split_store``); a start reads every workspace's part and merges them
(``merge_stores``). An unreadable file is kept as ``jobs.json.bad`` for a
person and the workspace starts with no stored jobs.

Ownership: with ``locked=True`` (the language server), a workspace's file is
written only by the process holding ``jobs.lock`` beside it. A second
editor's server on the same workspace keeps its jobs in memory (claims still
fence every job); the lock belongs to the process and ends with it.

:meth:`JobStoreFiles.save` is what the adapter calls for every ``Persist``
action: it writes only the parts whose bytes changed, in a thread, and
counts failures (the coordinator keeps running from memory).
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import logging
import os
import stat
from collections.abc import Iterable

from cairn.protocol import codec
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.jobs import Job, JobStore
from cairn.state.fsdir import PinnedDir

log = logging.getLogger("cairn.server.scheduler.jobstore")

STORE_DIR = ".cairn/state/server"
STORE_FILE = "jobs.json"
LOCK_FILE = "jobs.lock"


def split_store(store: JobStore) -> dict[str, JobStore]:
    """One store per workspace (jobs, that workspace's cleanup throttle, the shared next_seq)."""
    workspaces = {j.workspace for j in store.jobs} | set(store.cleanup_offered)
    return {
        ws: JobStore(
            jobs=tuple(j for j in store.jobs if j.workspace == ws),
            next_seq=store.next_seq,
            cleanup_offered={k: v for k, v in store.cleanup_offered.items() if k == ws},
        )
        for ws in workspaces
    }


def merge_stores(stores: Iterable[JobStore]) -> JobStore:
    """Several workspaces' stores as one; colliding job ids get fresh numbers (order kept)."""
    jobs: list[Job] = []
    cleanup: dict[str, float] = {}
    next_seq = 1
    for store in stores:
        jobs.extend(store.jobs)
        cleanup.update(store.cleanup_offered)
        next_seq = max(next_seq, store.next_seq)
    jobs.sort(key=lambda j: (j.seq, j.created, j.workspace))
    seen: set[str] = set()
    out: list[Job] = []
    next_seq = max([next_seq, *(j.seq + 1 for j in jobs)])
    for job in jobs:
        if job.id in seen:
            job = codec.evolve(job, id=f"job-{next_seq}", seq=next_seq)
            next_seq += 1
        seen.add(job.id)
        out.append(job)
    return JobStore(jobs=tuple(out), next_seq=next_seq, cleanup_offered=cleanup)


def write_store(workspace: str, data: bytes) -> None:
    """Durable replace of ``<ws>/.cairn/state/server/jobs.json`` (blocking: run in a thread)."""
    with PinnedDir.open_root(workspace) as root, root.descend(STORE_DIR, create=True) as d:
        d.replace(STORE_FILE, data)


def read_store(workspace: str) -> tuple[JobStore | None, str | None]:
    """The workspace's stored jobs, or ``(None, code)`` when unreadable (blocking)."""
    try:
        with PinnedDir.open_root(workspace) as root:
            try:
                d = root.descend(STORE_DIR)
            except CairnError as exc:
                if exc.code is ErrorCode.NOT_FOUND:
                    return None, None
                raise
            with d:
                data = d.read(STORE_FILE)
                if data is None:
                    return None, None
                try:
                    return codec.decode(data, JobStore, where="job store"), None
                except CairnError as exc:
                    d.replace(STORE_FILE + ".bad", data)  # keep the unreadable bytes for a person
                    return None, str(exc.code)
    except CairnError as exc:
        return None, str(exc.code)
    except FileNotFoundError:
        return None, None
    except OSError:
        return None, str(ErrorCode.IO_FAILED)


class JobStoreFiles:
    """The job-store files of one process. ``locked``: write only workspaces whose lock it holds."""

    def __init__(self, *, locked: bool = False) -> None:
        self.locked = locked
        self.errors = 0  # failed writes (each logged with its code)
        self._locks: dict[str, int] = {}  # workspace -> the locked descriptor this process holds
        self._written: dict[str, bytes] = {}

    def own(self, workspace: str) -> bool:
        """Take the workspace's job-store lock (blocking I/O: call in a thread). True if held.

        The lock file is opened like every file under ``.cairn/state``: through
        the pinned directory, never following a symlink (a cloned repository
        may ship ``jobs.lock`` linked elsewhere), without blocking (a FIFO
        there would hang the opener) and only as a regular file, mode 0600.
        The lock is ``lockf`` (per process), as the job store has always used.
        """
        if not self.locked or workspace in self._locks:
            return True
        try:
            with PinnedDir.open_root(workspace) as root, root.descend(STORE_DIR, create=True) as d:
                fd = os.open(LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                             0o600, dir_fd=d.fd)
        except CairnError:
            return False
        except OSError as exc:
            code = ErrorCode.PATH_SYMLINK if exc.errno == errno.ELOOP else ErrorCode.IO_FAILED
            log.warning("job store for %s not owned: %s %s (%s)", workspace, STORE_DIR, LOCK_FILE, code)
            return False
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                log.warning("job store for %s not owned: %s %s (%s)", workspace, STORE_DIR, LOCK_FILE,
                            ErrorCode.PATH_NOT_REGULAR)
                os.close(fd)
                return False
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)  # held by another server process (or unlockable): this one keeps jobs in memory
            return False
        self._locks[workspace] = fd
        return True

    def owns(self, workspace: str) -> bool:
        return not self.locked or workspace in self._locks

    def write(self, workspace: str, data: bytes) -> None:
        """Durably replace one workspace's part, if this process may (blocking)."""
        if self.owns(workspace):
            write_store(workspace, data)

    async def save(self, store: JobStore) -> None:
        """Persist ``store``: every workspace part whose bytes changed, each in a thread."""
        parts = split_store(store)
        for ws in set(self._written) - set(parts):
            parts[ws] = JobStore(next_seq=store.next_seq)  # its last job left: write it empty
        for ws, part in sorted(parts.items()):
            data = codec.encode(part)
            if self._written.get(ws) == data:
                continue
            try:
                await asyncio.to_thread(self.write, ws, data)
                self._written[ws] = data
            except (CairnError, OSError) as exc:
                self.errors += 1
                code = exc.code if isinstance(exc, CairnError) else ErrorCode.IO_FAILED
                log.warning("job store for %s not written (%s)", ws, code)
