"""Streaming JSONL records: read a transcript line by line, and again by offset.

Large session files (Claude Code sessions with long tool output reach
hundreds of MB) are never read whole. :class:`JsonlFile` scans a file once
in binary, one line at a time, yielding ``(line number, offset, record)``;
an importer keeps only what it needs from each record (ids, offsets) and
reads the few records it uses again with :meth:`JsonlFile.at`. Memory then
follows the structure of the conversation, not the file's size. A single
line is bounded (:data:`MAX_LINE_BYTES`): past that the record is refused
with ``E_IMPORT_TOO_LARGE``, never truncated.

The records of a file's first :data:`REREAD_CACHE_BYTES` are kept as the
scan decodes them, so :meth:`JsonlFile.at` on them costs neither a read nor
a second decode: most sessions are small, and decoding every line twice was
a fifth of an import's CPU. Memory stays bounded (the cache stops filling
past that many bytes of source lines), and what ``at`` returns is what the
scan read, so a small file is read once, as one consistent snapshot.

The rules are those of ``_common.iter_jsonl`` and ``load``: blank lines are
skipped; a record that is not a JSON object is malformed, except an
unterminated last line that does not parse (a write in progress), which is
ignored; a complete line that is no JSON at all (a torn record) or nests past
the JSON depth bound is left out and reported (:attr:`JsonlFile.skipped`). A file
that changes under a second read (not only grown) is refused.
:class:`JsonlText` gives the same interface over text already in memory.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, Protocol

from cairn.protocol import boundedjson
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.transcript import Turn

from ._common import iter_jsonl, malformed, open_source

MAX_LINE_BYTES = 64 << 20
#: source bytes whose decoded records a scan keeps for :meth:`JsonlFile.at`
REREAD_CACHE_BYTES = 2 << 20


class Records(Protocol):
    def scan(self) -> Iterator[tuple[int, int, dict[str, Any]]]: ...

    def at(self, offset: int, number: int) -> dict[str, Any]: ...

    def close(self) -> None: ...


#: lines with a broken character reported one by one; past them one report says later lines may be too (a
#: file in another encoding would otherwise report every line that holds an accent)
MAX_BROKEN_REPORTS = 10


def broken_report(seen: int, number: int) -> CairnError | None:
    """The report for line ``number``, the ``seen``-th (from 0) line of its file with a broken character."""
    if seen < MAX_BROKEN_REPORTS:
        return malformed(number, "not UTF-8 text; its broken characters were replaced")
    if seen == MAX_BROKEN_REPORTS:
        return malformed(number, "not UTF-8 text, nor may later lines be; their broken characters were replaced "
                                 "(no later line is reported)")
    return None


def _decode_line(raw: bytes, number: int, issues: list[CairnError] | None = None) -> Any:
    """The JSON value of one line; a broken UTF-8 character is replaced (U+FFFD) and the line's number put in
    ``issues``' place: the record is kept, as the whole-file reader keeps such a line (``importers._decode``)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "replace")
        if issues is not None:
            issues.append(malformed(number, ""))  # a marker: the reader numbers its reports (``broken_report``)
    return boundedjson.loads(text)


class JsonlFile:
    """Records of a JSONL file on disk (opened once, read sequentially, then by offset)."""

    def __init__(self, path: Path, *, follow_symlinks: bool = True) -> None:
        self.path = path
        fd, _ = open_source(path, follow_symlinks=follow_symlinks)
        self.fh: IO[bytes] = os.fdopen(fd, "rb")
        #: complete lines left out (nesting past the JSON depth bound), as ``_common.drop_deep_lines`` reports them
        self.skipped: list[CairnError] = []
        self._broken = 0  # lines with a broken character seen (``broken_report``)
        self._kept: dict[int, dict[str, Any]] = {}  # offset -> record, for the file's first bytes

    def close(self) -> None:
        self._kept.clear()
        self.fh.close()

    def _line(self, number: int) -> bytes:
        try:
            raw = self.fh.readline(MAX_LINE_BYTES + 1)
        except OSError as exc:
            raise CairnError(ErrorCode.IMPORT_UNREADABLE, f"{self.path.name}: read failed ({exc.strerror})",
                             path=str(self.path)) from None
        if len(raw) > MAX_LINE_BYTES:
            raise CairnError(ErrorCode.IMPORT_TOO_LARGE,
                             f"{self.path.name}: line {number} exceeds the {MAX_LINE_BYTES}-byte record limit",
                             path=str(self.path), line=number, limit=MAX_LINE_BYTES)
        return raw

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
        self.fh.seek(0)
        self._kept.clear()
        budget = REREAD_CACHE_BYTES
        offset = 0
        number = 0
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
                continue
            try:
                found: list[CairnError] = []
                obj = _decode_line(raw, number, found)
            except (CairnError, ValueError) as exc:
                if not raw.endswith(b"\n") and not self.fh.read(1):
                    return  # an unterminated last line: a write in progress
                if isinstance(exc, boundedjson.TooDeep):
                    self.skipped.append(malformed(number, f"{exc}; line skipped"))
                    continue
                if isinstance(exc, CairnError):
                    raise
                # a complete line that is no JSON (a record torn by a writer that died, then appended to when
                # the agent went on): left out and reported, the rest read; refusing the file hid every turn
                self.skipped.append(malformed(number, "not a JSON value; line skipped"))
                continue
            if not isinstance(obj, dict):
                raise malformed(number, "record is not a JSON object")
            if found:
                report = broken_report(self._broken, number)
                self._broken += 1
                if report is not None:
                    self.skipped.append(report)
            if len(raw) <= budget:
                budget -= len(raw)
                self._kept[start] = obj
            else:
                budget = 0  # kept records are a prefix of the file: the rest is read again
            yield number, start, obj

    def at(self, offset: int, number: int) -> dict[str, Any]:
        kept = self._kept.pop(offset, None)  # read once: freed as the turns are read, never shared
        if kept is not None:
            return kept
        self.fh.seek(offset)
        raw = self._line(number)
        try:
            obj = _decode_line(raw, number)
        except ValueError:
            obj = None
        if not isinstance(obj, dict):
            raise CairnError(ErrorCode.IMPORT_MALFORMED, f"{self.path.name}: line {number} changed during the import",
                             line=number)
        return obj


class JsonlText:
    """The same interface over text in memory (offsets are line indices)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.split("\n")

    def close(self) -> None:
        pass

    def scan(self) -> Iterator[tuple[int, int, dict[str, Any]]]:
        for number, obj in iter_jsonl(self.text):  # the same rules as every other JSONL reader
            yield number, number - 1, obj

    def at(self, offset: int, number: int) -> dict[str, Any]:
        obj = boundedjson.loads(self.lines[offset])
        assert isinstance(obj, dict)
        return obj


class StreamedSession:
    """A session whose turns are read from its file on demand, once, in order.

    ``turn_hint`` is an upper bound on the number of turns (for progress);
    ``turns()`` yields the completed root turns exactly as the importer's
    ``parse`` would list them; ``tail`` is :attr:`Session.tail`.
    """

    def __init__(self, *, session_id: str, source_format: str, title: str | None, turn_hint: int,
                 turns: Callable[[], Iterator[Turn]], tail: Turn | None = None,
                 late_tail: Callable[[], Turn | None] | None = None) -> None:
        self.session_id = session_id
        self.source_format = source_format
        self.title = title
        self.turn_hint = turn_hint
        self.turns = turns
        self.tail = tail
        #: the tail known only once ``turns()`` has been read to its end (the file's last turn, answered with no
        #: completion signal: Claude Code's), None before or when there is none
        self.late_tail = late_tail

    def found_tail(self) -> Turn | None:
        """The tail, once ``turns()`` has been read to its end."""
        return self.tail if self.tail is not None else self.late_tail() if self.late_tail is not None else None

    def sealed(self) -> StreamedSession:
        """This session as read from a sealed file: its tail (if any) is yielded after its turns."""
        tail, turns, late = self.tail, self.turns, self.late_tail
        if tail is None and late is None:
            return self

        def all_turns() -> Iterator[Turn]:
            yield from turns()
            last = tail if tail is not None else late() if late is not None else None
            if last is not None:
                yield last

        return StreamedSession(session_id=self.session_id, source_format=self.source_format, title=self.title,
                               turn_hint=self.turn_hint + 1, turns=all_turns)
