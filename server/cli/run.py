"""``cairn run``: import, seal (session-end), digest, review; then the journal and open proposals.

Contract: the report names each stage's result, one line each: turns
imported, captures sealed, the digest pass (with a line per failed attempt:
code, reason, attempt n/3, when the next may run), and the review: done,
nothing to review, left to another process, or failed. When the embedded
engine wrote this run's digests, one line says so and points to ``cairn setup``.

Another process holding the review claim (``E_CLAIM_BUSY``: a language
server or a second ``cairn run`` reviewing right now) is not a failure of
this run: its import, seal and digests are done and durable, and those
digests stay unreviewed until a review takes them, that process's or the
next one. So the run exits 0 and says so; ``--json`` carries
``"review": {"review": null, "skipped": "busy", "error": "E_CLAIM_BUSY", ...}``
for scripts that care. A distinct exit code was not chosen: hooks that call
``cairn run`` at every session end would each have to learn to treat it as
success. A review that *fails* (any other code) exits 1 after the report.

Depends on :mod:`server.cli.support`, the journal and memory command
modules (for their printers) and :mod:`server.cli.sources` (``--all``),
never on ``cli`` or the table.

Imports inside functions: ``cairn --help`` cold start, see :mod:`server.cli`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from cairn.protocol.errors import ErrorCode
from cairn.server.cli.journal import print_journal, print_process, process_failed, process_workspace
from cairn.server.cli.memory import print_proposals, proposal_rows, review_json, review_line
from cairn.server.cli.sources import add_import_all_flags, all_args, import_all, report_failures
from cairn.server.cli.support import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PROBLEMS,
    call,
    emit_json,
    json_flag,
    printable,
    report_malformed,
    run_result,
    warn_skipped,
    workspace_path,
)
from cairn.worker.ingest.importers import FORMATS

if TYPE_CHECKING:
    from cairn.protocol.import_results import ImportResult, SourcesImport
    from cairn.protocol.results import ReviewJobResult


# said once per run, only when the embedded engine wrote this run's digests (no model configured)
EMBEDDED_LINE = ("digests written by the embedded engine, which keeps only what it is sure of; "
                 "`cairn setup` connects a model for better recall")


def run_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="transcript files (default: the shipped example session; --all: the sessions found)")
    p.add_argument("--format", default="auto", choices=("auto", *FORMATS))
    add_import_all_flags(p)
    json_flag(p)


def example_session() -> str:
    return str(Path(__file__).resolve().parent.parent / "examples" / "demo-session.jsonl")


class ReviewStage(NamedTuple):
    """The review stage of a run: the job's result, or why it did not run (``busy``, ``failed``) with the code."""

    result: ReviewJobResult | None
    more: bool = False
    skipped: str = ""  # busy | failed, when ``result`` is None
    error: str = ""
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        if self.result is not None:
            return review_json(self.result, self.more)
        return {"review": None, "skipped": self.skipped, "error": self.error, "message": self.message}


def _review(ns: argparse.Namespace) -> ReviewStage:
    from cairn.protocol.results import ReviewJobResult, read

    resp = call(ns, "review")
    if resp.status == "ok":
        return ReviewStage(read(ReviewJobResult, resp.result, job="review"), resp.more)
    busy = resp.status == "busy" or resp.error == str(ErrorCode.CLAIM_BUSY)
    return ReviewStage(None, skipped="busy" if busy else "failed", error=resp.error or str(ErrorCode.INTERNAL),
                       message=resp.message or "")


def _review_report(r: ReviewStage) -> str:
    if r.skipped == "busy":
        return ("review: left to another process, which holds the review claim "
                f"({r.error}: {printable(r.message)}); digests it does not take wait for the next `cairn review`")
    if r.result is None:
        return f"review: failed: {r.error}: {printable(r.message)}"
    line = review_line(r.result, r.more)
    return line if r.result.review else f"review: {line}"


def cmd_run(ns: argparse.Namespace) -> int:
    from cairn.protocol.codec import to_body
    from cairn.protocol.import_results import ImportArgs, ImportResult, SealArgs, SealResult, SourcesImport
    from cairn.worker.journal.views import digest_json, public_digests

    ws = workspace_path(ns)
    imp: ImportResult | SourcesImport
    if ns.all:
        imp = import_all(ns, show_bar=not ns.json and sys.stderr.isatty(), ended=True)  # run seals: session end
        report_failures(imp)
        if imp.interrupted:  # Ctrl-C: what was captured is kept; nothing is digested on the way out
            from cairn.server.cli.import_run import resume_hint  # cold start: module docstring

            sys.stderr.write(resume_hint(all_args(ns), imp.captured) + "\n")
            return EXIT_INTERRUPTED
    else:
        paths = [os.path.abspath(p) for p in ns.paths] or [example_session()]
        imp = run_result(ns, "import", ImportResult, ImportArgs(paths=tuple(paths), format=ns.format, ended=True))
        report_malformed(imp.malformed)
    sealed: list[str] = []
    for sid in imp.session_ids:
        sealed += run_result(ns, "seal", SealResult, SealArgs(session_id=sid, trigger="session-end")).sealed
    counts = process_workspace(ws)
    digests, _ = public_digests(ws)
    mine = [d for d in digests if d.session_id in set(imp.session_ids)]
    review = _review(ns)
    rows = [r for r in proposal_rows(ns) if r["state"] in ("pending", "stale")]
    if ns.json:
        emit_json({"import": to_body(imp), "sealed": sealed, "process": to_body(counts),
                   "digests": [digest_json(d) for d in mine], "review": review.to_json(), "proposals": rows})
    else:
        from cairn.server.cli.import_report import formats_said, left_out_line

        print(f"imported {imp.captured} new turn(s) from {imp.sessions} session(s){formats_said(imp.formats or ())}, "
              f"{imp.skipped} already captured")
        if imp.empty:
            print(f"{imp.empty} file(s) with nothing complete yet (no prompt answered)")
        left = left_out_line(imp.left_out) if isinstance(imp, SourcesImport) else None
        if left:
            print(left)
        print(f"sealed {len(sealed)} capture(s)")
        print_process(counts, prefix="digests: ")
        print(_review_report(review))
        warn_skipped(review.result.skippedNotes if review.result else None)
        if (counts.published or counts.all_none) and any(d.provider == "extractive" for d in mine):
            print(EMBEDDED_LINE)
        print()
        print_journal(mine)
        print("Pending proposals (`cairn show ID`, `cairn accept ID`, `cairn reject ID`):")
        print_proposals(rows)
    failed = process_failed(counts) or review.skipped == "failed" or bool(imp.failed)
    return EXIT_PROBLEMS if failed else EXIT_OK
