"""CLI commands of the journal: import, seal, process, journal, jobs, retry, discard.

Contract: handlers take the parsed namespace and return an exit code
(:mod:`server.cli.support`); fixed errors propagate as ``CairnError`` to
``cli.main``. A failed digest attempt is never reported as a bare count:
each gets a line with its capture, ``E_…`` code, reason, attempt ``n/3``
and what follows (eligible again now, or exhausted). Depends on
:mod:`server.cli.support` and :mod:`server.cli.sources` (``--all``).

Imports inside functions: ``cairn --help`` cold start, see :mod:`server.cli`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import TYPE_CHECKING, Any

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.server.cli.sources import add_import_all_flags, import_all, report_import_all
from cairn.server.cli.support import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PROBLEMS,
    emit_json,
    json_flag,
    listing,
    load_config,
    printable,
    report_malformed,
    run_result,
    workspace_path,
)
from cairn.worker.ingest.importers import FORMATS

if TYPE_CHECKING:
    from cairn.protocol.results import ProcessResult

TRIGGERS = ("compaction", "clear", "session-end", "idle")


# -- import / seal ------------------------------------------------------------

def import_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH", help="transcript files (or --all)")
    p.add_argument("--format", default="auto", choices=("auto", *FORMATS))
    p.add_argument("--ended", action="store_true",
                   help="the sessions are over: capture each one's last turn even if its tool wrote no end signal "
                        "for it (otherwise that waits until the file has been quiet for seal_idle_minutes)")
    p.add_argument("--reread", action="store_true",
                   help="read the files whole, as if never imported: captured turns are skipped and a damaged "
                        "capture is rebuilt (what `cairn doctor` advises for V_SEGMENT_TORN); not with --all")
    add_import_all_flags(p)
    json_flag(p)


def cmd_import(ns: argparse.Namespace) -> int:
    if ns.all and ns.reread:
        raise CairnError(ErrorCode.USAGE, "--reread reads the files named: give them instead of --all")
    if ns.all:
        return report_import_all(ns, import_all(ns, show_bar=not ns.json and sys.stderr.isatty(), ended=ns.ended))
    if not ns.paths:
        raise CairnError(ErrorCode.USAGE, "give transcript files to import, or --all")
    from cairn.server.cli.import_report import formats_said, waiting_lines
    from cairn.server.cli.import_run import resume_hint, run_import
    from cairn.worker.journal.imports import idle_seconds, import_result

    ws = workspace_path(ns)
    paths = [os.path.abspath(p) for p in ns.paths]
    _all_openable(paths)
    config = load_config(ws)
    r = import_result(run_import(ws, paths, ns.format, config, show_bar=not ns.json and sys.stderr.isatty(),
                                 ended=ns.ended, reread=ns.reread))
    report_malformed(r.malformed)
    if ns.json:
        emit_json(r)
    else:
        print(f"imported {r.files} file(s){formats_said(r.formats or ())}, {r.sessions} session(s): "
              f"{r.captured} new turn(s), {r.skipped} already captured"
              + (f", {r.repaired} torn segment(s) rebuilt" if r.repaired else ""))
        for line in waiting_lines(turns=r.captured + r.skipped, pending=r.pending or 0, empty=r.empty or 0,
                                  idle_minutes=idle_seconds(config) / 60, ended_flag="--ended"):
            print(line)
    if r.interrupted:
        sys.stderr.write(resume_hint(paths, r.captured) + "\n")
        return EXIT_INTERRUPTED
    return EXIT_OK


def _all_openable(paths: list[str]) -> None:
    """Refuse the import before anything is captured when one of the files named cannot be opened (missing,
    unreadable, a folder, a FIFO): its code as an import of it alone gives. Else the files before it were
    captured and those after it not, with no summary, depending on the order they were named in."""
    if len(paths) < 2:
        return
    from pathlib import Path

    from cairn.worker.ingest.importers._common import open_source

    for p in paths:
        fd, _ = open_source(Path(p))
        os.close(fd)


def seal_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("--session", help="seal one session (default: every open session)")
    p.add_argument("--trigger", default="session-end", choices=TRIGGERS)
    json_flag(p)


def cmd_seal(ns: argparse.Namespace) -> int:
    from cairn.protocol.import_results import SealArgs, SealResult

    r = run_result(ns, "seal", SealResult, SealArgs(session_id=ns.session or None, trigger=ns.trigger))
    if ns.json:
        emit_json(r)
    else:
        print(f"sealed {len(r.sealed)} capture(s)")
    return EXIT_OK


# -- process --------------------------------------------------------------------

class _Progress:
    """A one-line progress bar on a terminal; silent otherwise."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()

    def __call__(self, i: int, n: int, cid: str) -> None:
        if not self.tty or n == 0:
            return
        width = 30
        fill = int(width * i / n)
        sys.stderr.write(f"\r[{'#' * fill}{'.' * (width - fill)}] {i}/{n} {cid[:24]:<24}")
        if i >= n:
            sys.stderr.write("\n")
        sys.stderr.flush()


def process_workspace(ws: str) -> ProcessResult:
    """One digest pass in this process: the counts of :func:`worker.journal.digest.process`."""
    from cairn.worker.journal.digest import process
    from cairn.worker.journal.store import Journal
    from cairn.worker.providers.usage import bound
    from cairn.worker.settings.config import from_request

    settings = from_request(load_config(ws))
    with Journal(ws) as j, bound(ws):  # its provider requests are accounted like a worker's
        counts, _ = process(j, progress=_Progress(), settings=settings)
    return counts


def process_failed(counts: ProcessResult) -> bool:
    return bool(counts.failed or counts.exhausted)


def summary(c: ProcessResult) -> str:
    s = (f"published {c.published}, all-none {c.all_none}, recovered {c.recovered}, "
         f"failed {c.failed}, busy {c.busy}, remaining {c.remaining}")
    if c.exhausted:
        s += f"; exhausted: {', '.join(c.exhausted)} (use `cairn retry ID` or `cairn discard ID`)"
    return s


def failure_lines(c: ProcessResult) -> list[str]:
    """One line per failed attempt: code and reason, attempt n/N, and when the next one may run."""
    from cairn.worker.redaction.redact import redact_text  # cold start: its rules compile only for a failure

    out = []
    for f in c.failures:
        if f.kept:  # a model digest that kept new windows: progress, no attempt used
            out.append(f"capture {f.capture}: {f.code}: {printable(redact_text(f.message))}; {f.kept} more "
                       f"window(s) answered and kept, so no attempt was used ({f.attempt}/{f.of} so far); "
                       "`cairn process` sends the rest (the language server on its next pass)")
            continue
        head = f"capture {f.capture}: {f.code}: {printable(redact_text(f.message))}; attempt {f.attempt}/{f.of} failed"
        if f.exhausted:
            out.append(f"{head}, the capture is exhausted: `cairn retry {f.capture}` gives it "
                       f"{f.of} more attempts, `cairn discard {f.capture}` accepts the omission")
        else:
            out.append(f"{head}; attempt {f.attempt + 1}/{f.of} is eligible now: `cairn process` "
                       "runs it (the language server retries on its next pass)")
    return out


def print_process(counts: ProcessResult, *, prefix: str = "") -> None:
    print(prefix + summary(counts))
    for line in failure_lines(counts):
        print(line)


def cmd_process(ns: argparse.Namespace) -> int:
    counts = process_workspace(workspace_path(ns))
    if ns.json:
        emit_json(counts)
    else:
        print_process(counts)
    return EXIT_PROBLEMS if process_failed(counts) else EXIT_OK


# -- views and decisions ------------------------------------------------------

def journal_setup(p: argparse.ArgumentParser) -> None:
    json_flag(p)
    p.add_argument("--fresh", action="store_true", help="reread every entry (ignore the attribute cache)")


def print_journal(digests: list[Any]) -> None:
    """One header per digest, dated when its session was held (local time; the import time when the
    session has no times), then its notes."""
    if not digests:
        print("(no digests yet)")
    for d in digests:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(d.session_time))
        print(f"## {when}  {printable(d.title or d.session_id)}  [{d.trigger}]  {d.id}")
        for n in d.notes:
            print(f"- ({n.type}) {printable(n.title)}  <- {', '.join(printable(t[:12]) for t in n.turn_ids)}")
        print()


def cmd_journal(ns: argparse.Namespace) -> int:
    from cairn.worker.journal.views import digest_json, public_digests

    digests, bad = public_digests(workspace_path(ns), fresh=ns.fresh)
    for b in bad:
        sys.stderr.write(f"cairn: invalid public entry {printable(b)}\n")
    if ns.json:
        emit_json([digest_json(d) for d in digests])
    else:
        print_journal(digests[::-1])  # newest session first, as the editors list it (--json: oldest first)
    return EXIT_PROBLEMS if bad else EXIT_OK


def cmd_jobs(ns: argparse.Namespace) -> int:
    from cairn.worker.journal.views import capture_rows

    rows = capture_rows(workspace_path(ns))
    if ns.json or not rows:
        return listing(ns, rows, "(no captures)", str)
    # one table: every column starts at the same place whatever the capture ids' lengths
    width = max(len("CAPTURE"), *(len(r["capture"]) for r in rows))
    print(f"{'CAPTURE':<{width}}  {'STATE':<13} {'TURNS':>5}  ATTEMPTS")
    for r in rows:
        print(f"{r['capture']:<{width}}  {r['state']:<13} {r['turns']:>5}  {r['attempts']}")
    return EXIT_OK


def capture_id_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", metavar="ID", help="capture id (or an unambiguous prefix)")
    json_flag(p)


def _capture_decision(ns: argparse.Namespace, job: str) -> int:
    from cairn.protocol.results import CaptureArgs, CaptureDecision

    r = run_result(ns, job, CaptureDecision, CaptureArgs(capture=ns.id))
    emit_json(r) if ns.json else print(f"{r.capture}: {r.state}")
    return EXIT_OK


def cmd_retry(ns: argparse.Namespace) -> int:
    return _capture_decision(ns, "retry")


def cmd_discard(ns: argparse.Namespace) -> int:
    return _capture_decision(ns, "discard")
