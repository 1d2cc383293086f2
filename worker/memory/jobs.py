"""Worker jobs of memory consolidation (see :mod:`worker.entry`).

Imports inside functions: the review jobs import the review machinery
(:mod:`.review`, :mod:`.focused`: drafts, engines, notes, the journal's
views) when they run, so the decision and listing jobs of this module
(accept, reject, unreject, undo, proposals, cockpit) start without it. Measured with
``python -X importtime``: 68 ms more for each of those jobs with them at the top.
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

from cairn.protocol import codec
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.results import (
    AcceptEditedArgs,
    DecideArgs,
    Decision,
    Decisions,
    DrainResult,
    ProposalArgs,
    ReviewArgs,
    ReviewJobResult,
    TopicArgs,
    TopicConfirmed,
    TopicRetired,
    read,
)
from cairn.protocol.settings import Settings
from cairn.protocol.vocab import ProposalState
from cairn.protocol.worker import WorkerRequest
from cairn.worker.memory import apply, edited
from cairn.worker.memory.store import MemoryStore
from cairn.worker.memory.views import cockpit, memory_rows, proposal, proposal_rows
from cairn.worker.settings import config


def _settings(req: WorkerRequest) -> Settings:
    return config.from_request(req.config)


def _store(req: WorkerRequest) -> MemoryStore:
    return MemoryStore(req.workspace, _settings(req))


def job_review(req: WorkerRequest) -> tuple[ReviewJobResult, bool]:
    # the review machinery loads with the review jobs only: module docstring
    from cairn.worker.memory.focused import (
        focused_review,
        pending,
        recover_focused,
        run_focused,
        stale_requests,
    )
    from cairn.worker.memory.review import general_review, skipped_report

    automatic = read(ReviewArgs, req.args, job=req.job).automatic
    with _store(req) as ms:
        recovered = apply.recover(ms)
        result, more = general_review(ms, automatic=automatic)
        # a remembered text whose focused review was interrupted is reviewed here (never capped)
        recover_focused(ms)
        focused: dict[str, Any] = run_focused(ms) if pending(ms) else {"reviews": 0}
        if not automatic and (again := stale_requests(ms)):
            # remembered texts whose proposals all went stale (their files changed since): reviewed once more,
            # against the files as they are now, so an explicit review proposes them again
            r, _ = focused_review(ms, again=tuple(again))
            if r.get("review"):
                focused = {**focused, "reviews": focused["reviews"] + 1,
                           "skippedNotes": dict(Counter(focused.get("skippedNotes", {}))
                                                + Counter(r.get("skippedNotes", {})))}
        skipped = Counter(result.skippedNotes or {}) + Counter(focused.get("skippedNotes", {}))
        return codec.evolve(result, writes=recovered, focused=focused["reviews"],
                            skippedNotes=skipped_report(skipped)), more


def job_drain(req: WorkerRequest) -> tuple[DrainResult, bool]:
    """One bounded review per call: the caller repeats while ``more`` (yielding between batches)."""
    from cairn.worker.memory.review import general_review  # as in job_review

    with _store(req) as ms:
        apply.recover(ms)  # like every review: a killed one's promised applications are kept first
        result, more = general_review(ms, automatic=False)
        return DrainResult(reviews=1 if result.review else 0, proposals=result.proposals or 0,
                           skippedNotes=result.skippedNotes), more


def _decide(req: WorkerRequest, fn_name: str) -> Decisions:
    args = read(DecideArgs, req.args, job=req.job)
    ids = args.ids
    fn = getattr(apply, fn_name)
    if fn_name == "accept" and args.keepBoth:
        fn = functools.partial(apply.accept, keep_both=True)
    if not ids:
        raise CairnError(ErrorCode.USAGE, "ids: a non-empty list of proposal ids is required")
    out = []
    with _store(req) as ms:
        apply.recover(ms, deciding=tuple(dict.fromkeys((*ids, *(args.deciding or ())))))
        for pid in ids:
            out.append(fn(ms, pid))
        if fn_name == "accept":
            _confirm_accepted(ms, out)
    return Decisions(decisions=tuple(out))


def _confirm_accepted(ms: MemoryStore, decided: list[Decision]) -> None:
    """The topics an accepted proposal writes are confirmed today (:func:`verify.confirm_accepted`): the user
    read them and said yes. Accepted again (already applied), they are confirmed again; a mark that cannot be
    written is reported like any step after the decision (the files stay written), and the retry confirms."""
    written = [f.path for d in decided if d.state is ProposalState.APPLIED
               for f in apply.load_proposal(ms, d.id).files if f.after is not None]
    if written:
        from cairn.worker.memory.verify import confirm_accepted  # cold start: as job_verify

        confirm_accepted(ms, written)


def job_accept(req: WorkerRequest) -> Decisions:
    return _decide(req, "accept")


def job_reject(req: WorkerRequest) -> Decisions:
    return _decide(req, "reject")


def job_unreject(req: WorkerRequest) -> Decisions:
    return _decide(req, "unreject")


def job_undo(req: WorkerRequest) -> Decision:
    pid = read(ProposalArgs, req.args, job=req.job).id
    if not pid:
        raise CairnError(ErrorCode.USAGE, "id: a proposal id is required")
    with _store(req) as ms:
        apply.recover(ms, deciding=[pid])
        return apply.undo(ms, pid)


def job_accept_edited(req: WorkerRequest) -> Decision:
    args = read(AcceptEditedArgs, req.args, job=req.job)
    if not args.id:
        raise CairnError(ErrorCode.USAGE, "id and text: a proposal id and its edited text are required")
    with _store(req) as ms:
        apply.recover(ms, deciding=[args.id])
        decision = edited.accept_edited(ms, args.id, args.text)
        _confirm_accepted(ms, [decision])
        return decision


def job_proposals(req: WorkerRequest) -> dict[str, Any]:
    return {"proposals": proposal_rows(req.workspace, _settings(req))}


def job_proposal(req: WorkerRequest) -> dict[str, Any]:
    return proposal(req.workspace, str(req.args.get("id", "")), _settings(req))


def job_memory(req: WorkerRequest) -> dict[str, Any]:
    return {"topics": memory_rows(req.workspace, _settings(req))}


def job_verify(req: WorkerRequest) -> dict[str, Any]:
    # cold start: the citation checks load with this job only
    from cairn.worker.memory.verify import verify_workspace

    with _store(req) as ms:
        return verify_workspace(ms, propose=not req.args.get("dryRun", False))


def job_memory_retire(req: WorkerRequest) -> TopicRetired:
    """A retirement proposal for the topic the user chose (``TopicArgs``)."""
    from cairn.worker.memory.verify import retire_topic  # cold start: as job_verify

    args = read(TopicArgs, req.args, job=req.job)
    with _store(req) as ms:
        apply.recover(ms)
        return TopicRetired(**retire_topic(ms, args.file))


def job_memory_confirm(req: WorkerRequest) -> TopicConfirmed:
    """The user confirms a topic is still true (``TopicArgs``): its mark records today."""
    from cairn.worker.memory.verify import confirm_topic  # cold start: as job_verify

    args = read(TopicArgs, req.args, job=req.job)
    with _store(req) as ms:
        apply.recover(ms)  # it may reject the topic's revalidation proposal: a decision like any other
        r = confirm_topic(ms, args.file)
        return TopicConfirmed(file=r["file"], confirmed=r["confirmed"], rejected=tuple(r["rejected"]))


def job_verify_idle(req: WorkerRequest) -> dict[str, Any]:
    # cold start: the citation checks load with this job only
    from cairn.worker.memory.verify import idle_verify

    with _store(req) as ms:
        return idle_verify(ms)


def job_cockpit(req: WorkerRequest) -> dict[str, Any]:
    return {"rows": cockpit(req.workspace, str(req.args.get("view", "candidates")), _settings(req))}
