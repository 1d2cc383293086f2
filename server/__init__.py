"""cairn's front ends: the CLI, the language server, the MCP endpoint, and the scheduler behind them.

Every durable change is a worker job (:mod:`worker`) run under fenced
claims: the language server runs them in short-lived worker subprocesses
(:mod:`server.scheduler.runner`), the CLI and the MCP endpoint in their own
process (:mod:`server.scheduler.inprocess`), so a command and a background
worker never both own one piece of work. Beyond that this layer schedules,
answers from memory and reads cheap snapshots.
:mod:`server.scheduler.coordinator` is the pure scheduling policy (events in, actions
out, no I/O) and :mod:`server.scheduler.adapter` carries its actions out on asyncio,
persisting through :mod:`server.scheduler.jobstore`. The language server is
:mod:`server.lsp.server` (pygls registration, one name per method) and
:mod:`server.lsp.protocol` (one error shape) over
:mod:`server.lsp.service` (lifecycle, start gate, workspaces, routing) and
the feature modules in :mod:`server.lsp.features`, none of which import pygls.
:mod:`server.cli.app` is the command line; :mod:`server.testing` holds test
doubles that production code never imports.
"""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def version() -> str:
    """The installed distribution's version: pyproject.toml is its one source (the elisp package headers
    repeat it; tests/packaging checks they agree). Looked up when asked: importlib.metadata costs a
    command 28-48 ms of start-up (``python -X importtime``)."""
    from importlib.metadata import PackageNotFoundError  # cold start: the docstring
    from importlib.metadata import version as installed

    try:
        return installed("cairn-journal")
    except PackageNotFoundError:  # run from a tree that was never installed
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        return version()
    raise AttributeError(name)
