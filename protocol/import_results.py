"""Records of imports, captures and seals: the arguments and results of the ``import``, ``seal`` and
``seal-idle`` jobs and the tallies an import adds up.

Split from :mod:`.results` (which re-exports every one of them and keeps the job tables) so that what
runs on every import -- a re-run with nothing new, an agent's session hook -- builds these 13 record
classes only, not all 37 (each attrs class costs about half a millisecond to build at start-up;
``python -X importtime``). The rules of :mod:`.results` hold here: bodies are the fields, read back
strictly; ids, counts and fixed codes only.
"""

from __future__ import annotations

from typing import Any, TypeVar

import attrs
from cairn.protocol import codec
from cairn.protocol.codec import optional_key, record

T = TypeVar("T")


def read(cls: type[T], body: Any, *, job: str) -> T:
    """The ``cls`` record of an import or seal job's arguments or result body (:func:`.results.read`)."""
    return codec.from_body(body, cls, where=f"{job} {'args' if cls.__name__.endswith('Args') else 'result'}")


# -- import ---------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class MalformedLine:
    """A line an importer left out (the rest of its file was imported): its file name, line, code, message."""

    file: str
    line: int | None
    code: str
    message: str


@attrs.frozen(kw_only=True)
class FileFailure:
    """A file of an import that could not be imported: its place in the list given, its code and message."""

    index: int
    code: str
    message: str  # without transcript text


@record("import-tally", version=1)
class ImportTally:
    """What an import of several files did, summed file by file (and over both processes of a split
    import, whose helper sends its own tally: :mod:`worker.journal.import_split`)."""

    files: int = 0  # files imported (a failed one counts in no total)
    sessions: int = 0  # sessions with a turn seen (or interrupted)
    captured: int = 0  # turns captured now
    skipped: int = 0  # turns captured before
    repaired: int = 0  # torn segments rebuilt
    session_ids: tuple[str, ...] = ()  # in the order the files were given
    interrupted: bool = False  # stopped at a batch boundary
    malformed: tuple[MalformedLine, ...] = ()
    failed: tuple[FileFailure, ...] = ()  # only when failures are tolerated (``import --all``, ``each``)
    #: last turns not admitted: answered, but no completion signal yet and the file not sealed (Session.tail)
    pending: int = 0
    empty: int = 0  # files read with no turn complete yet (nor a pending one)
    formats: tuple[str, ...] = ()  # the format each file imported was read as, in the order given
    #: sessions of the files read as sealed (quiet for the idle period, or ended), whatever they captured
    sealed_ids: tuple[str, ...] = ()

    def add(self, other: ImportTally, *, offset: int = 0) -> ImportTally:
        """This tally and ``other``'s, whose file indexes start at ``offset`` in the list given."""
        return ImportTally(
            files=self.files + other.files,
            sessions=self.sessions + other.sessions,
            captured=self.captured + other.captured,
            skipped=self.skipped + other.skipped,
            repaired=self.repaired + other.repaired,
            session_ids=self.session_ids + other.session_ids,
            interrupted=self.interrupted or other.interrupted,
            malformed=self.malformed + other.malformed,
            pending=self.pending + other.pending,
            empty=self.empty + other.empty,
            formats=self.formats + other.formats,
            sealed_ids=self.sealed_ids + other.sealed_ids,
            failed=self.failed + tuple(codec.evolve(f, index=f.index + offset) for f in other.failed),
        )


@attrs.frozen(kw_only=True)
class FailedFile:
    """A file an ``each`` import (live watching) could not import: its name and fixed code."""

    file: str
    code: str


@record("import-args", version=1)
class ImportArgs:
    paths: tuple[str, ...] = ()  # absolute, or relative to the workspace
    format: str = "auto"
    each: bool = False  # file by file: a file's own failure is listed, the others go on
    #: the sessions are over (``cairn run``): a last turn with no completion signal is admitted now; else once
    #: its file has been quiet for ``seal_idle_minutes``
    ended: bool = False


@record("import-result", version=1)
class ImportResult:
    files: int
    sessions: int
    captured: int
    skipped: int
    session_ids: tuple[str, ...]
    malformed: tuple[MalformedLine, ...]
    repaired: int | None = optional_key()  # absent with ``each``
    interrupted: bool | None = optional_key()  # absent with ``each``
    failed: tuple[FailedFile, ...] | None = optional_key()  # only with ``each``
    formats: tuple[str, ...] | None = optional_key()  # the format each file was read as (absent with ``each``)
    pending: int | None = optional_key()  # last turns not complete yet (ImportTally.pending); absent when none
    empty: int | None = optional_key()  # files with no turn complete yet; absent when none


@attrs.frozen(kw_only=True)
class SourceFailure:
    """A session store or source that could not be read or imported (code, path, message without text)."""

    format: str
    path: str
    code: str
    message: str


@record("sources-import", version=1)
class SourcesImport:
    """An import of the discovered session stores: ``cairn import --all`` and a ``cairn watch`` tick.

    Not a worker job: the command runs it in its own process; ``--json`` prints these fields.
    """

    sources: int  # sources imported (a failed one counts in no total)
    sessions: int
    captured: int
    skipped: int
    session_ids: tuple[str, ...]
    malformed: tuple[MalformedLine, ...]
    interrupted: bool
    failed: tuple[SourceFailure, ...]  # stores that could not be read first, then sources in order
    selected: int | None = optional_key()  # ``import --all``: sessions selected
    changed: int | None = optional_key()  # a watch tick: sessions that moved
    sealed: tuple[str, ...] | None = optional_key()  # a watch tick: idle seals
    pending: int | None = optional_key()  # last turns not complete yet (ImportTally.pending); absent when none
    empty: int | None = optional_key()  # sources with no turn complete yet; absent when none
    formats: tuple[str, ...] | None = optional_key()  # the format each source imported was read as
    #: ``import --all``: sessions found but not imported, by reason ("other-workspace", "no-workspace",
    #: "before-since"); absent when none
    left_out: dict[str, int] | None = optional_key()


# -- capture and seal -----------------------------------------------------------------------------


@record("capture-result", version=1)
class CaptureResult:
    """One session's capture (:func:`worker.journal.capture.capture_session`)."""

    captured: int
    skipped: int
    capture: str | None  # the capture written to (None: nothing was read)
    repaired: int
    unrepaired: int
    interrupted: bool
    turns: int  # completed turns seen


@record("seal-args", version=1)
class SealArgs:
    session_id: str | None = None  # None: every open session
    trigger: str = "session-end"  # a Trigger value (checked by the job: E_USAGE names them)


@record("seal-result", version=1)
class SealResult:
    sealed: tuple[str, ...]  # the captures sealed


@record("seal-idle-args", version=1)
class SealIdleArgs:
    quiet_seconds: float = 20 * 60.0
    #: session files to read again first (those of the quiet period): read as sealed when quiet that long,
    #: so a last turn with no completion signal is captured and its session sealed
    paths: tuple[str, ...] = ()


@record("seal-idle-result", version=1)
class SealIdleResult:
    sealed: int
    captures: tuple[str, ...]
