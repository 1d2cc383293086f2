"""The source manifest's records: what an import last saw of each transcript file (docs/adr/0022).

One :class:`SourceEntry` per source (a file read whole, or a database with
the session ids taken from it) says, for the file as it was when read: its
identity and change marks (:class:`FileMark`: device, inode, size, mtime and
ctime in nanoseconds; a SQLite store's ``-wal`` file too), hashes of a
bounded head and tail of its bytes, what the import of it counted, the
segments holding its sessions' evidence, and for an append-only JSON-lines
session the state a read resumed from a record boundary needs
(:class:`ResumePoint`; a Codex rollout's reader state too, :class:`RolloutState`). An entry is written only after every turn it
covers is durable, so each one is a true statement about a past content of
its file; what it lets an import skip is decided afresh against the file.

Private state (``.cairn/state/journal/sources/``): paths are kept, never
transcript text, except a session's title (which the evidence holds too).
"""

from __future__ import annotations

import attrs
from cairn.protocol.codec import record


@attrs.frozen(kw_only=True)
class FileMark:
    """What ``stat`` says of a file: identity and change marks (times in nanoseconds)."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int


@attrs.frozen(kw_only=True)
class KeptLine:
    """A line the importer left out (``Opened.skipped``): number, fixed code, message (no transcript text)."""

    line: int | None
    code: str
    message: str


@attrs.frozen(kw_only=True)
class KeptSegment:
    """A segment holding evidence of the entry's sessions, named by the batch entry that lists it, with the
    stored file's size and mtime when the entry was written (a torn or rewritten segment changes them)."""

    batch: str  # <capture id>/<batch entry name>
    sha: str
    size: int
    mtime_ns: int


@attrs.frozen(kw_only=True)
class ResumePoint:
    """Where a read of an append-only JSON-lines session can resume, and the state it needs there.

    ``offset`` is the start of the record that opened the last turn read (its
    line is ``line + 1``): a resumed read scans from there, so that turn is read
    again whole. ``end`` is where the complete lines read ended, ``region_sha``
    the sha256 of the bytes ``[offset, end)`` (checked before resuming).
    ``parent`` is the turn id the reopened turn has as parent, ``prior`` the
    number of turns before it; ``session_id`` and ``title`` are the session's
    as the whole read gave them. A record appended with one of the ``watched``
    ids (summary leaves, a dangling parent of the branch's root) could change
    what came before the cut: its appearance sends the import back to a whole read.
    """

    offset: int
    line: int
    end: int
    region_sha: str
    parent: str | None
    prior: int
    session_id: str
    title: str | None
    watched: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class RolloutState:
    """What the reader of a Codex rollout (``worker/ingest/importers/codex.py``) knows of a file's records
    read so far and uses on every record: a read resumed at a cut starts from it.

    The prompts come from ``user_message`` events when the file has any, the replies from ``agent_message``
    events when it has no assistant message item; the flags only ever turn true as the file grows. A
    resumed read is kept only when what they decide (and whether the file names its session) is what the
    whole file decides.
    """

    legacy: bool  # the older layout: the first line is a header, bare model items follow
    named: bool  # the session id is the file's own (a header, a session_meta), not derived from a prompt
    started: str | None  # the older layout's header time: its turns' only time
    event_prompts: bool  # a user_message event was read
    event_replies: bool  # an agent_message event was read
    item_replies: bool  # an assistant message item was read


@record("source-entry", version=1)
class SourceEntryV1:
    """The manifest entry as first written (no reader state beside the resume point); it reads as
    :class:`SourceEntry`, whose ``rollout`` is then None (a Codex rollout is read whole once)."""

    key: str  # sha of (path, format asked, session ids kept)
    path: str
    format: str  # the format it was read as
    reader: str  # fingerprint of the importers that read it: another reader reads it again
    mark: FileMark
    wal: FileMark | None = None  # a SQLite store's write-ahead log
    head_sha: str = ""  # sha256 of the first HEAD bytes (files only)
    tail_sha: str = ""  # sha256 of the last TAIL bytes up to mark.size
    sealed: bool = False  # read as sealed (tails admitted)
    pending: int = 0  # tails left pending
    empty: int = 0
    turns: int = 0  # turns seen, all sessions
    sessions: tuple[str, ...] = ()  # session ids seen, in order
    malformed: tuple[KeptLine, ...] = ()
    segments: tuple[KeptSegment, ...] = ()
    resume: ResumePoint | None = None


@record("source-entry", version=2, upgrades=SourceEntryV1)
class SourceEntry:
    """The import of one source, as of the content it read (see the module docstring). Version 2 adds
    ``rollout``: a Codex rollout's reader state at its resume point."""

    key: str  # sha of (path, format asked, session ids kept)
    path: str
    format: str  # the format it was read as
    reader: str  # fingerprint of the importers that read it: another reader reads it again
    mark: FileMark
    wal: FileMark | None = None  # a SQLite store's write-ahead log
    head_sha: str = ""  # sha256 of the first HEAD bytes (files only)
    tail_sha: str = ""  # sha256 of the last TAIL bytes up to mark.size
    sealed: bool = False  # read as sealed (tails admitted)
    pending: int = 0  # tails left pending
    empty: int = 0
    turns: int = 0  # turns seen, all sessions
    sessions: tuple[str, ...] = ()  # session ids seen, in order
    malformed: tuple[KeptLine, ...] = ()
    segments: tuple[KeptSegment, ...] = ()
    resume: ResumePoint | None = None
    rollout: RolloutState | None = None  # a Codex rollout's: what its reader knew at the cut
