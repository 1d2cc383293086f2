"""Topic files and instruction files: parsed, rendered and appended to without reformatting.

A topic file starts with YAML front matter (``name``, ``description``,
``type`` ∈ user|feedback|project|reference) between ``---`` lines, followed
by a Markdown body; instruction files (``AGENTS.md`` …) are plain Markdown
with a ``## Working agreements`` section cairn appends to. Additions keep
every existing byte and follow the file's line endings. Pure.
"""

from __future__ import annotations

import re
import unicodedata

import attrs
import yaml
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.vocab import NoteType
from cairn.worker.memory.model.lines import BOM, decode_text, is_blank, join_lines, newline_of, split_lines

#: the longest file name :func:`topic_filename` produces, ``.md`` included
FILENAME_MAX = 60

_BULLET = re.compile(r"^[ \t]*[-*+][ \t]")
_WORKING_AGREEMENTS = re.compile(r"^##[ \t]+working agreements[ \t]*#*[ \t]*$", re.I)
_SECTION_END = re.compile(r"^#{1,2}[ \t]")
_RESERVED_STEMS = frozenset({"memory", "agents", "claude", "readme"})

#: the safe loader, libyaml's when PyYAML was built with it (the same constructor, a parser in C: a
#: thousand topics' front matter in ~0.05 s instead of ~0.3 s)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@attrs.frozen(kw_only=True)
class Topic:
    name: str
    description: str
    type: NoteType
    body: str  # everything after the closing ``---`` line, exactly
    raw: bytes  # the file's bytes
    # provenance (optional; older and hand-written topics have none): as the YAML gave them, checked where used
    sources: object = None  # {digests: [...], turns: [...], sessions: [...]}
    citations: object = None  # [{path, target?, lines?, sha256?, commit?}, ...] (worker.memory.citations)
    confirmed: str | None = None  # date of the last confirmation when written (YYYY-MM-DD)


def _front_matter_error(message: str, **detail: object) -> CairnError:
    return CairnError(ErrorCode.TOPIC_FRONT_MATTER, message, **detail)


def parse_topic(data: bytes) -> Topic:
    """Parse a topic file. A missing or invalid front matter is ``E_TOPIC_FRONT_MATTER``.

    The front matter must be a YAML mapping with string ``name`` (non-empty)
    and ``description`` and a known ``type``; other keys are allowed and
    ignored. Values are never coerced (``name: 2024`` is refused).
    """
    text = decode_text(data, "topic file")
    if text.startswith(BOM):
        text = text[1:]
    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r").rstrip(" \t") != "---":
        raise _front_matter_error("topic file does not start with a '---' front matter line")
    close = next((i for i in range(1, len(lines)) if lines[i].rstrip("\r").rstrip(" \t") == "---"), None)
    if close is None:
        raise _front_matter_error("topic front matter is not closed by a '---' line")
    yaml_text = "\n".join(line.rstrip("\r") for line in lines[1:close])
    try:
        meta = yaml.load(yaml_text, Loader=_LOADER)  # noqa: S506 -- a safe loader: libyaml's when built with it
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise _front_matter_error(
            "topic front matter is not valid YAML", line=(mark.line + 2) if mark is not None else None
        ) from None
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        # a value YAML's resolver accepts but cannot build: ``2026-02-30`` as a date, a huge exponent …
        raise _front_matter_error(f"topic front matter holds a value YAML cannot read ({type(exc).__name__})") from None
    if not isinstance(meta, dict):
        raise _front_matter_error("topic front matter is not a mapping")
    if not _plain_tree(meta):
        raise _front_matter_error("topic front matter refers to itself (a YAML alias inside its own value), "
                                  "nests too deep, holds too many values or too large a number")
    name, description, kind = meta.get("name"), meta.get("description"), meta.get("type")
    if not isinstance(name, str) or not name.strip():
        raise _front_matter_error("topic front matter needs a text 'name'", field="name")
    if not isinstance(description, str):
        raise _front_matter_error("topic front matter needs a text 'description'", field="description")
    if not isinstance(kind, str) or kind not in set(NoteType):
        raise _front_matter_error("topic 'type' must be user, feedback, project or reference", field="type")
    body = "\n".join(lines[close + 1 :])
    confirmed = meta.get("confirmed")
    return Topic(name=name, description=description, type=NoteType(kind), body=body, raw=data,
                 sources=meta.get("sources"), citations=meta.get("citations"),
                 confirmed=str(confirmed) if confirmed is not None else None)


#: how deep and how large a front matter's values may be (a hand-written one is a few levels and entries)
_MAX_DEPTH, _MAX_NODES = 32, 100_000


def _plain_tree(value: object) -> bool:
    """Whether ``value`` is a finite tree: no container inside itself (``&a [*a]``), at most
    :data:`_MAX_DEPTH` levels and :data:`_MAX_NODES` values, shared ones counted each time (aliases
    repeated into a "billion laughs" are refused, never walked), and no integer past 256 bits."""
    budget = [_MAX_NODES]

    def walk(v: object, depth: int, path: frozenset[int]) -> bool:
        budget[0] -= 1
        if budget[0] < 0 or depth > _MAX_DEPTH:
            return False
        if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > 256:
            return False  # ``0xfff…`` is not digit-limited when built, and fails when printed (4,300 digits)
        if isinstance(v, dict | list):
            if id(v) in path:
                return False
            inner = path | {id(v)}
            items = [*v.keys(), *v.values()] if isinstance(v, dict) else v
            return all(walk(i, depth + 1, inner) for i in items)
        return True

    return walk(value, 0, frozenset())


def _check_scalar(field: str, value: str) -> None:
    for ch in value:
        cat = unicodedata.category(ch)
        if (cat == "Cc" and ch != "\t") or cat in ("Zl", "Zp", "Cs"):
            raise _front_matter_error(f"topic {field} must be one line of text", field=field)


def render_topic(name: str, description: str, type: NoteType | str, body: str,
                 provenance: dict[str, object] | None = None) -> bytes:
    """Bytes of a new topic file; :func:`parse_topic` gives every argument back exactly.

    Values are written by PyYAML's safe dumper, which quotes whatever would
    otherwise be read differently (colons, quotes, leading dashes, ``yes``,
    ``null`` …). Name and description must be one line; the body follows the
    closing ``---`` line verbatim (start it with ``\\n`` for a blank line).
    ``provenance`` (``sources``, ``citations``, ``confirmed``: see
    :mod:`worker.memory.citations`) follows ``type`` in the front matter.
    """
    _check_scalar("name", name)
    _check_scalar("description", description)
    if not name.strip():
        raise _front_matter_error("topic name is empty", field="name")
    if type not in set(NoteType):
        raise _front_matter_error("unknown topic type", field="type")
    meta = yaml.safe_dump(
        {"name": name, "description": description, "type": str(NoteType(type)),
         **{k: v for k, v in (provenance or {}).items() if k in ("sources", "citations", "confirmed") and v}},
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
    nl = newline_of(data)
    lines = split_lines(data)
    out = data
    if lines and not lines[-1][1]:
        out += nl
    last = lines[-1][0] if lines else b""
    if (
        lines
        and not is_blank(last)
        and not (_BULLET.match(addition) and _BULLET.match(last.decode("utf-8", "replace")))
    ):
        out += nl
    text = addition.replace("\r\n", "\n").replace("\n", nl.decode())
    return out + text.encode("utf-8") + nl


#: what of an instruction file every agent is sure to read: Codex reads ``AGENTS.md`` up to its
#: ``project_doc_max_bytes``, 32 KiB by default, and drops the rest; the rules added go within it
RULES_WINDOW = 32 * 1024


def add_working_agreements(data: bytes | None, bullets: list[str]) -> bytes:
    """Add bullets to the ``## Working agreements`` section of an instruction file, within its first
    :data:`RULES_WINDOW` bytes.

    The section is found by its heading (case-insensitive; the first one)
    and ends at the next heading of level 1 or 2; bullets go after its last
    non-blank line. Without such a section, one is appended at the end of
    the file. Where that would put the bullets past :data:`RULES_WINDOW`
    (a long ``AGENTS.md``, which Codex would read only in part), they go
    first in the section instead (right under its heading), and when that
    is past the window too, or there is no section, in a new ``## Working
    agreements`` section under the file's title (a first ``# `` line) or
    first in the file: the section later additions find first. Every other
    byte is kept; line endings follow the file, and a missing final
    newline stays missing.
    """
    data = data or b""
    if not bullets:
        return data
    nl = newline_of(data)
    lines = split_lines(data)
    final = not lines or bool(lines[-1][1])
    new = [(b.strip("\r\n").encode("utf-8"), b"") for b in bullets]

    def within(head: list[tuple[bytes, bytes]]) -> bool:
        """Whether the lines ``head`` (the file's first lines, up to the last bullet added) fit the window."""
        return len(join_lines(head, True, nl)) <= RULES_WINDOW

    heading = next(
        (i for i, (c, _) in enumerate(lines) if _WORKING_AGREEMENTS.match(c.decode("utf-8", "replace"))), None
    )
    if heading is None:
        out = list(lines)
        if out and not is_blank(out[-1][0]):
            out.append((b"", b""))
        out.append((b"## Working agreements", b""))
        out.append((b"", b""))
        out.extend(new)
        if within(out):
            return join_lines(out, True if not lines else final, nl)
        return _agreements_near_top(lines, new, final, nl)
    end = next(
        (
            i
            for i in range(heading + 1, len(lines))
            if _SECTION_END.match(lines[i][0].decode("utf-8", "replace"))
        ),
        len(lines),
    )
    last = max((i for i in range(heading + 1, end) if not is_blank(lines[i][0])), default=heading)
    block = list(new)
    if last == heading or not _BULLET.match(lines[last][0].decode("utf-8", "replace")):
        block.insert(0, (b"", b""))
    if within(lines[: last + 1] + block):
        if last < len(lines) - 1 and not is_blank(lines[last + 1][0]):
            block.append((b"", b""))  # keep a blank line before the next heading
        out = lines[: last + 1] + block + lines[last + 1 :]
        return join_lines(out, final, nl)
    # the section's end is past the window: first in the section, under its heading (and its blank line)
    at = heading + 1 + (1 if heading + 1 < len(lines) and is_blank(lines[heading + 1][0]) else 0)
    block = ([] if at > heading + 1 else [(b"", b"")]) + list(new)
    follows = lines[at][0] if at < len(lines) else None
    if follows is not None and not is_blank(follows) and not _BULLET.match(follows.decode("utf-8", "replace")):
        block.append((b"", b""))
    if within(lines[:at] + block):
        return join_lines(lines[:at] + block + lines[at:], final, nl)
    return _agreements_near_top(lines, new, final, nl)


def _agreements_near_top(
    lines: list[tuple[bytes, bytes]], new: list[tuple[bytes, bytes]], final: bool, nl: bytes
) -> bytes:
    """The file of ``lines`` with a new ``## Working agreements`` section holding ``new`` under its title
    line (a ``# `` heading first in the file) or first, a blank line either side."""
    at = 1 if lines and lines[0][0].startswith(b"# ") else 0
    head = [*lines[:at], *([(b"", b"")] if at else [])]
    rest = lines[at:]
    while rest and is_blank(rest[0][0]):
        rest = rest[1:]
    section = [(b"## Working agreements", b""), (b"", b""), *new]
    return join_lines([*head, *section, *([(b"", b"")] if rest else []), *rest], final, nl)


def topic_filename(title: str) -> str:
    """A file name for a new topic: ``[a-z0-9-]+.md``, at most 60 characters, never a path."""
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii").lower()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_title).strip("-")
    limit = FILENAME_MAX - len(".md")
    if len(slug) > limit:
        cut = slug[:limit]
        if slug[limit] != "-" and cut.rfind("-") > limit // 2:
            cut = cut[: cut.rfind("-")]
        # a number is not cut in two: "python-3-11-and-3" (of "3.12") ends at "python-3-11-and"
        if re.search(r"\d$", cut) and re.match(r"-\d", slug[len(cut):]) and cut.rfind("-") > limit // 2:
            cut = cut[: cut.rfind("-")]
        slug = cut.strip("-")
    if not slug:
        slug = "topic"
    if slug in _RESERVED_STEMS:
        slug += "-notes"
    return slug + ".md"
