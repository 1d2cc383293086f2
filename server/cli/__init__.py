"""The ``cairn`` command line.

:mod:`.app` builds the parser from the one command table
(:data:`.commands.COMMANDS`) and is the only place a Python exception is
turned into an exit code and one ``cairn: E_…`` line. Each command module
(:mod:`.journal`, :mod:`.memory`, :mod:`.run`, :mod:`.sources`, :mod:`.watch`,
:mod:`.remember`, :mod:`.trust`, :mod:`.usage`, :mod:`.workspace`,
:mod:`.mcp`) depends only on :mod:`.support`; :mod:`.import_run` is the
foreground import with its progress bar. Commands run their jobs in this
process (:mod:`server.scheduler.inprocess`).
"""

from cairn.server.cli.app import main

__all__ = ["main"]  # the ``cairn`` program (pyproject.toml [project.scripts])
