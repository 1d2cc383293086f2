"""The memory model: a root's ``MEMORY.md`` index and its topic files, byte-exact.

A memory root is a directory holding ``MEMORY.md`` and topic files
``*.md``. The index is a Markdown list of one-line entries
``- [Title](file.md) - hook``; agents load its first 200 lines, and every
other line (headings, blank lines, prose) belongs to the person who wrote
it. A topic file starts with YAML front matter (``name``, ``description``,
``type`` ∈ user|feedback|project|reference) between ``---`` lines, followed
by a Markdown body. Instruction files (``AGENTS.md`` …) are plain Markdown.

Contract: nothing here reformats what it does not change. Edits work on
lines with their exact endings (LF, CRLF, or a missing final newline is
kept); an index edit touches only the affected entry lines, and freshness
is checked per entry, so an unrelated manual edit never blocks a change and
a change to the affected entry always does (``E_INDEX_ENTRY_CHANGED``).
Everything is pure except :func:`read_root`, a read-only observation that
never follows a symlink.
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from collections.abc import Iterable, Mapping
from pathlib import Path

import attrs
import yaml
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.vocab import NoteType
from cairn.state.fsdir import PinnedDir

INDEX_NAME = "MEMORY.md"
#: agents load this many lines of the index; it is also the bound on entries
INDEX_MAX_LINES = 200
#: a topic (or index) file larger than this is refused by :func:`read_root`
FILE_MAX_BYTES = 512 * 1024
#: the longest file name :func:`topic_filename` produces, ``.md`` included
FILENAME_MAX = 60
#: one index edit: (topic file name, exact entry line expected now or None, new entry line or None)
IndexEditTuple = tuple[str, str | None, str | None]

_ENTRY = re.compile(
    r"^[ \t]{0,3}[-*+][ \t]+\[(?P<title>(?:\\.|[^\]\\])*)\]\((?P<file>[^()\s]+)\)(?P<rest>.*)$"
)
_HOOK_SEP = re.compile(r"^[ \t]*(?:[-\u2013\u2014:](?:[ \t]+|$))?")
_TOPIC_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\.md$")
_BULLET = re.compile(r"^[ \t]*[-*+][ \t]")
_WORKING_AGREEMENTS = re.compile(r"^##[ \t]+working agreements[ \t]*#*[ \t]*$", re.I)
_SECTION_END = re.compile(r"^#{1,2}[ \t]")
_RESERVED_STEMS = frozenset({"memory", "agents", "claude", "readme"})
_BOM = "\ufeff"


# -- lines --------------------------------------------------------------------


def _split_lines(data: bytes) -> list[tuple[bytes, bytes]]:
    """Split into (content, ending) pairs; ``b"".join(c + e)`` gives ``data`` back exactly."""
    out: list[tuple[bytes, bytes]] = []
    for line in data.splitlines(keepends=True):
        if line.endswith(b"\r\n"):
            out.append((line[:-2], b"\r\n"))
        elif line.endswith((b"\n", b"\r")):
            out.append((line[:-1], line[-1:]))
        else:
            out.append((line, b""))
    return out


def _join(lines: list[tuple[bytes, bytes]], final_newline: bool, newline: bytes) -> bytes:
    """Join pairs, giving every line but the last an ending and the last one the original's state."""
    parts: list[bytes] = []
    for i, (content, ending) in enumerate(lines):
        last = i == len(lines) - 1
        if last and not final_newline:
            ending = b""
        elif not ending:
            ending = newline
        parts.append(content + ending)
    return b"".join(parts)


def _newline_of(data: bytes) -> bytes:
    for _, ending in _split_lines(data):
        if ending:
            return ending
    return b"\n"


def _decode(content: bytes, what: str, **detail: object) -> str:
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        raise CairnError(ErrorCode.MEMORY_NOT_TEXT, f"{what} is not UTF-8 text", **detail) from None


def _is_blank(content: bytes) -> bool:
    return not content.strip()


# -- index ----------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class IndexEntry:
    title: str  # link text, backslash escapes removed
    file: str  # link target exactly as written
    hook: str  # text after the link, separator (" - ", " — ", ": ") removed
    line: int  # 0-based line number in the index
    raw: str  # the exact line without its line ending


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
    m = _ENTRY.match(text[1:] if line == 0 and text.startswith(_BOM) else text)
    if m is None:
        return None
    rest = m.group("rest")
    sep = _HOOK_SEP.match(rest)
    assert sep is not None  # every part of the pattern is optional: it matches any text
    hook = rest[sep.end() :].strip()
    title = re.sub(r"\\(.)", r"\1", m.group("title"))
    return IndexEntry(title=title, file=m.group("file"), hook=hook, line=line, raw=text)


def parse_index(data: bytes) -> Index:
    """Parse ``MEMORY.md`` bytes; every line is kept exactly. Not UTF-8: ``E_MEMORY_NOT_TEXT``."""
    lines = _split_lines(data)
    entries = []
    for i, (content, _) in enumerate(lines):
        entry = _match_entry(_decode(content, "memory index", line=i + 1), i)
        if entry is not None:
            entries.append(entry)
    final = not lines or bool(lines[-1][1])
    return Index(lines=tuple(lines), entries=tuple(entries), newline=_newline_of(data), final_newline=final)


def entry_line(index: Index, file: str) -> str | None:
    """The exact current entry line for ``file`` (without ending), or None if it has no entry."""
    entry = index.entry(file)
    return entry.raw if entry else None


def one_line(text: str) -> str:
    return " ".join(text.split())


def format_entry(title: str, file: str, hook: str) -> str:
    """An index entry ``- [Title](file.md) - hook`` (``- [Title](file.md)`` for an empty hook).

    Title and hook are collapsed to one line; brackets and backslashes in the
    title are escaped so :func:`parse_index` gives the title back.
    """
    check_topic_file(file)
    title, hook = one_line(title), one_line(hook)
    if not title:
        raise CairnError(ErrorCode.INDEX_ENTRY_INVALID, "an index entry needs a title", file=file)
    escaped = title.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
    return f"- [{escaped}]({file})" + (f" - {hook}" if hook else "")


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


def apply_index_edits(data: bytes | None, edits: Iterable[IndexEditTuple]) -> bytes:
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
    file's newline). More than 200 entries (when the edit adds entries), or a
    new entry below line 200 where agents stop reading: ``E_INDEX_FULL``.
    """
    edits = list(edits)
    files = [e[0] for e in edits]
    if len(set(files)) != len(files):
        raise CairnError(ErrorCode.INDEX_ENTRY_INVALID, "two edits for the same index entry")
    original = data or b""
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
    if insert and new_count > INDEX_MAX_LINES:
        raise CairnError(
            ErrorCode.INDEX_FULL, f"the index would hold {new_count} entries (at most {INDEX_MAX_LINES})"
        )
    if not index.lines:
        head = b"# Memory\n\n"
        result = head + b"".join(line.encode("utf-8") + b"\n" for line in insert)
        _check_positions(2, len(insert))
        return result
    anchor = index.entries[-1].line if index.entries else len(index.lines) - 1
    out: list[tuple[bytes, bytes]] = []
    first_inserted = -1
    for i, (content, ending) in enumerate(index.lines):
        if i in replace:
            bom = _BOM if i == 0 and content.startswith(_BOM.encode()) else ""
            new = replace[i]
            content = (new if new.startswith(_BOM) else bom + new).encode("utf-8")
        if i not in remove:
            out.append((content, ending))
        if i == anchor and insert:
            first_inserted = len(out)
            out.extend((line.encode("utf-8"), b"") for line in insert)
    if insert:
        _check_positions(first_inserted, len(insert))
    return _join(out, index.final_newline, index.newline)


def _check_positions(first: int, count: int) -> None:
    last = first + count - 1
    if count and last >= INDEX_MAX_LINES:
        raise CairnError(
            ErrorCode.INDEX_FULL,
            f"a new entry would be on line {last + 1}, past the {INDEX_MAX_LINES} lines agents load",
            line=last + 1,
        )


# -- topics ---------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Topic:
    name: str
    description: str
    type: NoteType
    body: str  # everything after the closing ``---`` line, exactly
    raw: bytes  # the file's bytes


def _front_matter_error(message: str, **detail: object) -> CairnError:
    return CairnError(ErrorCode.TOPIC_FRONT_MATTER, message, **detail)


def parse_topic(data: bytes) -> Topic:
    """Parse a topic file. A missing or invalid front matter is ``E_TOPIC_FRONT_MATTER``.

    The front matter must be a YAML mapping with string ``name`` (non-empty)
    and ``description`` and a known ``type``; other keys are allowed and
    ignored. Values are never coerced (``name: 2024`` is refused).
    """
    text = _decode(data, "topic file")
    if text.startswith(_BOM):
        text = text[1:]
    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r").rstrip(" \t") != "---":
        raise _front_matter_error("topic file does not start with a '---' front matter line")
    close = next((i for i in range(1, len(lines)) if lines[i].rstrip("\r").rstrip(" \t") == "---"), None)
    if close is None:
        raise _front_matter_error("topic front matter is not closed by a '---' line")
    yaml_text = "\n".join(line.rstrip("\r") for line in lines[1:close])
    try:
        meta = yaml.safe_load(yaml_text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise _front_matter_error(
            "topic front matter is not valid YAML", line=(mark.line + 2) if mark is not None else None
        ) from None
    if not isinstance(meta, dict):
        raise _front_matter_error("topic front matter is not a mapping")
    name, description, kind = meta.get("name"), meta.get("description"), meta.get("type")
    if not isinstance(name, str) or not name.strip():
        raise _front_matter_error("topic front matter needs a text 'name'", field="name")
    if not isinstance(description, str):
        raise _front_matter_error("topic front matter needs a text 'description'", field="description")
    if not isinstance(kind, str) or kind not in set(NoteType):
        raise _front_matter_error("topic 'type' must be user, feedback, project or reference", field="type")
    body = "\n".join(lines[close + 1 :])
    return Topic(name=name, description=description, type=NoteType(kind), body=body, raw=data)


def _check_scalar(field: str, value: str) -> None:
    for ch in value:
        cat = unicodedata.category(ch)
        if (cat == "Cc" and ch != "\t") or cat in ("Zl", "Zp", "Cs"):
            raise _front_matter_error(f"topic {field} must be one line of text", field=field)


def render_topic(name: str, description: str, type: NoteType | str, body: str) -> bytes:
    """Bytes of a new topic file; :func:`parse_topic` gives every argument back exactly.

    Values are written by PyYAML's safe dumper, which quotes whatever would
    otherwise be read differently (colons, quotes, leading dashes, ``yes``,
    ``null`` …). Name and description must be one line; the body follows the
    closing ``---`` line verbatim (start it with ``\\n`` for a blank line).
    """
    _check_scalar("name", name)
    _check_scalar("description", description)
    if not name.strip():
        raise _front_matter_error("topic name is empty", field="name")
    if type not in set(NoteType):
        raise _front_matter_error("unknown topic type", field="type")
    meta = yaml.safe_dump(
        {"name": name, "description": description, "type": str(NoteType(type))},
        sort_keys=False,
        allow_unicode=True,
        width=1 << 30,
        default_flow_style=False,
    )
    return ("---\n" + meta + "---\n" + body).encode("utf-8")


def append_to_topic(data: bytes, addition: str) -> bytes:
    """Append a bullet or paragraph to a Markdown file, keeping every existing byte.

    The result starts with ``data`` exactly (plus the file's newline if the
    last line had none). A bullet directly follows a bullet; anything else is
    separated by one blank line unless the file already ends with one. The
    addition uses the file's line endings and ends with one.
    """
    addition = addition.strip("\r\n")
    if not addition.strip():
        raise CairnError(ErrorCode.USAGE, "nothing to append")
    nl = _newline_of(data)
    lines = _split_lines(data)
    out = data
    if lines and not lines[-1][1]:
        out += nl
    last = lines[-1][0] if lines else b""
    if (
        lines
        and not _is_blank(last)
        and not (_BULLET.match(addition) and _BULLET.match(last.decode("utf-8", "replace")))
    ):
        out += nl
    text = addition.replace("\r\n", "\n").replace("\n", nl.decode())
    return out + text.encode("utf-8") + nl


def add_working_agreements(data: bytes | None, bullets: list[str]) -> bytes:
    """Add bullets at the end of the ``## Working agreements`` section of an instruction file.

    The section is found by its heading (case-insensitive) and ends at the
    next heading of level 1 or 2; bullets go after its last non-blank line.
    Without such a section, one is appended at the end of the file. Every
    other byte is kept; line endings follow the file, and a missing final
    newline stays missing.
    """
    data = data or b""
    if not bullets:
        return data
    nl = _newline_of(data)
    lines = _split_lines(data)
    final = not lines or bool(lines[-1][1])
    new = [(b.strip("\r\n").encode("utf-8"), b"") for b in bullets]
    heading = next(
        (i for i, (c, _) in enumerate(lines) if _WORKING_AGREEMENTS.match(c.decode("utf-8", "replace"))), None
    )
    if heading is None:
        out = list(lines)
        if out and not _is_blank(out[-1][0]):
            out.append((b"", b""))
        out.append((b"## Working agreements", b""))
        out.append((b"", b""))
        out.extend(new)
        return _join(out, True if not lines else final, nl)
    end = next(
        (
            i
            for i in range(heading + 1, len(lines))
            if _SECTION_END.match(lines[i][0].decode("utf-8", "replace"))
        ),
        len(lines),
    )
    last = max((i for i in range(heading + 1, end) if not _is_blank(lines[i][0])), default=heading)
    block = list(new)
    if last == heading or not _BULLET.match(lines[last][0].decode("utf-8", "replace")):
        block.insert(0, (b"", b""))
    if last < len(lines) - 1 and not _is_blank(lines[last + 1][0]):
        block.append((b"", b""))  # keep a blank line before the next heading
    out = lines[: last + 1] + block + lines[last + 1 :]
    return _join(out, final, nl)


def topic_filename(title: str) -> str:
    """A file name for a new topic: ``[a-z0-9-]+.md``, at most 60 characters, never a path."""
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii").lower()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_title).strip("-")
    limit = FILENAME_MAX - len(".md")
    if len(slug) > limit:
        cut = slug[:limit]
        if slug[limit] != "-" and cut.rfind("-") > limit // 2:
            cut = cut[: cut.rfind("-")]
        slug = cut.strip("-")
    if not slug:
        slug = "topic"
    if slug in _RESERVED_STEMS:
        slug += "-notes"
    return slug + ".md"


# -- reading a root ---------------------------------------------------------------


@attrs.frozen(kw_only=True)
class TopicFile:
    file: str
    data: bytes
    topic: Topic | None  # None: the front matter is missing or invalid
    error: ErrorCode | None  # why ``topic`` is None

    # conveniences for listings; an unparsed topic shows its file name, no type, no description
    @property
    def name(self) -> str:
        return self.topic.name if self.topic else self.file

    @property
    def type(self) -> NoteType | None:
        return self.topic.type if self.topic else None

    @property
    def description(self) -> str:
        return self.topic.description if self.topic else ""


@attrs.frozen(kw_only=True)
class MemorySnapshot:
    """A read-only observation of one memory root (the review's scope)."""

    root: str
    exists: bool
    index: bytes | None  # MEMORY.md bytes; None when absent or refused
    topics: Mapping[str, TopicFile]  # by file name, sorted
    refused: Mapping[str, ErrorCode]  # *.md names not read: symlinks, non-regular, too large, bad names

    def parsed_index(self) -> Index:
        """The parsed index (an absent index is empty); a refused index raises its code."""
        if INDEX_NAME in self.refused:
            raise CairnError(self.refused[INDEX_NAME], "the memory index cannot be read", root=self.root)
        return parse_index(self.index or b"")


def empty_snapshot(root: str = "") -> MemorySnapshot:
    """The snapshot of a root that does not exist (yet)."""
    return MemorySnapshot(root=root, exists=False, index=None, topics={}, refused={})


def _read_entry(root: PinnedDir, entry: os.DirEntry[str]) -> bytes | ErrorCode:
    try:
        if entry.is_symlink():
            return ErrorCode.PATH_SYMLINK
        st = entry.stat(follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):
            return ErrorCode.IO_FAILED
        data = root.read(entry.name, limit=FILE_MAX_BYTES)
    except CairnError as exc:
        return exc.code
    except OSError:
        return ErrorCode.IO_FAILED
    return ErrorCode.NOT_FOUND if data is None else data


def read_root(root_dir: Path) -> MemorySnapshot:
    """Observe a memory root: the index bytes and every topic file, read without following symlinks.

    The root directory itself is opened without following a symlink as its
    last component (``E_PATH_SYMLINK``; a non-directory is
    ``E_PATH_NOT_DIRECTORY``); a missing root is an empty snapshot with
    ``exists=False``. Only regular ``*.md`` files directly in the root are
    read; dot-files, other files and directories (nested ``.cairn/``) are
    ignored. A symlinked, non-regular, oversized or oddly named ``*.md`` is
    listed in ``refused`` with its code, never read.
    """
    root_dir = Path(root_dir)
    try:
        parent = PinnedDir.open_root(root_dir.parent)
    except CairnError as exc:
        if exc.code == ErrorCode.NOT_FOUND:
            return empty_snapshot(str(root_dir))
        raise
    with parent:
        try:
            root = parent.child(root_dir.name)
        except CairnError as exc:
            if exc.code == ErrorCode.NOT_FOUND:
                return empty_snapshot(str(root_dir))
            raise
    with root:
        index: bytes | None = None
        topics: dict[str, TopicFile] = {}
        refused: dict[str, ErrorCode] = {}
        with os.scandir(root.fd) as it:
            entries = sorted(
                (e for e in it if e.name.endswith(".md") and not e.name.startswith(".")), key=lambda e: e.name
            )
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                continue
            got = _read_entry(root, entry)
            if isinstance(got, ErrorCode):
                if got != ErrorCode.NOT_FOUND:  # vanished between listing and reading
                    refused[entry.name] = got
                continue
            if entry.name == INDEX_NAME:
                index = got
                continue
            try:
                topics[entry.name] = TopicFile(file=entry.name, data=got, topic=parse_topic(got), error=None)
            except CairnError as exc:
                topics[entry.name] = TopicFile(file=entry.name, data=got, topic=None, error=exc.code)
    return MemorySnapshot(root=str(root_dir), exists=True, index=index, topics=topics, refused=refused)
