"""One transcript format, described once: :class:`Format`, which every importer module declares as ``FORMAT``.

A record says how the format is read, how a file of it is recognised from
its head, and where discovery looks for it. The tables of
:mod:`cairn.worker.ingest.importers` (``FORMATS``, ``PARSERS``…) are derived
from these records, and its ``DETECTION_ORDER`` says in which order their
tests are asked.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

import attrs
from cairn.protocol.transcript import Session

from ._jsonl import Records, StreamedSession

#: What a detection step looks at; each kind is one ``sniff_<kind>`` test of :class:`Format`:
#: ``sniff_db(tables, con)`` a SQLite file's table names (and a read-only connection);
#: ``sniff_array(head)`` the head of a file holding a JSON array; ``sniff_record(record, head)`` the
#: first line of a file opening with ``{``, when it is a JSON object; ``sniff_json(head)`` the head
#: of such a file (keys of a document written over several lines, records whose first line the head
#: cut short); ``sniff_mark(head, file_name)`` a line a tool writes to name its file (or the fixed
#: name it gives it) and ``sniff_text(head, file_name)`` the shape of the text, in any file that is
#: not a database; ``sniff_tail(tail)`` the local-variables block at the end of the file. JSON heads
#: start at their first ``{`` or ``[``; the others are the decoded head as read.
Kind = Literal["db", "array", "record", "json", "mark", "text", "tail"]
KINDS: tuple[Kind, ...] = ("db", "array", "record", "json", "mark", "text", "tail")


class TextParser(Protocol):
    def __call__(self, text: str, *, source_name: str) -> list[Session]: ...


@attrs.frozen(kw_only=True)
class PathHint:
    """A file of a shape shared with the formats ``over`` is this format's when one of ``folders``
    (a directory name) is in its path: tools that write one shape are told apart by where it lives."""

    folders: tuple[str, ...]
    over: tuple[str, ...]


@attrs.frozen(kw_only=True)
class Format:
    """How one transcript format is read, recognised and found.

    Reading: ``parse(text, *, source_name)`` reads the whole text (JSON lines too, with ``jsonl``:
    a line nesting too deep is left out and reported); ``parse_path(path)`` reads a SQLite database;
    ``stream(records)`` reads a JSON-lines file record by record, with no file-size limit, and is
    used instead of ``parse`` whenever the file is opened (``parse`` stays the in-memory reading of
    the same text). A format kept both ways (Goose: a database, older JSON-lines files) has
    ``parse`` and ``parse_path``.

    Recognising: the ``sniff_*`` tests, one per :data:`Kind`, each true when the evidence it is
    given is this format's. They are asked in the order of ``DETECTION_ORDER``; a test need not
    exclude the formats asked before it. ``path_hint`` hands a file of a shape shared with other
    formats to this one by a folder in its path.

    Finding: ``stores`` says where :mod:`..sources.roots` looks for the format's files: ``"home"``
    (its stores under the home directory, :func:`..sources.roots.specs`), ``"project"`` (inside
    known projects, :func:`..sources.roots.project_specs`) or ``None`` (files a user saves anywhere:
    exports, editor buffers; never discovered).

    Following: the ``.jsonl`` session files of a ``jsonl`` format, or of one that says ``live`` (it
    also keeps whole ``.json`` documents), are read while the tool writes them (an unterminated last
    line is left out), so ``cairn watch`` and ``cairn serve`` follow them in their home stores
    (:attr:`follows`).
    """

    name: str
    parse: TextParser | None = None
    parse_path: Callable[[Path], list[Session]] | None = None
    stream: Callable[[Records], Sequence[Session | StreamedSession]] | None = None
    jsonl: bool = False
    sniff_db: Callable[[set[str], sqlite3.Connection], bool] | None = None
    sniff_array: Callable[[str], bool] | None = None
    sniff_record: Callable[[dict[str, Any], str], bool] | None = None
    sniff_json: Callable[[str], bool] | None = None
    sniff_mark: Callable[[str, str], bool] | None = None
    sniff_text: Callable[[str, str], bool] | None = None
    sniff_tail: Callable[[str], bool] | None = None
    path_hint: PathHint | None = None
    stores: Literal["home", "project"] | None = None
    live: bool = False

    def __attrs_post_init__(self) -> None:
        if self.parse is None and self.parse_path is None:
            raise ValueError(f"format {self.name!r}: no parse or parse_path")
        if self.stream is not None and (self.parse is None or not self.jsonl):
            raise ValueError(f"format {self.name!r}: stream reads JSON lines that parse also reads")
        if (self.sniff_db is None) != (self.parse_path is None):
            raise ValueError(f"format {self.name!r}: a database format has both sniff_db and parse_path")
        if not any(self.sniff(kind) for kind in KINDS):
            raise ValueError(f"format {self.name!r}: no sniff_* test")

    @property
    def follows(self) -> bool:
        """Whether the live watchers follow this format's ``.jsonl`` files in its home stores."""
        return self.stores == "home" and (self.jsonl or self.live)

    def sniff(self, kind: Kind) -> Callable[..., bool] | None:
        """The test of ``kind`` (``None`` when this format gives no evidence of that kind)."""
        test: Callable[..., bool] | None = getattr(self, f"sniff_{kind}")
        return test
