"""The command table of ``cairn``: name -> (help, argparse setup, handler), in help order.

Contract: this is the one place a command is named. ``cli.build_parser``
makes one subparser per row (adding the common ``-w/--workspace``), and
``cli.main`` calls the row's handler. A new command is a handler (and its
setup) in a command module plus one row here. Command modules import only
:mod:`server.cli.support`; nothing they import imports this table or
``cli``, so the CLI's import graph has no cycle.
"""

from __future__ import annotations

from cairn.server.cli import agents as AG
from cairn.server.cli import hook as HK
from cairn.server.cli import journal as J
from cairn.server.cli import mcp as MCP
from cairn.server.cli import memory as M
from cairn.server.cli import remember as RM
from cairn.server.cli import run as R
from cairn.server.cli import setup as SU
from cairn.server.cli import sources as S
from cairn.server.cli import trust as T
from cairn.server.cli import usage as U
from cairn.server.cli import verify as VF
from cairn.server.cli import watch as V
from cairn.server.cli import workspace as W
from cairn.server.cli.support import Command, json_flag, no_setup

COMMANDS: dict[str, Command] = {
    "doctor": Command("check the workspace's control state; exit 1 with the list of violations",
                      W.doctor_setup, W.cmd_doctor),
    "setup": Command("find the digest providers already on this machine (assistant CLIs, local model servers) "
                     "and, with your consent, use one (--detect: list only; --use NAME: choose)",
                     SU.setup_setup, SU.cmd_setup),
    "discover": Command("find the coding-agent session stores on this machine and each session's workspace "
                        "(read-only)", S.discover_setup, S.cmd_discover),
    "import": Command("capture the completed turns of transcript files, or of every session found (--all); "
                      "idempotent", J.import_setup, J.cmd_import),
    "watch": Command("follow live sessions: capture each completed turn as it is appended, seal what went "
                     "idle, digest; until Ctrl-C", V.watch_setup, V.cmd_watch),
    "seal": Command("seal open captures so they can be digested", J.seal_setup, J.cmd_seal),
    "process": Command("run recovery and digest work until nothing is runnable", json_flag, J.cmd_process),
    "journal": Command("list public digests", J.journal_setup, J.cmd_journal),
    "jobs": Command("list captures and their states (open, pending, running, retry-waiting, exhausted, "
                    "published, all-none, discarded)", json_flag, J.cmd_jobs),
    "retry": Command("give an exhausted capture three more automatic attempts", J.capture_id_setup, J.cmd_retry),
    "discard": Command("accept an omission for a capture: covered and retired, nothing published",
                       J.capture_id_setup, J.cmd_discard),
    "cleanup": Command("run one bounded cleanup batch and say whether more remains", json_flag, W.cmd_cleanup),
    "run": Command("import transcripts, seal (session-end), digest, review; print the journal and pending "
                   "proposals", R.run_setup, R.cmd_run),
    "remember": Command("remember a text now: captured as evidence, reviewed at once into a proposal "
                        "(applied in auto mode)", RM.remember_setup, RM.cmd_remember),
    "review": Command("run one general review of unreviewed digests against the memory", json_flag, M.cmd_review),
    "drain": Command("review the whole backlog in successive bounded reviews (bypasses the automatic cap)",
                     json_flag, M.cmd_drain),
    "proposals": Command("list proposals: id, kind, target, state (pending/stale/applied/rejected/undone)",
                         json_flag, M.cmd_proposals),
    "show": Command("show a proposal as a unified diff", M.one_id_setup, M.cmd_show),
    "accept": Command("apply proposals through the checked path (--keep-both: even where memory now says "
                      "otherwise on their subject)", M.accept_setup, M.cmd_accept),
    "reject": Command("reject proposals (remembered: later reviews will not propose them again; "
                      "`cairn unreject ID` takes it back)",
                      M.many_ids_setup, M.cmd_reject),
    "undo": Command("undo applied proposals, the latest applied first (each refused if its files changed since)",
                    M.many_ids_setup, M.cmd_undo),
    "unreject": Command("take rejections back: the proposals are pending again and later reviews may propose "
                        "them again", M.many_ids_setup, M.cmd_unreject),
    "history": Command("the decisions, newest first: time, action (accept/reject/undo/unreject), state, id; "
                       "an undone proposal is accepted again with `cairn accept ID`", json_flag, M.cmd_history),
    "memory": Command("list memory topics with their type, description, age and stale marks; `memory retire "
                      "TOPIC` proposes a topic's retirement, `memory confirm TOPIC` says it is still true",
                      M.memory_setup, M.cmd_memory),
    "verify": Command("recheck what memory topics cite (paths, lines, Make/npm/just targets) against the working "
                      "tree; mark stale entries and propose their update or retirement; list the stale lines of "
                      "the instruction files agents read (AGENTS.md, CLAUDE.md ...)", VF.verify_setup, VF.cmd_verify),
    "agents": Command("the coding agents this workspace is used with: whether each reads the memory and runs "
                      "cairn's hooks; `agents wire [AGENT...]` proposes the edits that make them read it",
                      AG.agents_setup, AG.cmd_agents),
    "hook": HK.COMMAND,
    "usage": Command("provider requests per day, provider and model: tokens, time, outcomes (and cost with prices)",
                     U.usage_setup, U.cmd_usage),
    "serve": Command("run the cairn language server (stdio by default)", W.serve_setup, W.cmd_serve),
    "mcp": Command("serve the Model Context Protocol on stdio for coding agents: tools remember, journal_search, "
                   "memory_list; the memory index and topics as resources", no_setup, MCP.cmd_mcp),
    "trust": Command("let this workspace's .cairn/config.toml choose the provider, endpoint, API key variable "
                     "and command",
                     T.trust_setup, T.cmd_trust),
    "untrust": Command("stop trusting a workspace: its file can no longer send data off this machine",
                       T.untrust_setup, T.cmd_untrust),
}
