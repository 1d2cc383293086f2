"""CLI commands about the workspace as a whole: doctor, cleanup, serve.

Contract: handlers take the parsed namespace and return an exit code
(:mod:`server.cli.support`); ``doctor`` exits 1 when it finds violations,
a memory topic file whose front matter does not parse or a memory index
past its budget (what agents load), and shows the provider in effect and whether it answers
(:func:`worker.settings.detect.check`: no session text is sent; a
provider that does not answer is said, not counted as a violation).
Depends only on :mod:`server.cli.support`.

Imports inside functions: ``cairn --help`` cold start, see :mod:`server.cli`.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from cairn.server.cli.support import (
    EXIT_OK,
    EXIT_PROBLEMS,
    budget_line,
    emit_json,
    indexes_over_budget,
    load_config,
    printable,
    refused_why,
    run_job,
    workspace_path,
)


def doctor_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the report as JSON")


def cmd_doctor(ns: argparse.Namespace) -> int:
    from cairn.state.doctor import check_workspace
    from cairn.state.fsdir import PinnedDir
    from cairn.worker.settings import config, detect
    from cairn.worker.settings.trust import trust_line

    with PinnedDir.open_root(workspace_path(ns)) as root:
        report = check_workspace(root)
    trust = trust_line(workspace_path(ns))
    settings = config.from_request(load_config(workspace_path(ns)))
    provider = detect.check(settings)
    broken = _broken_topics(workspace_path(ns))
    over = indexes_over_budget(workspace_path(ns), settings)
    if ns.json:
        emit_json({**report.to_json(), "trust": trust, "provider": provider.to_json(), "memory": broken,
                   "overBudget": over})
    else:
        print(f"scopes {report.scopes}, generations {report.generations}, bundles {report.bundles}")
        print(f"trust {trust}")
        print(f"provider {printable(provider.line())}")
        for v in report.violations:
            print(f"VIOLATION {v.code} {v.path}: {v.message}")
        for n in report.notes:
            print(f"note {n.code} {n.path}: {n.message}")
        for b in broken:
            print(f"memory {b['code']} {printable(b['path'])}: {b['why']}")
        for o in over:
            print(f"memory {printable(budget_line(o))}")
        problems = len(report.violations) + len(broken) + len(over)
        print("ok" if not problems else f"{problems} problem(s)" if broken or over
              else f"{len(report.violations)} violation(s)")
    return EXIT_PROBLEMS if report.violations or broken or over else EXIT_OK


def _broken_topics(ws: str) -> list[dict[str, str]]:
    """What of the workspace's memory cannot be read as memory: ``{code, path, why}`` of each topic file whose
    front matter does not parse, each ``*.md`` never read (a symlink, a FIFO, too large: silently missing
    from every listing and review before) and an index no review or remember can write through."""
    from cairn.protocol.errors import CairnError  # cold start: see the module docstring
    from cairn.worker.memory import model  # cold start: yaml loads only for `cairn doctor`

    rel = os.path.join(".agents", "memory")
    try:
        snap = model.read_root(Path(ws, rel), workspace=ws)
    except CairnError as exc:
        return [{"code": str(exc.code), "path": rel, "why": "the memory folder cannot be read"}]
    out = [{"code": str(t.error), "path": os.path.join(rel, name),
            "why": "its front matter is missing or invalid (agents read no name, description or type from it)"}
           for name, t in snap.topics.items() if t.error is not None]
    out += [{"code": str(code), "path": os.path.join(rel, name), "why": refused_why(code)}
            for name, code in sorted(snap.refused.items())]
    if model.INDEX_NAME not in snap.refused:
        try:
            snap.parsed_index()
        except CairnError as exc:
            out.append({"code": str(exc.code), "path": os.path.join(rel, model.INDEX_NAME),
                        "why": "the memory index cannot be read: no review or remember can write memory until "
                               "it is fixed by hand (UTF-8 text)"})
    return out



def cmd_cleanup(ns: argparse.Namespace) -> int:
    resp = run_job(ns, "cleanup")
    r = dict(resp.result, more=resp.more)
    if ns.json:
        emit_json(r)
    else:
        print(f"pruned {r['pairs']} claim pair(s), {r['groups']} content group(s), {r['evidence']} retired "
              f"evidence group(s), {r['temps']} stray temp(s), {r['expired']} expired digest(s); "
              + ("more remains: run `cairn cleanup` again" if resp.more else "nothing more to do"))
    return EXIT_OK


def serve_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio (loopback recommended)")
    p.add_argument("--stdio", action="store_true", help="speak LSP on stdin/stdout (the default)")


def cmd_serve(ns: argparse.Namespace) -> int:
    from cairn.server.lsp.serve import serve

    return serve(ns.tcp)
