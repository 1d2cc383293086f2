"""Rewriting a topic in place: one body line replaced or removed, one front matter value set.

A supersession (:mod:`worker.memory.supersede`) replaces an old statement
where it stands rather than appending a contradicting one. Every other byte
is kept, line endings included; a value is written the way
:func:`~worker.memory.model.topics.render_topic` writes it (PyYAML's safe
dumper), so :func:`~worker.memory.model.topics.parse_topic` reads it back
exactly. Pure.
"""

from __future__ import annotations

import unicodedata

import yaml
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.worker.memory.model.lines import join_lines, newline_of, split_lines


def _final(lines: list[tuple[bytes, bytes]]) -> bool:
    return not lines or bool(lines[-1][1])


def replace_line(data: bytes, old: str, new: str | None) -> bytes:
    """``data`` with its first line reading exactly ``old`` replaced by ``new`` (None: removed)."""
    lines = split_lines(data)
    target = old.encode("utf-8")
    at = next((i for i, (content, _) in enumerate(lines) if content == target), None)
    if at is None:
        raise CairnError(ErrorCode.USAGE, "the line to replace is not in the topic")
    out = list(lines)
    if new is None:
        del out[at]
    else:
        out[at] = (new.encode("utf-8"), lines[at][1])
    return join_lines(out, _final(lines), newline_of(data))


def set_front_matter(data: bytes, field: str, value: str) -> bytes:
    """``data`` with the front matter line ``field: …`` rewritten to hold ``value`` (one line).

    ``value`` must be text as :func:`~worker.memory.model.topics.render_topic` takes it: a control character
    (other than tab), a line or paragraph separator or a lone surrogate is ``E_TOPIC_FRONT_MATTER`` (YAML
    would write an ESC as ``\\e`` and give it back raw to whoever reads the topic)."""
    if any((unicodedata.category(ch) == "Cc" and ch != "\t") or unicodedata.category(ch) in ("Zl", "Zp", "Cs")
           for ch in value):
        raise CairnError(ErrorCode.TOPIC_FRONT_MATTER, f"topic {field} must be one line of text", field=field)
    lines = split_lines(data)
    prefix = f"{field}:".encode()
    for i, (content, ending) in enumerate(lines[1:], start=1):
        if content.rstrip(b" \t") == b"---":
            break
        following = lines[i + 1][0] if i + 1 < len(lines) else b""
        continued = following[:1] in (b" ", b"\t") or content[len(prefix) :].strip()[:1] in (b"", b"|", b">")
        if content.startswith(prefix) and not continued:
            dumped = yaml.safe_dump(
                {field: value}, allow_unicode=True, width=1 << 30, default_flow_style=False
            )
            if dumped.count("\n") != 1:
                raise CairnError(
                    ErrorCode.TOPIC_FRONT_MATTER, f"topic {field} must be one line of text", field=field
                )
            out = list(lines)
            out[i] = (dumped.rstrip("\n").encode("utf-8"), ending)
            return join_lines(out, _final(lines), newline_of(data))
    raise CairnError(
        ErrorCode.TOPIC_FRONT_MATTER, f"topic front matter has no one-line {field!r}", field=field
    )
