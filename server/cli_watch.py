"""``cairn watch``: keep up with live sessions of every tool, without an editor.

Contract: every ``--interval`` seconds, one :class:`worker.sources.watch.Watcher`
tick (import what changed since the last tick, seal captures idle for
``--idle`` minutes), then a digest pass when something was sealed. A line is
printed when turns were captured or captures sealed, and a store's or
source's failure is printed when it first appears (not at every tick).
``--once`` runs one tick and exits (for hooks and cron). Ctrl-C stops it
(exit 130); a killed watcher loses nothing, since the next one re-imports
idempotently. Depends on :mod:`server.cli_support` and the journal and
sources command modules.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.server.cli_journal import print_process, process_workspace
from cairn.server.cli_support import EXIT_OK, EXIT_PROBLEMS, emit_json, load_config, workspace_path


def watch_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("--interval", type=float, default=5.0, metavar="SECONDS", help="seconds between passes (default 5)")
    p.add_argument("--idle", type=float, default=20.0, metavar="MINUTES",
                   help="seal a session's capture after this many quiet minutes (default 20)")
    p.add_argument("--every-workspace", action="store_true", help="sessions of every workspace, not only this one's")
    p.add_argument("--once", action="store_true", help="one pass, then exit")
    p.add_argument("--json", action="store_true", help="with --once: the pass's counts as JSON")


def cmd_watch(ns: argparse.Namespace) -> int:
    from cairn.worker.journal.capture import policy_from_config
    from cairn.worker.journal.store import Journal
    from cairn.worker.sources.watch import Watcher

    if ns.interval <= 0 or ns.idle < 0:
        raise CairnError(ErrorCode.USAGE, "--interval must be positive and --idle not negative")
    ws = workspace_path(ns)
    watcher = Watcher(os.path.expanduser("~"), os.environ, ws, policy_from_config(load_config(ws)),
                      everywhere=ns.every_workspace, idle=ns.idle * 60)
    reported: set[tuple[str, str, str]] = set()
    while True:
        with Journal(ws) as j:
            r = watcher.tick(j)
        counts: dict[str, Any] | None = process_workspace(ws) if r["sealed"] else None
        failures = {(f["code"], f["path"], f["message"]) for f in r["failed"]}
        if ns.once and ns.json:
            emit_json({**r, "process": counts})
        else:
            _report(r, counts, failures - reported)
        reported = failures
        if ns.once:
            return EXIT_PROBLEMS if failures else EXIT_OK
        time.sleep(ns.interval)


def _report(r: dict[str, Any], counts: dict[str, Any] | None, new_failures: set[tuple[str, str, str]]) -> None:
    stamp = time.strftime("%H:%M:%S")
    if r["captured"]:
        print(f"{stamp} captured {r['captured']} new turn(s) from {r['sessions']} session(s)", flush=True)
    if r["sealed"]:
        print(f"{stamp} sealed {len(r['sealed'])} idle capture(s)", flush=True)
    if counts is not None:
        print_process(counts, prefix=f"{stamp} digests: ")
    for code, path, message in sorted(new_failures):
        sys.stderr.write(f"cairn: {code}: {path}: {message}\n")
