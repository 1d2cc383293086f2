"""CLI commands of memory consolidation: review, drain, proposals, show, accept, reject, unreject, undo,
history, memory.

Contract: handlers take the parsed namespace and return an exit code
(:mod:`server.cli.support`); fixed errors (a busy review claim, a stale
proposal, ...) propagate as ``CairnError`` to ``cli.main``. Proposals change
memory only through the checked worker jobs. Depends only on
:mod:`server.cli.support`.

Imports inside functions: ``cairn --help`` cold start, see :mod:`server.cli`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cairn.server.cli.support import (
    EXIT_ERROR,
    EXIT_INTERNAL,
    EXIT_OK,
    budget_line,
    emit_json,
    indexes_over_budget,
    json_flag,
    listing,
    printable,
    refused_why,
    run_job,
    run_result,
    unwritable,
    warn_skipped,
    workspace_path,
)

if TYPE_CHECKING:
    from cairn.protocol.results import ReviewJobResult


def review_line(r: ReviewJobResult, more: bool) -> str:
    """The one-line report of a review job's result."""
    if r.review:
        return (f"review {r.review}: {r.digests} digest(s)"
                + (f", {r.notes} working note(s)" if r.notes else "") + f", {r.proposals} proposal(s)"
                + (f", applied {len(r.applied)}" if r.applied else "")
                + ("; more digests wait: run `cairn drain`" if more else ""))
    also = []  # what the job did besides a general review: said, not "nothing to review" beside new proposals
    if r.recovered:
        also.append("an interrupted review's proposals were published")
    if r.focused:
        also.append(f"{r.focused} remembered text(s) reviewed (`cairn proposals` lists what they propose)")
    if also:
        return ("no digest to review" if not r.skipped else f"skipped: {r.skipped}") + "; " + "; ".join(also)
    return "nothing to review" if not r.skipped else f"skipped: {r.skipped}"


def warn_dropped(dropped: dict[str, int] | None) -> None:
    """What a remote review left out of the model's replies: one stderr line of counts (never the reply's text)."""
    if dropped:
        sys.stderr.write(f"cairn: warning: the review model's reply was taken in good part: "
                         f"{dropped.get('proposals', 0)} invalid proposal(s) and {dropped.get('references', 0)} "
                         "unknown digest reference(s) left out; the rest was reviewed\n")


def review_json(r: ReviewJobResult, more: bool) -> dict[str, Any]:
    """A review job's result as ``--json`` prints it: its fields and ``more``."""
    from cairn.protocol.codec import to_body

    return {**to_body(r), "more": more}


def cmd_review(ns: argparse.Namespace) -> int:
    from cairn.protocol.results import ReviewJobResult, read

    resp = run_job(ns, "review")
    r = read(ReviewJobResult, resp.result, job="review")
    emit_json(review_json(r, resp.more)) if ns.json else print(review_line(r, resp.more))
    for problem in r.notesProblems or ():  # a notes folder not read (a symlink, not a folder…)
        sys.stderr.write(f"cairn: {printable(problem)}\n")
    warn_skipped(r.skippedNotes)
    warn_dropped(r.droppedProposals)
    return EXIT_OK


def cmd_drain(ns: argparse.Namespace) -> int:
    from cairn.protocol.results import DrainResult, read

    reviews = proposals = 0
    skipped: dict[str, int] = {}
    while True:
        resp = run_job(ns, "drain")
        r = read(DrainResult, resp.result, job="drain")
        reviews += r.reviews
        proposals += r.proposals
        for code, n in (r.skippedNotes or {}).items():
            skipped[code] = skipped.get(code, 0) + n
        if not ns.json and sys.stderr.isatty():
            sys.stderr.write(f"\rreviews {reviews}, proposals {proposals}")
        if not resp.more:
            break
    if not ns.json and sys.stderr.isatty():
        sys.stderr.write("\n")
    totals: dict[str, Any] = {"reviews": reviews, "proposals": proposals, **({"skippedNotes": skipped} if skipped else {})}
    emit_json(totals) if ns.json else print(f"drained: {reviews} review(s), {proposals} proposal(s)")
    warn_skipped(skipped)
    return EXIT_OK


def proposal_rows(ns: argparse.Namespace) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = run_job(ns, "proposals").result["proposals"]
    return rows


def print_proposals(rows: list[dict[str, Any]], *, only_open: bool = False) -> None:
    shown = [r for r in rows if not only_open or r["state"] in ("pending", "stale")]
    if not shown:
        print("(no proposals)")
    for r in shown:
        print(f"{r['id']}  {r['state']:<8} {r['kind']:<11} {printable(r['target'])}  {printable(r['title'])}")


def cmd_proposals(ns: argparse.Namespace) -> int:
    rows = proposal_rows(ns)
    emit_json(rows) if ns.json else print_proposals(rows)
    return EXIT_OK


def one_id_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("id", metavar="ID")
    json_flag(p)


def cmd_show(ns: argparse.Namespace) -> int:
    r = run_job(ns, "proposal", {"id": ns.id}).result
    if ns.json:
        emit_json(r)
    else:
        print(f"# {r['id']} {r['kind']} {printable(r['target'])} [{r['state']}] {printable(r['title'])}")
        if r.get("reason"):
            print(f"# {printable(r['reason'])}")
        # lines keep their endings (a CRLF file's diff too); any other control character is shown escaped
        sys.stdout.write("\r\n".join(printable(part, keep="\n\t") for part in r["diff"].split("\r\n")))
    return EXIT_OK


def many_ids_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("ids", nargs="+", metavar="ID")
    json_flag(p)


def accept_setup(p: argparse.ArgumentParser) -> None:
    many_ids_setup(p)
    p.add_argument("--keep-both", action="store_true",
                   help="accept even where memory now says otherwise on the proposal's subject (both are kept)")


def _decision_line(d: Any) -> str:
    """What one decision says on stdout (``accept``, ``reject``, ``unreject``, ``undo``)."""
    line = f"{d.id}: {d.state}" + ("" if d.changed else " (already)")
    if getattr(d, "rebased", None):
        # applied to the file as other accepted proposals left it, not to the bytes it was shown against
        line += (f" (re-derived against {printable(', '.join(d.written or ()) or 'its file')} as "
                 f"{', '.join(d.rebased)} left it: `cairn show {d.id}` shows what was written)")
    return line


#: failures of the disk or the machine, not of one proposal: deciding several ids stops there
_STOPS = frozenset({"E_NO_SPACE", "E_IO_FAILED", "E_INTERNAL"})


def _each(ns: argparse.Namespace, ids: list[str], one: Callable[[str], Any],
          shape: Callable[[list[Any]], Any] | None = None) -> int:
    """Decide each id on its own, in order: every outcome is reported (a decision on stdout as a single one
    would print it, a refusal with its code on stderr, the others still decided); exit 0 only if none failed.

    One id is what it always was: a refusal is the command's error (``app.main`` says it, naming the folder
    an ``E_IO_FAILED`` could not write), ``--json`` prints ``shape`` of the decisions (default: the
    ``decisions`` list). Several ids with a refusal among them: ``--json`` prints the decisions and the
    ``errors`` (each ``id``, ``code``, ``message``), and each refusal is said on stderr too. A failure of the
    disk or the machine (``E_NO_SPACE``, ``E_IO_FAILED``, ``E_INTERNAL``) stops there: the ids after it are
    named, not decided (in the order given, as one command would have decided them)."""
    from cairn.protocol.codec import to_body
    from cairn.protocol.errors import CairnError, ErrorCode
    from cairn.protocol.results import Decisions
    from cairn.worker.redaction.redact import redact_text

    done: list[Any] = []
    failed: list[dict[str, str]] = []
    internal = False
    for pid in ids:
        try:
            d = one(pid)
        except CairnError as exc:
            if len(ids) == 1:
                raise
            internal |= exc.code is ErrorCode.INTERNAL
            message = redact_text(exc.message)
            where = unwritable(os.path.abspath(ns.workspace)) if exc.code is ErrorCode.IO_FAILED else None
            if where is not None and where.split(",", 1)[0] not in message:
                message = f"{message}: cannot write in {where}"  # as app.main says it of one id
            failed.append({"id": pid, "code": str(exc.code), "message": message})
            sys.stderr.write(f"cairn: {exc.code}: {printable(message)}\n")
            if exc.code in _STOPS:
                break  # the disk or the machine failed, not this proposal: the next ones would fail alike
            continue
        done.append(d)
        if not ns.json:
            print(_decision_line(d))
            sys.stdout.flush()  # each outcome as it is decided: a later one may take a while, or be interrupted
    if ns.json:
        if failed:
            emit_json({"decisions": [to_body(d) for d in done], "errors": failed})
        else:
            emit_json(shape(done) if shape is not None else Decisions(decisions=tuple(done)))
    if failed:
        left = ids[len(done) + len(failed):]
        sys.stderr.write(f"cairn: {len(done)} of {len(ids)} decided; {len(failed)} refused: "
                         f"{', '.join(f['id'] for f in failed)}"
                         + (f"; not decided, run the command again for them: {', '.join(left)}" if left else "")
                         + "\n")
    return EXIT_OK if not failed else EXIT_INTERNAL if internal else EXIT_ERROR


def _decide(ns: argparse.Namespace, job: str) -> int:
    from cairn.protocol.results import DecideArgs, Decisions

    keep = True if getattr(ns, "keep_both", False) else None
    ids = list(dict.fromkeys(ns.ids))
    every = tuple(ids) if len(ids) > 1 else None  # a killed auto review's promise of a later one waits for it

    def one(pid: str) -> Any:
        (d,) = run_result(ns, job, Decisions, DecideArgs(ids=(pid,), keepBoth=keep, deciding=every)).decisions
        return d

    return _each(ns, ids, one)


def cmd_accept(ns: argparse.Namespace) -> int:
    return _decide(ns, "accept")


def cmd_reject(ns: argparse.Namespace) -> int:
    return _decide(ns, "reject")


def _undo_order(ns: argparse.Namespace, ids: list[str]) -> list[str]:
    """``ids`` in reverse order of their applications (the latest applied first: what it wrote lies over what
    the earlier ones wrote); an id not applied keeps its place after them (its undo is refused as usual)."""
    if len(ids) < 2:
        return ids
    applied: dict[str, float] = {}
    for r in run_job(ns, "cockpit", {"view": "history"}).result["rows"]:
        if r["id"] in ids and r["state"] == "applied" and r["id"] not in applied:  # rows come newest first
            applied[r["id"]] = r["decided"]
    return (sorted((i for i in ids if i in applied), key=lambda i: -applied[i])
            + [i for i in ids if i not in applied])


def cmd_undo(ns: argparse.Namespace) -> int:
    from cairn.protocol.results import Decision, ProposalArgs

    ids = list(dict.fromkeys(ns.ids))
    # one id: the decision itself, as `cairn undo ID --json` always printed it
    return _each(ns, _undo_order(ns, ids), lambda pid: run_result(ns, "undo", Decision, ProposalArgs(id=pid)),
                 shape=(lambda done: done[0]) if len(ids) == 1 else None)


def cmd_unreject(ns: argparse.Namespace) -> int:
    return _decide(ns, "unreject")


def cmd_history(ns: argparse.Namespace) -> int:
    """The reflog of decisions, newest first: time, action, resulting state, id, title."""
    import time

    rows = run_job(ns, "cockpit", {"view": "history"}).result["rows"]

    def line(r: dict[str, Any]) -> str:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(r["decided"]))
        hint = ("  (undo: cairn undo ID)" if r["canUndo"] else "  (cairn unreject ID)" if r["canUnreject"]
                else "  (cairn accept ID again)" if r["canAccept"] else "")
        return (f"{when}  {r['action']:<8} {r['state']:<8} {r['id']}  {printable(r['title'])}"
                + hint.replace("ID", r["id"]))

    return listing(ns, rows, "(no decisions yet)", line)


def memory_setup(p: argparse.ArgumentParser) -> None:
    json_flag(p)
    # actions are subcommands, so that their options go anywhere (`retire --json TOPIC`: two optional
    # positionals would have taken `retire` and nothing, leaving TOPIC unrecognised)
    actions = p.add_subparsers(dest="action", metavar="{retire,confirm}")
    for name, what in (("retire", "propose the topic's retirement (accept, reject, undo as any proposal)"),
                       ("confirm", "the topic is still true (no longer due for revalidation)")):
        a = actions.add_parser(name, help=what, description=what, formatter_class=p.formatter_class)
        a.add_argument("topic", nargs="?", metavar="TOPIC",
                       help="a topic file as listed (or its file name alone, when one memory root has it)")
        # given before the action or after it: the parent's value stands unless given here
        a.add_argument("-w", "--workspace", default=argparse.SUPPRESS, metavar="DIR",
                       help="workspace directory (default: .)")
        a.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")


def _topic_arg(ns: argparse.Namespace) -> str:
    from cairn.protocol.errors import CairnError, ErrorCode

    if not ns.topic:
        raise CairnError(ErrorCode.USAGE, f"cairn memory {ns.action} TOPIC: name a topic file (`cairn memory` lists them)")
    # as typed: the worker looks a bare name up in every memory root (worker.memory.verify._one_topic)
    return str(ns.topic)


def cmd_memory(ns: argparse.Namespace) -> int:
    if ns.action is not None:
        return _topic_action(ns)
    rows = run_job(ns, "memory").result["topics"]
    def line(r: dict[str, Any]) -> str:
        if r.get("refused"):  # never read: a symlink, a FIFO, too large
            return printable(f"{r['file']}  {r['error']}: {refused_why(r['error'])}")
        if r.get("error"):  # a topic whose front matter the user broke: reported, never rewritten
            return printable(f"{r['file']}  {r['error']}: its front matter cannot be read; fix it by hand")
        age = r.get("age")
        ago = "today" if age == 0 else "1 day ago" if age == 1 else f"{age} days ago"
        fresh = (f"  [confirmed {r['confirmed']}, {ago}]" if r.get("confirmed") and age is not None
                 else f"  [confirmed {r['confirmed']}]" if r.get("confirmed") else "  [never confirmed]")
        stale = f"  STALE: {'; '.join(r['why'])}" if r.get("stale") and r.get("why") else ""
        due = "  (due for revalidation)" if r.get("due") and not stale else ""
        return printable(f"{r['file']}  ({r['type']})  {r['description']}{fresh}{stale}{due}")

    code = listing(ns, rows, "(no memory topics)", line)
    if not ns.json:  # agents miss what lies past the budget: said where the person looks at their memory
        for o in indexes_over_budget(workspace_path(ns)):
            sys.stderr.write(f"cairn: note: {printable(budget_line(o))}\n")
    return code


def _topic_action(ns: argparse.Namespace) -> int:
    from cairn.protocol.codec import to_body
    from cairn.protocol.results import TopicArgs, TopicConfirmed, TopicRetired

    args = to_body(TopicArgs(file=_topic_arg(ns)))
    if ns.action == "retire":
        r = run_result(ns, "memory-retire", TopicRetired, args)
        text = (f"proposed {r.proposal}: retire {r.file} (`cairn show {r.proposal}`, then accept or reject)"
                if r.new else f"{r.proposal} already proposes to retire {r.file} (`cairn show {r.proposal}`)")
        emit_json(to_body(r)) if ns.json else print(printable(text))
        return EXIT_OK
    c = run_result(ns, "memory-confirm", TopicConfirmed, args)
    emit_json(to_body(c)) if ns.json else print(printable(
        f"confirmed {c.file} still true on {c.confirmed}"
        + (f"; rejected its revalidation proposal {', '.join(c.rejected)}" if c.rejected else "")))
    return EXIT_OK
