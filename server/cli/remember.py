"""``cairn remember``: keep a text the user asks to remember, and show the proposal it became.

Contract: ``cairn remember TEXT`` (or ``--file PATH``, ``-`` for stdin; one
of the two) with ``--type user|feedback|project|reference`` runs the
``remember`` job in this process (:mod:`worker.memory.remember`): the text
is captured as a turn of its own ``remember`` session, a focused review runs
at once, and the proposals made for it are printed (applied already in
``auto`` mode). Bad input is a fixed error before anything is written:
no text, an empty or oversized text (``E_RECORD_TOO_LARGE``), an unknown
type, an unreadable file, a path that is no regular file (a FIFO, a device, a
folder: ``E_PATH_NOT_REGULAR``, refused without blocking). Depends only on :mod:`server.cli.support` (and the
worker's checks).

Imports inside functions: ``cairn --help`` cold start, see :mod:`server.cli`.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.vocab import NoteType
from cairn.server.cli.support import EXIT_OK, emit_json, json_flag, printable, run_result, warn_skipped

if TYPE_CHECKING:
    from cairn.protocol.results import RememberResult


def remember_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("text", nargs="*", metavar="TEXT", help="what to remember (words are joined by spaces)")
    p.add_argument("--type", metavar="|".join(t.value for t in NoteType),
                   help="the kind of note (default: classified from the text, else project)")
    p.add_argument("--file", metavar="PATH", help="read the text from a file ('-' reads stdin)")
    json_flag(p)


def _read_regular(path: str, limit: int) -> bytes:
    """At most ``limit`` bytes of the regular file ``path``; anything else (a FIFO, a device, a socket, a
    folder) is ``E_PATH_NOT_REGULAR`` without blocking: opened non-blocking (a FIFO with no writer would wait
    forever otherwise), checked with ``fstat`` on the descriptor read, never read."""
    import os
    import stat

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            what = ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                    else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                    else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
            raise CairnError(ErrorCode.PATH_NOT_REGULAR, f"remember: {path[:120]} is {what}, not a regular file; "
                             "give a file, or `--file -` to read stdin")
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        size = 0
        while size < limit:
            chunk = os.read(fd, limit - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _read_file(path: str) -> str:
    from cairn.worker.memory.remember import MAX_BYTES

    try:
        if path == "-":
            data = sys.stdin.buffer.read(MAX_BYTES + 1)
        else:
            data = _read_regular(path, MAX_BYTES + 1)
    except OSError as exc:
        raise CairnError(ErrorCode.USAGE, f"remember: cannot read {path[:120]}: {exc.strerror or 'error'}") from None
    if len(data) > MAX_BYTES:
        raise CairnError(ErrorCode.RECORD_TOO_LARGE,
                         f"remember: {path[:120]} holds more than {MAX_BYTES} bytes; a remembered text is one note")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CairnError(ErrorCode.USAGE, f"remember: {path[:120]} is not UTF-8 text") from None


def request_text(ns: argparse.Namespace) -> str:
    if ns.file is not None and ns.text:
        raise CairnError(ErrorCode.USAGE, "remember: give TEXT or --file, not both")
    if ns.file is not None:
        return _read_file(ns.file)
    text = " ".join(ns.text)
    try:  # bytes that are not UTF-8 reach argv as lone surrogates: refused as --file refuses them
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise CairnError(ErrorCode.USAGE, "remember: TEXT is not UTF-8 text") from None
    return text


def result_lines(r: RememberResult) -> list[str]:
    """What the user reads: the request, then each proposal (or why there is none yet)."""
    lines = [f"remembered {r.remember}"]
    if r.again:
        fresh = [p.id for p in r.proposals if p.id not in r.again]
        lines.append(f"{', '.join(r.again)} proposed it before and went stale (memory changed since): "
                     + (f"proposed again as {', '.join(fresh)}, against memory as it is now" if fresh
                        else "reviewed again against memory as it is now"))
    if not r.reviewed:
        lines.append("a focused review is running elsewhere: the proposal follows in `cairn proposals`")
    elif not r.proposals and (r.skippedNotes or {}).get(str(ErrorCode.INDEX_FULL)):
        lines.append("no proposal: the memory index is full (E_INDEX_FULL; see below)")
    elif not r.proposals:
        lines.append("no proposal: memory already holds it or says otherwise (a newer statement on the same subject), or the same proposal was rejected or is pending")
    for p in r.proposals:
        lines.append(f"{p.id}  {p.state:<8} {p.kind:<11} {printable(p.target)}  {printable(p.title)}")
    if any(p.state == "pending" for p in r.proposals):
        lines.append("review it with `cairn show ID`, then `cairn accept ID` or `cairn reject ID`")
    return lines


def cmd_remember(ns: argparse.Namespace) -> int:
    from cairn.protocol.results import RememberArgs, RememberResult
    from cairn.worker.memory.remember import check_request

    text, note_type, _ = check_request(request_text(ns), ns.type)
    r = run_result(ns, "remember", RememberResult, RememberArgs(text=text, type=note_type, source="cli"))
    emit_json(r) if ns.json else print("\n".join(result_lines(r)))
    warn_skipped(r.skippedNotes)
    return EXIT_OK
