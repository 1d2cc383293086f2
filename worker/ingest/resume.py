"""Reading an append-only session file again from where the last read left it (docs/adr/0022).

A Claude Code session file only grows: a turn appended to a 100,000-turn
file should cost the bytes appended, not the file. The importer reads the
file as a tree of messages whose *active branch* (from the newest message
back to the root) holds the turns, so a read cannot simply start at an old
offset; :class:`Reader` records, while the importer's own ``stream`` reads
the whole file, what a later read needs to start *inside* it and give
exactly the turns and ids a whole read would give:

* the **cut**: the record that opened the last turn read (``R``), where the
  importer's state is one turn id (the parent of the turn it opens); every
  record after it on the branch lies after it in the file. A resumed read
  scans from ``R`` (that turn is read again whole: the file may have added
  to it) and resolves the branch among the records from ``R`` on;
* what could still change the turns before the cut: the session's id and
  title as the whole read gave them, and the ids whose appearance would
  (a summary's leaf, a dangling parent of the branch's root: ``watched``).

:func:`resume` then reads the file from ``R`` with the importer's
``stream`` and keeps the result only when the resolved branch starts at the
cut's record, no watched id and no new summary appeared, and the session
keeps its id: otherwise it answers ``None`` and the caller reads the whole
file. A resumed read gives ``whole.turns == prefix.turns[:-1] + resumed``
(``tests/journal/test_resume.py`` checks it on real sessions cut at random
bytes). What it cannot see is a rewrite of bytes between the file's head
and the cut (the manifest checks the head, the bytes around the old end and
the region from the cut): the residual risk ADR 0022 describes.

A Codex rollout (:class:`RolloutReader`) is read as a list of records, not
a tree, but how each record is read depends on the whole file: its layout
(the first line), whether prompts come from ``user_message`` events and
replies from ``agent_message`` events (flags any record can set), the
session id (the first ``session_meta``, else derived from the first
prompt). A whole read leaves the cut (the record that opened the last turn
given: there the reader holds no turn) with that state
(:class:`~cairn.protocol.sources.RolloutState`) and the cut turn's parent;
:func:`resume` reads from the cut with that state and keeps the result only
when the state after it decides as before (no flag that changes where
prompts or replies come from, no session id named where it was derived),
so the turns before the cut are those the grown file gives, and its own
turns are those a whole read gives from the cut on. Its last turn may be a
tail, as a whole read's.

Pure like the importers: reads the descriptor it is given, writes nothing.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import attrs
from cairn.protocol import boundedjson
from cairn.protocol.errors import CairnError
from cairn.protocol.sources import ResumePoint, RolloutState
from cairn.protocol.transcript import Session, Turn
from cairn.worker.ingest.importers import claude_code, codex
from cairn.worker.ingest.importers._common import malformed
from cairn.worker.ingest.importers._jsonl import (
    REREAD_CACHE_BYTES,
    JsonlFile,
    StreamedSession,
    _decode_line,
    broken_report,
)

#: formats whose files a read can resume (the importer's ``stream`` is the one :func:`resume` drives)
RESUMABLE = frozenset({claude_code.NAME, codex.NAME})
#: a resumed read keeps its turns in memory: past this many new bytes, the file is read whole (streamed)
MAX_RESUME_BYTES = 32 << 20
#: watched ids kept at most; a file that needs more is read whole when it grows
MAX_WATCHED = 256


class Reader(JsonlFile):
    """:class:`JsonlFile` over an open descriptor (owned), from byte ``start`` (line ``line + 1``), that
    records what a :class:`ResumePoint` needs while the importer reads.

    The scan follows ``JsonlFile.scan`` rule for rule (the tests compare them line by line); ``end`` is
    where the complete lines read end (an unterminated last line being written is not among them).
    """

    def __init__(self, path: Path, fd: int, *, start: int = 0, line: int = 0,
                 watched: frozenset[str] = frozenset(), old_end: int = -1) -> None:
        self.path = path
        self.fh: IO[bytes] = os.fdopen(fd, "rb")
        self.skipped: list[CairnError] = []
        self._broken = 0  # lines with a broken character seen (``broken_report``)
        self._kept: dict[int, dict[str, Any]] = {}
        self.start, self.first_line, self.end = start, line, start
        self.watched, self.old_end = watched, old_end
        # what the scan saw
        self.session_seen = False  # a record names the session (else its id is derived: not resumable)
        self.hit = False  # a watched id, or a summary after the old end, appeared
        self.summaries: list[tuple[int, str]] = []  # (offset, leaf uuid)
        self._leaves: set[str] = set()
        self.leaf_latest: dict[str, int] = {}  # leaf uuid -> offset of its latest record read after the summary
        # what the importer's second pass visited (the branch, in order) and the turns it gave
        self._visits = 0
        self._recent: dict[str, tuple[int, int, int]] = {}  # uuid -> (visit, offset, line): since the last turn
        self._newest: tuple[str, tuple[int, int, int]] = ("", (0, 0, 0))  # the record visited last
        self.first_visit: tuple[int, dict[str, Any]] | None = None  # (offset, record) of the branch's first node
        self._cut: tuple[int, int, str | None] | None = None  # (offset, line, parent) of the last turn's opening
        self._after = -1  # the smallest offset visited after the cut's record (-1: none yet)
        self.turns = 0
        self.lost = False  # a turn whose opening record was not seen: no cut
        self.exhausted = False  # every turn was given (the cut is the last turn's)
        self.rollout: RolloutState | None = None  # a Codex rollout's reader state at the cut

    # -- the scan: JsonlFile.scan from ``start``, watching ids ------------------------------------
    #: whether the scan watches ids (a Codex rollout's reader has none to watch)
    WATCHES = True

    def scan(self) -> Iterator[tuple[int, int, dict[str, Any]]]:
        """The records, in order (see the module docstring); a file none of whose lines is JSON is malformed
        (its first line that is not), not a file with nothing in it."""
        read = False
        for item in self._scan():
            read = True
            yield item
        torn = [e for e in self.skipped if e.message.endswith("not a JSON value; line skipped")]
        if not read and torn:
            raise malformed(int(str(torn[0].detail.get("line") or 0)), "not a JSON value")

    def _scan(self) -> Iterator[tuple[int, int, dict[str, Any]]]:
        self.fh.seek(self.start)
        self._kept.clear()
        watches = self.WATCHES
        budget = REREAD_CACHE_BYTES
        offset = self.start
        number = self.first_line
        while True:
            raw = self._line(number + 1)
            if not raw:
                return
            number += 1
            start = offset
            offset += len(raw)
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
                start += 3
            if not raw.strip():
                self.end = offset
                continue
            try:
                found: list[CairnError] = []
                obj = _decode_line(raw, number, found)
            except (CairnError, ValueError) as exc:
                if not raw.endswith(b"\n") and not self.fh.read(1):
                    return  # an unterminated last line: a write in progress
                if isinstance(exc, boundedjson.TooDeep):
                    self.skipped.append(malformed(number, f"{exc}; line skipped"))
                    self.end = offset
                    continue
                if isinstance(exc, CairnError):
                    raise
                self.skipped.append(malformed(number, "not a JSON value; line skipped"))  # as JsonlFile does
                self.end = offset
                continue
            if not isinstance(obj, dict):
                raise malformed(number, "record is not a JSON object")
            if found:
                report = broken_report(self._broken, number)
                self._broken += 1
                if report is not None:
                    self.skipped.append(report)
            self.end = offset
            if watches and (not self.session_seen or obj.get("type") == "summary" or self._leaves or self.watched):
                self._watch(start, obj)  # rare past the first record: most files have no summary, nothing watched
            if len(raw) <= budget:
                budget -= len(raw)
                self._kept[start] = obj
            else:
                budget = 0
            yield number, start, obj

    def _watch(self, offset: int, rec: dict[str, Any]) -> None:
        if not self.session_seen and isinstance(rec.get("sessionId"), str):
            self.session_seen = True
        if rec.get("type") == "summary" and isinstance(rec.get("leafUuid"), str):
            self.summaries.append((offset, rec["leafUuid"]))
            self._leaves.add(rec["leafUuid"])
            if 0 <= self.old_end <= offset:
                self.hit = True  # a summary the last read did not see: the title may change
        if self._leaves or self.watched:  # most files have neither: one test per record
            uuid = rec.get("uuid")
            if isinstance(uuid, str):
                if uuid in self.watched:
                    self.hit = True
                if uuid in self._leaves:
                    self.leaf_latest[uuid] = offset

    # -- the second pass: the branch in order ----------------------------------------------------
    def at(self, offset: int, number: int) -> dict[str, Any]:
        rec = JsonlFile.at(self, offset, number)
        self._visits += 1
        if self.first_visit is None:
            self.first_visit = (offset, rec)
        uuid = rec.get("uuid")
        if uuid.__class__ is str:
            self._newest = (uuid, (self._visits, offset, number))
            self._recent[uuid] = self._newest[1]
        if self._cut is not None and (self._after < 0 or offset < self._after):
            self._after = offset
        return rec

    def saw(self, turn: Turn) -> None:
        """A turn the importer gave: its opening record becomes the cut."""
        self.turns += 1
        seen = self._recent.get(turn.turn_id)
        if seen is None:
            self.lost = True
            return
        visit, offset, number = seen
        self._cut = (offset, number - 1, turn.parent_turn_id)
        after = -1
        for v, o, _ in self._recent.values():
            if v > visit and (after < 0 or o < after):
                after = o
        self._after = after
        uuid, newest = self._newest  # the record being read: the next turn's opening
        self._recent = {uuid: newest}

    def point(self, *, session_id: str, title: str | None, prior: int = 0,
              watched: frozenset[str] = frozenset()) -> ResumePoint | None:
        """The resume point after a read that gave every turn (None when there is none to give)."""
        if self._cut is None or self.lost or not self.exhausted or not self.session_seen:
            return None
        offset, line, parent = self._cut
        if 0 <= self._after < offset:
            return None  # a node after the cut lies before it in the file
        for s_offset, leaf in self.summaries:
            if s_offset >= offset or self.leaf_latest.get(leaf, -1) >= offset:
                return None  # a summary's leaf after the cut: the branch decides the title
        keep = set(watched) | {leaf for _, leaf in self.summaries}
        if self.first_visit is not None and self.old_end < 0:  # a whole read: the branch's root is its own
            root = self.first_visit[1]
            dangling = root.get("parentUuid") or root.get("logicalParentUuid")
            if isinstance(dangling, str):
                keep.add(dangling)
        if len(keep) > MAX_WATCHED or self.end - offset > MAX_RESUME_BYTES:
            return None  # too much to watch, or a last turn too large to read again: read whole next time
        self.fh.seek(offset)
        region = self.fh.read(self.end - offset) if self.end > offset else b""
        return ResumePoint(offset=offset, line=line, end=self.end, region_sha=_sha(region), parent=parent,
                           prior=prior + self.turns - 1, session_id=session_id, title=title,
                           watched=tuple(sorted(keep)))


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class RolloutReader(Reader):
    """A :class:`Reader` of a Codex rollout: the same scan (no ids to watch); the cut and the reader's
    state come from what :func:`codex.read` reports (:meth:`took`)."""

    WATCHES = False

    def __init__(self, path: Path, fd: int, *, start: int = 0, line: int = 0) -> None:
        super().__init__(path, fd, start=start, line=line)
        self.last: tuple[int, int, str | None] | None = None  # (offset, line, parent) of the last turn's opening

    def took(self, read: codex.Read) -> None:
        """What the importer gave: the last completed turn's opening record becomes the cut."""
        self.exhausted = True
        self.rollout = RolloutState(**read.state._asdict()) if read.state is not None else None
        turns = read.sessions[0].turns if len(read.sessions) == 1 else ()
        self.turns = len(turns)
        if turns and len(read.opened) == len(turns):
            offset, number = read.opened[-1]
            self.last = (offset, number - 1, turns[-1].parent_turn_id)

    def point(self, *, session_id: str, title: str | None, prior: int = 0,
              watched: frozenset[str] = frozenset()) -> ResumePoint | None:
        if self.last is None or self.rollout is None or not self.exhausted:
            return None
        offset, line, parent = self.last
        if self.end - offset > MAX_RESUME_BYTES:
            return None  # a last turn too large to read again: read whole next time
        self.fh.seek(offset)
        region = self.fh.read(self.end - offset) if self.end > offset else b""
        return ResumePoint(offset=offset, line=line, end=self.end, region_sha=_sha(region), parent=parent,
                           prior=prior + self.turns - 1, session_id=session_id, title=title)


def reader(fmt: str, path: Path, fd: int) -> Reader:
    """The reader of a whole file of resumable format ``fmt`` (``fd`` is owned)."""
    return RolloutReader(path, fd) if fmt == codex.NAME else Reader(path, fd)


def _decides(state: RolloutState | codex.State) -> tuple[bool, bool, bool]:
    """What a Codex reader's state decides for every record: the session named by the file, prompts from
    events, replies from events."""
    return state.named, state.event_prompts, state.event_replies and not state.item_replies


def whole_rollout(reader: RolloutReader) -> list[Session]:
    """The session of the reader's whole rollout; the reader keeps its cut and state (:meth:`RolloutReader.took`)."""
    read = codex.read(reader)
    reader.took(read)
    return read.sessions


def whole(reader: Reader) -> list[StreamedSession]:
    """The importer's sessions of the reader's whole file; the reader sees each turn they give go by, so
    that once they are all read it can place its cut (:meth:`Reader.point`, :attr:`Reader.exhausted`)."""
    out = []
    for s in claude_code.stream(reader):
        def turns(s: StreamedSession = s) -> Iterator[Turn]:
            for t in s.turns():
                reader.saw(t)
                yield t
            reader.exhausted = True

        out.append(StreamedSession(session_id=s.session_id, source_format=s.source_format, title=s.title,
                                   turn_hint=s.turn_hint, turns=turns, tail=s.tail, late_tail=s.late_tail))
    return out


def resume(path: Path, fd: int, point: ResumePoint, rollout: RolloutState | None = None) -> tuple[Session, Reader] | None:
    """The session of ``path`` read from ``point`` (``fd`` is owned: closed when None is answered, else by
    closing the reader), or None when only a whole read can say (see the module docstring). Its turns are
    those a whole read gives from the cut's turn on. ``rollout``: a Codex rollout's reader state at the cut
    (a Claude Code session has none)."""
    if rollout is not None:
        return _resume_rollout(path, fd, point, rollout)
    reader = Reader(path, fd, start=point.offset, line=point.line, watched=frozenset(point.watched),
                    old_end=point.end)
    try:
        sessions = claude_code.stream(reader)
        if reader.hit or len(sessions) != 1 or sessions[0].tail is not None:
            reader.close()
            return None
        turns: list[Turn] = []
        for t in sessions[0].turns():
            reader.saw(t)
            # the read starts with no turn before it: the first one's parent is the cut's
            turns.append(t if turns else attrs.evolve(t, parent_turn_id=point.parent))
        reader.exhausted = True
        first = reader.first_visit
        if reader.hit or first is None or first[0] != point.offset or not turns:
            reader.close()
            return None
        tail = sessions[0].found_tail()  # the last turn, answered with no stop signal yet: pending until sealed
    except BaseException:
        reader.close()
        raise
    return Session(session_id=point.session_id, source_format=claude_code.NAME, title=point.title,
                   turns=tuple(turns), tail=tail), reader


def _resume_rollout(path: Path, fd: int, point: ResumePoint, state: RolloutState) -> tuple[Session, Reader] | None:
    reader = RolloutReader(path, fd, start=point.offset, line=point.line)
    try:
        read = codex.read(reader, start=codex.State(**attrs.asdict(state)), session_id=point.session_id,
                          parent=point.parent)
        reader.took(read)
        if (read.state is None or _decides(read.state) != _decides(state) or len(read.sessions) != 1
                or not read.sessions[0].turns or not read.opened or read.opened[0][0] != point.offset):
            reader.close()
            return None
    except BaseException:
        reader.close()
        raise
    session = read.sessions[0]
    return attrs.evolve(session, session_id=point.session_id, title=point.title), reader
