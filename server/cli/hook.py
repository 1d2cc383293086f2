"""CLI command ``cairn hook AGENT``: what a coding agent's session hook runs (docs/agents.md, *Hooks*).

Reads the hook's JSON payload on stdin (bounded, at most a few seconds of
waiting), imports what is new in the transcript it names and seals the
session with the trigger its event maps to (:mod:`worker.journal.hook`).
``cairn hook codex PAYLOAD`` is Codex's ``notify`` program: its payload is
the last argument (Codex gives the program no stdin), it names the thread
whose rollout is imported, with no seal.
Every agent's workspace is decided the same way (:func:`worker.journal.hook.candidate`,
:func:`~worker.journal.hook.workspace_of`): the payload's ``cwd`` unless
``-w`` names one, never the file system root or the home folder, and a
session is imported only into the workspace its own recorded folder is in.
It never fails the agent: the exit status is 0 whatever happens; a problem
is one ``cairn: hook: E_…: …`` line on stderr (ids and codes, never
transcript text). Depends only on :mod:`server.cli.support`.
"""

from __future__ import annotations

import argparse
import os
import select
import sys
import time

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.server.cli.support import EXIT_OK, Command, emit_json, load_config, printable

#: agents ``cairn hook`` takes (``worker.journal.hook.AGENTS``, named here so parsing needs no worker import)
HOOK_AGENTS = ("claude-code", "gemini-cli", "codex")
#: agents whose payload is the last argument, not stdin (``worker.journal.hook.NOTIFY``)
ARGV_AGENTS = ("codex",)
#: longest wait for the payload on stdin (seconds): an agent that never closes it does not hold the hook
STDIN_WAIT = 3.0


def hook_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("agent", choices=HOOK_AGENTS, help="the agent whose hook payload comes on stdin")
    p.add_argument("payload", nargs="?", metavar="PAYLOAD",
                   help="codex only: the JSON argument Codex's notify program gets after each turn")
    p.add_argument("--json", action="store_true", help="print what was done as JSON on stdout")
    p.set_defaults(workspace=None)  # the payload's cwd unless -w names the workspace


def parse(parser: argparse.ArgumentParser, args: list[str]) -> argparse.Namespace:
    """``args`` parsed for ``cairn hook``. Codex appends its payload after the configured argv, so options
    may come between the agent and the payload (``cairn hook codex -w DIR PAYLOAD``): argparse leaves the
    payload over then, and it is taken here."""
    ns, extra = parser.parse_known_args(args)
    if extra and ns.payload is None and len(extra) == 1 and not extra[0].startswith("-"):
        ns.payload, extra = extra[0], []
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(a[:40] for a in extra)}")
    return ns


def _stdin(limit: int) -> bytes:
    """Up to ``limit`` + 1 bytes of stdin, until its end or :data:`STDIN_WAIT` seconds."""
    fd = sys.stdin.fileno()
    chunks: list[bytes] = []
    size, deadline = 0, time.monotonic() + STDIN_WAIT
    while size <= limit:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise CairnError(ErrorCode.HOOK_PAYLOAD_INVALID, "no complete payload on stdin")
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def cmd_hook(ns: argparse.Namespace) -> int:
    try:
        from cairn.worker.journal import hook as H  # cold start: loaded when the hook runs, not for --help

        home = os.path.expanduser("~")
        if ns.agent in ARGV_AGENTS:
            if ns.payload is None:
                raise CairnError(ErrorCode.HOOK_PAYLOAD_INVALID, "no payload argument (Codex's notify passes "
                                 "it as the last argument)")
            payload = H.parse_notify(ns.agent, os.fsencode(ns.payload))
            where = H.candidate(payload, ns.workspace, ".")
            payload = H.find_rollout(payload, home, os.environ)
        else:
            if ns.payload is not None:
                raise CairnError(ErrorCode.USAGE, f"{ns.agent}'s hook payload comes on stdin, not as an argument")
            payload = H.parse(ns.agent, _stdin(H.MAX_PAYLOAD))
            where = H.candidate(payload, ns.workspace, ".")
        path = H.check_transcript(payload, where, home, os.environ)
        ws = H.workspace_of(payload, path, where, ns.workspace is not None, home, os.environ)
        done = H.run(payload, path, ws, load_config(ws))
        if ns.json:
            emit_json(done)
    except CairnError as exc:
        sys.stderr.write(f"cairn: hook: {exc.code}: {printable(exc.message)}\n")
    except Exception as exc:  # never fail the agent: a fixed code, no traceback
        sys.stderr.write(f"cairn: hook: {ErrorCode.INTERNAL}: unexpected {type(exc).__name__}\n")
    return EXIT_OK


#: the ``hook`` row of the command table (:data:`server.cli.commands.COMMANDS`), here so that
#: ``cairn hook`` can build its parser from this module alone (:func:`server.cli.app.main`)
COMMAND = Command("what a coding agent's session hook runs: read its JSON payload on stdin, import the "
                  "transcript's new turns and seal the session (clear, compaction, session-end); `codex PAYLOAD`: "
                  "Codex's notify, the thread's new turns, no seal; always exits 0",
                  hook_setup, cmd_hook)
