"""CLI command ``verify``: recheck every memory citation against the working tree.

Contract: the handler takes the parsed namespace and returns an exit code
(:mod:`server.cli.support`): 0 when nothing is stale, 1 when an entry is
stale, unverifiable or has a broken front matter, or an index is past its
budget (each listed on its own line). Marks go to private state and stale entries get proposals through
the worker's ``verify`` job; no topic is rewritten. Depends only on
:mod:`server.cli.support`.
"""

from __future__ import annotations

import argparse
from typing import Any

from cairn.server.cli.support import (
    EXIT_OK,
    EXIT_PROBLEMS,
    budget_line,
    emit_json,
    json_flag,
    printable,
    run_job,
)


def verify_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dry-run", action="store_true", help="check and mark only; propose nothing")
    json_flag(p)


def _lines(r: dict[str, Any]) -> list[str]:
    out = []
    for t in r["topics"]:
        if "error" in t:
            out.append(f"{t['file']}: front matter not read ({t['error']}); left as it is")
            continue
        for c in t["citations"]:
            where = c["path"] + (f" target {c['target']}" if c.get("target") else "")
            if c["verdict"] == "stale":
                out.append(f"{t['file']}: stale: {c.get('reason', '')}")
            elif c["verdict"] == "unverifiable":
                out.append(f"{t['file']}: unverifiable {c.get('code')}: {where or c.get('reason', '')}")
        if t.get("aged"):
            out.append(f"{t['file']}: not confirmed since {t.get('confirmed')}")
    for i in r.get("instructions") or []:
        out += [f"{i['file']}:{i['line']}: stale: {why}" for why in i["why"]]
    # a note, not a problem: a CLAUDE.md linked to AGENTS.md is a common setup (agents follow the link)
    out += [f"{f['file']}: not checked ({f['code']}): cairn never follows or reads it; agents may still load it"
            for f in r.get("instructionRefused") or []]
    out += [budget_line(o) for o in r.get("overBudget") or []]
    return [printable(line) for line in out]



def cmd_verify(ns: argparse.Namespace) -> int:
    r: dict[str, Any] = run_job(ns, "verify", {"dryRun": bool(ns.dry_run)}).result
    problems = (r["stale"] or r["unverifiable"] or r["broken"] or any(t.get("aged") for t in r["topics"])
                or r.get("instructions") or r.get("overBudget"))
    if ns.json:
        emit_json(r)
    else:
        for line in _lines(r):
            print(line)
        # each thing that makes the exit 1 is counted here, not only listed above
        due = sum(1 for t in r["topics"] if t.get("aged"))
        print(f"verified {r['checked']} topic(s): {r['stale']} stale, {r['unverifiable']} unverifiable "
              f"citation(s), "
              + (f"{r['broken']} unreadable, " if r["broken"] else "")
              + (f"{due} due for revalidation, " if due else "")
              + (f"{len(r['overBudget'])} index(es) past budget, " if r.get("overBudget") else "")
              + f"{len(r['proposals'])} proposal(s)"
              + (f" (review {r['review']}: `cairn proposals`)" if r.get("review") else "")
              + (f"; {len(r.get('instructions') or [])} stale line(s) in {len(r['instructionFiles'])} instruction "
                 "file(s)" if r.get("instructionFiles") else ""))
    return EXIT_PROBLEMS if problems else EXIT_OK
