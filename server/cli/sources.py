"""CLI commands of the session stores: ``cairn discover`` and ``import --all`` / ``run --all``.

Contract: discovery is read-only and runs in this process. ``--all`` imports,
source by source, the sessions discovery found (by default those of this
workspace), with a progress bar on a terminal; a store, source or session
that fails or is refused (a link, a FIFO) is reported with its fixed code on
stderr, one line each, and the others go on (the caller exits 1 when any
failed). Depends only on :mod:`server.cli.support`.

Imports inside functions: ``cairn --help`` cold start, see :mod:`server.cli`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import sys
import time
from typing import TYPE_CHECKING, Any

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.server.cli.support import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PROBLEMS,
    emit_json,
    load_config,
    printable,
    report_malformed,
    workspace_path,
)

if TYPE_CHECKING:
    from cairn.protocol.import_results import SourcesImport


def _discover(ns: argparse.Namespace) -> list[Any]:
    from cairn.worker.ingest.sources import discover

    return discover(os.path.expanduser("~"), os.environ, workspace=workspace_path(ns))


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def discover_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output (every session listed)")
    p.add_argument("--sessions", action="store_true", help="list every session, not only the stores")


def cmd_discover(ns: argparse.Namespace) -> int:
    from cairn.worker.ingest.sources import workspace_counts
    from cairn.worker.jobs.importing import mine

    stores = _discover(ns)
    ws = workspace_path(ns)
    if ns.json:
        emit_json({"workspace": ws, "stores": [st.to_json() for st in stores]})
        return EXIT_OK
    if not stores:
        print("no session stores found")
        return EXIT_OK
    print(f"{'FORMAT':<12} {'SESSIONS':>8} {'HERE':>5} {'SIZE':>9}  {'FROM':<10}  {'TO':<10}  PATH")
    real = os.path.realpath(ws)
    for st in stores:
        data = st.to_json(with_sessions=False)
        here = sum(1 for s in st.sessions if mine(s, ws, real))
        print(f"{st.format:<12} {len(st.sessions):>8} {here:>5} {_size(st.size):>9}  {data['first'] or '-':<10}  "
              f"{data['last'] or '-':<10}  {printable(st.path)}")
        if st.error:
            print(f"    {st.error}: {printable(st.message)}")
        for s in st.refused:
            print(f"    {s.error}: {printable(s.message)}{' (this workspace)' if mine(s, ws, real) else ''}")
        if ns.sessions:
            for s in sorted(st.sessions, key=lambda s: -s.mtime):
                when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(s.mtime))
                print(f"    {when}  {printable(s.workspace or '(no workspace)')}  "
                      f"{printable(s.key or os.path.basename(s.path))}")
        else:
            for where, count in list(workspace_counts(st.sessions).items())[:5]:
                print(f"    {count:>6} session(s) in workspace {printable(where or '(none recorded)')}")
    print("HERE counts the sessions of this workspace; `cairn import --all` imports them.")
    return EXIT_OK


def add_import_all_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--all", action="store_true",
                   help="import the sessions found by `cairn discover` (this workspace's, unless --every-workspace)")
    p.add_argument("--since", metavar="DATE", help="with --all: only sessions active on or after DATE (YYYY-MM-DD)")
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("--workspace-only", action="store_true",
                       help="with --all: only sessions run in this workspace or below it (the default)")
    scope.add_argument("--every-workspace", action="store_true", help="with --all: sessions of every workspace")


def _since(value: str | None) -> float | None:
    if not value:
        return None
    try:
        day = dt.datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=dt.UTC)
    except ValueError:
        raise CairnError(ErrorCode.USAGE, f"--since wants a date as YYYY-MM-DD, not {value[:40]!r}") from None
    return day.timestamp()


def import_all(ns: argparse.Namespace, *, show_bar: bool, ended: bool = False) -> SourcesImport:
    """Discover, select and import in the foreground (the bar on a terminal, Ctrl-C at a batch
    boundary, a helper process for many sources); ``failed`` lists the stores and sources that failed.
    A session file quiet for the idle period is sealed (its last turn captured even with no end signal);
    with ``ended``, every one is."""
    from cairn.protocol.digest import policy_from_config
    from cairn.server.cli.import_run import PROCESSES, foreground
    from cairn.worker.ingest import storefile
    from cairn.worker.jobs.importing import import_all as run
    from cairn.worker.journal.imports import idle_seconds
    from cairn.worker.journal.store import Journal

    if ns.paths:
        raise CairnError(ErrorCode.USAGE, "--all takes no PATH arguments")
    ws = workspace_path(ns)
    since = _since(ns.since)
    with storefile.walks():  # discovery's head reads and the import's opens share the folders' walks
        stores = _discover(ns)
        config = load_config(ws)
        with foreground(show_bar) as (bar, stop), Journal(ws) as j:
            sealed_before = math.inf if ended else j.source_now() - idle_seconds(config)
            return run(j, stores, ws, policy_from_config(config), everywhere=ns.every_workspace, since=since,
                       progress=bar, stop=stop, processes=PROCESSES, sealed_before=sealed_before)


def all_args(ns: argparse.Namespace) -> list[str]:
    """The ``--all`` flags given, to repeat in a resume hint."""
    return ["--all", *(["--every-workspace"] if ns.every_workspace else []),
            *(["--since", ns.since] if ns.since else []), "-w", workspace_path(ns)]


def report_failures(r: SourcesImport) -> None:
    """One stderr line per store or source that failed (code, path, message without transcript text),
    and one per line an import left out."""
    for f in r.failed:  # a message that starts with the file's name says it once, after the path
        name = f.path.replace("\\", "/").rsplit("/", 1)[-1]
        message = f.message[len(name) + 2:] if name and f.message.startswith(f"{name}: ") else f.message
        sys.stderr.write(f"cairn: {f.code}: {printable(f.path)}: {printable(message)}\n")
    report_malformed(r.malformed)


def import_all_lines(r: SourcesImport, ws: str) -> list[str]:
    """What an ``--all`` import adds to its summary: turns not complete yet, sources with nothing
    complete, the sessions left out by reason."""
    from cairn.server.cli.import_report import left_out_line, waiting_lines
    from cairn.worker.journal.imports import idle_seconds

    out = waiting_lines(turns=r.captured + r.skipped, pending=r.pending or 0, empty=r.empty or 0,
                        idle_minutes=idle_seconds(load_config(ws)) / 60, ended_flag="--all --ended")
    left = left_out_line(r.left_out)
    return [*out, left] if left else out


def report_import_all(ns: argparse.Namespace, r: SourcesImport) -> int:
    if ns.json:
        emit_json(r)
    else:
        from cairn.server.cli.import_report import formats_said

        print(f"imported {r.sessions} session(s) from {r.sources} source(s){formats_said(r.formats or ())}: "
              f"{r.captured} new turn(s), {r.skipped} already captured")
        for line in import_all_lines(r, workspace_path(ns)):
            print(line)
        if not r.selected:
            print("no sessions of this workspace found; see `cairn discover` (or use --every-workspace)")
        elif r.captured:
            print("next: `cairn seal && cairn process && cairn journal` (or `cairn run --all` for all of it)")
    report_failures(r)
    if r.interrupted:
        from cairn.server.cli.import_run import resume_hint

        sys.stderr.write(resume_hint(all_args(ns), r.captured) + "\n")
        return EXIT_INTERRUPTED
    return EXIT_PROBLEMS if r.failed else EXIT_OK
