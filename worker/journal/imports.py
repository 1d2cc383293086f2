"""Importing transcript files: many sessions in flight, each captured exactly as alone.

A session's capture (:func:`capture.capture_session`) spends most of its time
waiting for ``fsync``: a small session pays its own claim, directories,
capture marker, segment, pin and entry, about sixteen synchronous
publications whatever its length. Those waits are what capped an import of
many small sessions. Here up to :data:`WORKERS` files are captured at once,
each in its own thread: every session still runs its own programs, in its
own order, under its own claim generations — nothing about one session's
capture changes — but the waits of several sessions overlap, and the file
system's journal commits the publications of all sessions in flight
together (group commit) instead of one after another (docs/adr/0010).

Why this is safe: different sessions are different claim scopes, which
were always allowed to be written concurrently (an editor's capture, the
watcher and an import already run side by side). The pool only adds:

* *one session at a time*: a file whose sessions overlap a file still in
  flight (the same session in two files) waits for that file first, so a
  session never races itself for its claim;
* *one file per thread*: the sessions of a file are read from one shared
  handle, so they are captured one after another in that file's task;
* *results in order*: files are reported in the order given, whatever order
  they finish in, so the summary and ``session_ids`` do not change;
* *stop*: once ``stop()`` answers true (Ctrl-C) no new file starts; files in
  flight stop at their next batch boundary, as a single import does. On an
  error the files given before the failing one finish (as they would have
  one after another), those given after it stop the same way, all are
  waited for (their batches are whole), then the error is raised: the error of the
  earliest file given, as one after another. A Ctrl-C with no ``stop`` (the
  ``import`` job run in the command's own process) stops every file in flight,
  the oldest included, at its batch boundary.

``CAIRN_IMPORT_WORKERS=1`` captures one file after another (the order of
mutating operations is then deterministic, which some crash tests want).
"""

from __future__ import annotations

import collections
import contextlib
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, NoReturn

from cairn.protocol.digest import ModelPolicy
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.knobs import env_int
from cairn.protocol.worker import WorkerRequest
from cairn.worker.ingest.importers._jsonl import StreamedSession
from cairn.worker.journal.capture import AnySession, Stop, capture_session, policy_from_config
from cairn.worker.journal.import_split import SIBLING_WAIT, Helper, helper_share, merge
from cairn.worker.journal.store import Journal

#: files captured at once (threads mostly waiting on fsync; the GIL bounds the CPU part)
WORKERS = env_int("CAIRN_IMPORT_WORKERS", 8)


#: one source of an import: its path, its format ("auto" to detect), the session ids to keep (None: all)
Item = tuple[str, str, frozenset[str] | None]
#: what ``failed`` tolerates: the fixed errors, and record shapes no importer check foresaw
TOLERATED = (CairnError, ValueError, TypeError, KeyError, AttributeError, IndexError, RecursionError)


def failure(index: int, name: str, exc: BaseException) -> dict[str, Any]:
    """A file that could not be imported: its fixed code and a message without transcript text."""
    if isinstance(exc, CairnError):
        return {"index": index, "code": str(exc.code), "message": exc.message}
    return {"index": index, "code": str(ErrorCode.IMPORT_MALFORMED),
            "message": f"{name}: unexpected record shape ({type(exc).__name__})"}


class _File:
    """One opened file in flight: its sessions, its open context, its task."""

    def __init__(self, index: int, name: str, ctx: contextlib.ExitStack, sessions: list[AnySession],
                 hint: int) -> None:
        self.index, self.name, self.ctx, self.sessions, self.hint = index, name, ctx, sessions, hint
        self.ids = {s.session_id for s in sessions}
        self.future: Future[list[dict[str, Any]]] | None = None
        self.abort = threading.Event()  # an error in a file given before it: stop at a batch boundary


def import_paths(j: Journal, paths: list[str], fmt: str, policy: ModelPolicy, *,
                 follow_symlinks: bool = True, only: frozenset[str] | None = None,
                 progress: Callable[[int, int], None] | None = None, stop: Stop | None = None,
                 workers: int | None = None, processes: int = 1, sibling: bool = False) -> dict[str, Any]:
    """Capture the sessions of ``paths``; ``progress(done, total)`` counts turns seen so far.

    ``only`` keeps the sessions with those ids (one workspace's sessions of a
    database shared by many); ``follow_symlinks=False`` refuses links.

    With ``stop``, the import ends at the next batch boundary once it answers
    true (``interrupted`` in the result); a later import of the same paths
    resumes where it stopped, since captured turns are skipped.

    With ``processes=2`` and many files, a helper process imports the last
    files given (:mod:`.import_split`); the result is the same. ``sibling``
    (set in either process of such a pair) waits for a session's claim held
    by the other process instead of failing with ``E_CLAIM_BUSY``.
    """
    return import_items(j, [(p, fmt, only) for p in paths], policy, follow_symlinks=follow_symlinks,
                        progress=progress, stop=stop, workers=workers, processes=processes, sibling=sibling)


def import_items(j: Journal, items: list[Item], policy: ModelPolicy, *, follow_symlinks: bool = True,
                 progress: Callable[[int, int], None] | None = None, stop: Stop | None = None,
                 workers: int | None = None, processes: int = 1, sibling: bool = False,
                 failed: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """:func:`import_paths` of ``(path, format, only)`` items, each with its own format and session ids.

    With ``failed`` (a list), a file that cannot be imported -- unreadable,
    malformed, refused, or failing while captured -- is appended to it as
    ``{"index", "code", "message"}`` and the other files go on (``cairn import
    --all``: one store's bad file never holds the others hostage); it counts
    in no total, and what it captured before failing stays captured. Without
    it, the first error is raised as described in the module docstring.
    """
    k = helper_share(len(items), processes)
    busy_wait = SIBLING_WAIT if (sibling or k) else 0.0
    if not k:
        return _import_items(j, items, policy, follow_symlinks=follow_symlinks, progress=progress, stop=stop,
                             workers=workers, busy_wait=busy_wait, failed=failed)
    lock = threading.Lock()
    own = [0, 0]
    helper: list[Helper] = []

    def report() -> None:
        if progress is not None and helper:
            with lock:
                progress(own[0] + helper[0].done, own[1] + helper[0].total)

    def own_progress(done: int, total: int) -> None:
        own[:] = [done, total]
        report()

    def halted() -> bool:
        asked = stop is not None and stop()
        if asked and helper:
            helper[0].stop()
        return asked

    mine, theirs = items[:-k], items[-k:]
    helper.append(Helper(j.workspace, theirs, policy, follow_symlinks=follow_symlinks, tolerant=failed is not None,
                         on_progress=report))
    try:
        out = _import_items(j, mine, policy, follow_symlinks=follow_symlinks, progress=own_progress, stop=halted,
                            workers=workers, busy_wait=busy_wait, failed=failed)
    except BaseException:
        helper[0].stop()  # files given after a failed one stop at their batch boundary
        with contextlib.suppress(BaseException):
            helper[0].wait()
        raise
    try:
        theirs_out = helper[0].wait(halted)
    except CairnError as exc:
        if failed is None:
            raise
        # tolerant (``--all``): the helper itself failed (it died, or its answer was unreadable); each of
        # its files is listed with that code, and this process's files keep their results
        theirs_out = {"files": 0, "sessions": 0, "captured": 0, "skipped": 0, "repaired": 0, "session_ids": [],
                      "malformed": [], "interrupted": False,
                      "failed": [{"index": i, "code": str(exc.code), "message": exc.message} for i in range(k)]}
    merge(out, theirs_out, failed, offset=len(mine))
    return out


def _import_items(j: Journal, items: list[Item], policy: ModelPolicy, *, follow_symlinks: bool,
                  progress: Callable[[int, int], None] | None, stop: Stop | None, workers: int | None,
                  busy_wait: float, failed: list[dict[str, Any]] | None) -> dict[str, Any]:
    """:func:`import_items` in this process alone."""
    from cairn.worker.ingest.importers import open_report

    n_workers = max(1, min(workers or WORKERS, len(items)))  # one file: no thread to start
    out: dict[str, Any] = {"files": 0, "sessions": 0, "captured": 0, "skipped": 0, "repaired": 0, "session_ids": [],
                           "interrupted": False, "malformed": []}
    lock = threading.Lock()
    counts = {"total": 0, "done": 0}

    def tick(n: int) -> None:
        with lock:
            counts["done"] += n
            if progress:
                progress(counts["done"], counts["total"])

    def run_file(f: _File) -> list[dict[str, Any]]:
        def halted() -> bool:
            return f.abort.is_set() or (stop is not None and stop())

        results = []
        for s in f.sessions:
            r = capture_session(j, s, source=f"import:{s.source_format}", policy=policy, progress=tick, stop=halted,
                                busy_wait=busy_wait)
            results.append(r)
            if r["interrupted"]:
                break
        return results

    def _stop_all_then_raise(f: _File) -> NoReturn:
        """``f`` failed: every file in flight was given after it and stops at its batch boundary."""
        for g in (f, *inflight):
            g.abort.set()
        _wait(f)
        f.ctx.close()
        raise

    def settle(f: _File) -> None:
        """Consume the oldest file's results (in the order given), then close it.

        If that file failed, every file in flight was given after it: each is asked to stop. If the
        wait itself was interrupted (Ctrl-C with no ``stop``), that file stops at its batch boundary
        too, and its file stays open until its thread has let go of it.
        """
        assert f.future is not None
        try:
            results = f.future.result()
        except TOLERATED as exc:
            if failed is None:
                _stop_all_then_raise(f)
            _wait(f)
            f.ctx.close()
            out["files"] -= 1
            failed.append(failure(f.index, f.name, exc))
            return
        except BaseException:
            _stop_all_then_raise(f)
        f.ctx.close()
        streamed = 0
        for s, r in zip(f.sessions, results, strict=False):
            if isinstance(s, StreamedSession) and not r["interrupted"]:  # the hint was an upper bound
                streamed += s.turn_hint - r["turns"]
            if r["turns"] or r["interrupted"]:
                out["sessions"] += 1
                out["session_ids"].append(s.session_id)
            for key in ("captured", "skipped", "repaired"):
                out[key] += r[key]
            if r["interrupted"]:
                out["interrupted"] = True
        if streamed:
            with lock:
                counts["total"] -= streamed

    j.claims.root  # noqa: B018 -- pinned once here, never raced for by the threads
    inflight: collections.deque[_File] = collections.deque()
    pool = ThreadPoolExecutor(max_workers=n_workers, thread_name_prefix="cairn-import") if n_workers > 1 else None
    try:
        for index, (p, fmt, only) in enumerate(items):
            if out["interrupted"] or (stop is not None and stop()):
                out["interrupted"] = True
                break
            ctx = contextlib.ExitStack()
            try:
                loaded = ctx.enter_context(open_report(Path(p), fmt, follow_symlinks=follow_symlinks))
            except TOLERATED as exc:
                ctx.close()
                if failed is not None:
                    failed.append(failure(index, Path(p).name, exc))
                    continue
                while inflight:  # the files given before it finish first; an error of theirs comes first
                    settle(inflight.popleft())
                raise
            except BaseException:
                ctx.close()
                raise
            out["files"] += 1
            out["malformed"] += [{"file": Path(p).name, "line": e.detail.get("line"), "code": str(e.code),
                                  "message": e.message} for e in loaded.skipped]
            wanted = [s for s in loaded.sessions if only is None or s.session_id in only]
            f = _File(index, Path(p).name, ctx, wanted,
                      sum(s.turn_hint if isinstance(s, StreamedSession) else len(s.turns) for s in wanted))
            with lock:
                counts["total"] += f.hint
            # one session at a time; at most ``n_workers`` files open and in flight
            try:
                while inflight and (len(inflight) >= n_workers or any(f.ids & g.ids for g in inflight)):
                    settle(inflight.popleft())
            except BaseException:
                ctx.close()
                raise
            if pool is None:
                f.future = Future()
                inflight.append(f)
                try:
                    f.future.set_result(run_file(f))
                except BaseException as exc:
                    f.future.set_exception(exc)
                settle(inflight.popleft())
            else:
                f.future = pool.submit(run_file, f)
                inflight.append(f)
        while inflight:
            settle(inflight.popleft())
    except BaseException as exc:
        if not isinstance(exc, Exception):  # a second Ctrl-C: every file stops at its batch boundary
            for f in inflight:
                f.abort.set()
        # files given before a failed one finish (as they would have, one after another); then close each
        for f in inflight:
            _wait(f)
            f.ctx.close()
        raise
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    return out


def _wait(f: _File) -> BaseException | None:
    """Wait until ``f``'s task is over (a Ctrl-C meanwhile does not cut the wait short); its error, if any."""
    while f.future is not None:
        with contextlib.suppress(BaseException):
            return f.future.exception()
    return None


#: a file's own failures, which ``import_each`` lists and goes on from; any other failure is the journal's
FILE_FAILURES = frozenset({ErrorCode.IMPORT_UNREADABLE, ErrorCode.IMPORT_TOO_LARGE, ErrorCode.IMPORT_UNKNOWN_FORMAT,
                           ErrorCode.IMPORT_MALFORMED, ErrorCode.PATH_SYMLINK})


def import_each(j: Journal, paths: list[str], fmt: str, policy: ModelPolicy) -> dict[str, Any]:
    """:func:`import_items` with a failed list: a file that cannot be imported is listed in ``failed``
    (name and fixed code) and the others are imported (a batch of live files is not held
    hostage by one that vanished or is being rewritten). The files are watched session files: each
    is opened without following a link on its whole path (one swapped for a link since the watcher
    looked is ``E_PATH_SYMLINK``, never read through it). The journal's own failures (no space, a
    claim held elsewhere …) fail the job once the others are done, so it is retried."""
    failed: list[dict[str, Any]] = []
    r = import_items(j, [(p, fmt, None) for p in paths], policy, follow_symlinks=False, failed=failed)
    failed.sort(key=lambda f: int(f["index"]))
    for f in failed:
        if ErrorCode(f["code"]) not in FILE_FAILURES:
            raise CairnError(ErrorCode(f["code"]), f["message"])
    return {key: r[key] for key in ("files", "sessions", "captured", "skipped", "session_ids", "malformed")} | {
        "failed": [{"file": os.path.basename(paths[int(f["index"])]), "code": f["code"]} for f in failed]}


def job_import(req: WorkerRequest) -> dict[str, Any]:
    """Import transcript files; with ``each`` (live watching), file by file (:func:`import_each`)."""
    paths = [os.path.join(req.workspace, p) if not os.path.isabs(p) else p for p in req.args.get("paths", [])]
    run = import_each if req.args.get("each") else import_paths
    with Journal(req.workspace) as j:
        return run(j, paths, str(req.args.get("format", "auto")), policy_from_config(req.config))
