"""The ``cairn`` command line: the parser built from the command table, and ``main``.

Every subcommand takes ``-w/--workspace DIR`` (default: the current
directory); listing commands take ``--json``. Commands are named once, in
:data:`server.cli.commands.COMMANDS`. ``cairn hook``, which a coding agent
waits for at the end of each session, builds its parser from its own row
(:data:`server.cli.hook.COMMAND`) without importing the table and every
command module behind it (``python -X importtime``: about 0.2 s of its start).

``main`` never lets a Python traceback reach the user. Exit codes (see
:mod:`server.cli.support`): 0 success, 1 the command ran and found problems,
2 bad usage or a fixed error (``cairn: E_…: message`` on stderr), 3 an
unexpected internal error (``cairn: E_INTERNAL: …``, one line; the
traceback too when ``CAIRN_DEBUG=1``), 130 interrupted. An ``OSError`` that
escapes a command is a fixed error: ``E_NO_SPACE`` for a full disk, else
``E_IO_FAILED``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from typing import NoReturn

from cairn.protocol.errors import CairnError, ErrorCode, os_error
from cairn.protocol.text import printable
from cairn.server.cli.support import EXIT_ERROR, EXIT_INTERNAL, EXIT_INTERRUPTED, Command


class _Parser(argparse.ArgumentParser):
    """argparse with the CLI's error shape: ``cairn: E_USAGE: message`` and exit 2.

    argparse's own ``error`` prints the usage and ``prog: error: …``; every other
    fixed error of the CLI is one ``cairn: E_…`` line, and editors and scripts
    read that shape. Subparsers inherit the class (``add_subparsers`` uses
    ``type(self)``), so ``cairn import --bogus`` answers the same way.
    """

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"cairn: {ErrorCode.USAGE}: {printable(message)} (see `{self.prog} --help`)\n")
        raise SystemExit(EXIT_ERROR)


class _Formatter(argparse.HelpFormatter):
    """argparse's help layout, its width read as ``shutil.get_terminal_size`` reads it but without importing
    ``shutil`` (with ``bz2`` and ``lzma``: 3 ms of every command's start, ``python -X importtime``), which
    argparse does for each argument it adds."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position, _columns() - 2 if width is None else width)


def _columns() -> int:
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns if sys.__stdout__ else 0
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class _Version(argparse.Action):
    """``--version``: the installed version, looked up only when asked (importlib.metadata is 28–48 ms of a
    command's start-up, measured with ``python -X importtime``)."""

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kw: object) -> NoReturn:
        from cairn.server import version  # cold start: the class docstring

        sys.stdout.write(f"cairn {version()}\n")
        raise SystemExit(0)


def build_parser(commands: Mapping[str, Command] | None = None) -> argparse.ArgumentParser:
    """The parser of every command (:data:`server.cli.commands.COMMANDS`), or of the ``commands`` given."""
    if commands is None:
        # the command table imports every command module: ``cairn hook`` does without it (main)
        from cairn.server.cli.commands import COMMANDS

        commands = COMMANDS
    parser = _Parser(prog="cairn", description="cairn: a memory keeper for AI-assisted coding",
                     formatter_class=_Formatter)
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, cmd in commands.items():
        p = sub.add_parser(name, help=cmd.help, description=cmd.help, formatter_class=_Formatter)
        p.add_argument("-w", "--workspace", default=".", metavar="DIR", help="workspace directory (default: .)")
        cmd.setup(p)
        p.set_defaults(func=cmd.handler)
    return parser


def _table(args: Sequence[str]) -> Mapping[str, Command]:
    """The commands to build a parser of: the one named first (``cairn import …``; building all of them is
    10 ms of every command's start), or all of them (``cairn --help``, a name that is no command)."""
    from cairn.server.cli.commands import COMMANDS  # every command module: the table is the CLI's

    name = args[0] if args else ""
    return {name: COMMANDS[name]} if name in COMMANDS else COMMANDS


def _fail(code: ErrorCode | str, message: str) -> None:
    # a message may name a file: its control characters are shown escaped, never sent to the terminal
    from cairn.worker.redaction.redact import redact_text  # cold start: the rules compile only for an error

    sys.stderr.write(f"cairn: {code}: {printable(redact_text(message))}\n")


#: commands that do not work in the workspace ``-w`` names, or must never fail on it: an agent's hook exits 0
#: whatever happens (its workspace may come from its payload), and the machine-wide ones
_NO_WORKSPACE_NEEDED = frozenset({"hook", "setup", "discover", "trust", "untrust", "usage", "serve", "mcp"})


def _check_workspace(ns: argparse.Namespace) -> None:
    """Every command refuses a workspace that is no folder the same way, before doing anything (a listing
    would otherwise say "no memory topics" of a mistyped ``-w``, and a writer fail deep inside with another
    code)."""
    ws = getattr(ns, "workspace", None)
    if ns.command in _NO_WORKSPACE_NEEDED:
        return
    if isinstance(ws, str) and not os.path.isdir(ws):
        what = "does not exist" if not os.path.lexists(ws) else "is not a directory"
        raise CairnError(ErrorCode.WORKSPACE_INVALID, f"workspace {ws[:200]} {what}; check -w")


def _broken_pipe() -> int:
    # the reader went away (`cairn journal | head`): silence the final flush too
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_ERROR


def main(argv: Sequence[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["hook"]:
        # an agent's session hook waits for this process: its parser is built from the hook module alone,
        # without the command table's imports (bench/hook.py measures the difference)
        from cairn.server.cli import hook

        ns = hook.parse(build_parser({"hook": hook.COMMAND}), args)
    else:
        ns = build_parser(_table(args)).parse_args(args)
    try:
        _check_workspace(ns)
        return int(ns.func(ns))
    except CairnError as exc:
        _fail(exc.code, exc.message)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return _broken_pipe()
    except OSError as exc:
        err = os_error(exc)
        _fail(err.code, err.message)
        return EXIT_ERROR
    except Exception as exc:
        if os.environ.get("CAIRN_DEBUG") == "1":
            import traceback  # only with CAIRN_DEBUG=1: ~30 ms of every command's start otherwise

            traceback.print_exc()
        _fail(ErrorCode.INTERNAL, f"unexpected {type(exc).__name__} in `cairn {ns.command}` "
                                  "(set CAIRN_DEBUG=1 for the traceback)")
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
