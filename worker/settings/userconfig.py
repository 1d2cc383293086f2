"""Writing a few keys into the user's own ``config.toml``, and nothing else of it (``cairn setup --use``).

The file is the user's: :func:`set_keys` changes only the top-level
assignments it is given, byte for byte in place when the key is there
(the whole statement, a multi-line array included), else as new lines
after the last one it replaced, else after the last top-level assignment
(before the first ``[table]``) under one comment line. Every other byte stays: comments, order, blank lines,
tables, line endings. The result is parsed again and must equal the old
settings with exactly those keys changed; anything else (a key written as
a dotted or quoted key, a file that is not valid TOML or not UTF-8) is
refused with ``E_CONFIG_INVALID``, the file untouched and the lines to add
by hand in the message.

The write is atomic and durable (temp, fsync, rename, fsync of the folder:
:meth:`state.fsdir.PinnedDir.replace`) under the ``flock`` of the user's
cairn folder that ``cairn trust`` takes too, and keeps the file's mode
(``0600`` for a new file). A ``config.toml`` that is a symlink (a dotfiles
manager's) is never replaced: cairn says what to add to the file it points
to. Values are TOML basic strings or arrays of them, every control
character escaped.
"""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import Mapping
from typing import Any

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.state.fsdir import PinnedDir
from cairn.state.locks import TargetLock
from cairn.worker.settings import trust

Value = str | tuple[str, ...]
MARK = "# digest provider, chosen with `cairn setup`"


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string (quotes, backslashes and control characters escaped)."""
    out = []
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_value(value: Value) -> str:
    if isinstance(value, str):
        return toml_string(value)
    return "[" + ", ".join(toml_string(v) for v in value) + "]"


def lines_for(updates: Mapping[str, Value]) -> list[str]:
    """The assignments as TOML lines (no line ends)."""
    return [f"{key} = {toml_value(value)}" for key, value in updates.items()]


def _refused(reason: str, updates: Mapping[str, Value]) -> CairnError:
    return CairnError(
        ErrorCode.CONFIG_INVALID,
        f"{reason}; nothing was written. Add these lines at its top yourself: "
        + "; ".join(lines_for(updates)),
    )


def _statements(lines: list[str]) -> tuple[list[tuple[int, int, str | None]], int]:
    """The top-level statements (first line, end, the one key they set) and the index of the first table header."""
    out: list[tuple[int, int, str | None]] = []
    i = 0
    while i < len(lines):
        text = lines[i].strip()
        if not text or text.startswith("#"):
            i += 1
            continue
        if text.startswith("["):
            return out, i
        for j in range(i + 1, len(lines) + 1):
            try:
                doc = tomllib.loads("".join(lines[i:j]))
            except (tomllib.TOMLDecodeError, RecursionError):
                continue
            keys = list(doc)
            out.append((i, j, keys[0] if len(keys) == 1 else None))
            i = j
            break
        else:
            raise ValueError("a statement never ends")
    return out, len(lines)


def _insertion_point(lines: list[str], statements: list[tuple[int, int, str | None]], header: int) -> int:
    """Where new keys go: after the last top-level statement, else above the first table and its comment lines."""
    if statements:
        return statements[-1][1]
    at = header
    if header < len(lines):
        while at > 0 and lines[at - 1].lstrip().startswith("#"):
            at -= 1
    return at


def edit(text: str, updates: Mapping[str, Value]) -> str:
    """``text`` with ``updates`` assigned at its top level and nothing else changed; ``E_CONFIG_INVALID`` when unsure."""
    try:
        before = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        raise _refused("your config.toml is not valid TOML", updates) from None
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += newline
    try:
        statements, header = _statements(lines)
    except ValueError:
        raise _refused("your config.toml could not be read statement by statement", updates) from None
    starts = {start: (end, key) for start, end, key in statements if key is not None and key in updates}
    missing = [key for key in updates if key not in {k for _, k in starts.values()}]
    at = max(end for end, _ in starts.values()) if starts else _insertion_point(lines, statements, header)
    block = [MARK + newline] * (not starts) + [
        f"{key} = {toml_value(updates[key])}{newline}" for key in missing
    ]
    if not statements and at > 0 and lines[at - 1].strip():
        block.insert(0, newline)
    if at < len(lines) and lines[at].strip() and not starts:
        block.append(newline)
    out: list[str] = []
    skip = 0
    for idx in range(len(lines) + 1):
        if idx == at and missing:
            out += block
        if idx == len(lines):
            break
        if idx < skip:
            continue
        if idx in starts:
            skip, key = starts[idx]
            out.append(f"{key} = {toml_value(updates[key])}{newline}")
            continue
        out.append(lines[idx])
    lines = out
    result = "".join(lines)
    expected: dict[str, Any] = dict(before)
    expected.update({k: list(v) if isinstance(v, tuple) else v for k, v in updates.items()})
    try:
        after = tomllib.loads(result)
    except (tomllib.TOMLDecodeError, RecursionError):
        after = None
    if after != expected:
        raise _refused(
            "your config.toml sets these keys in a way cairn does not rewrite (a table, a dotted "
            "or quoted key)",
            updates,
        )
    return result


def set_keys(updates: Mapping[str, Value]) -> tuple[str, bool]:
    """Assign ``updates`` in the user's ``config.toml``; its path and whether it changed (see the module docstring)."""
    path = os.path.join(trust.config_dir(), trust.USER_CONFIG)
    with PinnedDir.open_root(trust.config_dir(), create=True) as d, TargetLock(d):
        st = d.stat(trust.USER_CONFIG)
        if st is not None and stat.S_ISLNK(st.st_mode):
            raise _refused(
                f"{path} is a symlink (a dotfiles manager's?), which cairn does not replace", updates
            )
        raw = trust.read_control_file(d, trust.USER_CONFIG, label=f"{trust.USER_CONFIG} (user)")
        try:
            text = raw.decode("utf-8") if raw is not None else ""
        except UnicodeDecodeError:
            raise _refused(f"{path} is not UTF-8 text", updates) from None
        result = edit(text, updates)
        if result == text:
            return path, False
        d.replace(
            trust.USER_CONFIG,
            result.encode("utf-8"),
            mode=stat.S_IMODE(st.st_mode) if st is not None else 0o600,
        )
    return path, True
