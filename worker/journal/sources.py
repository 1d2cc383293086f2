"""The source manifest: what an import last saw of each file, so that a re-run reads only what changed.

Every import (``cairn import`` of files or ``--all``, ``cairn watch``, ``cairn
run``, the language server's import jobs) goes through
:func:`~worker.journal.imports.import_items`, which asks a :class:`Manifest`
about each source before reading it (docs/adr/0022):

* **unchanged** — same device, inode, size, mtime and ctime (nanoseconds) as
  when its entry was written, the same sha256 of its first :data:`HEAD` and
  last :data:`TAIL` bytes (a database: the same marks of the file and of its
  ``-wal``), read by the same importers (:func:`reader_fingerprint`), every
  segment holding its sessions' evidence still as written, and no tail
  waiting for a seal that has now come: the file is not read, nothing is
  elected or written, and the import counts it as a re-read would (its
  sessions, turns already captured, tails pending, lines left out);
* **grown** — the same file, longer, with its old head and the bytes before
  its old end unchanged, in a format whose reads resume (Claude Code, Codex:
  :mod:`worker.ingest.resume`): it is read from the record that opened the
  last turn read, after checking the bytes from there to the old end; a read
  that cannot resume exactly falls back to a whole read;
* anything else (new, replaced, truncated, rewritten, another reader, a
  torn segment) — read whole, as before the manifest.

Capture is still idempotent by turn id whatever the manifest says; an entry
only lets a run *skip reading*. It is written after every turn it covers is
durable (the captures of its file finished, not interrupted), so each entry
is a true statement about a past content of its file; a run may lose an
entry (a crash, another writer's claim held too long) and then only reads
that file again. Entries are content-addressed files ``<key>-<hash>`` in
``.cairn/state/journal/sources/``, linked together in one program fenced by a
generation of the ``sources`` claim, with the entries they supersede removed
in the same program; a run that finds nothing new elects nothing and writes
nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import stat as statmod
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
from cairn.protocol import codec
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.import_results import CaptureResult, ImportTally, MalformedLine
from cairn.protocol.sources import FileMark, KeptLine, KeptSegment, ResumePoint, RolloutState, SourceEntry
from cairn.protocol.transcript import Session
from cairn.protocol.vocab import OpStatus, OutcomeKind
from cairn.state import program as P
from cairn.state.claims import Claim
from cairn.state.fsdir import PinnedDir
from cairn.worker.ingest import importers
from cairn.worker.ingest.importers._common import SQLITE_MAGIC as MAGIC
from cairn.worker.ingest.importers._common import open_source
from cairn.worker.ingest.importers._jsonl import StreamedSession
from cairn.worker.journal.store import CAPTURES, SEGMENTS, SESSIONS, J, Journal, capture_id, session_dir

if TYPE_CHECKING:
    from cairn.worker.ingest import resume

SOURCES = f"{J}/sources"
#: the claim scope that fences manifest writes
SCOPE = "sources"
#: bytes hashed at the head and at the tail of a file
HEAD = 4096
TAIL = 4096
#: bytes a file may grow by with no turn captured before its entry is written again (a resumed read
#: re-reads them until then)
REWRITE = 1 << 20
#: seconds a run waits for another run's manifest write before leaving its own entries unwritten
WAIT = 10.0
#: the formats :mod:`..ingest.resume` reads from a cut (its ``RESUMABLE``; named here so that looking at
#: a file imports no reader: the readers are imported when a file is read)
RESUMABLE = frozenset({"claude-code", "codex"})

Item = tuple[str, str, frozenset[str] | None]


def source_key(path: str, fmt: str, only: frozenset[str] | None) -> str:
    """The manifest key of a source: its absolute path, the format asked, the session ids kept."""
    parts = [os.path.abspath(path), fmt, "*" if only is None else "\x1f".join(sorted(only))]
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:32]


_READER: str | None = None


def reader_fingerprint() -> str:
    """The importers that read a file, as the size and mtime of their modules: an entry written by other
    importers (cairn upgraded, or edited) no longer lets a file be skipped."""
    global _READER
    if _READER is None:
        h = hashlib.sha256()
        folder = Path(importers.__file__).parent
        files = sorted(p for p in os.listdir(folder) if p.endswith(".py"))
        for name, where in [*((n, folder / n) for n in files), ("resume.py", folder.parent / "resume.py")]:
            st = os.stat(where)
            h.update(f"{name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        _READER = h.hexdigest()[:16]
    return _READER


def file_mark(st: os.stat_result) -> FileMark:
    return FileMark(dev=st.st_dev, ino=st.st_ino, size=st.st_size, mtime_ns=st.st_mtime_ns, ctime_ns=st.st_ctime_ns)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _wal_mark(path: str, follow_symlinks: bool) -> FileMark | None:
    where = os.path.realpath(path) if follow_symlinks else path
    try:
        st = os.lstat(where + "-wal")
    except OSError:
        return None
    # no change time: SQLite run as root gives the log its database's owner on every open (a chown), which
    # would make every quiet run read the database again; a write moves the log's size or modification time
    return attrs.evolve(file_mark(st), ctime_ns=0) if statmod.S_ISREG(st.st_mode) else None


def _pread(fd: int, size: int, offset: int) -> bytes | None:
    """``size`` bytes at ``offset``, None when the file no longer holds them."""
    data = os.pread(fd, size, offset) if size > 0 else b""
    return data if len(data) == size else None


@attrs.define
class Look:
    """What the manifest found of one source before it was read, then what its read left."""

    key: str
    path: str
    old: SourceEntry | None
    verdict: str = "read"  # "same" | "grown" | "read"
    sealed: bool = False
    mark: FileMark | None = None
    wal: FileMark | None = None
    head_sha: str = ""
    tail_sha: str = ""
    resumed: ResumePoint | None = None  # the point a read resumed from
    point: ResumePoint | None = None  # where the next read can resume
    rollout: RolloutState | None = None  # a Codex rollout's reader state at ``point``
    reader: resume.Reader | None = None


class Manifest:
    """The manifest entries of one import's sources: looked up before each file is read, written at the end."""

    def __init__(self, j: Journal, *, follow_symlinks: bool, reread: bool = False) -> None:
        self.j, self.follow_symlinks = j, follow_symlinks
        self.reread = reread  # every file read whole (``cairn import --reread``): nothing skipped on its marks
        self.stored: dict[str, tuple[str, SourceEntry]] = {}  # key -> (file name, entry)
        self.names: dict[str, list[str]] = {}  # key -> every file name holding an entry of it
        self.looks: dict[int, Look] = {}
        self.new: dict[str, SourceEntry] = {}
        self._shards: dict[str, PinnedDir | None] = {}
        self._segments: PinnedDir | None = None

    # -- reading ---------------------------------------------------------------------------------
    def load(self, items: list[Item]) -> None:
        """Read the entries of ``items`` (one listing, then their files)."""
        r = self.j.run([P.ListDir(SOURCES, optional=True)])
        if r[0].status is not OpStatus.OK:
            return  # absent: no entry yet (a failure to list is a failure to skip, never an error)
        wanted = {source_key(p, fmt, only) for p, fmt, only in items}
        for name in r[0].value or []:
            key = name.split("-", 1)[0]
            if key in wanted:
                self.names.setdefault(key, []).append(name)
        paths = [f"{SOURCES}/{n}" for names in self.names.values() for n in names]
        try:
            raws = self.j.read_many(paths)
        except CairnError:
            return
        for path, raw in raws.items():
            name = path.rsplit("/", 1)[1]
            try:
                entry = codec.decode(raw, SourceEntry, where=path) if raw is not None else None
            except CairnError:
                continue  # unreadable: as if absent (the next write supersedes it)
            if entry is None or entry.key != name.split("-", 1)[0]:
                continue
            have = self.stored.get(entry.key)
            if have is None or _newer(entry, have[1]):
                self.stored[entry.key] = (name, entry)

    def survey(self, items: list[Item], sealed_before: float | None) -> list[bool]:
        """Look at every item before any is read (:meth:`look`); whether each must be read."""
        self.load(items)
        return [self.look(i, item, sealed_before).verdict != "same" for i, item in enumerate(items)]

    def unchanged(self, index: int) -> bool:
        look = self.looks.get(index)
        return look is not None and look.verdict == "same"

    def look(self, index: int, item: Item, sealed_before: float | None) -> Look:
        """The manifest's word on ``item`` (see the module docstring); kept for :meth:`open` and :meth:`settled`."""
        p, fmt, only = item
        key = source_key(p, fmt, only)
        have = self.stored.get(key)
        look = self.looks[index] = Look(key=key, path=p, old=have[1] if have else None)
        try:
            fd, st = open_source(Path(p), follow_symlinks=self.follow_symlinks)
        except (CairnError, OSError):
            return look  # read it: the reader says why it cannot
        try:
            look.mark = mark = file_mark(st)
            # sealed as ``imports._is_sealed`` says: modified at or before the cutoff (inf: every file)
            look.sealed = sealed_before is not None and (
                sealed_before > 0 if math.isinf(sealed_before) else st.st_mtime <= sealed_before)
            head = os.pread(fd, HEAD, 0)
            if head.startswith(MAGIC):
                look.wal = _wal_mark(p, self.follow_symlinks)
            else:
                tail = _pread(fd, min(TAIL, mark.size), max(0, mark.size - TAIL))
                if tail is None:
                    return look  # shrunk while looked at
                look.head_sha, look.tail_sha = _sha(head[:min(HEAD, mark.size)]), _sha(tail)
            look.verdict = self._judge(look, fd, head)
        except OSError:
            look.verdict = "read"
        finally:
            os.close(fd)
        return look

    def _judge(self, look: Look, fd: int, head: bytes) -> str:
        old, mark = look.old, look.mark
        if (self.reread or old is None or mark is None or old.reader != reader_fingerprint()
                or (old.head_sha == "") != (look.head_sha == "")):
            return "read"
        if (mark, look.wal, look.head_sha, look.tail_sha) == (old.mark, old.wal, old.head_sha, old.tail_sha):
            if old.pending and look.sealed and not old.sealed:
                return "read"  # its tails wait for a seal that has come
            return "same" if self._intact(old) else "read"
        if (look.head_sha and _resumable(old)
                and (mark.dev, mark.ino) == (old.mark.dev, old.mark.ino) and mark.size > old.mark.size):
            tail = _pread(fd, min(TAIL, old.mark.size), max(0, old.mark.size - TAIL))
            if (_sha(head[:min(HEAD, old.mark.size)]) == old.head_sha and tail is not None
                    and _sha(tail) == old.tail_sha and self._intact(old)):
                return "grown"
        return "read"

    def _intact(self, old: SourceEntry) -> bool:
        """Every segment of the entry's sessions is still the file written then (a torn one is rebuilt by a
        whole read, which the doctor's advice counts on)."""
        for seg in old.segments:
            st = self._segment_stat(seg.sha)
            if st is None or (st.st_size, st.st_mtime_ns) != (seg.size, seg.mtime_ns):
                return False
        return True

    def _segment_stat(self, sha: str) -> os.stat_result | None:
        shard = sha[:2]
        if shard not in self._shards:
            try:
                if self._segments is None:
                    self._segments = self.j.root.descend(SEGMENTS)
                self._shards[shard] = self._segments.child(shard)
            except (CairnError, OSError):
                self._shards[shard] = None
        d = self._shards[shard]
        try:
            return d.stat(sha) if d is not None else None
        except (CairnError, OSError):
            return None

    # -- the read --------------------------------------------------------------------------------
    @contextlib.contextmanager
    def open_report(self, index: int, item: Item) -> Iterator[importers.Opened]:
        """:func:`importers.open_report` of ``item``, resumed when its file only grew, and for a resumable
        format read through a :class:`resume.Reader` that leaves the next resume point."""
        p, fmt, _ = item
        look = self.looks.get(index)
        opened = self._resume(look) if look is not None and look.verdict == "grown" else None
        if opened is None:
            opened = self._whole(look, p, fmt)
        if opened is None:
            with importers.open_report(Path(p), fmt, follow_symlinks=self.follow_symlinks) as plain:
                yield plain
            return
        assert look is not None and look.reader is not None
        reader = look.reader
        try:
            yield opened
            first = opened.sessions[0] if opened.sessions else None
            if first is not None and reader.exhausted:
                was = look.resumed
                look.point = reader.point(session_id=first.session_id, title=first.title,
                                          prior=was.prior if was else 0,
                                          watched=frozenset(was.watched) if was else frozenset())
                look.rollout = reader.rollout if look.point is not None else None
        finally:
            reader.close()

    def _resume(self, look: Look) -> importers.Opened | None:
        from cairn.worker.ingest import resume  # a reader, imported when a file is read (RESUMABLE)
        assert look.old is not None and look.old.resume is not None and look.mark is not None
        point = look.old.resume
        try:
            fd, st = open_source(Path(look.path), follow_symlinks=self.follow_symlinks)
        except (CairnError, OSError):
            return None
        try:
            same = (st.st_dev, st.st_ino) == (look.mark.dev, look.mark.ino)
            region = _pread(fd, point.end - point.offset, point.offset) if same else None
            if (region is None or _sha(region) != point.region_sha
                    or st.st_size - point.offset > resume.MAX_RESUME_BYTES):
                os.close(fd)
                return None
        except OSError:
            os.close(fd)
            return None
        rollout = look.old.rollout if look.old.format == importers.codex.NAME else None
        read = resume.resume(Path(look.path), fd, point, rollout)  # owns fd
        if read is None:
            return None
        session, look.reader = read
        look.resumed = point
        kept = tuple(CairnError(ErrorCode(k.code), k.message, line=k.line) for k in look.old.malformed
                     if k.line is not None and k.line <= point.line)
        return importers.Opened([session], kept + tuple(look.reader.skipped), look.old.format)

    def _whole(self, look: Look | None, p: str, fmt: str) -> importers.Opened | None:
        """A whole read through a :class:`resume.Reader` when the file is of a resumable format (else None:
        the importers read it)."""
        if look is None or fmt not in ("auto", *RESUMABLE):
            return None
        try:
            fd, _ = open_source(Path(p), follow_symlinks=self.follow_symlinks)
        except (CairnError, OSError):
            return None  # the importers say why, as they always did
        try:
            head = os.pread(fd, importers.HEAD_BYTES, 0)
            try:
                # a format given (discovery knows its stores' formats) is the format read, as the importers
                # read it: detection, which asks every format's test, is for a file of unknown format
                found = "" if head.startswith(MAGIC) else fmt if fmt != "auto" else importers.detect(Path(p), head)
            except (CairnError, ValueError, OSError):
                found = ""
        except OSError:
            found = ""
        if found not in RESUMABLE or fmt not in ("auto", found):
            os.close(fd)
            return None
        from cairn.worker.ingest import resume  # a reader, imported when a file is read (RESUMABLE)
        reader = resume.reader(found, Path(p), fd)
        try:
            sessions: Sequence[Session | StreamedSession] = (
                resume.whole_rollout(reader) if isinstance(reader, resume.RolloutReader) else resume.whole(reader))
        except CairnError as exc:
            reader.close()
            if fmt != "auto" and exc.code == ErrorCode.IMPORT_MALFORMED:
                raise importers.wrong_format(Path(p), fmt, follow_symlinks=self.follow_symlinks,
                                             known_only=True) or exc from None
            raise
        except BaseException:
            reader.close()
            raise
        look.reader = reader
        return importers.Opened(list(sessions), tuple(reader.skipped), found)

    # -- after the read ----------------------------------------------------------------------------
    def settled(self, index: int, name: str, sessions: Sequence[object], results: list[CaptureResult],
                tally: ImportTally) -> ImportTally:
        """The tally of file ``index`` as a whole read would count it, its new entry noted for :meth:`flush`."""
        look = self.looks.get(index)
        if look is None:
            return tally
        old = look.old
        if look.verdict == "same" and old is not None:
            return ImportTally(files=1, sessions=len(old.sessions), session_ids=old.sessions, skipped=old.turns,
                               malformed=tuple(MalformedLine(file=name, line=k.line, code=k.code, message=k.message)
                                               for k in old.malformed),
                               pending=old.pending, empty=old.empty, formats=(old.format,) if old.format else (),
                               sealed_ids=old.sessions if look.sealed else ())
        prior = look.resumed.prior if look.resumed else 0
        if prior:
            tally = codec.evolve(tally, skipped=tally.skipped + prior)
        if tally.interrupted or look.mark is None or len(results) != len(sessions):
            return tally
        if look.resumed is not None and not tally.captured and look.mark.size - look.resumed.end < REWRITE:
            return tally  # grown by no complete turn: the old entry still resumes it, nothing need be written
        entry = SourceEntry(
            key=look.key, path=os.path.abspath(look.path), format=tally.formats[0] if tally.formats else "",
            reader=reader_fingerprint(), mark=look.mark, wal=look.wal, head_sha=look.head_sha,
            tail_sha=look.tail_sha, sealed=look.sealed, pending=tally.pending, empty=tally.empty,
            turns=sum(r.turns for r in results) + prior, sessions=tally.session_ids,
            malformed=tuple(KeptLine(line=m.line, code=m.code, message=m.message) for m in tally.malformed),
            resume=look.point, rollout=look.rollout)
        self.new[look.key] = entry
        return tally

    # -- writing -----------------------------------------------------------------------------------
    def flush(self) -> int:
        """Write the entries noted (those that differ from what is stored) under a generation of the
        ``sources`` claim; the number written. A run that read nothing new writes nothing."""
        if not self.new:
            return 0
        try:
            return self._flush()
        except CairnError:
            return 0  # unwritten entries only make the next run read those files again

    def _flush(self) -> int:
        entries = self._with_segments(self.new)
        items: list[tuple[str, bytes]] = []
        gone: list[str] = []
        for key, entry in entries.items():
            raw = codec.encode(entry)
            name = f"{key}-{_sha(raw)[:16]}"
            have = self.stored.get(key)
            if have is not None and have[0] == name:
                continue
            items.append((f"{SOURCES}/{name}", raw))
            gone += [n for n in self.names.get(key, []) if n != name]
        if not items:
            return 0
        claim = self._elect()
        ops: list[P.Op] = [P.EnsureDir(SOURCES), P.LinkAll(tuple(items), optional=True)]
        ops += [P.Remove(f"{SOURCES}/{n}", optional=True, sync=False) for n in gone]
        try:
            self.j.claims.settle(claim, OutcomeKind.COMPLETED, payload={"entries": len(items)}, extra_ops=ops)
        except CairnError:
            with contextlib.suppress(CairnError):
                self.j.claims.settle(claim, OutcomeKind.FAILED, error=str(ErrorCode.INTERNAL))
            raise
        self.new.clear()
        self.close()
        return len(items)

    def _elect(self) -> Claim:
        end = time.monotonic() + WAIT
        while True:
            try:
                return self.j.claims.elect(SCOPE, purpose="manifest", ttl=60.0, authority=self.j.authority)
            except CairnError as exc:
                if exc.code is not ErrorCode.CLAIM_BUSY or time.monotonic() >= end:
                    raise
            time.sleep(0.02)  # another run is writing its entries: one program

    def _with_segments(self, entries: dict[str, SourceEntry]) -> dict[str, SourceEntry]:
        """``entries`` with the segments of their sessions' unretired captures, as they are on disk now."""
        from cairn.protocol.journal import CaptureBatch  # written after a capture: a look needs neither
        from cairn.worker.journal.batches import parse_batch_name
        sids = sorted({s for e in entries.values() for s in e.sessions})
        sdirs = self.j.list_many([f"{SESSIONS}/{session_dir(s)}" for s in sids])
        cids: dict[str, list[str]] = {}
        for s in sids:
            ks = sorted(int(n[2:]) for n in sdirs[f"{SESSIONS}/{session_dir(s)}"] if n.startswith("c-") and n[2:].isdigit())
            cids[s] = [capture_id(s, k) for k in ks]
        listings = self.j.list_many([f"{CAPTURES}/{c}" for cs in cids.values() for c in cs])
        known = {k.batch: k.sha for have in self.stored.values() for k in have[1].segments}
        wanted = [f"{CAPTURES}/{c}/{n}" for cs in cids.values() for c in cs if "retired" not in listings[f"{CAPTURES}/{c}"]
                  for n in listings[f"{CAPTURES}/{c}"] if parse_batch_name(n) and f"{c}/{n}" not in known]
        for path, raw in self.j.read_many(wanted).items():
            if raw is not None:
                known[path[len(CAPTURES) + 1:]] = codec.decode(raw, CaptureBatch, where=path).segment
        out = {}
        for key, entry in entries.items():
            segs = []
            for s in entry.sessions:
                for c in cids.get(s, []):
                    names = listings[f"{CAPTURES}/{c}"]
                    if "retired" in names:
                        continue
                    for n in names:
                        sha = known.get(f"{c}/{n}") if parse_batch_name(n) else None
                        st = self._segment_stat(sha) if sha else None
                        if sha and st is not None:
                            segs.append(KeptSegment(batch=f"{c}/{n}", sha=sha, size=st.st_size, mtime_ns=st.st_mtime_ns))
            out[key] = codec.evolve(entry, segments=tuple(segs))
        return out

    def close(self) -> None:
        for d in self._shards.values():
            if d is not None:
                d.close()
        self._shards.clear()
        if self._segments is not None:
            self._segments.close()
            self._segments = None


def _resumable(old: SourceEntry) -> bool:
    """Whether the entry holds what a read resumed at its cut needs (a Codex rollout's reader state too: an
    entry written before it was kept is read whole)."""
    return old.resume is not None and old.format in RESUMABLE and (
        old.format != "codex" or old.rollout is not None)


def _newer(a: SourceEntry, b: SourceEntry) -> bool:
    """Of two entries of one source (a crash before the older was removed, two runs at once), the one
    that saw more of the file; both are true, either is safe."""
    return (a.mark.size, a.mark.mtime_ns, a.resume.end if a.resume else 0) > (
        b.mark.size, b.mark.mtime_ns, b.resume.end if b.resume else 0)


def helper_tail(changed: list[bool], k: int) -> int:
    """How many of the last items a helper process takes to import ``k`` of the changed ones (it skips the
    unchanged among them too): the files stay split at one point, results in the order given."""
    if k <= 0:
        return 0
    n = 0
    for i in range(len(changed) - 1, -1, -1):
        n += changed[i]
        if n == k:
            return len(changed) - i
    return len(changed)

