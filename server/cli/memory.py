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
import sys
from typing import TYPE_CHECKING, Any

from cairn.server.cli.support import (
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


def _decide(ns: argparse.Namespace, job: str) -> int:
    from cairn.protocol.results import DecideArgs, Decisions

    keep = True if getattr(ns, "keep_both", False) else None
    r = run_result(ns, job, Decisions, DecideArgs(ids=tuple(ns.ids), keepBoth=keep))
    if ns.json:
        emit_json(r)
    else:
        for d in r.decisions:
            print(f"{d.id}: {d.state}" + ("" if d.changed else " (already)"))
    return EXIT_OK


def cmd_accept(ns: argparse.Namespace) -> int:
    return _decide(ns, "accept")


def cmd_reject(ns: argparse.Namespace) -> int:
    return _decide(ns, "reject")


def cmd_undo(ns: argparse.Namespace) -> int:
    from cairn.protocol.results import Decision, ProposalArgs

    r = run_result(ns, "undo", Decision, ProposalArgs(id=ns.id))
    emit_json(r) if ns.json else print(f"{r.id}: {r.state}")
    return EXIT_OK


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
