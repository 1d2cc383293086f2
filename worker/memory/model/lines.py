"""Lines with their exact endings: the byte-exact layer under every memory edit.

Memory files are edited line by line, each line kept with the ending it has
(LF, CRLF, CR, or none for a last line without a newline), so that
``join_lines(split_lines(data))`` is ``data`` again and an edit changes only
the lines it means to. Pure; imports only the protocol.
"""

from __future__ import annotations

from cairn.protocol.errors import CairnError, ErrorCode

#: a byte-order mark, kept where a file has one
BOM = "\ufeff"


def split_lines(data: bytes) -> list[tuple[bytes, bytes]]:
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


def join_lines(lines: list[tuple[bytes, bytes]], final_newline: bool, newline: bytes) -> bytes:
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


def newline_of(data: bytes) -> bytes:
    for _, ending in split_lines(data):
        if ending:
            return ending
    return b"\n"


def decode_text(content: bytes, what: str, **detail: object) -> str:
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        raise CairnError(ErrorCode.MEMORY_NOT_TEXT, f"{what} is not UTF-8 text", **detail) from None


def is_blank(content: bytes) -> bool:
    return not content.strip()


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (line breaks included) one space, trimmed."""
    return " ".join(text.split())
