"""The ``cairn`` command line.

Every subcommand takes ``-w/--workspace DIR`` (default: the current
directory). Listing commands take ``--json``. Exit codes: 0 success, 1 the
command ran and found problems (violations, failures), 2 bad usage or a
fixed error (``E_…`` on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence

from cairn.protocol.errors import CairnError

Handler = Callable[[argparse.Namespace], int]
_COMMANDS: dict[str, tuple[Handler, Callable[[argparse.ArgumentParser], None], str]] = {}


def command(name: str, help: str) -> Callable[[Handler], Handler]:
    def wrap(fn: Handler) -> Handler:
        setup = getattr(fn, "_setup", lambda p: None)
        _COMMANDS[name] = (fn, setup, help)
        return fn

    return wrap


def args(setup: Callable[[argparse.ArgumentParser], None]) -> Callable[[Handler], Handler]:
    def wrap(fn: Handler) -> Handler:
        fn._setup = setup  # type: ignore[attr-defined]
        return fn

    return wrap


def emit_json(obj: object) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def workspace_path(ns: argparse.Namespace) -> str:
    return os.path.abspath(ns.workspace)


def _doctor_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the report as JSON")


@command("doctor", "check the workspace's control state; exit 1 with the list of violations")
@args(_doctor_setup)
def cmd_doctor(ns: argparse.Namespace) -> int:
    from cairn.state.doctor import check_workspace
    from cairn.state.fsdir import PinnedDir
    from cairn.worker.trust import trust_line

    with PinnedDir.open_root(workspace_path(ns)) as root:
        report = check_workspace(root)
    trust = trust_line(workspace_path(ns))
    if ns.json:
        emit_json({**report.to_json(), "trust": trust})
    else:
        print(f"scopes {report.scopes}, generations {report.generations}, bundles {report.bundles}")
        print(f"trust {trust}")
        for v in report.violations:
            print(f"VIOLATION {v.code} {v.path}: {v.message}")
        for n in report.notes:
            print(f"note {n.code} {n.path}: {n.message}")
        print("ok" if not report.violations else f"{len(report.violations)} violation(s)")
    return 1 if report.violations else 0


def build_parser() -> argparse.ArgumentParser:
    # import command modules for their registrations
    from cairn.server import cli_commands, cli_trust  # noqa: F401

    parser = argparse.ArgumentParser(prog="cairn", description="cairn: a memory keeper for AI-assisted coding")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (fn, setup, help_text) in _COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("-w", "--workspace", default=".", metavar="DIR", help="workspace directory (default: .)")
        setup(p)
        p.set_defaults(func=fn)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    ns = parser.parse_args(argv)
    try:
        return int(ns.func(ns))
    except CairnError as exc:
        from cairn.worker.redact import redact_text

        sys.stderr.write(f"cairn: {exc.code}: {redact_text(exc.message)}\n")
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
