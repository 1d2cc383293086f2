"""CLI command ``cairn agents``: which coding agents read the memory, and ``wire`` to propose that they do.

``cairn agents [--json]`` lists the agents this workspace is used with
(sessions discovery found for it, or their instruction files here): for each
whether it reads ``.agents/memory/MEMORY.md`` (``wired``, ``via`` which file
and mechanism, ``CLAUDE.md -> AGENTS.md`` when that file is a link read where
it leads), whether its settings run ``cairn hook`` (``hooks``), and the
files that would wire it (aider may need two: its ``.aider.conf.yml`` and
``AGENTS.md``; one with a problem is shown refused, never as one it would
edit). ``cairn agents hooks AGENT [--file PATH | --user]`` proposes
the settings edit that makes the agent run ``cairn hook`` on its session events. ``cairn agents wire [AGENT...] [--json]`` makes one
proposal per file to edit (every agent in use, or the ones named), decided
with ``cairn accept`` / ``reject`` / ``undo`` like every memory edit; a file
that cannot be read (a link, a FIFO, too large) is reported with its code on
stderr and nothing is proposed for it (exit 1). Depends only on
:mod:`server.cli.support`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.server.cli.support import EXIT_OK, EXIT_PROBLEMS, emit_json, printable, run_job

WIRE = "wire"
HOOKS = "hooks"


def agents_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(action=None, agents=[], file=None, user=False)
    # actions are subcommands, so that their options go anywhere (`wire --json AGENT`, `wire -w DIR AGENT`:
    # an optional positional before a list took the action and nothing, leaving AGENT unrecognised)
    actions = p.add_subparsers(dest="action", metavar="{wire,hooks}")
    for name, what in ((WIRE, "propose the edits that make the agents read the memory"),
                       (HOOKS, "propose the settings edit that runs `cairn hook` on the agent's session events")):
        a = actions.add_parser(name, help=what, description=what, formatter_class=p.formatter_class)
        a.add_argument("agents", nargs="*", metavar="AGENT",
                       help="claude-code, codex, gemini-cli, copilot, cursor, cline, opencode, qwen-code, aider "
                            "(wire's default: every agent in use that does not read the memory)" if name == WIRE else
                            "claude-code, codex or gemini-cli")
        a.add_argument("-w", "--workspace", default=argparse.SUPPRESS, metavar="DIR",
                       help="workspace directory (default: .)")
        a.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")
        if name == HOOKS:
            a.add_argument("--file", metavar="PATH", help="the workspace settings file to edit (claude-code: "
                           ".claude/settings.local.json, the default, or .claude/settings.json)")
            a.add_argument("--user", action="store_true", help="the user's own settings (~/.claude/settings.json, "
                           "~/.gemini/settings.json) instead of the workspace's; codex: ~/.codex/config.toml, the "
                           "only place Codex reads `notify` from")


def _via(row: dict[str, Any]) -> str:
    via = row.get("via")
    if not via:
        return "-"
    link = f" -> {via['link']}" if via.get("link") else ""
    through = "".join(f" > {t}" for t in via.get("through") or ())
    return f"{via['file']}{link}{through} ({via['mechanism']})"


def _edits(row: dict[str, Any]) -> str:
    """What ``wire`` would do for a row not wired: the files it would edit, and those it refuses (a problem
    was found with them: a link it does not follow, a config it cannot edit), never edited."""
    refused = {p["file"]: p["code"] for p in row["problems"]}
    targets = row.get("targets") or ([row["target"]] if row.get("target") else [])
    edit = [t for t in targets if t not in refused]
    parts = [f"would edit {', '.join(edit)}"] if edit else []
    parts += [f"{t} refused ({refused[t]}, not edited)" for t in targets if t in refused]
    return "; ".join(parts) or "-"


def _listing(rows: list[dict[str, Any]]) -> None:
    if not rows:
        print("no coding agent found for this workspace (no session of one recorded here, none of their "
              "instruction files)")
        return
    print(f"{'AGENT':<12} {'SESSIONS':>8}  {'WIRED':<5}  {'HOOKS':<5}  VIA / WOULD EDIT")
    for r in rows:
        where = _via(r) if r["wired"] else _edits(r)
        print(f"{r['agent']:<12} {r['sessions']:>8}  {'yes' if r['wired'] else 'no':<5}  "
              f"{'yes' if r['hooks'] else 'no':<5}  {printable(where)}")
        for p in r["problems"]:
            print(f"    {p['code']}: {printable(p['message'])}")
    missing = sum(1 for r in rows if not r["wired"])
    if missing:
        print(f"{missing} agent(s) do not read the memory: `cairn agents wire` proposes the edits")


def _wired(ns: argparse.Namespace) -> int:
    r = run_job(ns, "agents-wire", {"agents": list(ns.agents)}).result
    if ns.json:
        emit_json(r)
    else:
        for p in r["proposals"]:
            print(f"{p['id']}  {printable(p['target'])} ({p['mechanism']}): {', '.join(p['agents'])}"
                  + ("" if p["new"] else "  (already proposed)"))
        if r["wired"]:
            print(f"already reading the memory: {', '.join(r['wired'])}")
        if r["proposals"]:
            print("see each with `cairn show ID`; `cairn accept ID...` applies them (`cairn undo ID` reverts)")
        elif not r["refused"] and not r["wired"]:
            print("nothing to wire: no coding agent found for this workspace")
    proposed = {a for p in r["proposals"] for a in p["agents"]}
    for f in r["refused"]:
        # an agent with another file proposed (aider: its config and AGENTS.md) is not wired by that one alone
        alone = [a for a in f["agents"] if a not in proposed]
        partly = [a for a in f["agents"] if a in proposed]
        said = ([f"{', '.join(alone)} not wired"] if alone else []) + (
            [f"{', '.join(partly)} not wired by the other proposal alone"] if partly else [])
        sys.stderr.write(f"cairn: {f['code']}: {printable(f['message'])} (nothing proposed for "
                         f"{printable(f['target'])}; {'; '.join(said)})\n")
    if r["proposals"] and not r["indexExists"]:
        sys.stderr.write(f"cairn: note: {r['index']} does not exist yet; the agents find it once the first "
                         "memory topic is accepted\n")
    return EXIT_PROBLEMS if r["refused"] else EXIT_OK


def _hooks(ns: argparse.Namespace) -> int:
    if len(ns.agents) != 1:
        raise CairnError(ErrorCode.USAGE, "name one agent after `hooks` (claude-code, gemini-cli, codex)")
    r = run_job(ns, "agents-hooks", {"agent": ns.agents[0], "file": ns.file, "user": bool(ns.user)}).result
    if ns.json:
        emit_json(r)
    elif r["proposal"] is None:
        print(f"{printable(r['target'])} already runs `{r['command']}`: nothing to propose")
    else:
        p = r["proposal"]
        print(f"{p['id']}  {printable(r['target'])}: runs `{r['command']}`" + ("" if p["new"] else "  (already proposed)"))
        print("see it with `cairn show ID`; `cairn accept ID` applies it (`cairn undo ID` reverts)")
    return EXIT_OK


def cmd_agents(ns: argparse.Namespace) -> int:
    if ns.action == WIRE:
        return _wired(ns)
    if ns.action == HOOKS:
        return _hooks(ns)
    if ns.file or ns.user:
        raise CairnError(ErrorCode.USAGE, "--file and --user go with `hooks`")
    if ns.agents:  # argparse takes a lone name as the action and refuses it; this is the safety net
        raise CairnError(ErrorCode.USAGE, "agent names go after `wire`")
    rows: list[dict[str, Any]] = run_job(ns, "agents").result["agents"]
    emit_json(rows) if ns.json else _listing(rows)
    return EXIT_OK
