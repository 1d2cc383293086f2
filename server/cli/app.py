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
traceback too when ``CAIRN_DEBUG=1``), 130 interrupted, 141 the reader of
stdout went away (``cairn journal | head``: the output stops there, nothing on
stderr, as a tool killed by SIGPIPE). An ``OSError`` that escapes a command is
a fixed error: ``E_NO_SPACE`` for a full disk, else ``E_IO_FAILED``; an
``E_IO_FAILED`` whose message names no path (a read-only workspace: the state
layer says only ``Read-only file system (EROFS)``) is completed here with the
folder that cannot be written.

``-w/--workspace DIR`` is an option of every command; given before the
command's name (``cairn -w DIR journal``) it is moved after it. The same file
named twice (``cairn import chat.md ./chat.md``) is read once.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from typing import NoReturn

from cairn.protocol.errors import CairnError, ErrorCode, os_error
from cairn.protocol.text import printable
from cairn.server.cli.support import (
    EXIT_ERROR,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_PIPE,
    Command,
    unwritable,
)


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
                     formatter_class=_Formatter, allow_abbrev=False)  # `--work DIR` is no -w (main)
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    # only for the help and for a `-w DIR` with no command after it: main moves `-w DIR COMMAND` to `COMMAND -w DIR`
    parser.add_argument("-w", "--workspace", metavar="DIR", dest="workspace_first",
                        help="workspace directory, before or after the command (default: .)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, cmd in commands.items():
        p = sub.add_parser(name, help=cmd.help, description=cmd.help, formatter_class=_Formatter)
        p.add_argument("-w", "--workspace", default=".", metavar="DIR", help="workspace directory (default: .)")
        cmd.setup(p)
        p.set_defaults(func=cmd.handler)
    return parser


_WORKSPACE_FLAGS = ("-w", "--workspace")


def _workspace_after_command(args: list[str]) -> list[str]:
    """``-w DIR COMMAND …`` as ``COMMAND -w DIR …``: the workspace is an option of every command, and a user
    gives it before the command's name as often as after. Several ``-w`` before it keep their order (the
    last one given counts, as argparse counts them), and one given after the command's name comes later
    still. Anything else before the name (``--version``, a typo) is left to the parser."""
    moved: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in _WORKSPACE_FLAGS and i + 1 < len(args):
            moved += [a, args[i + 1]]
            i += 2
        elif a.startswith("--workspace=") or (a.startswith("-w") and len(a) > 2 and not a.startswith("--")):
            moved.append(a)
            i += 1
        else:
            break
    if not moved or i >= len(args) or not _is_command(args[i]):
        return args
    return [args[i], *moved, *args[i + 1:]]


def _same_file_once(ns: argparse.Namespace) -> None:
    """The transcript files of ``import``, ``run`` and ``watch``, each once: one file named several ways
    (``chat.md /abs/chat.md ./chat.md``, a link to it) was read as that many files, its sessions and turns
    counted as often. Same file: the same device and inode (a hard link too), else the same resolved path.
    The first mention is kept, unless it is a symbolic link and a later one is not (the file itself, which
    nothing refuses)."""
    paths = getattr(ns, "paths", None)
    if ns.command not in ("import", "run", "watch") or not isinstance(paths, list) or len(paths) < 2:
        return
    kept: dict[object, str] = {}
    for p in paths:
        key: object
        try:
            st = os.stat(p)
            key = (st.st_dev, st.st_ino) if os.path.isfile(p) else os.path.realpath(p)
        except (OSError, ValueError):
            key = os.path.abspath(p)
        if key not in kept or (os.path.islink(kept[key]) and not os.path.islink(p)):
            kept[key] = p
    ns.paths = list(kept.values())


def _is_command(name: str) -> bool:
    if name == "hook":  # an agent's hook waits for this process: no table's imports (main)
        return True
    from cairn.server.cli.commands import COMMANDS  # every command module: the table is the CLI's

    return name in COMMANDS


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


def _stdout_gone() -> bool:
    """Whether stdout is a pipe whose reader went away (a broken pipe may also be a provider program's
    stdin, which is an error of the command). Linux and the BSDs report a pipe without reader as
    ``POLLERR``; when stdout cannot be polled, the broken pipe is taken to be it."""
    import select  # cold start: only after a broken pipe

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return True


def _broken_pipe() -> int:
    """The reader of stdout went away (``cairn journal | head -1``): stop quietly, as a Unix tool that
    SIGPIPE ends, with the status a shell gives one (128 + 13): no error line, since nobody misses the
    rest, and the final flush of what is still buffered silenced."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass  # stdout is no file descriptor (a test's capture): nothing to flush into a closed pipe
    return EXIT_PIPE


def _io_failed_where(ns: argparse.Namespace, message: str) -> str:
    """``E_IO_FAILED: Read-only file system (EROFS)`` named no path: the folder that cannot be written is
    added (a path only, never what was being written)."""
    ws = getattr(ns, "workspace", None)
    if not isinstance(ws, str) or ns.command in _NO_WORKSPACE_NEEDED or not os.path.isdir(ws):
        return message
    where = unwritable(os.path.abspath(ws))
    if where is None or where.split(",", 1)[0] in message:
        return message
    return f"{message}: cannot write in {where}"


def _unwritable_note(ns: argparse.Namespace) -> str:
    """An unexpected error in a workspace that cannot be written: the likely cause, said after it."""
    ws = getattr(ns, "workspace", None)
    if not isinstance(ws, str) or ns.command in _NO_WORKSPACE_NEEDED or not os.path.isdir(ws):
        return ""
    where = unwritable(os.path.abspath(ws))
    return f"; note: cannot write in {where}" if where else ""


def main(argv: Sequence[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] and args[0].startswith(("-w", "--workspace")):
        args = _workspace_after_command(args)
    if args[:1] == ["hook"]:
        # an agent's session hook waits for this process: its parser is built from the hook module alone,
        # without the command table's imports (bench/hook.py measures the difference)
        from cairn.server.cli import hook

        ns = hook.parse(build_parser({"hook": hook.COMMAND}), args)
    else:
        ns = build_parser(_table(args)).parse_args(args)
    try:
        _check_workspace(ns)
        _same_file_once(ns)
        code = int(ns.func(ns))
        if not sys.stdout.closed:  # `cairn serve` hands stdout to the language server, which closes it at exit
            sys.stdout.flush()  # a reader gone before the last buffered lines: said here, not at the interpreter's exit
        return code
    except CairnError as exc:
        message = _io_failed_where(ns, exc.message) if exc.code is ErrorCode.IO_FAILED else exc.message
        _fail(exc.code, message)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except OSError as exc:
        if isinstance(exc, BrokenPipeError) and _stdout_gone():
            return _broken_pipe()
        err = os_error(exc)
        message = _io_failed_where(ns, err.message) if err.code is ErrorCode.IO_FAILED else err.message
        _fail(err.code, message)
        return EXIT_ERROR
    except Exception as exc:
        if os.environ.get("CAIRN_DEBUG") == "1":
            import traceback  # only with CAIRN_DEBUG=1: ~30 ms of every command's start otherwise

            traceback.print_exc()
        _fail(ErrorCode.INTERNAL, f"unexpected {type(exc).__name__} in `cairn {ns.command}` "
                                  f"(set CAIRN_DEBUG=1 for the traceback){_unwritable_note(ns)}")
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
