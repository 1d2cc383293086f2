"""Registrations of the CLI subcommands beyond ``doctor``.

Commands run their jobs in this process through the same job functions the
workers run (``worker.entry.run_request``), under the same claims: a CLI
command and a background worker can never both own one piece of work.
Imports stay inside the commands so ``cairn --help`` starts fast.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.server.cli import args, command, emit_json, workspace_path
from cairn.worker.redact import redact_text

TRIGGERS = ("compaction", "clear", "session-end", "idle")


def _config(ws: str) -> dict[str, Any]:
    from cairn.worker import config

    settings, warnings = config.load(ws)
    for w in config.unreported(warnings):
        sys.stderr.write(f"cairn: {redact_text(w)}\n")
    return config.to_dict(settings)


def _listing(ns: argparse.Namespace, rows: list[dict[str, Any]], empty: str,
             line: Callable[[dict[str, Any]], str]) -> int:
    """Print ``rows``: a JSON array with ``--json``, else one line each (``empty`` when none)."""
    if ns.json:
        emit_json(rows)
        return 0
    if not rows:
        print(empty)
    for r in rows:
        print(line(r))
    return 0


def _run(ns: argparse.Namespace, job: str, job_args: dict[str, Any] | None = None) -> Any:
    from cairn.protocol.worker import WorkerRequest
    from cairn.worker.entry import run_request

    ws = workspace_path(ns)
    resp = run_request(WorkerRequest(job=job, workspace=ws, args=job_args or {}, config=_config(ws)))
    if resp.status != "ok":
        err = resp.error
        code = (ErrorCode(err) if err is not None and err in ErrorCode._value2member_map_
                else ErrorCode.INTERNAL)
        raise CairnError(code, resp.message or str(resp.status))
    return resp


def _json_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")


# -- import / seal / process --------------------------------------------------

def _import_setup(p: argparse.ArgumentParser) -> None:
    from cairn.worker.importers import FORMATS

    p.add_argument("paths", nargs="+", metavar="PATH", help="transcript files")
    p.add_argument("--format", default="auto", choices=("auto", *FORMATS))
    _json_flag(p)


@command("import", "capture the completed turns of transcript files (idempotent)")
@args(_import_setup)
def cmd_import(ns: argparse.Namespace) -> int:
    import os

    paths = [os.path.abspath(p) for p in ns.paths]
    r = _run(ns, "import", {"paths": paths, "format": ns.format}).result
    for bad in r.get("malformed", []):  # lines left out; the rest of each file was imported
        sys.stderr.write(f"cairn: {bad['file']}: {bad['code']} {bad['message']}\n")
    if ns.json:
        emit_json(r)
    else:
        print(f"imported {r['files']} file(s), {r['sessions']} session(s): "
              f"{r['captured']} new turn(s), {r['skipped']} already captured")
    return 0


def _seal_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("--session", help="seal one session (default: every open session)")
    p.add_argument("--trigger", default="session-end", choices=TRIGGERS)
    _json_flag(p)


@command("seal", "seal open captures so they can be digested")
@args(_seal_setup)
def cmd_seal(ns: argparse.Namespace) -> int:
    args_ = {"trigger": ns.trigger}
    if ns.session:
        args_["session_id"] = ns.session
    r = _run(ns, "seal", args_).result
    if ns.json:
        emit_json(r)
    else:
        print(f"sealed {len(r['sealed'])} capture(s)")
    return 0


class _Progress:
    """A one-line progress bar on a terminal; silent otherwise."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()

    def __call__(self, i: int, n: int, cid: str) -> None:
        if not self.tty or n == 0:
            return
        width = 30
        fill = int(width * i / n)
        sys.stderr.write(f"\r[{'#' * fill}{'.' * (width - fill)}] {i}/{n} {cid[:24]:<24}")
        if i >= n:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _process(ws: str) -> dict[str, Any]:
    from cairn.worker.config import from_request
    from cairn.worker.journal.digest import process
    from cairn.worker.journal.store import Journal

    settings = from_request(_config(ws))
    with Journal(ws) as j:
        counts, _ = process(j, progress=_Progress(), settings=settings)
    return counts


@command("process", "run recovery and digest work until nothing is runnable")
@args(_json_flag)
def cmd_process(ns: argparse.Namespace) -> int:
    counts = _process(workspace_path(ns))
    if ns.json:
        emit_json(counts)
    else:
        print(_summary(counts))
    return 1 if counts["failed"] or counts["exhausted"] else 0


def _summary(c: dict[str, Any]) -> str:
    s = (f"published {c['published']}, all-none {c['all_none']}, recovered {c['recovered']}, "
         f"failed {c['failed']}, busy {c['busy']}, remaining {c['remaining']}")
    if c["exhausted"]:
        s += f"; exhausted: {', '.join(c['exhausted'])} (use `cairn retry ID` or `cairn discard ID`)"
    return s


# -- views ----------------------------------------------------------------

def _journal_setup(p: argparse.ArgumentParser) -> None:
    _json_flag(p)
    p.add_argument("--fresh", action="store_true", help="reread every entry (ignore the attribute cache)")


def print_journal(digests: list[Any]) -> None:
    if not digests:
        print("(no digests yet)")
    for d in digests:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(d.created))
        print(f"## {when}  {d.title or d.session_id}  [{d.trigger}]  {d.id}")
        for n in d.notes:
            print(f"- ({n.type}) {n.title}  <- {', '.join(t[:12] for t in n.turn_ids)}")
        print()


@command("journal", "list public digests")
@args(_journal_setup)
def cmd_journal(ns: argparse.Namespace) -> int:
    from cairn.worker.journal.views import digest_json, public_digests

    digests, bad = public_digests(workspace_path(ns), fresh=ns.fresh)
    for b in bad:
        sys.stderr.write(f"cairn: invalid public entry {b}\n")
    if ns.json:
        emit_json([digest_json(d) for d in digests])
    else:
        print_journal(digests)
    return 1 if bad else 0


@command("jobs", "list captures and their states (open, pending, running, retry-waiting, exhausted, published, all-none, discarded)")
@args(_json_flag)
def cmd_jobs(ns: argparse.Namespace) -> int:
    from cairn.worker.journal.views import capture_rows

    rows = capture_rows(workspace_path(ns))
    return _listing(ns, rows, "(no captures)",
                    lambda r: f"{r['capture']}  {r['state']:<13} turns {r['turns']:<4} attempts {r['attempts']}")


def _id_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", metavar="ID", help="capture id (or an unambiguous prefix)")
    _json_flag(p)


@command("retry", "give an exhausted capture three more automatic attempts")
@args(_id_setup)
def cmd_retry(ns: argparse.Namespace) -> int:
    r = _run(ns, "retry", {"capture": ns.id}).result
    emit_json(r) if ns.json else print(f"{r['capture']}: {r['state']}")
    return 0


@command("discard", "accept an omission for a capture: covered and retired, nothing published")
@args(_id_setup)
def cmd_discard(ns: argparse.Namespace) -> int:
    r = _run(ns, "discard", {"capture": ns.id}).result
    emit_json(r) if ns.json else print(f"{r['capture']}: {r['state']}")
    return 0


@command("cleanup", "run one bounded cleanup batch and say whether more remains")
@args(_json_flag)
def cmd_cleanup(ns: argparse.Namespace) -> int:
    resp = _run(ns, "cleanup")
    r = dict(resp.result, more=resp.more)
    if ns.json:
        emit_json(r)
    else:
        print(f"pruned {r['pairs']} claim pair(s), {r['groups']} content group(s), {r['evidence']} retired "
              f"evidence group(s), {r['temps']} stray temp(s), {r['expired']} expired digest(s); "
              + ("more remains: run `cairn cleanup` again" if resp.more else "nothing more to do"))
    return 0


# -- the main job -------------------------------------------------------------

def _run_setup(p: argparse.ArgumentParser) -> None:
    from cairn.worker.importers import FORMATS

    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="transcript files (default: the shipped example session)")
    p.add_argument("--format", default="auto", choices=("auto", *FORMATS))
    _json_flag(p)


@command("run", "import transcripts, seal (session-end), digest, review; print the journal and pending proposals")
@args(_run_setup)
def cmd_run(ns: argparse.Namespace) -> int:
    import os

    from cairn.worker.journal.views import digest_json, public_digests

    ws = workspace_path(ns)
    paths = [os.path.abspath(p) for p in ns.paths] or [_example()]
    imp = _run(ns, "import", {"paths": paths, "format": ns.format}).result
    sealed = []
    for sid in imp["session_ids"]:
        sealed += _run(ns, "seal", {"session_id": sid, "trigger": "session-end"}).result["sealed"]
    counts = _process(ws)
    digests, _ = public_digests(ws)
    mine = [d for d in digests if d.session_id in set(imp["session_ids"])]
    review = _run(ns, "review")
    rows = [r for r in _proposal_rows(ns) if r["state"] in ("pending", "stale")]
    if ns.json:
        emit_json({"import": imp, "sealed": sealed, "process": counts, "digests": [digest_json(d) for d in mine],
                   "review": review.result, "proposals": rows})
    else:
        print(f"imported {imp['captured']} new turn(s) from {imp['sessions']} session(s); sealed {len(sealed)}; "
              + _summary(counts))
        print()
        print_journal(mine)
        print("Pending proposals (`cairn show ID`, `cairn accept ID`, `cairn reject ID`):")
        print_proposals(rows)
    return 1 if counts["failed"] or counts["exhausted"] else 0


def _example() -> str:
    from pathlib import Path

    return str(Path(__file__).resolve().parent / "examples" / "demo-session.jsonl")


# -- memory consolidation -------------------------------------------------------

def _review_result(ns: argparse.Namespace, job: str) -> Any:
    return _run(ns, job)


@command("review", "run one general review of unreviewed digests against the memory")
@args(_json_flag)
def cmd_review(ns: argparse.Namespace) -> int:
    resp = _run(ns, "review")
    r = dict(resp.result, more=resp.more)
    if ns.json:
        emit_json(r)
    elif r.get("review"):
        print(f"review {r['review']}: {r['digests']} digest(s), {r['proposals']} proposal(s)"
              + (f", applied {len(r['applied'])}" if r.get("applied") else "")
              + ("; more digests wait: run `cairn drain`" if resp.more else ""))
    else:
        print("nothing to review" if not r.get("skipped") else f"skipped: {r['skipped']}")
    return 0


@command("drain", "review the whole backlog in successive bounded reviews (bypasses the automatic cap)")
@args(_json_flag)
def cmd_drain(ns: argparse.Namespace) -> int:
    reviews = proposals = 0
    while True:
        resp = _run(ns, "drain")
        reviews += resp.result["reviews"]
        proposals += resp.result["proposals"]
        if not ns.json and sys.stderr.isatty():
            sys.stderr.write(f"\rreviews {reviews}, proposals {proposals}")
        if not resp.more:
            break
    if not ns.json and sys.stderr.isatty():
        sys.stderr.write("\n")
    r = {"reviews": reviews, "proposals": proposals}
    emit_json(r) if ns.json else print(f"drained: {reviews} review(s), {proposals} proposal(s)")
    return 0


def _proposal_rows(ns: argparse.Namespace) -> list[dict[str, Any]]:
    return _run(ns, "proposals").result["proposals"]


def print_proposals(rows: list[dict[str, Any]], *, only_open: bool = False) -> None:
    shown = [r for r in rows if not only_open or r["state"] in ("pending", "stale")]
    if not shown:
        print("(no proposals)")
    for r in shown:
        print(f"{r['id']}  {r['state']:<8} {r['kind']:<11} {r['target']}  {r['title']}")


@command("proposals", "list proposals: id, kind, target, state (pending/stale/applied/rejected/undone)")
@args(_json_flag)
def cmd_proposals(ns: argparse.Namespace) -> int:
    rows = _proposal_rows(ns)
    emit_json(rows) if ns.json else print_proposals(rows)
    return 0


def _one_id(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", metavar="ID")
    _json_flag(p)


@command("show", "show a proposal as a unified diff")
@args(_one_id)
def cmd_show(ns: argparse.Namespace) -> int:
    r = _run(ns, "proposal", {"id": ns.id}).result
    if ns.json:
        emit_json(r)
    else:
        print(f"# {r['id']} {r['kind']} {r['target']} [{r['state']}] {r['title']}")
        if r.get("reason"):
            print(f"# {r['reason']}")
        sys.stdout.write(r["diff"])
    return 0


def _many_ids(p: argparse.ArgumentParser) -> None:
    p.add_argument("ids", nargs="+", metavar="ID")
    _json_flag(p)


def _decide(ns: argparse.Namespace, job: str) -> int:
    r = _run(ns, job, {"ids": ns.ids}).result
    if ns.json:
        emit_json(r)
    else:
        for d in r["decisions"]:
            print(f"{d['id']}: {d['state']}" + ("" if d.get("changed", True) else " (already)"))
    return 0


@command("accept", "apply proposals through the checked path")
@args(_many_ids)
def cmd_accept(ns: argparse.Namespace) -> int:
    return _decide(ns, "accept")


@command("reject", "reject proposals (remembered: later reviews will not propose them again)")
@args(_many_ids)
def cmd_reject(ns: argparse.Namespace) -> int:
    return _decide(ns, "reject")


@command("undo", "undo an applied proposal (refused if the files changed since)")
@args(_one_id)
def cmd_undo(ns: argparse.Namespace) -> int:
    r = _run(ns, "undo", {"id": ns.id}).result
    emit_json(r) if ns.json else print(f"{r['id']}: {r['state']}")
    return 0


@command("memory", "list memory topics with their type and description")
@args(_json_flag)
def cmd_memory(ns: argparse.Namespace) -> int:
    rows = _run(ns, "memory").result["topics"]
    return _listing(ns, rows, "(no memory topics)", lambda r: f"{r['file']}  ({r['type']})  {r['description']}")


# ---------------------------------------------------------------- serve (language server)

def _serve_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio (loopback recommended)")
    p.add_argument("--stdio", action="store_true", help="speak LSP on stdin/stdout (the default)")


@command("serve", "run the cairn language server (stdio by default)")
@args(_serve_setup)
def cmd_serve(ns: argparse.Namespace) -> int:
    from cairn.server.serve import serve

    return serve(ns.tcp)
