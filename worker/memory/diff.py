"""Unified diffs of proposal changes, in the form ``git diff`` and ``patch`` read.

``--- a/PATH`` / ``+++ b/PATH`` headers (``/dev/null`` for a created or a
deleted file), three lines of context, and git's ``\\ No newline at end of
file`` marker after a last line that has no ending. Lines are split on
``\\n`` only, so a CRLF file shows its ``\\r`` as part of each line, exactly
as it will be written. Bytes that are not UTF-8 are shown replaced; the diff
is for people, the bytes themselves are compared elsewhere.
"""

from __future__ import annotations

import difflib

NO_NEWLINE = "\\ No newline at end of file\n"


def _lines(data: bytes | None) -> list[str]:
    """Lines with their ``\n``; a last line without one stays without."""
    if not data:
        return []
    parts = data.decode("utf-8", "replace").split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def unified_diff(path: str, before: bytes | None, after: bytes | None) -> str:
    """The change from ``before`` to ``after`` of ``path`` (``None``: the file does not exist).

    Identical content gives ``""``. A create diffs from ``/dev/null`` and a
    delete to ``/dev/null``.
    """
    if before == after:
        return ""
    old = _lines(before)
    new = _lines(after)
    out: list[str] = []
    for line in difflib.unified_diff(
        old,
        new,
        fromfile="/dev/null" if before is None else f"a/{path}",
        tofile="/dev/null" if after is None else f"b/{path}",
        n=3,
    ):
        out.append(line)
        if not line.endswith("\n"):
            out.append("\n" + NO_NEWLINE)
    return "".join(out)
