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
* *stop*: once ``stop()`` answers true (Ctrl-C) no new file starts — a file's
  or a group's task handed out before the stop but begun after it captures
  nothing (:data:`NOT_STARTED`), and a file of several sessions starts no
  other —; files in flight stop at their next batch boundary, as a single
  import does (a group's three programs are one batch). The import's own
  thread waits for its files :data:`POLL` seconds at a time, asking ``stop``
  in between: Python runs a signal handler only in that thread, and a Ctrl-C
  the kernel gave a capture thread would not wake it from a blocking wait
  (the stop was seen, and passed on to a helper process, only once the
  oldest file was done). A stop asked before the import returns makes it
  ``interrupted`` even when nothing was left (the caller stops too). On an
  error the files given before the failing one finish (as they would have
  one after another), those given after it stop the same way, all are
  waited for (their batches are whole), then the error is raised: the error of the
  earliest file given, as one after another. A Ctrl-C with no ``stop`` (the
  ``import`` job run in the command's own process) stops every file in flight,
  the oldest included, at its batch boundary.

``CAIRN_IMPORT_WORKERS=1`` captures one file after another (the order of
mutating operations is then deterministic, which some crash tests want).

*Small files in groups* (docs/adr/0023): a small file (at most
:data:`GROUP_TURNS` turns and :data:`GROUP_BYTES` bytes) waits, once opened,
until :data:`GROUP_FILES` of them are gathered (or a file that is not small
comes, or one sharing a session with them, or the end); the group is then one
task (:meth:`_Import.run_group`): each file's sessions are read, their new
sessions captured together by :func:`capture.capture_group` (every session
under its own claim, three programs for the group), any other captured alone
in its file's order. Each file of the group is still settled, reported and
failed on its own, in the order given. ``CAIRN_IMPORT_GROUP=1`` captures each
file alone.

Imports inside functions: the capture path (:mod:`.capture` and the records
it writes), the helper process (:mod:`.import_split`) and the thread pool are
imported where first needed. An import whose files are all unchanged
(docs/adr/0022) loads none of them: a re-run with nothing new is mostly the
interpreter's start-up, about 45 ms less of it without them (``python -X
importtime``; ``tests/test_imports.py`` holds it).
"""

from __future__ import annotations

import collections
import contextlib
import functools
import math
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from cairn.protocol import codec
from cairn.protocol.digest import ModelPolicy, policy_from_config
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.import_results import (
    CaptureResult,
    FailedFile,
    FileFailure,
    ImportArgs,
    ImportResult,
    ImportTally,
    MalformedLine,
    SealIdleArgs,
    SealIdleResult,
    read,
)
from cairn.protocol.knobs import env_int
from cairn.protocol.vocab import Trigger
from cairn.protocol.worker import WorkerRequest
from cairn.worker.ingest import importers, storefile
from cairn.worker.ingest.importers._jsonl import StreamedSession
from cairn.worker.journal.sources import Manifest, helper_tail
from cairn.worker.journal.store import Journal

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

    from cairn.worker.journal.capture import AnySession, Stop

#: seconds an import waits for a session's claim another process holds, counted from that process's latest
#: batch (a long session is waited for while its batches keep coming; one stuck that long is ``E_CLAIM_BUSY``)
HOLDER_WAIT = 30.0
#: files captured at once (threads mostly waiting on fsync; the GIL bounds the CPU part)
WORKERS = env_int("CAIRN_IMPORT_WORKERS", 8)
#: small files captured together (docs/adr/0023); 1: each file alone
GROUP_FILES = env_int("CAIRN_IMPORT_GROUP", 32)
#: a file is small when it holds at most this many turns …
GROUP_TURNS = 128
#: … and this many bytes
GROUP_BYTES = 1 << 20


#: seconds the import's own thread waits for a file's task before it looks at ``stop`` again (and runs
#: Python's signal handlers: a Ctrl-C the kernel gave a capture thread does not wake a thread blocked on a lock)
POLL = 0.05

#: one source of an import: its path, its format ("auto" to detect), the session ids to keep (None: all)
Item = tuple[str, str, frozenset[str] | None]
#: a session a stop came before (Ctrl-C): nothing of it captured or counted, and its file not entered in the
#: manifest (the import is ``interrupted``); compared by identity
NOT_STARTED = CaptureResult(captured=0, skipped=0, capture=None, repaired=0, unrepaired=0, interrupted=True, turns=0)
#: what a tolerant import lists and goes on from: the fixed errors, and record shapes no importer check foresaw
TOLERATED = (CairnError, ValueError, TypeError, KeyError, AttributeError, IndexError, RecursionError)


def failure(index: int, name: str, exc: BaseException) -> FileFailure:
    """A file that could not be imported: its fixed code and a message without transcript text."""
    if isinstance(exc, CairnError):
        return FileFailure(index=index, code=str(exc.code), message=exc.message)
    return FileFailure(index=index, code=str(ErrorCode.IMPORT_MALFORMED),
                       message=f"{name}: unexpected record shape ({type(exc).__name__})")


def malformed_line(name: str, err: CairnError) -> MalformedLine:
    line = err.detail.get("line")
    return MalformedLine(file=name, line=line if type(line) is int else None, code=str(err.code),
                         message=err.message)


class _File:
    """One opened file in flight: its sessions, its open context, its task."""

    def __init__(self, index: int, name: str, ctx: contextlib.ExitStack, sessions: list[AnySession],
                 hint: int, malformed: tuple[MalformedLine, ...], *, fmt: str = "", pending: int = 0,
                 sealed: bool = False) -> None:
        self.index, self.name, self.ctx, self.sessions, self.hint = index, name, ctx, sessions, hint
        self.malformed = malformed
        self.fmt, self.pending, self.sealed = fmt, pending, sealed
        self.ids = {s.session_id for s in sessions}
        self.future: _Part | None = None
        self.abort = threading.Event()  # an error in a file given before it: stop at a batch boundary
        self.small = False  # may be captured with other small files (docs/adr/0023)

    def tally(self, results: list[CaptureResult]) -> ImportTally:
        """What this file's captures did (its lines left out included); a file a stop came before counts in
        no total (as one never opened), only as ``interrupted``."""
        if results and all(r is NOT_STARTED for r in results):
            return ImportTally(interrupted=True)
        seen = [(s, r) for s, r in zip(self.sessions, results, strict=False)
                if r is not NOT_STARTED and (r.turns or r.interrupted)]
        # a tail known only once a stream's turns were read (Claude Code's): pending until the file is sealed
        late = sum(1 for s in self.sessions if isinstance(s, StreamedSession) and s.tail is None
                   and s.late_tail is not None and s.late_tail() is not None)
        return ImportTally(files=1, sessions=len(seen), session_ids=tuple(s.session_id for s, _ in seen),
                           captured=sum(r.captured for r in results), skipped=sum(r.skipped for r in results),
                           repaired=sum(r.repaired for r in results),
                           interrupted=any(r.interrupted for r in results), malformed=self.malformed,
                           pending=self.pending + late,
                           empty=int(not seen and not (self.pending + late)
                                     and not any(r is NOT_STARTED for r in results)),
                           formats=(self.fmt,) if self.fmt else (),
                           sealed_ids=tuple(s.session_id for s, _ in seen) if self.sealed else ())


def _thread_pool(n: int) -> ThreadPoolExecutor:
    """The threads capturing up to ``n`` files at once."""
    from concurrent.futures import ThreadPoolExecutor  # only when several files are read at once
    return ThreadPoolExecutor(max_workers=n, thread_name_prefix="cairn-import")


class _Done:
    """A file's task run in the calling thread: its result or its error, read as a :class:`Future`'s
    (``result``, ``exception``) without a thread pool."""

    def __init__(self, task: Callable[[list[_File]], list[Outcome]], files: list[_File]) -> None:
        self._value: list[Outcome] = []
        self._error: BaseException | None = None
        try:
            self._value = task(files)
        except BaseException as exc:  # given back by ``result``, as a Future does
            self._error = exc

    def result(self) -> list[Outcome]:
        if self._error is not None:
            raise self._error
        return self._value

    def done(self) -> bool:
        return True

    def exception(self) -> BaseException | None:
        return self._error


#: what a group's task gives each of its files: its results, or what it raised
Outcome = list[CaptureResult] | BaseException


class _Part:
    """One file's share of a group's task (:meth:`_Import.run_group`), read as a :class:`Future`'s."""

    def __init__(self, task: Future[list[Outcome]] | _Done | Any, k: int) -> None:
        self.task, self.k = task, k

    def _mine(self) -> Outcome:
        got: Any = self.task.result()
        return got[self.k]

    def result(self) -> list[CaptureResult]:
        got = self._mine()
        if isinstance(got, BaseException):
            raise got
        return got

    def exception(self) -> BaseException | None:
        if self.task.exception() is not None:
            return self.task.exception()
        got = self._mine()
        return got if isinstance(got, BaseException) else None


def _task(f: _File) -> object:
    """The task ``f`` is captured by (the files of a group share one)."""
    return f.future.task if isinstance(f.future, _Part) else f.future


def _hint(s: AnySession) -> int:
    """The turns a session is counted for in the progress total before it is read."""
    return s.turn_hint if isinstance(s, StreamedSession) else len(s.turns)


def _size(path: str) -> float:
    try:
        return os.stat(path).st_size
    except OSError:
        return math.inf


def _is_sealed(path: str, sealed_before: float | None) -> bool:
    """Whether the file at ``path`` is sealed: last modified at or before ``sealed_before`` (the journal's
    clock; ``math.inf``: the sessions ended)."""
    if sealed_before is None:
        return False
    if math.isinf(sealed_before):
        return sealed_before > 0
    try:
        return os.stat(path).st_mtime <= sealed_before
    except OSError:
        return False  # the reader says why


def import_paths(j: Journal, paths: list[str], fmt: str, policy: ModelPolicy, *,
                 follow_symlinks: bool = True, only: frozenset[str] | None = None,
                 progress: Callable[[int, int], None] | None = None, stop: Stop | None = None,
                 workers: int | None = None, processes: int = 1, sibling: bool = False,
                 sealed_before: float | None = None, reread: bool = False) -> ImportTally:
    """Capture the sessions of ``paths``; ``progress(done, total)`` counts turns seen so far.

    ``only`` keeps the sessions with those ids (one workspace's sessions of a
    database shared by many); ``follow_symlinks=False`` refuses links.

    ``sealed_before`` (the journal's clock, :meth:`Journal.now`): a file last
    modified at or before it is sealed, and the last turn of each of its
    sessions that no completion signal closed (``Session.tail``) is captured
    with the others; ``math.inf`` seals every file (the sessions ended), None
    none. A tail left out is counted in ``pending``: a later import captures it
    once the signal comes, a next prompt closes it or its file is sealed.

    With ``stop``, the import ends at the next batch boundary once it answers
    true (``interrupted`` in the result, also when it answered true only as the
    last batch landed); a later import of the same paths resumes where it
    stopped, since captured turns are skipped.

    With ``processes=2`` and many files, a helper process imports the last
    files given (:mod:`.import_split`); the result is the same. A session's
    claim another process holds (the other process of such a pair, a
    concurrent import, the watcher, a hook) is waited for while that process
    makes progress (:data:`HOLDER_WAIT` from its latest batch), then what it
    captured is skipped; only a holder stuck that long is ``E_CLAIM_BUSY``.
    ``sibling``: set in either process of a pair (kept for the helper's request).

    ``reread``: every file is read whole, whatever the manifest says (docs/adr/0022), in this process: its
    captured turns are skipped and a capture whose segment was damaged is rebuilt, even when the damage left
    the segment's size and time as they were (what ``cairn doctor`` advises for ``V_SEGMENT_TORN``).
    """
    return import_items(j, [(p, fmt, only) for p in paths], policy, follow_symlinks=follow_symlinks,
                        progress=progress, stop=stop, workers=workers, processes=1 if reread else processes,
                        sibling=sibling, sealed_before=sealed_before, reread=reread)


def import_items(j: Journal, items: list[Item], policy: ModelPolicy, *, follow_symlinks: bool = True,
                 progress: Callable[[int, int], None] | None = None, stop: Stop | None = None,
                 workers: int | None = None, processes: int = 1, sibling: bool = False,
                 tolerant: bool = False, sealed_before: float | None = None, reread: bool = False) -> ImportTally:
    """:func:`import_paths` of ``(path, format, only)`` items, each with its own format and session ids.

    ``tolerant``: a file that cannot be imported -- unreadable, malformed,
    refused, or failing while captured -- is listed in the tally's ``failed``
    (its index in ``items``, code, message; in the order given) and the other
    files go on (``cairn import --all``: one store's bad file never holds the
    others hostage); it counts in no total, and what it captured before
    failing stays captured. Otherwise the first error is raised as described
    in the module docstring.

    A file read with a format given (not ``"auto"``) that yields no session
    and carries none of that format's marks fails with
    ``E_IMPORT_WRONG_FORMAT`` (:func:`importers.wrong_format`): nothing of it
    was understood. Any other file with no turn complete yet counts in
    ``empty``; nothing is left out without a count.
    """
    with storefile.walks():  # each store folder walked to once, not once per open of each file
        out = _import_items(j, items, policy, follow_symlinks=follow_symlinks, progress=progress, stop=stop,
                            workers=workers, processes=processes, sibling=sibling, tolerant=tolerant,
                            sealed_before=sealed_before, reread=reread)
    # a stop that came after the last batch (Ctrl-C as the import ended) was still asked for: the caller stops
    # too (``cairn run`` seals, digests and reviews only after an import nobody stopped), with exit 130
    if stop is not None and not out.interrupted and stop():
        out = codec.evolve(out, interrupted=True)
    return out


def _import_items(j: Journal, items: list[Item], policy: ModelPolicy, *, follow_symlinks: bool,
                  progress: Callable[[int, int], None] | None, stop: Stop | None, workers: int | None,
                  processes: int, sibling: bool, tolerant: bool, sealed_before: float | None,
                  reread: bool = False) -> ImportTally:
    # what earlier imports saw: docs/adr/0022
    manifest = Manifest(j, follow_symlinks=follow_symlinks, reread=reread)
    changed = manifest.survey(items, sealed_before)  # unchanged files are neither read nor split off
    k = 0
    if any(changed) and processes > 1:
        from cairn.worker.journal.import_split import helper_share
        k = helper_tail(changed, helper_share(sum(changed), processes))
    # a session another process is capturing (the other half of a split import, a concurrent `cairn import`,
    # the watcher, an agent's hook) is waited for while that process makes progress, then skipped as captured:
    # failing at once left a hook's seal undone and a second import exiting 1 with E_CLAIM_BUSY
    busy_wait = HOLDER_WAIT
    if not k:
        return _Import(j, policy, follow_symlinks=follow_symlinks, progress=progress, stop=stop,
                       workers=workers, busy_wait=busy_wait, tolerant=tolerant, sealed_before=sealed_before,
                       manifest=manifest).run(items)
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

    from cairn.worker.journal.import_split import Helper
    mine, theirs = items[:-k], items[-k:]
    helper.append(Helper(j.workspace, theirs, policy, follow_symlinks=follow_symlinks, tolerant=tolerant,
                         on_progress=report, sealed_before=sealed_before))
    try:
        out = _Import(j, policy, follow_symlinks=follow_symlinks, progress=own_progress, stop=halted,
                      workers=workers, busy_wait=busy_wait, tolerant=tolerant, sealed_before=sealed_before,
                      manifest=manifest).run(mine)
    except BaseException:
        helper[0].stop()  # files given after a failed one stop at their batch boundary
        with contextlib.suppress(BaseException):
            helper[0].wait()
        raise
    try:
        theirs_out = helper[0].wait(halted)
    except CairnError as exc:
        if not tolerant:
            raise
        # tolerant (``--all``): the helper itself failed (it died, or its answer was unreadable); each of
        # its files is listed with that code, and this process's files keep their results
        theirs_out = ImportTally(failed=tuple(FileFailure(index=i, code=str(exc.code), message=exc.message)
                                              for i in range(k)))
    return out.add(theirs_out, offset=len(mine))


class _Import:
    """:func:`import_items` in this process alone: files opened in the order given, captured by a pool
    of threads, settled (their counts added to the tally) oldest first; see the module docstring."""

    def __init__(self, j: Journal, policy: ModelPolicy, *, follow_symlinks: bool,
                 progress: Callable[[int, int], None] | None, stop: Stop | None, workers: int | None,
                 busy_wait: float, tolerant: bool, sealed_before: float | None = None,
                 manifest: Manifest | None = None) -> None:
        self.j, self.policy, self.follow_symlinks = j, policy, follow_symlinks
        self.manifest = manifest or Manifest(j, follow_symlinks=follow_symlinks)
        self.sealed_before = sealed_before
        self.progress, self.stop, self.workers, self.busy_wait = progress, stop, workers, busy_wait
        self.failed: list[FileFailure] | None = [] if tolerant else None
        self.tally = ImportTally()
        self.lock = threading.Lock()
        self.total = self.done = 0  # turns, for ``progress``
        self.inflight: collections.deque[_File] = collections.deque()
        self.flush: Callable[[], None] = lambda: None  # start the small files waiting for their group

    def tick(self, n: int) -> None:
        with self.lock:
            self.done += n
            if self.progress:
                self.progress(self.done, self.total)

    def run_file(self, f: _File) -> list[CaptureResult]:
        """A file's sessions, one after another (they share its handle); the thread's task.

        A session a stop came before is not started (:data:`NOT_STARTED`): once stopped, a task handed out
        earlier captures nothing, and a file of several sessions stops between two of them."""
        def halted() -> bool:
            return f.abort.is_set() or (self.stop is not None and self.stop())

        results: list[CaptureResult] = []
        if not f.sessions:
            return results  # an unchanged file (docs/adr/0022): nothing to capture, nothing to load
        from cairn.worker.journal.capture import capture_session
        for s in f.sessions:
            if halted():
                results += [NOT_STARTED] * (len(f.sessions) - len(results))
                break
            r = capture_session(self.j, s, source=f"import:{s.source_format}", policy=self.policy,
                                progress=self.tick, stop=halted, busy_wait=self.busy_wait)
            results.append(r)
            if r.interrupted:
                break
        return results

    def run_group(self, files: list[_File]) -> list[Outcome]:
        """Small files' sessions captured together (docs/adr/0023); the group's task.

        Each file's sessions are read first, on their own (a file's error is that file's outcome); those
        read are captured by :func:`capture.capture_group`; a session it leaves (seen before, or the
        group's programs could not run) is captured alone, in its file's order, as :meth:`run_file` does.
        """
        from cairn.protocol.transcript import Session
        from cairn.worker.journal.capture import capture_group, capture_session

        def halted(f: _File) -> bool:
            return f.abort.is_set() or (self.stop is not None and self.stop())

        if any(halted(f) for f in files):
            return [self._alone(f) for f in files]
        listed: list[list[Session] | BaseException] = []
        for f in files:
            try:
                listed.append([s if isinstance(s, Session) else
                               Session(session_id=s.session_id, source_format=s.source_format, title=s.title,
                                       turns=tuple(s.turns())) for s in f.sessions])
            except TOLERATED as exc:
                listed.append(exc)
        pairs = [(s, f"import:{s.source_format}") for got in listed if not isinstance(got, BaseException)
                 for s in got]
        try:
            grouped = iter(capture_group(self.j, pairs, policy=self.policy, progress=self.tick))
        except TOLERATED:
            grouped = iter([None] * len(pairs))  # each alone: the cause is reported for its own file
        out: list[Outcome] = []
        for f, got in zip(files, listed, strict=True):
            if isinstance(got, BaseException):
                out.append(got)
                continue
            results: list[CaptureResult] = []
            try:
                for s in got:
                    r = next(grouped)
                    if r is None:  # a stop meanwhile (it stays true): a session left to capture alone is not begun
                        r = NOT_STARTED if halted(f) else capture_session(
                            self.j, s, source=f"import:{s.source_format}", policy=self.policy, progress=self.tick,
                            stop=functools.partial(halted, f), busy_wait=self.busy_wait)
                    results.append(r)  # the group's own results are kept after a stop: they were captured
            except TOLERATED as exc:
                for _ in got[len(results) + 1:]:
                    next(grouped, None)
                out.append(exc)
                continue
            out.append(results)
        return out

    def _alone(self, f: _File) -> Outcome:
        try:
            return self.run_file(f)
        except TOLERATED as exc:
            return exc

    def _stop_all_then_raise(self, f: _File) -> NoReturn:
        """``f`` failed: every file in flight was given after it and stops at its batch boundary."""
        for g in (f, *self.inflight):
            g.abort.set()
        _wait(f)
        f.ctx.close()
        raise

    def settle(self, f: _File) -> None:
        """Consume the oldest file's results (in the order given), then close it.

        If that file failed, every file in flight was given after it: each is asked to stop. If the
        wait itself was interrupted (Ctrl-C with no ``stop``, or a second Ctrl-C), that file stops at its
        batch boundary too, and its file stays open until its thread has let go of it.

        The wait is never one blocking call: a Ctrl-C the kernel gave another thread (a capture thread, the
        bar's) does not wake this one, and Python runs its handler only in this thread, so the first Ctrl-C
        was seen (and passed on to the helper process) only once the oldest file was done, and a second one
        not at all. Every :data:`POLL` seconds the handlers run and ``stop`` is asked again (which passes a
        stop on to the helper).
        """
        assert f.future is not None
        try:
            self._await(f)
            results = f.future.result()
        except TOLERATED as exc:
            if self.failed is None:
                self._stop_all_then_raise(f)
            _wait(f)
            f.ctx.close()
            self.tally = self.tally.add(ImportTally(malformed=f.malformed))  # its lines left out stay reported
            self.failed.append(failure(f.index, f.name, exc))
            return
        except BaseException:
            self._stop_all_then_raise(f)
        f.ctx.close()
        if results and all(r is NOT_STARTED for r in results):  # a stop came first: counted as never opened
            self.tally = self.tally.add(ImportTally(interrupted=True))
            self._untotal(f.hint)
            return
        streamed = sum(s.turn_hint - r.turns for s, r in zip(f.sessions, results, strict=False)
                       if isinstance(s, StreamedSession) and not r.interrupted)  # the hint was an upper bound
        streamed += sum(_hint(s) for s, r in zip(f.sessions, results, strict=False) if r is NOT_STARTED)
        self.tally = self.tally.add(self.manifest.settled(f.index, f.name, f.sessions, results, f.tally(results)))
        self._untotal(streamed)

    def _untotal(self, turns: int) -> None:
        """Turns counted in the progress total that will not be seen (a hint's excess, files not started)."""
        if turns:
            with self.lock:
                self.total -= turns
                if self.progress:
                    self.progress(self.done, self.total)

    def _await(self, f: _File) -> None:
        """Wait until ``f``'s task is over, :data:`POLL` seconds at a time, asking ``stop`` in between (see
        :meth:`settle`); a second Ctrl-C's ``KeyboardInterrupt`` is raised from here."""
        task: Any = _task(f)
        while not task.done():
            if self.stop is not None:
                self.stop()
            with contextlib.suppress(TimeoutError):
                task.exception(timeout=POLL)

    def open(self, index: int, item: Item) -> _File | None:
        """Open the file of ``item``, or list it failed (None); a file it cannot open is raised when not
        tolerated, once the files given before it are settled (an error of theirs comes first).

        A session's tail is admitted when the file is sealed (``sealed_before``), else counted pending;
        a session left with no turn is not captured."""
        p, fmt, only = item
        ctx = contextlib.ExitStack()
        sealed = _is_sealed(p, self.sealed_before)  # looked at first: a write after it is no seal
        if self.manifest.unchanged(index):  # counted as read, not read (docs/adr/0022)
            return _File(index, Path(p).name, ctx, [], 0, (), sealed=sealed)
        try:
            loaded = ctx.enter_context(self.manifest.open_report(index, item))
            wanted: list[AnySession] = []
            pending = 0
            for s in loaded.sessions:
                if only is not None and s.session_id not in only:
                    continue
                late = isinstance(s, StreamedSession) and s.late_tail is not None
                if (s.tail is not None or late) and sealed:
                    s = s.sealed()
                elif s.tail is not None:
                    pending += 1  # a late tail is counted once its turns are read (:meth:`_File.tally`)
                if isinstance(s, StreamedSession) or s.turns:
                    wanted.append(s)
            if not wanted and not pending and fmt != "auto":  # nothing read: was it this format at all?
                wrong = importers.wrong_format(Path(p), fmt, follow_symlinks=self.follow_symlinks)
                if wrong is not None:
                    raise wrong
        except TOLERATED as exc:
            ctx.close()
            if self.failed is not None:
                self.failed.append(failure(index, Path(p).name, exc))
                return None
            self.flush()  # small files given before it, waiting for their group: they finish first
            while self.inflight:
                self.settle(self.inflight.popleft())
            raise
        except BaseException:
            ctx.close()
            raise
        f = _File(index, Path(p).name, ctx, wanted, sum(_hint(s) for s in wanted),
                  tuple(malformed_line(Path(p).name, e) for e in loaded.skipped), fmt=loaded.format,
                  pending=pending, sealed=sealed)
        f.small = bool(wanted) and f.hint <= GROUP_TURNS and _size(p) <= GROUP_BYTES
        return f

    def run(self, items: list[Item]) -> ImportTally:
        to_read = sum(not self.manifest.unchanged(i) for i in range(len(items)))
        n_workers = max(1, min(self.workers or WORKERS, to_read))  # one file to read: no thread to start
        if to_read:  # nothing to read (no source, none changed): no state folder made for it either
            self.j.claims.root  # noqa: B018 -- pinned once here, never raced for by the threads
        inflight = self.inflight
        pool = _thread_pool(n_workers) if n_workers > 1 else None
        group: list[_File] = []  # small files waiting to be captured together (docs/adr/0023)

        def make_room(ids: set[str]) -> None:
            """One session at a time; at most ``n_workers`` tasks in flight."""
            while inflight and (len({id(_task(g)) for g in inflight}) >= n_workers
                                or any(ids & g.ids for g in inflight)):
                self.settle(inflight.popleft())

        def submit(files: list[_File], task: Any) -> None:
            make_room(set().union(*(f.ids for f in files)))
            if pool is None or not files[0].sessions:  # no pool, or nothing to capture (an unchanged file)
                done: Any = _Done(task, files)
            else:
                done = pool.submit(task, files)
            for k, f in enumerate(files):
                f.future = _Part(done, k)
                inflight.append(f)
            if pool is None:
                while inflight:
                    self.settle(inflight.popleft())

        def flush() -> None:
            files = list(group)  # the task keeps its own list: ``group`` is cleared for the next
            group.clear()
            if len(files) == 1:
                submit(files, lambda fs: [self.run_file(fs[0])])
            elif files:
                submit(files, self.run_group)

        self.flush = flush
        try:
            for index, item in enumerate(items):
                if self.tally.interrupted or (self.stop is not None and self.stop()):
                    self.tally = codec.evolve(self.tally, interrupted=True)
                    break
                f = self.open(index, item)
                if f is None:
                    continue
                with self.lock:
                    self.total += f.hint
                try:
                    if group and (not f.small or any(f.ids & g.ids for g in group)):
                        flush()
                    if f.small and GROUP_FILES > 1:
                        group.append(f)
                        if len(group) >= GROUP_FILES:
                            flush()
                        continue
                    submit([f], lambda fs: [self.run_file(fs[0])])
                except BaseException:
                    if f not in inflight:
                        f.ctx.close()
                    raise
            flush()
            while inflight:
                self.settle(inflight.popleft())
        except BaseException as exc:
            if not isinstance(exc, Exception):  # a second Ctrl-C: every file stops at its batch boundary
                for f in inflight:
                    f.abort.set()
            # files given before a failed one finish (as they would have, one after another); then close each
            for f in inflight:
                _wait(f)
                f.ctx.close()
            for f in group:  # opened, never started
                f.ctx.close()
            raise
        finally:
            if pool is not None:
                pool.shutdown(wait=True)
        self.manifest.flush()  # the entries of the files read whole, in one fenced program
        if self.failed is not None:
            return codec.evolve(self.tally, failed=tuple(sorted(self.failed, key=lambda f: f.index)))
        return self.tally


def _wait(f: _File) -> BaseException | None:
    """Wait until ``f``'s task is over (a Ctrl-C meanwhile does not cut the wait short); its error, if any."""
    while f.future is not None:
        with contextlib.suppress(BaseException):
            return f.future.exception()
    return None


#: a file's own failures, which ``import_each`` lists and goes on from; any other failure is the journal's
FILE_FAILURES = frozenset({ErrorCode.IMPORT_UNREADABLE, ErrorCode.IMPORT_TOO_LARGE, ErrorCode.IMPORT_UNKNOWN_FORMAT,
                           ErrorCode.IMPORT_MALFORMED, ErrorCode.PATH_SYMLINK, ErrorCode.IMPORT_WRONG_FORMAT,
                           ErrorCode.IMPORT_PROMPTS_ONLY})

IDLE_MINUTES = 20.0  # ``seal_idle_minutes`` when the configuration says none


def idle_seconds(config: Mapping[str, Any]) -> float:
    """The idle period of a workspace's configuration (``sealIdleMinutes``), in seconds: a session file quiet
    that long is sealed."""
    minutes = config.get("sealIdleMinutes", IDLE_MINUTES)
    if isinstance(minutes, bool) or not isinstance(minutes, (int, float)) or minutes < 0:
        minutes = IDLE_MINUTES
    return float(minutes) * 60.0


def import_each(j: Journal, paths: list[str], fmt: str, policy: ModelPolicy, *,
                sealed_before: float | None = None) -> ImportResult:
    """:func:`import_items`, tolerant: a file that cannot be imported is listed in ``failed``
    (name and fixed code) and the others are imported (a batch of live files is not held
    hostage by one that vanished or is being rewritten). The files are watched session files: each
    is opened without following a link on its whole path (one swapped for a link since the watcher
    looked is ``E_PATH_SYMLINK``, never read through it). The journal's own failures (no space, a
    claim held elsewhere …) fail the job once the others are done, so it is retried."""
    r = _tolerant(j, paths, fmt, policy, sealed_before)
    return ImportResult(files=r.files, sessions=r.sessions, captured=r.captured, skipped=r.skipped,
                        session_ids=r.session_ids, malformed=r.malformed,
                        failed=tuple(FailedFile(file=os.path.basename(paths[f.index]), code=f.code) for f in r.failed),
                        pending=r.pending or None, empty=r.empty or None)


def _tolerant(j: Journal, paths: list[str], fmt: str, policy: ModelPolicy, sealed_before: float | None) -> ImportTally:
    """:func:`import_items` of watched files (see :func:`import_each`): a file's own failure is listed,
    the journal's is raised once the other files are done."""
    r = import_items(j, [(p, fmt, None) for p in paths], policy, follow_symlinks=False, tolerant=True,
                     sealed_before=sealed_before)
    for f in r.failed:
        if ErrorCode(f.code) not in FILE_FAILURES:
            raise CairnError(ErrorCode(f.code), f.message)
    return r


def import_result(r: ImportTally) -> ImportResult:
    """The ``import`` job's result of an import of paths (:func:`import_paths`)."""
    return ImportResult(files=r.files, sessions=r.sessions, captured=r.captured, skipped=r.skipped,
                        repaired=r.repaired, session_ids=r.session_ids, interrupted=r.interrupted,
                        malformed=r.malformed, formats=r.formats, pending=r.pending or None, empty=r.empty or None)


def job_import(req: WorkerRequest) -> ImportResult:
    """Import transcript files; with ``each`` (live watching), file by file (:func:`import_each`).

    A file quiet for the workspace's idle period is sealed (its sessions' last turns are admitted
    even with no completion signal); with ``ended`` (``cairn run``), every file is."""
    args = read(ImportArgs, req.args, job=req.job)
    paths = [p if os.path.isabs(p) else os.path.join(req.workspace, p) for p in args.paths]
    policy = policy_from_config(req.config)
    with Journal(req.workspace) as j:
        sealed_before = math.inf if args.ended else j.source_now() - idle_seconds(req.config)
        if args.each:
            return import_each(j, paths, args.format, policy, sealed_before=sealed_before)
        return import_result(import_paths(j, paths, args.format, policy, sealed_before=sealed_before))


def job_seal_idle(req: WorkerRequest) -> SealIdleResult:
    """Seal the captures that went idle: those whose newest turn is ``quiet_seconds`` old, and the sessions of
    the ``paths`` quiet that long, read again first as sealed (their last turns admitted even with no
    completion signal; a file's own failure is left for the next change to report)."""
    args = read(SealIdleArgs, req.args, job=req.job)
    with Journal(req.workspace) as j:
        cutoff = j.now() - args.quiet_seconds
        paths = [p if os.path.isabs(p) else os.path.join(req.workspace, p) for p in args.paths]
        quiet = [p for p in paths if _is_sealed(p, cutoff)]
        ended = set(_tolerant(j, quiet, "auto", policy_from_config(req.config), cutoff).sealed_ids) if quiet else set()
        from cairn.worker.journal.capture import open_sessions, seal_session
        sealed = [c for c in (seal_session(j, s, Trigger.IDLE, quiet_before=None if s in ended else cutoff)
                              for s in sorted(set(open_sessions(j)))) if c]
    return SealIdleResult(sealed=len(sealed), captures=tuple(sealed))
