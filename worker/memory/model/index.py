"""The ``MEMORY.md`` index: its entries parsed, and entry-level edits that keep every other byte.

The index is a Markdown list of one-line entries ``- [Title](file.md) -
hook``; agents load its first :data:`INDEX_MAX_LINES` lines, and every
other line (headings, blank lines, prose) belongs to the person who wrote
it. An edit touches only the affected entry lines, and freshness is checked
per entry (:func:`apply_index_edits`), so an unrelated manual edit never
blocks a change and a change to the affected entry always does
(``E_INDEX_ENTRY_CHANGED``). Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import attrs
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.settings import Settings
from cairn.protocol.text import memory_text
from cairn.worker.memory.model.lines import BOM, decode_text, join_lines, newline_of, one_line, split_lines

INDEX_NAME = "MEMORY.md"
#: agents load this many lines of the index; it is also the bound on entries
INDEX_MAX_LINES = 200
#: agents load at most this many bytes of the index: a change that grows it past them is refused
INDEX_MAX_BYTES = 25 * 1024
#: one index edit: (topic file name, exact entry line expected now or None, new entry line or None)
IndexEditTuple = tuple[str, str | None, str | None]

_ENTRY = re.compile(
    r"^[ \t]{0,3}[-*+][ \t]+\[(?P<title>(?:\\.|[^\]\\])*)\]\((?P<file>[^()\s]+)\)(?P<rest>.*)$"
)
_HOOK_SEP = re.compile(r"^[ \t]*(?:[-\u2013\u2014:](?:[ \t]+|$))?")
_TOPIC_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\.md$")
#: the compact date of an entry's last confirmation, at the end of its line: `` (confirmed 2026-11-03)``
_CONFIRMED = re.compile(r"[ \t]+\(confirmed (?P<date>\d{4}-\d{2}-\d{2})\)[ \t]*$")
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@attrs.frozen
class IndexBudget:
    """How much of the index agents load: its first ``lines`` lines, at most ``bytes`` bytes.

    The ``indexMaxLines`` / ``indexMaxBytes`` settings (:meth:`of`); defaults 200 lines, 25 KB.
    """

    lines: int = INDEX_MAX_LINES
    bytes: int = INDEX_MAX_BYTES

    @classmethod
    def of(cls, settings: Settings) -> IndexBudget:
        return cls(settings.indexMaxLines, settings.indexMaxBytes)


#: the default budget: 200 lines, 25 KB
INDEX_BUDGET = IndexBudget()


def over_budget(data: bytes | None, budget: IndexBudget = INDEX_BUDGET) -> dict[str, int] | None:
    """How far an index already is past its budget, by the writer's own rule (:func:`apply_index_edits`):
    entries past its first ``budget.lines`` lines or ending past its first ``budget.bytes`` bytes
    (``entriesPast``), or more than ``budget.bytes`` bytes.
    None when agents load every entry. Given with the index's ``lines`` and ``bytes`` and the budget's
    ``maxLines`` and ``maxBytes``. An index written past its budget (by hand, or before the budget was
    lowered) is never cut by cairn: the entries past it are what agents do not see, so it is reported until
    the person merges or retires some. An index that is not text is None here (its readers report it)."""
    if not data:
        return None
    try:
        index = parse_index(data)
    except CairnError:
        return None
    ends, at = [], 0  # the byte offset where each line ends (its line ending included)
    for content, ending in split_lines(data):
        at += len(content) + len(ending)
        ends.append(at)
    # an entry is missed when it starts past the lines agents load, or ends past the bytes they load
    past = sum(1 for e in index.entries
               if e.line >= budget.lines or (e.line < len(ends) and ends[e.line] > budget.bytes))
    if not past and len(data) <= budget.bytes:
        return None
    return {"lines": len(index.lines), "bytes": len(data), "entriesPast": past, "maxLines": budget.lines,
            "maxBytes": budget.bytes}


@attrs.frozen(kw_only=True)
class IndexEntry:
    title: str  # link text, backslash escapes removed
    file: str  # link target exactly as written
    hook: str  # text after the link, separator (" - ", " — ", ": ") removed
    line: int  # 0-based line number in the index
    raw: str  # the exact line without its line ending
    confirmed: str | None = None  # the date of its ``(confirmed YYYY-MM-DD)`` suffix, if it has one


@attrs.frozen(kw_only=True)
class Index:
    lines: tuple[tuple[bytes, bytes], ...]  # (content, ending) per line, exactly
    entries: tuple[IndexEntry, ...]
    newline: bytes  # line ending used for inserted lines
    final_newline: bool  # whether the data ends with a line ending (empty data: True)

    def entry(self, file: str) -> IndexEntry | None:
        """The first entry linking ``file`` (later duplicates are ordinary lines)."""
        for e in self.entries:
            if e.file == file:
                return e
        return None


def _match_entry(text: str, line: int) -> IndexEntry | None:
    m = _ENTRY.match(text[1:] if line == 0 and text.startswith(BOM) else text)
    if m is None:
        return None
    rest = m.group("rest")
    dated = _CONFIRMED.search(rest)
    confirmed = dated.group("date") if dated else None
    if dated:
        rest = rest[: dated.start()]
    sep = _HOOK_SEP.match(rest)
    assert sep is not None  # every part of the pattern is optional: it matches any text
    hook = rest[sep.end() :].strip()
    title = re.sub(r"\\(.)", r"\1", m.group("title"))
    return IndexEntry(title=title, file=m.group("file"), hook=hook, line=line, raw=text,
                      confirmed=confirmed)


def parse_index(data: bytes) -> Index:
    """Parse ``MEMORY.md`` bytes; every line is kept exactly. Not UTF-8: ``E_MEMORY_NOT_TEXT``."""
    lines = split_lines(data)
    entries = []
    for i, (content, _) in enumerate(lines):
        entry = _match_entry(decode_text(content, "memory index", line=i + 1), i)
        if entry is not None:
            entries.append(entry)
    final = not lines or bool(lines[-1][1])
    return Index(lines=tuple(lines), entries=tuple(entries), newline=newline_of(data), final_newline=final)


def entry_line(index: Index, file: str) -> str | None:
    """The exact current entry line for ``file`` (without ending), or None if it has no entry."""
    entry = index.entry(file)
    return entry.raw if entry else None


def format_entry(title: str, file: str, hook: str, confirmed: str | None = None) -> str:
    """An index entry ``- [Title](file.md) - hook`` (``- [Title](file.md)`` for an empty hook).

    Title and hook are memory text (:func:`cairn.protocol.text.memory_text`:
    no control character, an ANSI escape sequence removed whole, no
    bidirectional control: they may come from a hand-written topic or entry,
    and the index is what every agent loads and a terminal prints) collapsed
    to one line; brackets and backslashes in the title are escaped so
    :func:`parse_index` gives the title back. A
    ``confirmed`` day (``YYYY-MM-DD``) ends the line as `` (confirmed
    YYYY-MM-DD)``: the date of the entry's last confirmation, fixed width so
    that refreshing it never changes the index's size.
    """
    check_topic_file(file)
    title, hook = one_line(memory_text(title)), one_line(memory_text(hook))
    if not title:
        raise CairnError(ErrorCode.INDEX_ENTRY_INVALID, "an index entry needs a title", file=file)
    escaped = title.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
    day = confirmed if confirmed is not None and _DAY.match(confirmed) else None
    return (f"- [{escaped}]({file})" + (f" - {hook}" if hook else "")
            + (f" (confirmed {day})" if day else ""))


def with_confirmed(entry: IndexEntry, day: str | None) -> str:
    """``entry``'s line confirmed on ``day``: unchanged (byte for byte) when the day is not newer than the
    date it carries, or the line has none (a line without a date, maybe written by hand, is never dated
    unasked); else the same line with only its date replaced."""
    if day is None or not _DAY.match(day) or entry.confirmed is None or day <= entry.confirmed:
        return entry.raw
    head, sep, tail = entry.raw.rpartition(f"(confirmed {entry.confirmed})")
    return f"{head}(confirmed {day}){tail}"


def check_topic_file(file: str) -> str:
    """A topic file name is a plain ``*.md`` name in the root, never a path."""
    if not _TOPIC_FILE.match(file) or file == INDEX_NAME:
        raise CairnError(ErrorCode.PATH_INVALID_NAME, "not a topic file name", name=file[:80])
    return file


def _check_after(file: str, after: str) -> None:
    entry = _match_entry(after, 1) if "\n" not in after and "\r" not in after else None
    if entry is None or entry.file != file:
        raise CairnError(
            ErrorCode.INDEX_ENTRY_INVALID, "new index line is not one entry for its file", file=file
        )


def apply_index_edits(
    data: bytes | None, edits: Iterable[IndexEditTuple], budget: IndexBudget = INDEX_BUDGET
) -> bytes:
    """Apply entry-level edits to index bytes (``None``: no index yet), changing only affected lines.

    Each edit is ``(file, before, after)``: ``before`` is the exact entry line
    expected now (``None``: no entry for ``file``), ``after`` the new line
    (``None``: remove the entry). An edit with ``before == after`` changes
    nothing and only guards freshness. If the current entry of an affected
    file differs from ``before`` the whole call fails with
    ``E_INDEX_ENTRY_CHANGED``; lines of unaffected entries and every other
    line never matter and are kept byte for byte. A new entry goes after the
    last existing entry (or at the end); an empty index becomes
    ``# Memory\\n\\n`` + the entries. Line endings follow the file; a
    missing final newline stays missing (the former last line then gains the
    file's newline). Against the ``budget`` (default 200 lines, 25 KB: what
    agents load): more entries than its lines (when the edit adds entries), a
    new entry below its last line, or an index that grows past its bytes is
    ``E_INDEX_FULL``; nothing is written.
    """
    original = data or b""
    after = _apply_index_edits(original, edits, budget.lines)
    if len(after) > budget.bytes and len(after) > len(original):
        raise CairnError(
            ErrorCode.INDEX_FULL,
            f"the index would be {len(after)} bytes, past the {budget.bytes} agents load: "
            f"merge or delete topics, or shorten entries; {MAKE_ROOM}",
        )
    return after


def _apply_index_edits(original: bytes, edits: Iterable[IndexEditTuple], max_lines: int) -> bytes:
    edits = list(edits)
    files = [e[0] for e in edits]
    if len(set(files)) != len(files):
        raise CairnError(ErrorCode.INDEX_ENTRY_INVALID, "two edits for the same index entry")
    index = parse_index(original)
    replace: dict[int, str] = {}
    remove: set[int] = set()
    insert: list[str] = []
    for file, before, after in edits:
        if after is not None:
            _check_after(file, after)
        current = index.entry(file)
        if (current.raw if current else None) != before:
            raise CairnError(
                ErrorCode.INDEX_ENTRY_CHANGED,
                f"the index entry for {file} changed since the proposal was made",
                file=file,
                line=current.line + 1 if current else None,
            )
        if before == after:
            continue
        if current is None:
            assert after is not None  # no entry now means before was None, and after differs from it
            insert.append(after)
        elif after is None:
            remove.add(current.line)
        else:
            replace[current.line] = after
    if not replace and not remove and not insert:
        return original
    new_count = len(index.entries) + len(insert) - len(remove)
    if insert and new_count > max_lines:
        raise CairnError(
            ErrorCode.INDEX_FULL, f"the index would hold {new_count} entries (at most {max_lines}); {MAKE_ROOM}"
        )
    if not index.lines:
        head = b"# Memory\n\n"
        result = head + b"".join(line.encode("utf-8") + b"\n" for line in insert)
        _check_positions(2, len(insert), max_lines)
        return result
    anchor = index.entries[-1].line if index.entries else len(index.lines) - 1
    out: list[tuple[bytes, bytes]] = []
    first_inserted = -1
    for i, (content, ending) in enumerate(index.lines):
        if i in replace:
            bom = BOM if i == 0 and content.startswith(BOM.encode()) else ""
            new = replace[i]
            content = (new if new.startswith(BOM) else bom + new).encode("utf-8")
        if i not in remove:
            out.append((content, ending))
        if i == anchor and insert:
            first_inserted = len(out)
            out.extend((line.encode("utf-8"), b"") for line in insert)
    if insert:
        _check_positions(first_inserted, len(insert), max_lines)
    return join_lines(out, index.final_newline, index.newline)


#: what to do when an accept would cross the budget (the person reading the refusal decides)
MAKE_ROOM = ("make room (`cairn memory retire TOPIC`) or raise index_max_lines / index_max_bytes, then accept "
             "again; or reject it, and the next review of the journal (`cairn process && cairn review`) files "
             "the note under an existing topic")


def _check_positions(first: int, count: int, max_lines: int) -> None:
    last = first + count - 1
    if count and last >= max_lines:
        raise CairnError(
            ErrorCode.INDEX_FULL,
            f"a new entry would be on line {last + 1}, past the {max_lines} lines agents load; {MAKE_ROOM}",
            line=last + 1,
        )
