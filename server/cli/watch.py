"""``cairn watch``: follow live sessions without an editor.

Contract: the paths given (files or folders; default: the workspace's
``watch_paths`` setting plus the session stores discovery attributes to the
workspace, :func:`server.watch.files.plan`, and the sessions begun later in
those stores) are followed by the same
:class:`server.watch.files.FileWatcher` and :class:`server.watch.core.WatchCore` as
in ``cairn serve``: woken by the file system, not by a timer. Each batch of
changed files is one ``import`` job, run in this process through the
worker's job functions in a thread (never on the event loop; claims fence it
against a server doing the same); idle and session-end seals are
``seal-idle`` and ``seal`` jobs, and a seal that sealed something is
followed by a digest pass. One line per batch that captured turns; a file
ignored or failed is said on stderr with its fixed code. An import or seal
refused because another process holds a claim it needs (``E_CLAIM_BUSY``) is
tried again by itself after a back-off, and nothing is sealed before that
import went through (rule 8 of :mod:`server.watch.core`). Ctrl-C (SIGINT) or
SIGTERM stops it after the job under way: a summary line, exit 130. A
stopped watcher loses nothing: the next one imports again, idempotently; one
killed (SIGKILL) leaves its session's claim held until its deadline, which the
next one started at once waits out that way.

``--once`` is one discovery pass instead (:class:`worker.jobs.watch.Watcher`:
import what changed, seal what went idle, digest), for hooks and cron; it
also covers the stores that are not JSONL files (databases, JSON files).
Each store, source or session of the workspace it could not read (a link,
a FIFO, a malformed file) is one ``cairn: E_…: path: reason`` line on
stderr, with ``--json`` too, and the exit status is 1.
Depends on :mod:`server.cli.support` and the journal command module.

Imports inside functions: ``cairn --help`` cold start, see :mod:`server.cli`; the live watcher
(:mod:`server.cli.headless`: asyncio, ssl and the watch modules, 34 ms with ``python -X importtime``)
is loaded by ``cairn watch`` only, not by the CLI's other commands.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import TYPE_CHECKING, Any

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.server.cli.journal import print_process, process_workspace
from cairn.server.cli.support import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PROBLEMS,
    emit_json,
    load_config,
    printable,
    workspace_path,
)

if TYPE_CHECKING:
    from cairn.server.cli.headless import Headless as Headless
    from cairn.server.watch.files import Plan


def __getattr__(name: str) -> Any:
    if name == "Headless":  # the live watcher, kept out of the CLI's start (module docstring)
        from cairn.server.cli.headless import Headless

        return Headless
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def watch_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="session files or folders to follow (default: the workspace's watch_paths and the "
                        "session stores found for it)")
    p.add_argument("--poll", action="store_true", help="poll (with backoff) instead of the native file watcher")
    p.add_argument("--interval", type=float, default=8.0, metavar="SECONDS",
                   help="when polling: the longest pause between two looks (default 8)")
    p.add_argument("--idle", type=float, default=None, metavar="MINUTES",
                   help="seal a session's capture after this many quiet minutes (default: seal_idle_minutes)")
    p.add_argument("--every-workspace", action="store_true", help="sessions of every workspace, not only this one's")
    p.add_argument("--once", action="store_true", help="one discovery pass (import, seal idle, digest), then exit")
    p.add_argument("--json", action="store_true", help="with --once: the pass's counts as JSON")


def cmd_watch(ns: argparse.Namespace) -> int:
    if ns.interval <= 0 or (ns.idle is not None and ns.idle < 0):
        raise CairnError(ErrorCode.USAGE, "--interval must be positive and --idle not negative")
    from cairn.state.fsdir import refusal

    ws = workspace_path(ns)
    foreign = refusal(ws)  # said once, not at every change
    if foreign is not None:
        raise foreign
    config = load_config(ws)
    if ns.idle is not None:
        config = {**config, "sealIdleMinutes": ns.idle}
    if ns.once:
        return _once(ns, ws, config)
    import asyncio  # the live watcher only (module docstring)

    from cairn.server.cli.headless import Headless
    from cairn.server.watch.files import Plan, plan, watch_roots
    given = [os.path.abspath(p) for p in ns.paths] if ns.paths else config.get("watchPaths") or []
    probes: dict[Any, Any] = {}  # kept between discoveries: an unchanged file is not read again

    def replan() -> Plan:  # the stores again, when a session file appears in one (server.watch.files)
        return plan({ws: given}, everywhere=ns.every_workspace, probes=probes)

    found = Plan(roots={ws: watch_roots(ws, given)}) if ns.paths else replan()
    roots = found.roots[ws]
    if not roots:
        raise CairnError(ErrorCode.USAGE, "nothing to watch: name files or folders, set watch_paths "
                         "in .cairn/config.toml, or start a session of a supported tool here")
    watch = Headless(ws, roots, config, polling=True if ns.poll else None, poll_max=ns.interval,
                     stores=found.stores, foreign=found.foreign, replan=None if ns.paths else replan)
    # said at once (on stderr: stdout keeps one line per capture), so a quiet start is not a hang
    sys.stderr.write(f"cairn watch: following {len(roots)} path(s) for {printable(ws)}; each captured batch "
                     "is a line here; Ctrl-C stops\n")
    sys.stderr.flush()
    asyncio.run(watch.run())
    print(watch.summary(), flush=True)
    return EXIT_INTERRUPTED


def _once(ns: argparse.Namespace, ws: str, config: dict[str, Any]) -> int:
    from cairn.protocol.digest import policy_from_config
    from cairn.worker.jobs.watch import Watcher
    from cairn.worker.journal.store import Journal

    watcher = Watcher(os.path.expanduser("~"), os.environ, ws, policy_from_config(config),
                      everywhere=ns.every_workspace, idle=float(config.get("sealIdleMinutes", 20.0)) * 60)
    from cairn.protocol.codec import to_body

    with Journal(ws) as j:
        r = watcher.tick(j)
    counts = process_workspace(ws) if r.sealed else None
    failures = sorted({(f.code, f.path, f.message) for f in r.failed})
    if ns.json:
        emit_json({**to_body(r), "process": to_body(counts) if counts is not None else None})
    else:
        stamp = time.strftime("%H:%M:%S")
        if r.captured:
            print(f"{stamp} captured {r.captured} new turn(s) from {r.sessions} session(s)", flush=True)
        if r.sealed:
            print(f"{stamp} sealed {len(r.sealed)} idle capture(s)", flush=True)
        if counts is not None:
            print_process(counts, prefix=f"{stamp} digests: ")
    for code, path, message in failures:  # as `import --all` says them, with --json too
        sys.stderr.write(f"cairn: {code}: {printable(path)}: {printable(message)}\n")
    return EXIT_PROBLEMS if failures else EXIT_OK
