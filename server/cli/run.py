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

Which sessions: the files named, the sessions discovery finds (``--all``),
or the shipped example session (``--example``, a made-up project's). With
none of them, the example is run only in a folder that holds nothing but
cairn's own ``.cairn`` and ``.agents`` (what ``cairn run -w "$(mktemp -d)"``
in the README's set-up gives): a bare ``cairn run`` in a project would put a
fictional service's session into its private journal and propose memories
about it, so there it is ``E_USAGE``, naming ``--all``, ``PATH...`` and
``--example``. Whenever the example is run, one line says so (on stderr
with ``--json``).

Ctrl-C: each stage's line is printed when the stage is done, so an
interrupted run keeps the lines it earned, then one stderr line says at
which stage it stopped and what goes on from there (exit 130); with
``--json``, the stages done and ``"interrupted": STAGE``. What was done is
kept: captured turns, sealed captures, published digests.

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

from cairn.protocol.errors import CairnError, ErrorCode
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
                   help="transcript files (or --all, or --example; with none of them, the example session is run "
                        "only in an empty folder)")
    p.add_argument("--format", default="auto", choices=("auto", *FORMATS))
    p.add_argument("--example", action="store_true",
                   help="run on the shipped example session, a made-up project's, to see what cairn does "
                        "(best in a scratch folder: cairn run --example -w \"$(mktemp -d)\")")
    add_import_all_flags(p)
    json_flag(p)


def example_session() -> str:
    return str(Path(__file__).resolve().parent.parent / "examples" / "demo-session.jsonl")


#: what a folder may hold for a bare ``cairn run`` to run the example in it: cairn's own folders
_CAIRN_OWN = frozenset({".cairn", ".agents"})


def _project_entries(ws: str) -> list[str]:
    """What ``ws`` holds besides cairn's own folders, sorted (empty: a scratch folder)."""
    try:
        return sorted(set(os.listdir(ws)) - _CAIRN_OWN)
    except OSError:  # a folder that cannot be listed may hold anything: never taken for an empty one
        return ["(a folder cairn cannot list)"]


def _example_or_refuse(ns: argparse.Namespace, ws: str) -> bool:
    """Whether this run is of the shipped example session: asked with ``--example``, or no PATH and no
    ``--all`` in an empty folder; no PATH and no ``--all`` in a folder with anything else in it (a project,
    a git repository) is ``E_USAGE``."""
    if ns.example:
        if ns.paths or ns.all:
            raise CairnError(ErrorCode.USAGE, "--example runs the shipped example session: give no PATH and no --all "
                                              "with it")
        return True
    if ns.paths or ns.all:
        return False
    held = _project_entries(ws)
    if not held:
        return True
    shown = ", ".join(held[:3]) + (", ..." if len(held) > 3 else "")
    raise CairnError(ErrorCode.USAGE, (
        f"no PATH and no --all, and {ws} is not an empty folder (it holds {shown}): `cairn run` runs the shipped "
        "example session only in an empty folder, never into a project's journal. Run this project's sessions "
        "with `cairn run --all`, or name transcript files: `cairn run PATH...`; to try the example, "
        "`cairn run --example -w \"$(mktemp -d)\"`"))


def _example_line(ws: str) -> str:
    return (f"running the shipped example session ({example_session()}), a made-up project's, in {ws}; "
            "`cairn run --all` runs your own sessions")


# the stages of a run, as an interrupted run names where it stopped
_STAGE_WORDS = {"import": "importing", "seal": "sealing", "digest": "digesting", "review": "reviewing",
                "report": "printing the report"}


def _go_on(ns: argparse.Namespace, ws: str, stage: str, example: bool) -> str:
    """What to run to go on from an interrupted ``stage``: the same run while captures may be open (it skips
    the turns captured and seals what it imported), then the digest and review commands."""
    import shlex  # cold start: only for an interrupted run

    here = [] if os.path.abspath(".") == ws else ["-w", ws]
    tail = " ".join(shlex.quote(a) for a in here)
    tail = f" {tail}" if tail else ""
    if stage in ("import", "seal"):
        if ns.all:
            what = all_args(ns)[:-2]  # --all and its flags, -w added below once
        elif example:
            what = ["--example"]
        else:
            what = [os.path.abspath(p) for p in ns.paths] + (["--format", ns.format] if ns.format != "auto" else [])
        return "cairn run " + printable(" ".join(shlex.quote(a) for a in what)) + printable(tail)
    if stage == "digest":
        return f"cairn process{printable(tail)} && cairn review{printable(tail)}"
    if stage == "review":
        return f"cairn review{printable(tail)}"
    return f"cairn journal{printable(tail)}; cairn proposals{printable(tail)}"


def _interrupted(ns: argparse.Namespace, ws: str, stage: str, example: bool, done: dict[str, Any]) -> int:
    """Ctrl-C: the stages done (``--json``: as an object), then one line saying where the run stopped and
    what goes on; exit 130."""
    if ns.json:
        emit_json({**done, "interrupted": stage})
    sys.stdout.flush()
    kept = ("everything before it is done and kept" if stage != "import"
            else "the turns captured so far are kept")
    nl = "\n" if sys.stderr.isatty() else ""  # after a progress bar's line
    sys.stderr.write(f"{nl}cairn: interrupted while {_STAGE_WORDS[stage]}; {kept}. "
                     f"Go on with: {_go_on(ns, ws, stage, example)}\n")
    return EXIT_INTERRUPTED


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


def _import_line(imp: ImportResult | SourcesImport) -> str:
    """The import stage's line: the breakdown by format counts files (sources, with ``--all``), said so."""
    from cairn.protocol.import_results import SourcesImport
    from cairn.server.cli.import_report import formats_said

    files = imp.sources if isinstance(imp, SourcesImport) else imp.files
    noun = "source(s)" if isinstance(imp, SourcesImport) else "file(s)"
    return (f"imported {imp.captured} new turn(s) from {imp.sessions} session(s) in {files} {noun}"
            f"{formats_said(imp.formats or ())}, {imp.skipped} already captured")


class _RunState:
    """Where a run is (the stage under way) and what it has to show for the stages done (``--json``)."""

    def __init__(self) -> None:
        self.stage = "import"
        self.done: dict[str, Any] = {}


def cmd_run(ns: argparse.Namespace) -> int:
    ws = workspace_path(ns)
    example = _example_or_refuse(ns, ws)
    if example:
        line = printable(_example_line(ws))
        if ns.json:
            sys.stderr.write(f"cairn: {line}\n")
        else:
            print(line)
    at = _RunState()
    try:
        return _run(ns, ws, example, at)
    except KeyboardInterrupt:  # a second Ctrl-C while saying so ends the command as any Ctrl-C does (app.main)
        return _interrupted(ns, ws, at.stage, example, at.done)


def _run(ns: argparse.Namespace, ws: str, example: bool, at: _RunState) -> int:
    from cairn.protocol.codec import to_body
    from cairn.protocol.import_results import ImportArgs, ImportResult, SealArgs, SealResult, SourcesImport
    from cairn.worker.journal.views import digest_json, public_digests

    human = not ns.json
    imp: ImportResult | SourcesImport
    if ns.all:
        imp = import_all(ns, show_bar=human and sys.stderr.isatty(), ended=True)  # run seals: session end
        report_failures(imp)
    else:
        paths = [example_session()] if example else [os.path.abspath(p) for p in ns.paths]
        imp = run_result(ns, "import", ImportResult, ImportArgs(paths=tuple(paths), format=ns.format, ended=True))
        report_malformed(imp.malformed)
    at.done["import"] = to_body(imp)
    if human:
        from cairn.server.cli.import_report import left_out_line

        print(_import_line(imp))
        if imp.empty:
            print(f"{imp.empty} file(s) with nothing complete yet (no prompt answered)")
        left = left_out_line(imp.left_out) if isinstance(imp, SourcesImport) else None
        if left:
            print(left)
    if imp.interrupted:  # Ctrl-C at a batch boundary: what was captured is kept; nothing is digested on the way out
        return _interrupted(ns, ws, "import", example, at.done)

    at.stage = "seal"
    sealed: list[str] = []
    for sid in imp.session_ids:
        sealed += run_result(ns, "seal", SealResult, SealArgs(session_id=sid, trigger="session-end")).sealed
    at.done["sealed"] = sealed
    if human:
        print(f"sealed {len(sealed)} capture(s)")

    at.stage = "digest"
    counts = process_workspace(ws)
    at.done["process"] = to_body(counts)
    if human:
        print_process(counts, prefix="digests: ")

    at.stage = "review"
    digests, _ = public_digests(ws)
    mine = [d for d in digests if d.session_id in set(imp.session_ids)]
    review = _review(ns)
    at.stage = "report"
    rows = [r for r in proposal_rows(ns) if r["state"] in ("pending", "stale")]
    if ns.json:
        emit_json({**at.done, "digests": [digest_json(d) for d in mine], "review": review.to_json(), "proposals": rows})
    else:
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
