"""``cairn import`` in the foreground: progress on a terminal, Ctrl-C at a batch boundary.

The import runs in this process through the same capture path as the
worker job (batches, each under its own claim generation). On a terminal,
stderr shows a progress bar (turns, turns/s, ETA); piped, nothing is drawn
and only the summary is printed. The first Ctrl-C asks the import to stop
at the next batch boundary: everything captured so far is kept, and a later
run of the same command resumes (captured turns are skipped). A second
Ctrl-C interrupts at once (with several files captured side by side, once
the batch each is writing ends), which is still safe (a batch cut short is discarded whole by
the next capture).

Imports inside functions: rich loads only when a bar is drawn (a terminal):
26 ms, measured with ``python -X importtime``.
"""

from __future__ import annotations

import math
import shlex
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from cairn.protocol.digest import policy_from_config
from cairn.protocol.knobs import env_int
from cairn.protocol.text import printable
from cairn.worker.journal.imports import idle_seconds, import_paths
from cairn.worker.journal.store import Journal

if TYPE_CHECKING:
    from cairn.protocol.import_results import ImportTally

#: processes importing a long list of files (a helper takes the last ones: docs/adr/0013); 1 keeps one
PROCESSES = env_int("CAIRN_IMPORT_PROCESSES", 2)


class _Stop:
    def __init__(self) -> None:
        self.requested = False

    def __call__(self) -> bool:
        return self.requested


@contextmanager
def _first_sigint_stops(stop: _Stop) -> Iterator[None]:
    def handler(signum: int, frame: object) -> None:
        if stop.requested:
            raise KeyboardInterrupt
        stop.requested = True
        sys.stderr.write("\ncairn: stopping after the current batch (Ctrl-C again to stop now)\n")

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def _bar(enabled: bool) -> Iterator[Any]:
    """A progress callback ``(done, total)``: a rich bar on a terminal, else a no-op."""
    if not enabled:
        yield None
        return
    from rich.console import Console  # a bar only on a terminal: module docstring
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        TextColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class Rate(ProgressColumn):
        def render(self, task: Any) -> Text:
            speed = task.finished_speed or task.speed
            return Text(f"{speed:,.0f} turns/s" if speed else "- turns/s")

    progress = Progress(TextColumn("importing"), BarColumn(), MofNCompleteColumn(), TextColumn("turns"), Rate(),
                        TextColumn("ETA"), TimeRemainingColumn(), console=Console(stderr=True), transient=True)
    task = progress.add_task("import", total=None)
    started = threading.Lock()
    live = [False, False]  # started, over

    def update(done: int, total: int) -> None:
        progress.update(task, completed=done, total=max(total, done))
        if not live[0]:
            with started:
                if not live[0] and not live[1]:
                    # the bar (and its refresh thread) starts at the import's first count: after a helper process
                    # was forked from this one, which only a process running one thread does
                    # (worker/journal/import_split.py)
                    progress.start()
                    live[0] = True

    try:
        yield update
    finally:
        with started:
            live[1] = True
            if live[0]:
                progress.stop()


@contextmanager
def foreground(show_bar: bool) -> Iterator[tuple[Any, _Stop]]:
    """``(progress, stop)`` for an import run in the foreground: the bar, and the first Ctrl-C's request."""
    stop = _Stop()
    with _first_sigint_stops(stop), _bar(show_bar) as bar:
        yield bar, stop


def run_import(ws: str, paths: list[str], fmt: str, config: dict[str, Any], *, show_bar: bool,
               ended: bool = False, reread: bool = False) -> ImportTally:
    """Import ``paths`` in the foreground. A file quiet for the workspace's idle period is sealed (the last
    turn of each of its sessions is captured even with no end signal); with ``ended``, every file is."""
    with foreground(show_bar) as (bar, stop), Journal(ws) as j:
        sealed_before = math.inf if ended else j.source_now() - idle_seconds(config)
        return import_paths(j, paths, fmt, policy_from_config(config), progress=bar, stop=stop, processes=PROCESSES,
                            sealed_before=sealed_before, reread=reread)


def resume_hint(args: list[str], captured: int) -> str:
    """What to run to resume: ``cairn import`` with ``args`` (files, or ``--all`` and its flags)."""
    return (f"cairn: interrupted at a batch boundary; {captured} new turn(s) kept. "
            f"Resume with: cairn import {printable(' '.join(shlex.quote(a) for a in args))}")
