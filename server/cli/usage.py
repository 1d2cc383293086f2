"""``cairn usage``: what provider requests cost, per UTC day, provider and model.

Reads the private usage records (:mod:`worker.providers.usage_report`) through the
``usage`` job. Human output: one line per day, provider and model, then a
total; ``--json`` prints the job's report as is (rows and total, every
count; ``cost`` is null without a price for the model).
"""

from __future__ import annotations

import argparse
from typing import Any

from cairn.server.cli.support import EXIT_OK, emit_json, json_flag, run_job


def usage_setup(p: argparse.ArgumentParser) -> None:
    json_flag(p)
    p.add_argument("--since", metavar="DATE", help="from this UTC day on: YYYY-MM-DD, today, or <N>d (last N days)")


def _tokens(r: dict[str, Any]) -> str:
    approx = "~" if r["estimated"] else ""
    return f"in {approx}{r['tokensIn']} out {approx}{r['tokensOut']}"


def _outcomes(r: dict[str, Any]) -> str:
    parts = [f"{r[k]} {k}" for k in ("failed", "timeout", "cancelled", "interrupted", "running") if r[k]]
    return f" ({', '.join(parts)})" if parts else ""


def _cost(r: dict[str, Any]) -> str:
    return "" if r["cost"] is None else f", cost {r['cost']:.4f}"


def cmd_usage(ns: argparse.Namespace) -> int:
    rep = run_job(ns, "usage", {"since": ns.since} if ns.since else {}).result
    if ns.json:
        emit_json(rep)
        return EXIT_OK
    if not rep["rows"]:
        print("(no provider requests recorded)")
        return EXIT_OK
    for r in rep["rows"]:
        print(f"{r['day']}  {r['provider']}/{r['model'] or '-'}  {r['requests']} request(s){_outcomes(r)}, "
              f"{_tokens(r)}, {r['seconds']:.1f} s{_cost(r)}")
    t = rep["total"]
    print(f"total  {t['requests']} request(s){_outcomes(t)}, {_tokens(t)}, {t['seconds']:.1f} s{_cost(t)}")
    if t["estimated"]:
        print("~ estimated: the provider did not report token counts (about 4 characters a token)")
    return EXIT_OK
