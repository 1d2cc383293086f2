"""Shared helpers for the transcript importers: ids, errors, JSONL reading, turn assembly.

Identity rules (see ``protocol.transcript``): a turn id is either taken from the
source or derived from content, never from a list position, so a rewind or a
re-import cannot alias two different turns and a grown file keeps its old ids.
Errors carry line numbers and counts only, never transcript text.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cairn.protocol import boundedjson
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.transcript import Session, Turn
from cairn.worker.ingest.storefile import open_file

ID_HEX = 24
#: the first bytes of every SQLite database file
SQLITE_MAGIC = b"SQLite format 3\x00"


def content_id(*parts: str | None) -> str:
    """sha256 over length-prefixed parts (``None`` distinct from ``""``), 24 hex chars."""
    h = hashlib.sha256()
    for part in parts:
        if part is None:
            h.update(b"\x00")
        else:
            data = part.encode("utf-8", "surrogatepass")
            h.update(b"\x01" + len(data).to_bytes(8, "big") + data)
    return h.hexdigest()[:ID_HEX]


def derived_turn_id(session_id: str, parent_turn_id: str | None, user: str, assistant: str) -> str:
    """Content-derived fork-point id: the same exchange after the same parent has the same id.

    The session id seeds the chain so that two sessions of one file that open
    with the same exchange still get distinct turn ids.
    """
    return content_id("turn", session_id, parent_turn_id, user, assistant)


def derived_session_id(fmt: str, header: str | None, first_user: str) -> str:
    """Content-derived session id from the format, a session header and the first completed prompt.

    The first completed turn never changes when a transcript grows, so the id
    is stable across re-imports and appends.
    """
    return content_id("session", fmt, header, first_user)


def malformed(line: int, what: str) -> CairnError:
    """A fixed-code error naming the line; ``what`` must never contain transcript text."""
    return CairnError(ErrorCode.IMPORT_MALFORMED, f"line {line}: {what}", line=line)


def iter_jsonl(text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line of a JSONL transcript.

    A line that is not JSON, or not a JSON object, is malformed, except an
    unterminated last line that does not parse: that is a write still in
    progress and is ignored, so importing a live file never fails. A line
    nesting deeper than :data:`boundedjson.MAX_DEPTH` is not JSON here
    (``load`` drops such lines beforehand and reports them; see
    :func:`drop_deep_lines`).
    """
    lines = text.split("\n")
    terminated = text.endswith("\n")
    last = len(lines) - 1
    for index, raw in enumerate(lines):
        if not raw.strip():
            continue
        number = index + 1
        try:
            obj = boundedjson.loads(raw)
        except ValueError as exc:
            if index == last and not terminated:
                return
            raise malformed(number, str(exc) if isinstance(exc, boundedjson.TooDeep) else "not a JSON value") from None
        if not isinstance(obj, dict):
            raise malformed(number, "record is not a JSON object")
        yield number, obj


def drop_deep_lines(text: str) -> tuple[str, tuple[CairnError, ...]]:
    """``text`` with each complete line nesting deeper than the bound blanked, and one error per line.

    Such a line cannot be a transcript record, and refusing the whole file for
    it would let one corrupt line hide every other turn: it is reported
    (``E_IMPORT_MALFORMED`` with its line number, never its content) and the
    rest of the file is read. Blanking keeps every other line's number. An
    unterminated last line is left alone (a write in progress).
    """
    if text.count("[") + text.count("{") <= boundedjson.MAX_DEPTH:  # too few brackets for any line to be deep
        return text, ()
    lines = text.split("\n")
    complete = len(lines) if text.endswith("\n") else len(lines) - 1
    issues: list[CairnError] = []
    for index in range(complete):
        if boundedjson.too_deep(lines[index]):
            lines[index] = ""
            issues.append(malformed(index + 1, f"nesting deeper than {boundedjson.MAX_DEPTH} levels; line skipped"))
    return ("\n".join(lines), tuple(issues)) if issues else (text, ())


class TurnBuilder:
    """Collects completed turns of one session and chains their parent ids.

    ``add`` takes the source id when the format has one; otherwise the id is
    derived from content once the session id is known (``finish``).
    ``set_tail`` gives the last turn when nothing has closed it yet (see
    :attr:`Session.tail`): its id is the one ``add`` would have given it.
    """

    def __init__(self) -> None:
        self._pending: list[tuple[str | None, str, str, str | None]] = []
        self._tail: tuple[str | None, str, str, str | None] | None = None

    def add(self, user: str, assistant: str, *, turn_id: str | None = None, completed_at: str | None = None) -> None:
        self._pending.append((turn_id, user, assistant, completed_at))

    def set_tail(self, user: str, assistant: str, *, turn_id: str | None = None,
                 completed_at: str | None = None) -> None:
        self._tail = (turn_id, user, assistant, completed_at)

    @property
    def first_user(self) -> str | None:
        """The first prompt (the tail's when no turn is complete yet): it does not change as the file grows."""
        first = self._pending[0] if self._pending else self._tail
        return first[1] if first else None

    @property
    def has_tail(self) -> bool:
        return self._tail is not None

    def __len__(self) -> int:
        return len(self._pending)

    def finish(self, *, session_id: str, source_format: str, title: str | None, parent: str | None = None) -> Session:
        """The session; ``parent`` is the first turn's parent (a read that starts after the file's first turn)."""
        turns: list[Turn] = []
        for source_id, user, assistant, completed_at in [*self._pending, *([self._tail] if self._tail else [])]:
            tid = source_id or derived_turn_id(session_id, parent, user, assistant)
            turns.append(Turn(turn_id=tid, parent_turn_id=parent, user=user, assistant=assistant, completed_at=completed_at))
            parent = tid
        tail = turns.pop() if self._tail else None
        return Session(session_id=session_id, source_format=source_format, title=title, turns=tuple(turns), tail=tail)


def join_texts(parts: list[str]) -> str:
    """Join text pieces of one message side with blank lines, dropping empty ones."""
    return "\n\n".join(p.strip() for p in parts if p and p.strip())


def inside_fence(line: str, fence: str | None) -> str | None:
    """Track Markdown fenced code blocks line by line; returns the open fence marker or ``None``."""
    stripped = line.lstrip()
    if fence is None:
        for marker in ("```", "~~~"):
            if stripped.startswith(marker):
                run = len(stripped) - len(stripped.lstrip(marker[0]))
                return marker[0] * run
        return None
    if stripped.startswith(fence) and not stripped.lstrip(fence[0]).strip():
        return None
    return fence


_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})([^\n]*)$", re.M)


def fenced_spans(text: str) -> list[tuple[int, int]]:
    """``[start, end)`` character spans of fenced code blocks (an unclosed fence runs to the end)."""
    spans: list[tuple[int, int]] = []
    marker: str | None = None
    opened = 0
    for match in _FENCE.finditer(text):
        run, rest = match.group(1), match.group(2)
        if marker is None:
            marker, opened = run, match.start()
        elif run[0] == marker[0] and len(run) >= len(marker) and not rest.strip():
            spans.append((opened, match.end()))
            marker = None
    if marker is not None:
        spans.append((opened, len(text)))
    return spans


def headers_outside_fences(pattern: re.Pattern[str], text: str) -> list[re.Match[str]]:
    """Matches of a multiline header ``pattern`` that do not start inside a fenced code block.

    Scanning is done by the regex engine, so a megabyte of Markdown costs milliseconds.
    """
    spans = fenced_spans(text)
    out: list[re.Match[str]] = []
    index = 0
    for match in pattern.finditer(text):
        while index < len(spans) and spans[index][1] <= match.start():
            index += 1
        if index < len(spans) and spans[index][0] <= match.start():
            continue
        out.append(match)
    return out


def json_document(text: str) -> Any:
    """One whole-file JSON document; a file cut short (a write in progress) or nested
    beyond the decoder's depth is malformed, with the line where decoding stopped."""
    try:
        return boundedjson.loads(text)
    except boundedjson.TooDeep as exc:
        raise malformed(1, str(exc)) from None
    except ValueError as exc:
        raise malformed(getattr(exc, "lineno", 1), "not a complete JSON document") from None


def part_texts(parts: Any, *, text_key: str = "text", skip: tuple[str, ...] = ()) -> list[str]:
    """The ``text`` strings of a list of dict parts, leaving out parts whose ``type`` is in ``skip``
    and parts flagged ``thought`` (Gemini-style reasoning). A bare string is one text."""
    if isinstance(parts, str):
        return [parts]
    if not isinstance(parts, list):
        return []
    out: list[str] = []
    for p in parts:
        if isinstance(p, str):
            out.append(p)
        elif isinstance(p, dict) and not p.get("thought") and p.get("type") not in skip:
            value = p.get(text_key)
            if isinstance(value, str):
                out.append(value)
    return out


def iso_from_millis(value: Any) -> str | None:
    """An epoch time in milliseconds (or seconds, when small) as ISO 8601 UTC, else ``None``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    seconds = value / 1000.0 if value > 10**11 else float(value)
    try:
        stamp = _dt.datetime.fromtimestamp(seconds, tz=_dt.UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"


def open_source(path: Path, *, follow_symlinks: bool = True) -> tuple[int, os.stat_result]:
    """An open descriptor of the regular file ``path`` and its status, for reading a transcript.

    Opened without blocking (a FIFO never hangs an import) and, unless
    ``follow_symlinks``, through :func:`cairn.worker.ingest.storefile.open_file`:
    a store's file, or a folder on its way, replaced by a link is
    ``E_PATH_SYMLINK`` (``path`` is then canonical, as discovery and the
    watcher make it). Anything else that cannot be read, or is not a
    regular file, is ``E_IMPORT_UNREADABLE``; the caller owns the descriptor.
    """
    try:
        if follow_symlinks:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            info = os.fstat(fd)
        else:
            fd, info = open_file(str(path))
    except OSError as exc:
        raise CairnError(ErrorCode.IMPORT_UNREADABLE, f"{path.name}: cannot open ({exc.strerror})",
                         path=str(path)) from None
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise CairnError(ErrorCode.IMPORT_UNREADABLE, f"{path.name}: not a regular file", path=str(path))
    return fd, info
