"""The ``cairn`` command line.

:mod:`.app` builds the parser from the one command table
(:data:`.commands.COMMANDS`) and is the only place a Python exception is
turned into an exit code and one ``cairn: E_…`` line. Each command module
(:mod:`.journal`, :mod:`.memory`, :mod:`.run`, :mod:`.sources`, :mod:`.watch`,
:mod:`.remember`, :mod:`.setup`, :mod:`.trust`, :mod:`.usage`, :mod:`.workspace`,
:mod:`.mcp`) depends only on :mod:`.support`; :mod:`.import_run` is the
foreground import with its progress bar. Commands run their jobs in this
process (:mod:`server.scheduler.inprocess`).

Imports inside functions: ``cairn --help`` and every command build the
whole parser, so the command modules import the worker code, the codec and
the optional libraries where a command uses them. Measured with ``python -X
importtime -m cairn.server --help``: 160 ms of imports; at the top, the
worker modules would add about 100 ms, the language server (pygls) 440 ms,
the MCP SDK 760 ms and rich 26 ms. :mod:`.import_run` is imported where
used for one more reason: it reads ``CAIRN_IMPORT_PROCESSES`` when imported,
and the test suite's warm interpreter (``tests/support/zygote.py``)
preloads the command modules, never a module that reads a knob.
"""

from cairn.server.cli.app import main

__all__ = ["main"]  # the ``cairn`` program (pyproject.toml [project.scripts])
