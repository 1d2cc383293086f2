"""Transcript importers: turn a transcript file into sessions of completed root turns.

Every supported tool leaves its conversations on disk in its own format; each
format module here declares one :class:`~._format.Format` record, ``FORMAT``:
how the format is read (``parse(text, *, source_name) -> list[Session]``, a
database's ``parse_path``, a record-by-record ``stream``), how its files are
recognised, and where discovery finds them. This module orders the
recognising tests (:data:`DETECTION_ORDER`), derives the tables below from
the records, picks a format (``detect``) and reads the file (``load``).

Contract shared by all importers:

- Only completed root turns are returned: an answer still streaming, a tool
  call still pending, a prompt not yet answered are left out and appear once
  the file has grown to complete them. A turn closes on the format's
  completion signal, else on the next prompt, else when the file is sealed
  (the session ended, or the file has been quiet for the idle period): the
  last prompt of a finished session is never lost. A format whose last turn
  can lack the first two (Codex rollouts written before ``task_complete``
  events, any session killed before its signal) gives that turn as
  ``Session.tail`` once its reply's text is in the file with nothing pending
  after it; the import admits it when the file is sealed
  (``worker.journal.imports``). A tail has the id the same turn gets once a
  signal or a next prompt closes it, so a session resumed after its tail was
  admitted captures it once (a reply that went on growing after the seal is
  a new turn beside the first, as after an edit). Sessions with neither a
  completed turn nor a tail are left out.
- Turn ids are stable fork-point ids: taken from the source when it has them
  (Claude Code message uuids), otherwise a sha256 over (session id, parent
  turn id, user, assistant) truncated to 24 hex chars; never positions. Two
  loads of one file give the same ids; a grown file keeps the old ids and
  adds only the new turns.
- Tool traffic (calls, results, command output), thinking and injected
  boilerplate are not part of ``user`` or ``assistant``.
- Importers are pure: they read, never write. Errors carry a fixed code and
  line numbers, never transcript text.
- They import only :mod:`protocol` (and each other's ``_common``): no
  storage, no claims, nothing of the journal they feed.

Adding a format: a module here declaring ``FORMAT``, named with its steps in
``_ORDER`` (the modules are imported the first time a table is used, so that
a command reading no transcript loads none of them) and its name in
:data:`FORMATS`; its section in ``docs/formats.md``; its stores in
:mod:`..sources.roots` when discovery should find it.
``tests/importers/test_formats_registry.py`` checks that these agree.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import pathlib
import re
import stat
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import attrs
from cairn.protocol import boundedjson
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.transcript import Session

from ._common import SQLITE_MAGIC, drop_deep_lines, open_source
from ._jsonl import JsonlFile, StreamedSession, broken_report

if TYPE_CHECKING:  # the format modules, for type checkers: at run time ``__getattr__`` imports them
    from . import aider as aider
    from . import cctrace as cctrace
    from . import claude_code as claude_code
    from . import claude_code_export as claude_code_export
    from . import claude_export as claude_export
    from . import cline as cline
    from . import codex as codex
    from . import continue_dev as continue_dev
    from . import copilot_cli as copilot_cli
    from . import cursor as cursor
    from . import cursor_export as cursor_export
    from . import cursor_transcript as cursor_transcript
    from . import gemini_cli as gemini_cli
    from . import goose as goose
    from . import gptel_md as gptel_md
    from . import gptel_org as gptel_org
    from . import opencode as opencode
    from . import opencode_export as opencode_export
    from . import qwen_code as qwen_code
    from . import roo_code as roo_code
    from . import specstory as specstory
    from . import vscode_copilot as vscode_copilot
    from ._format import Format, Kind

#: How a file's format is found: the first step whose test holds names it. A step asks one format's
#: ``sniff_<kind>`` test (see :class:`._format.Format`) and applies only to a head it can judge:
#: ``db`` to a SQLite file (which nothing else is asked about), ``array`` to a head opening with
#: ``[``, ``record`` and ``json`` to one opening with ``{``, ``mark``, ``text`` and ``tail`` to any
#: other file and to JSON that no JSON step claimed. Where two steps can hold for one file, the
#: comment says why the first is asked first; the other steps exclude each other on every file
#: known (their order only settles files made of two formats at once). The answer then goes through
#: the formats' ``path_hint`` (tools that write one shape, told apart by where it lives).
#:
#: Each step names its importer module: the modules are imported the first time a table is needed
#: (a file to detect or read), not when this package is, so a command that reads no transcript (an
#: import that finds nothing new, an empty home) does not build them (``tests/test_imports.py``).
#: :data:`DETECTION_ORDER` is this order with each module's ``FORMAT`` record.
_ORDER: tuple[tuple[str, Kind], ...] = (
    # A SQLite database, by its tables.
    ("opencode", "db"),  # session, message and part
    ("goose", "db"),  # sessions, and messages with content_json
    ("cursor", "db"),  # last: the loosest test (a key-value table, or an ItemTable holding a chat key)
    # A JSON array: a task history (Roo Code's markers decide between the two).
    ("cline", "array"),  # before roo-code: for a path naming both extensions' folders, Cline's wins
    ("roo_code", "array"),
    # A JSON object, by its first record (a JSON-lines record, or a whole document on one line).
    ("vscode_copilot", "record"),  # a whole chat on one line: its requests list (a session file has a sessionId)
    ("copilot_cli", "record"),
    ("gemini_cli", "record"),  # before claude-code: a chat's metadata line has a sessionId
    # before claude-code: its records have Claude Code's keys (a chat whose first record has no
    # message is told by the Gemini-style messages further on in its head)
    ("qwen_code", "record"),
    ("goose", "record"),
    ("codex", "record"),
    ("continue_dev", "record"),
    ("cursor_transcript", "record"),  # a message {role, message} with none of Claude Code's keys, or a turn marker
    ("claude_code", "record"),  # last: any record with a sessionId or parentUuid, or a user/assistant/system type
    # A JSON object whose first record told nothing (a document over several lines, a first line cut
    # short by the head): keys in the head.
    # the whole documents first: their messages carry what the fallbacks below look for ("type": "user", sessionId)
    ("vscode_copilot", "json"),  # its requests' results carry a sessionId further on
    ("continue_dev", "json"),
    ("gemini_cli", "json"),
    ("cline", "json"),
    # the fallbacks for a first line cut short by the head: Copilot's and Codex's record types before
    # Claude Code's keys, which Copilot's events carry (sessionId)
    ("copilot_cli", "json"),
    ("codex", "json"),
    ("cursor_transcript", "json"),  # its first line opens with {"role": …, "message": {"content":
    ("claude_code", "json"),
    # Any other file: the marks a tool writes, and the shape of the text.
    ("claude_export", "mark"),  # its title opens the file
    ("cctrace", "mark"),  # its title opens the file
    # before the formats found by a marker anywhere: their header opens the file, and a chat may quote the others
    ("cursor_export", "mark"),  # "Exported on … from Cursor (…)" under the title
    ("opencode_export", "mark"),  # title, then "**Session ID:**" and "**Created:**"
    ("claude_code_export", "text"),  # before the formats found by a marker anywhere: a session may quote them
    ("specstory", "mark"),  # SpecStory's comment, before aider's header, which a SpecStory session may quote
    ("aider", "mark"),  # before SpecStory's role lines, which an aider chat may quote
    ("specstory", "text"),
    ("gptel_org", "mark"),  # a property line anywhere in the head: after the formats that name themselves
    ("gptel_md", "tail"),  # last: the only step that reads the end of the file
)

#: every format's name, sorted (the records' names: ``tests/importers/test_formats_registry.py``);
#: known without importing a format module (the commands' ``--format`` choices)
FORMATS: tuple[str, ...] = (
    "aider", "cctrace", "claude-code", "claude-code-export", "claude-export", "cline", "codex", "continue",
    "copilot-cli", "cursor", "cursor-export", "cursor-transcript", "gemini-cli", "goose", "gptel-md", "gptel-org",
    "opencode", "opencode-export", "qwen-code", "roo-code", "specstory", "vscode-copilot",
)

MAX_BYTES = 64 << 20  # larger files are refused, not truncated
HEAD_BYTES = 64 << 10
TAIL_BYTES = 8 << 10
MAX_TAIL_BYTES = 4 << 20

_MODULES = frozenset(module for module, _ in _ORDER)
#: each format's module: its name with ``_`` for ``-`` (``tests/importers/test_formats_registry.py``)
_MODULE_OF = {name: "continue_dev" if name == "continue" else name.replace("-", "_") for name in FORMATS}


class _Registry:
    """The tables derived from format records: of every format (:func:`_registry`), or of one
    (:func:`_tables`)."""

    def __init__(self, modules: frozenset[str] = _MODULES) -> None:
        order: tuple[tuple[Format, Kind], ...] = tuple(
            (importlib.import_module(f"{__name__}.{module}").FORMAT, kind) for module, kind in _ORDER
            if module in modules)
        self.order = order
        #: every format's record by name, in the order of its first detection step
        self.records: dict[str, Format] = {fmt.name: fmt for fmt, _ in order}
        ranked = [self.records[name] for name in sorted(self.records)]
        #: formats read from their text (JSON lines included)
        self.parsers: dict[str, Callable[..., list[Session]]] = {f.name: f.parse for f in ranked if f.parse is not None}
        #: formats kept in a SQLite database: read through the file, never as text
        self.db_parsers: dict[str, Callable[[pathlib.Path], list[Session]]] = {
            f.name: f.parse_path for f in ranked if f.parse_path is not None}
        self.jsonl = frozenset(f.name for f in ranked if f.jsonl)  # one JSON record per line
        #: formats whose ``.jsonl`` session files the live watchers follow in their home stores (``Format.follows``)
        self.live = frozenset(f.name for f in ranked if f.follows)
        #: formats read record by record (no whole-file read, no file-size limit; a single line is bounded)
        self.streamed: tuple[str, ...] = tuple(f.name for f in ranked if f.stream is not None)
        steps = []
        for fmt, kind in order:
            test = fmt.sniff(kind)
            if test is None:
                raise ValueError(f"DETECTION_ORDER asks {fmt.name} for a {kind} test it does not have")
            steps.append((fmt.name, kind, test))
        self.steps: tuple[tuple[str, Kind, Callable[..., bool]], ...] = tuple(steps)


@functools.cache
def _registry() -> _Registry:
    return _Registry()


@functools.cache
def _tables(fmt: str) -> _Registry:
    """The tables to read a file as ``fmt``: a format given by name needs only its own module (an import
    of Claude Code sessions loads no other reader); ``auto`` or an unknown name, every format's."""
    module = _MODULE_OF.get(fmt)
    return _registry() if module is None or fmt == "auto" else _Registry(frozenset({module}))


#: the tables this package exports, built on first use (PEP 562 ``__getattr__`` below)
_TABLES = {"DETECTION_ORDER": "order", "RECORDS": "records", "PARSERS": "parsers", "DB_PARSERS": "db_parsers",
           "JSONL_FORMATS": "jsonl", "LIVE_FORMATS": "live", "STREAMED": "streamed"}

if TYPE_CHECKING:
    DETECTION_ORDER: tuple[tuple[Format, Kind], ...]
    RECORDS: dict[str, Format]
    PARSERS: dict[str, Callable[..., list[Session]]]
    DB_PARSERS: dict[str, Callable[[pathlib.Path], list[Session]]]
    JSONL_FORMATS: frozenset[str]
    LIVE_FORMATS: frozenset[str]
    STREAMED: tuple[str, ...]


def __getattr__(name: str) -> Any:
    """The derived tables, a format module (``importers.codex``) and the record classes, loaded on first use."""
    if name in _TABLES:
        return getattr(_registry(), _TABLES[name])
    if name in _MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in ("Format", "Kind"):
        from . import _format  # the record class, with the modules that declare records (_ORDER)
        return getattr(_format, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _sniff(path: pathlib.Path, head: bytes, *, follow_symlinks: bool = True) -> str:
    if head.startswith(SQLITE_MAGIC):
        return _sniff_db(path)
    text = head.decode("utf-8", "replace").lstrip("\ufeff")
    lead = text.lstrip()
    record = _first_record(lead) if lead.startswith("{") else None
    tail: str | None = None
    for name, kind, test in _registry().steps:
        if kind == "db":
            continue
        if kind == "array":
            hit = lead.startswith("[") and test(lead)
        elif kind == "record":
            hit = record is not None and test(record, lead)
        elif kind == "json":
            hit = lead.startswith("{") and test(lead)
        elif kind == "tail":
            if tail is None:
                tail = _read_tail(path, follow_symlinks=follow_symlinks).decode("utf-8", "replace")
            hit = test(tail)
        else:
            hit = test(text, path.name)
        if hit:
            return _path_hint(path, name)
    if _PROMPT_LOG.match(lead):
        raise _prompts_only(path)
    raise CairnError(ErrorCode.IMPORT_UNKNOWN_FORMAT, f"{path.name}: not a transcript format cairn knows", path=str(path))


#: Gemini CLI's ``logs.json``: a JSON array of the prompts typed, ``{sessionId, messageId, type: "user", message,
#: timestamp}`` each (in that order), and no reply
_PROMPT_LOG = re.compile(r'\[\s*\{\s*"sessionId"\s*:\s*"[^"\\]*"\s*,\s*"messageId"\s*:\s*\d+\s*,'
                         r'\s*"type"\s*:\s*"user"\s*,\s*"message"\s*:')


def _prompts_only(path: pathlib.Path) -> CairnError:
    return CairnError(ErrorCode.IMPORT_PROMPTS_ONLY,
                      f"{path.name}: a Gemini CLI prompt log: it holds the prompts typed and no replies, so no turn "
                      "can be made of it (the conversations are in the chats folder beside it)", path=str(path))


def _lead(head: bytes) -> str:
    """A head as text from its first character that is not a byte-order mark or white space."""
    return head.decode("utf-8", "replace").lstrip("\ufeff").lstrip()


def _one_document(lead: str) -> bool:
    """Whether a head opens one JSON document rather than JSON lines: an array, or an object written over
    several lines (its first line is no JSON value and the next one is indented)."""
    if lead.startswith("["):
        return True
    _, _, rest = lead.partition("\n")
    return lead.startswith("{") and _first_record(lead) is None and rest[:1] in (" ", "\t", '"', "}")


def _holds(fmt: str, path: pathlib.Path, head: bytes) -> bool:
    """Whether a detection step of ``fmt`` holds on ``head`` (the file carries that format's marks)."""
    text = head.decode("utf-8", "replace").lstrip("\ufeff")
    lead = text.lstrip()
    record = _first_record(lead) if lead.startswith("{") else None
    for name, kind, test in _registry().steps:
        if name != fmt or kind == "db":
            continue
        if kind == "array":
            hit = lead.startswith("[") and test(lead)
        elif kind == "record":
            hit = record is not None and test(record, lead)
        elif kind == "json":
            hit = lead.startswith("{") and test(lead)
        elif kind == "tail":
            hit = test(_read_tail(path).decode("utf-8", "replace"))
        else:
            hit = test(text, path.name)
        if hit:
            return True
    return False


def wrong_format(path: pathlib.Path, fmt: str, *, follow_symlinks: bool = True,
                 known_only: bool = False) -> CairnError | None:
    """``E_IMPORT_WRONG_FORMAT`` (or ``E_IMPORT_PROMPTS_ONLY``) for a file read as ``fmt`` that carries
    none of ``fmt``'s marks, saying what it is instead; None when it carries them (or cannot be read:
    the reader says why). For a file ``--format`` named wrongly, which ``fmt``'s reader did not
    understand: nothing of it was read, or the reader failed on it. With ``known_only``, None as well
    when the file is nothing cairn can name (its reader's own error is then the accurate one)."""
    try:
        head = _head(path, follow_symlinks=follow_symlinks)
    except CairnError:
        return None
    reg = _registry()
    if _blank(head) or fmt in reg.db_parsers and fmt not in reg.parsers or _holds(fmt, path, head):
        return None
    lead = _lead(head)
    if _PROMPT_LOG.match(lead):
        return _prompts_only(path)
    try:
        found: str | None = _sniff(path, head, follow_symlinks=follow_symlinks)
    except CairnError:
        found = None
    if found is not None and found != fmt:
        why = f"it reads as {found}"
    elif fmt in reg.jsonl and _one_document(lead):
        why = f"it is one JSON document, not the JSON lines {fmt} writes (one record per line)"
    elif known_only:
        return None
    else:
        why = "nothing in it reads as that format, nor as another format cairn knows"
    return CairnError(ErrorCode.IMPORT_WRONG_FORMAT, f"{path.name} is no {fmt} transcript: {why}",
                      path=str(path), format=fmt, detected=found or "")


def _first_record(lead: str) -> dict[str, Any] | None:
    """The first line of a head opening with ``{``, when it is a JSON object (else ``None``)."""
    try:
        obj = boundedjson.loads(lead.split("\n", 1)[0])
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _path_hint(path: pathlib.Path, name: str) -> str:
    """Tools that share a shape are told apart by where their files live: the first format (in
    detection order) whose hint covers ``name`` and names a folder of ``path``."""
    parts = set(path.parts)
    for fmt in _registry().records.values():
        hint = fmt.path_hint
        if hint is not None and (fmt.name == name or name in hint.over) and not parts.isdisjoint(hint.folders):
            return fmt.name
    return name


def _sniff_db(path: pathlib.Path) -> str:
    from . import _sqlite  # sqlite3, only for a file that opens as a database
    with _sqlite.open_ro(path) as con:
        names = _sqlite.tables(con)
        for name, kind, test in _registry().steps:
            if kind == "db" and test(names, con):
                return name
    raise CairnError(ErrorCode.IMPORT_UNKNOWN_FORMAT, f"{path.name}: a database cairn does not know", path=str(path))


def _local_variables(data: bytes) -> bytes:
    """The trailing Emacs local-variables block of ``data`` (gptel's bounds line can be long)."""
    start = data.rfind(b"<!-- Local Variables: -->")
    return data[start:] if start >= 0 else b""


def _read_tail(path: pathlib.Path, *, follow_symlinks: bool = True) -> bytes:
    """The local-variables block at the end of ``path``, or ``b""`` (never blocks on a FIFO)."""
    try:
        fd, _ = open_source(path, follow_symlinks=follow_symlinks)
    except CairnError:
        return b""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return b""
        for window in (TAIL_BYTES, MAX_TAIL_BYTES):
            offset = max(0, info.st_size - window)
            block = _local_variables(os.pread(fd, info.st_size - offset, offset))
            if block or offset == 0:
                return block
        return b""
    except OSError:
        return b""
    finally:
        os.close(fd)


def detect(path: pathlib.Path, head: bytes) -> str:
    """The format of ``path`` judged from its name and first bytes (Markdown gptel files also need
    their tail, which is read from ``path`` when it exists).

    Raises ``CairnError(IMPORT_UNKNOWN_FORMAT)`` when no format matches, ``IMPORT_PROMPTS_ONLY`` for a
    log of prompts with no replies (Gemini CLI's ``logs.json``), which no format reads.
    """
    return _sniff(path, head)


def _read(path: pathlib.Path, *, follow_symlinks: bool = True) -> bytes:
    fd, info = open_source(path, follow_symlinks=follow_symlinks)
    if info.st_size > MAX_BYTES:
        os.close(fd)
        raise _too_large(path, info.st_size)
    with os.fdopen(fd, "rb") as handle:
        try:
            data = handle.read(MAX_BYTES + 1)
        except OSError as exc:
            raise CairnError(ErrorCode.IMPORT_UNREADABLE, f"{path.name}: read failed ({exc.strerror})", path=str(path)) from None
    if len(data) > MAX_BYTES:
        raise _too_large(path, len(data))
    return data


def _too_large(path: pathlib.Path, size: int) -> CairnError:
    return CairnError(
        ErrorCode.IMPORT_TOO_LARGE, f"{path.name}: {size} bytes exceeds the {MAX_BYTES}-byte import limit",
        path=str(path), size=size, limit=MAX_BYTES,
    )


def _decode(data: bytes) -> tuple[str, tuple[CairnError, ...]]:
    """UTF-8 text, and one ``E_IMPORT_MALFORMED`` per complete line that held a broken character.

    A broken character is replaced (U+FFFD) and its line reported by number,
    never by content; the rest of the file is read. Refusing the file would
    lose every turn for one byte, and real tools write such bytes: an agent
    cuts a long tool output at a byte count ("… (truncated)"), in the middle
    of a character, and the exporter keeps the cut. A broken character in an
    unterminated last line is a write in progress and is not reported.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8"), ()
    except UnicodeDecodeError:
        pass
    issues: list[CairnError] = []
    lines = data.split(b"\n")
    complete = len(lines) if data.endswith(b"\n") else len(lines) - 1
    broken = 0
    for index in range(complete):
        try:
            lines[index].decode("utf-8")
        except UnicodeDecodeError:
            report = broken_report(broken, index + 1)
            broken += 1
            if report is None:
                break
            issues.append(report)
    return data.decode("utf-8", "replace"), tuple(issues)


@attrs.frozen
class Loaded:
    """Sessions of one file, and the lines left out of it (``E_IMPORT_MALFORMED`` errors naming a line)."""

    sessions: list[Session]
    skipped: tuple[CairnError, ...] = ()
    format: str = ""  # the format the file was read as (detected, or given)


def _is_db(path: pathlib.Path, *, follow_symlinks: bool) -> bool:
    """Whether ``path`` opens like a SQLite database (a link refused as :func:`open_source` does)."""
    try:
        fd, _ = open_source(path, follow_symlinks=follow_symlinks)
    except CairnError as exc:
        if exc.code == ErrorCode.PATH_SYMLINK:
            raise
        return False  # _sqlite or the reader below says why
    try:
        return os.pread(fd, len(SQLITE_MAGIC), 0) == SQLITE_MAGIC
    except OSError:
        return False
    finally:
        os.close(fd)


@attrs.frozen
class Opened:
    """:class:`Loaded`, where a Claude Code session is a :class:`StreamedSession` whose turns are
    read from the file while :func:`open_report`'s context is open."""

    sessions: list[Session | StreamedSession]
    skipped: tuple[CairnError, ...] = ()
    format: str = ""  # the format the file was read as (detected, or given)


def _blank(head: bytes) -> bool:
    """Whether a file whose first bytes are ``head`` holds nothing but white space (empty, most often)."""
    return len(head) < HEAD_BYTES and not head.strip()


def _head(path: pathlib.Path, *, follow_symlinks: bool) -> bytes:
    fd, _ = open_source(path, follow_symlinks=follow_symlinks)
    try:
        return os.pread(fd, HEAD_BYTES, 0)
    except OSError as exc:
        raise CairnError(ErrorCode.IMPORT_UNREADABLE, f"{path.name}: read failed ({exc.strerror})", path=str(path)) from None
    finally:
        os.close(fd)


@contextlib.contextmanager
def open_report(path: pathlib.Path, fmt: str = "auto", *, follow_symlinks: bool = True) -> Iterator[Opened]:
    """The sessions of ``path`` and the lines left out, for as long as the context is open.

    Claude Code and Codex files are read record by record with no file-size
    limit (memory follows the conversation, not the file; one line is
    bounded, see :mod:`._jsonl`); databases are queried; other formats are
    read whole, at most 64 MiB. With ``follow_symlinks=False`` a symlink is
    refused (``E_PATH_SYMLINK``): discovery never lets a store send the
    reader elsewhere. A JSONL line nesting deeper than the JSON depth bound
    is left out and reported in :attr:`Opened.skipped`, and so is a line of a
    file read whole that held a broken UTF-8 character (replaced); the rest
    of the file is imported. Raises ``CairnError`` with ``IMPORT_UNREADABLE``,
    ``IMPORT_TOO_LARGE``, ``IMPORT_UNKNOWN_FORMAT``, ``IMPORT_LOCKED``,
    ``PATH_SYMLINK``, ``IMPORT_MALFORMED`` (with ``line=N``),
    ``IMPORT_PROMPTS_ONLY`` (a log of prompts with no replies) or, for a
    format given that the file is not (its reader failed on it),
    ``IMPORT_WRONG_FORMAT`` naming what the file is (:func:`wrong_format`).
    Sessions keep their :attr:`Session.tail`; :attr:`Opened.format` is the
    format the file was read as.
    """
    path = pathlib.Path(path)
    reg = _tables(fmt)
    if fmt != "auto" and fmt not in reg.parsers and fmt not in reg.db_parsers:
        raise CairnError(ErrorCode.IMPORT_UNKNOWN_FORMAT, f"unknown transcript format {fmt[:40]!r}", format=fmt[:40])
    if os.path.islink(path):
        if not follow_symlinks:
            raise CairnError(ErrorCode.PATH_SYMLINK, f"{path.name}: a symlink, not read", path=str(path))
        path = pathlib.Path(os.path.realpath(path))  # a path the user named: a database is read where it is
    if (fmt == "auto" or fmt in reg.db_parsers) and os.path.isfile(path) and _is_db(path, follow_symlinks=follow_symlinks):
        db = pathlib.Path(os.path.realpath(path)) if follow_symlinks else path  # _sqlite walks it without links
        found = _sniff_db(db)
        if fmt not in ("auto", found):
            raise CairnError(ErrorCode.IMPORT_UNKNOWN_FORMAT, f"{path.name}: not a {fmt} database", path=str(path))
        yield Opened(list(reg.db_parsers[found](db)), (), found)
        return
    if fmt in reg.db_parsers and fmt not in reg.parsers:
        raise CairnError(ErrorCode.IMPORT_UNKNOWN_FORMAT, f"{path.name}: not a {fmt} database", path=str(path))
    given = fmt != "auto"
    head = _head(path, follow_symlinks=follow_symlinks)
    if _blank(head):  # a session just created (or cut before its first record): nothing complete yet
        yield Opened([], (), fmt if given else "")  # no format is known of it ("auto" is none)
        return
    if not given:
        fmt = _sniff(path, head, follow_symlinks=follow_symlinks)
    elif _PROMPT_LOG.match(_lead(head)):
        raise _prompts_only(path)
    stream = reg.records[fmt].stream
    src = JsonlFile(path, follow_symlinks=follow_symlinks) if fmt in reg.streamed and stream is not None else None
    try:
        try:
            if src is not None and stream is not None:
                opened = Opened(list(stream(src)), tuple(src.skipped), fmt)
            else:
                text, skipped = _decode(_read(path, follow_symlinks=follow_symlinks))
                if fmt in reg.jsonl:
                    text, deep = drop_deep_lines(text)
                    skipped += deep
                opened = Opened(list(reg.parsers[fmt](text, source_name=path.name)), skipped, fmt)
        except CairnError as exc:
            # a format given for a file that is not of it (its reader stopped): say what the file is
            if given and exc.code == ErrorCode.IMPORT_MALFORMED:
                raise wrong_format(path, fmt, follow_symlinks=follow_symlinks, known_only=True) or exc from None
            raise
        yield opened
    finally:
        if src is not None:
            src.close()


def load_report(path: pathlib.Path, fmt: str = "auto", *, follow_symlinks: bool = True) -> Loaded:
    """:func:`open_report` with every turn read into memory."""
    with open_report(path, fmt, follow_symlinks=follow_symlinks) as opened:
        return Loaded([s if isinstance(s, Session) else
                       # turns first: a stream's tail may be known only once they are read (``late_tail``)
                       Session(session_id=s.session_id, source_format=s.source_format, title=s.title,
                               turns=tuple(s.turns()), tail=s.found_tail()) for s in opened.sessions],
                      opened.skipped, opened.format)


def load(path: pathlib.Path, fmt: str = "auto", *, follow_symlinks: bool = True) -> list[Session]:
    """The sessions of :func:`load_report` (lines it left out are not reported)."""
    return load_report(path, fmt, follow_symlinks=follow_symlinks).sessions


__all__ = ["DB_PARSERS", "DETECTION_ORDER", "FORMATS", "JSONL_FORMATS", "LIVE_FORMATS", "MAX_BYTES", "PARSERS", "RECORDS", "STREAMED",
           "Format", "Loaded", "Opened", "StreamedSession", "detect", "load", "load_report", "open_report"]
