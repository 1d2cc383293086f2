"""General reviews: bounded scope, provider without tools, accepted and published.

A review elects ``review/general`` in the workspace memory store, then:
recovery first (a completed-but-unpublished review is published, never
re-run); scope capture (up to 20 unreviewed public digests, oldest session first,
the memory root snapshot, the instruction files, the fingerprints of
rejected and of still applicable pending proposals, so nothing already
decided or waiting is proposed again, while a stale one may be); the embedded engine; acceptance (the
:class:`ReviewResult` bundle and every before/after bundle, fenced by the
claim); publication (private proposal records, then the public review
record). Only a published general review advances coverage: a digest is
reviewed when a public review record lists it *and* that record's accepted
result exists.

Notes are read as :func:`readable` gives them: cleaned of control characters
(:func:`protocol.text.memory_text`; a digest published before notes were
cleaned may hold them), and a note that still could not be written to a topic
file is left out and counted by its code (``skippedNotes`` in the result),
never stopping the proposals of the others. So is an instruction file the
review cannot take (a symlink, ``AGENTS.md -> CLAUDE.md`` too, a FIFO, a file
too large: :func:`_instruction_files`): left out of its instruction scope and
said once as a warning with its code. A review that fails settles its
claim ``failed`` with the error's code and the number of reviews of its scope
failed in a row (``failures`` in the outcome's payload), which ``cairn
doctor`` reports once it reaches :data:`state.doctor.FAILING_REVIEWS`.

Automatic reviews are capped at 8 successful ones per rolling 24 hours
(``cap_exceeded``); explicit reviews and the backlog drain bypass the cap.
In ``auto`` mode each new proposal is then applied through the same checked
path as a manual accept: a promise recorded with the acceptance, kept by
recovery if the review dies first (:mod:`worker.memory.autoapply`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cairn.protocol import codec
from cairn.protocol.claims import OutcomeRecord
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.journal import PublicDigest
from cairn.protocol.memory import (
    IndexEdit,
    Proposal,
    ProposalKind,
    ProposalState,
    ReviewRecord,
    ReviewResult,
)
from cairn.protocol.results import DrainResult, ReviewJobResult
from cairn.protocol.text import memory_text
from cairn.protocol.vocab import NoteType, OpStatus, OutcomeKind
from cairn.state import program as P
from cairn.state.claims import Claim
from cairn.worker.journal.views import public_digests
from cairn.worker.memory import engine, model
from cairn.worker.memory.apply import (
    contradicted,
    decisions,
    load_proposal,
    proposal_ids,
    publish_review,
    published_reviews,
    state_of,
)
from cairn.worker.memory.autoapply import complete, promise_ops
from cairn.worker.memory.drafts import MAX_DIGESTS, ProposalDraft, ReviewScope, unrejected, unwritable
from cairn.worker.memory.housekeeping import index_maintenance
from cairn.worker.memory.notes import WorkingNote, as_digest, dispositions, read_notes
from cairn.worker.memory.provenance import stamp_created, stamp_updated
from cairn.worker.memory.store import DEFAULT_ROOT, PROPOSALS, REVIEWS_PUBLIC, MemoryStore
from cairn.worker.providers.access import route
from cairn.worker.redaction.redact import redact_added, redact_text

AUTO_CAP = 8
WINDOW = 24 * 3600.0
REVIEW_TTL = 120.0

log = logging.getLogger("cairn.worker.memory.review")


def reviewed_digests(ms: MemoryStore, digests: list[PublicDigest] | None = None) -> set[str]:
    """Digests covered by a published review whose accepted proposals exist privately.

    A digest covered by one review only, whose note an undecided proposal carries that memory now
    contradicts (:mod:`.contradiction`: another proposal was applied first) or that is stale otherwise (its
    files changed since, not by cairn's own writes alone: :func:`apply.check_fresh`), is not covered: its notes are
    reviewed once more, against memory as it is now, so the note becomes a replacement instead of being
    lost with its stale proposal. The proposal may come from that review (its evidence names the digest)
    or from a focused review of a remembered text (``digests``: the digest whose turn is the remembered
    one). Once: a second review covers the digest for good, however it ends (no review loop)."""
    out: set[str] = set()
    covering: dict[str, int] = {}
    latest: list[ReviewRecord] = []
    for r in published_reviews(ms):
        present = all(ms.read_many([f"{PROPOSALS}/{p}"])[f"{PROPOSALS}/{p}"] is not None for p in r.proposals)
        if present:
            out.update(r.digests)
            latest.append(r)
            for d in r.digests:
                covering[d] = covering.get(d, 0) + 1
    by_turn: dict[str, list[str]] = {}
    for dg in digests or ():
        for t in dg.turn_ids:
            by_turn.setdefault(t, []).append(dg.id)
    for r in latest:
        # only a review whose notes' digests one review covers can re-open one (cheap tests first)
        reach = r.digests if r.digests else tuple(d for m in r.remembered for d in by_turn.get(m, ()))
        if not any(covering.get(d) == 1 for d in reach):
            continue
        for pid in r.proposals:
            if decisions(ms, pid):
                continue
            p = load_proposal(ms, pid)
            named = [d for e in p.evidence for d in ([e] if e in covering else by_turn.get(e, []))]
            again = [d for d in named if covering.get(d) == 1]
            if again and (contradicted(ms, p) or state_of(ms, p)[0] is ProposalState.STALE):
                out.difference_update(again)  # contradicted, or its files changed since (not by cairn alone)
    return out


def unreviewed(ms: MemoryStore) -> list[PublicDigest]:
    digests = public_digests(ms.workspace)[0]
    seen = reviewed_digests(ms, digests)
    return [d for d in digests if d.id not in seen]


def _suppressed(ms: MemoryStore) -> set[str]:
    """Fingerprints a review must not propose again: rejected ones, and applicable pending ones.

    A pending proposal whose before-state no longer matches (stale) can never
    be applied, so it does not hold its fingerprint: the same change may be
    proposed afresh against the files as they are now.
    """
    out: set[str] = set()
    for pid in proposal_ids(ms):
        ds = decisions(ms, pid)
        if ds and ds[-1].state is ProposalState.REJECTED:
            out.add(load_proposal(ms, pid).fingerprint)
        elif ds and ds[-1].state is ProposalState.UNDONE:
            p = load_proposal(ms, pid)
            if p.kind is ProposalKind.DISPOSITION:  # the note was wanted back: not proposed again for these bytes
                out.add(p.fingerprint)
        elif not ds or ds[-1].state is ProposalState.PENDING:
            p = load_proposal(ms, pid)
            if state_of(ms, p)[0] is not ProposalState.STALE:
                out.add(p.fingerprint)
    return out


#: (workspace, instruction file, code) already said by this process: a file left out is said once
_LEFT_OUT_SAID: set[tuple[str, str, str]] = set()


def _instruction_files(ms: MemoryStore) -> dict[str, bytes]:
    """The configured instruction files present, as a review reads them (what memory already says, and
    what rule 3 may edit).

    One the review cannot take never fails it: a symlink (``AGENTS.md ->
    CLAUDE.md`` too, or a link out of the workspace: never read nor written
    through a link), a FIFO or folder, a file too large, or one on a path
    through a linked folder is left out of the review's instruction scope
    (no instruction edit is proposed for it) and said once per process as
    a warning with its code; every topic proposal goes through as usual. A
    file a link leads to is read when it is configured itself.
    """
    out = {}
    for rel in ms.settings.instructionFiles:
        try:
            ms.check_target(rel)
        except CairnError:
            continue
        try:
            raw = ms.read_many([rel])[rel]
        except CairnError as exc:
            _say_left_out(ms.workspace, rel, exc)
            continue
        if raw is not None:
            out[rel] = raw
    return out


def _say_left_out(workspace: str, rel: str, exc: CairnError) -> None:
    key = (workspace, rel, str(exc.code))
    if key in _LEFT_OUT_SAID:
        return
    _LEFT_OUT_SAID.add(key)
    why = ("a review never reads nor edits an instruction file through a link" if exc.code is ErrorCode.PATH_SYMLINK
           else "it cannot be read as a text file")
    log.warning("review: instruction file %s left out (%s): %s; the notes were reviewed without it",
                rel, exc.code, why)


def _to_proposals(ms: MemoryStore, drafts: list[ProposalDraft], review_id: str, now: float) -> tuple[list[Proposal], list[P.Op]]:
    props: list[Proposal] = []
    ops: list[P.Op] = []
    ids = {d.fingerprint: "p" + hashlib.sha256(f"{review_id}\0{d.fingerprint}".encode()).hexdigest()[:12]
           for d in drafts}
    for d in drafts:
        files = []
        for path, (before, after) in sorted(d.files.items()):
            ms.check_target(path)  # a proposal can only touch configured roots and instruction files
            # the after-state is what accept writes and ``show`` diffs: it passes the redaction gate
            edit, put = ms.edit_ops(path, before, None if after is None else redact_added(before, after))
            files.append(edit)
            ops += put
        index = tuple(IndexEdit(index=d.index_path, file=f, before=b, after=None if a is None else redact_text(a))
                      for f, b, a in d.index_edits)
        if index:
            ms.check_target(d.index_path)
        props.append(Proposal(id=ids[d.fingerprint], review=review_id, kind=ProposalKind(d.kind),
                              title=redact_text(d.title), summary=redact_text(d.summary),
                              target=d.target, files=tuple(files), index=index, evidence=tuple(d.evidence),
                              fingerprint=d.fingerprint, created=now,
                              requires=tuple(ids[f] for f in d.requires if f in ids), premise=d.premise))
    return props, ops


def accept_review(ms: MemoryStore, claim: Claim, result: ReviewResult, ops: list[P.Op]) -> float:
    """Accept a review privately: its proposals (``ops``) and its result bundle settle the claim together.

    Returns the decision time (the outcome's), which the public record carries.
    """
    sha, put = ms.mbundles.put_ops(codec.encode(result))
    promise = promise_ops(ms, claim, result, sha)  # in ``auto`` mode: applying them is part of the acceptance
    return ms.mclaims.settle(claim, OutcomeKind.COMPLETED, bundle=sha, extra_ops=[*ops, *put, *promise]).decided


def _failed_before(ms: MemoryStore, claim: Claim) -> int:
    """Reviews of the claim's scope failed in a row just before it (its predecessor's count, or 1 for an
    older record without one); 0 when the predecessor did not fail or is gone."""
    prev = claim.generation - 1
    if prev < 1:
        return 0
    try:  # a predecessor that cannot be read never stops this outcome (the doctor reports it)
        r = ms.mclaims.run([P.Read(f"{claim.scope_dir}/{prev}.outcome", optional=True)])[0]
        if r.status is not OpStatus.OK:
            return 0
        o = codec.decode(r.value, OutcomeRecord)
    except CairnError:
        return 0
    if o.kind is not OutcomeKind.FAILED or o.error == str(ErrorCode.CANCELLED):
        return 0
    n = (o.payload or {}).get("failures", 1)
    return n if isinstance(n, int) and n > 0 else 1


def fail_unsettled(ms: MemoryStore, claim: Claim, exc: BaseException | None = None) -> None:
    """A review that raised: settle its claim as failed unless an outcome exists (never masks the error).

    The outcome carries the error's code (``E_CANCELLED`` for an interrupt,
    ``E_INTERNAL`` for an unexpected error) and, unless interrupted, how many
    reviews of the scope failed in a row, this one included (``failures``).
    """
    try:
        if ms.mclaims.outcome(claim) is None:
            if isinstance(exc, CairnError):
                code = exc.code
            else:
                code = ErrorCode.INTERNAL if exc is None or isinstance(exc, Exception) else ErrorCode.CANCELLED
            payload = None if code is ErrorCode.CANCELLED else {"failures": _failed_before(ms, claim) + 1}
            ms.mclaims.settle(claim, OutcomeKind.FAILED, error=str(code), payload=payload)
    except CairnError:
        pass


def recover_review(ms: MemoryStore) -> bool:
    newest = ms.mclaims.newest("review/general")
    o = newest.outcome
    if o is None or o.kind is not OutcomeKind.COMPLETED or not o.bundle:
        return False
    result = codec.decode(ms.mbundles.get(o.bundle), ReviewResult)
    if ms.read_many([f"{REVIEWS_PUBLIC}/{result.id}.json"])[f"{REVIEWS_PUBLIC}/{result.id}.json"] is not None and all(
            ms.read_many([f"{PROPOSALS}/{p.id}"])[f"{PROPOSALS}/{p.id}"] is not None for p in result.proposals):
        return False
    publish_review(ms, result, o.decided)
    return True


def _review_roots(ms: MemoryStore) -> list[tuple[str, Any, dict[str, bytes]]]:
    """(root, which notes it receives, instruction files) for each reviewed memory root.

    With a global memory root configured (an absolute path), the user's own
    preferences (``user`` notes) go there, so they follow the user across
    projects; feedback, project facts and references stay in the workspace's
    root (and its instruction files). Without one, everything goes to the
    workspace root.
    """
    workspace = (DEFAULT_ROOT, lambda n: True, _instruction_files(ms))
    global_roots = [r for r in ms.settings.memoryRoots if os.path.isabs(r)]
    if not global_roots:
        return [workspace]
    return [(DEFAULT_ROOT, lambda n: n.type is not NoteType.USER, workspace[2]),
            (os.path.normpath(global_roots[0]), lambda n: n.type is NoteType.USER, {})]


def automatic_reviews_in_window(ms: MemoryStore, now: float) -> int:
    return sum(1 for r in published_reviews(ms) if r.automatic and r.created > now - WINDOW)


def review_provider(ms: MemoryStore) -> str:
    return ms.settings.provider if ms.settings.provider in ("openai", "command") else "extractive"


def readable(digests: Sequence[PublicDigest], skipped: Counter[str]) -> list[PublicDigest]:
    """The digests as a review reads them: notes cleaned of control characters, those that still could not
    be written to a topic file left out and counted in ``skipped`` by their error code."""
    out = []
    for d in digests:
        notes = []
        for n in d.notes:
            title, body = memory_text(n.title), memory_text(n.body)
            code = unwritable(n.type, title, body)
            if code is not None:
                skipped[str(code)] += 1
                continue
            notes.append(n if (title, body) == (n.title, n.body) else codec.evolve(n, title=title, body=body))
        out.append(d if tuple(notes) == d.notes else codec.evolve(d, notes=tuple(notes)))
    return out


def skipped_report(skipped: Counter[str]) -> dict[str, int] | None:
    """``{code: count}`` of the notes left out, or None when none was (the result's key is then absent)."""
    return dict(sorted(skipped.items())) if skipped else None


def skipped_keys(skipped: Counter[str]) -> dict[str, Any]:
    """:func:`skipped_report` for a result that is still a plain object: ``{"skippedNotes": …}`` or nothing."""
    report = skipped_report(skipped)
    return {"skippedNotes": report} if report else {}


def draft_review(ms: MemoryStore, batch: list[PublicDigest], *, review_id: str, now: float,
                 housekeeping: bool, working: Sequence[WorkingNote] = (),
                 skipped: Counter[str] | None = None, dropped: Counter[str] | None = None) -> list[ProposalDraft]:
    """Drafts of one review of ``batch`` against each memory root (general and focused reviews alike).

    Each root gets the batch's notes meant for it; with ``housekeeping`` a
    root that gets none still has its index housekeeping (dangling entries,
    orphan topics). A focused review passes False: it is about its notes alone.
    ``working`` notes (shared working notes of a general review) are reviewed
    like digests, and each one fully carried by memory or by this review's
    drafts gets a disposition draft. Notes are read as :func:`readable` gives
    them; those left out are counted in ``skipped``. A remote review's
    replies are taken in good part: what they lost is counted in ``dropped``
    (``proposals``, ``references``; see :mod:`worker.memory.remote`).
    """
    suppressed = _suppressed(ms)
    provider = review_provider(ms)
    drafts: list[ProposalDraft] = []
    known: list[str] = []
    cited: dict[str, bytes] = {}
    notes = readable([*batch, *(as_digest(n) for n in working)], Counter() if skipped is None else skipped)
    for root_rel, keep, instructions in _review_roots(ms):
        sub = [codec.evolve(d, notes=tuple(n for n in d.notes if keep(n))) for d in notes]
        sub = [d for d in sub if d.notes]
        root_dir = Path(root_rel) if os.path.isabs(root_rel) else Path(ms.workspace) / root_rel
        if not sub and (not housekeeping or not root_dir.is_dir()):
            continue
        snapshot = model.read_root(root_dir, workspace=ms.workspace) if root_dir.is_dir() else model.empty_snapshot()
        scope = ReviewScope(root_rel=root_rel, index_rel=f"{root_rel}/MEMORY.md",
                            instruction_files=instructions, rejected=suppressed, now=now, review_id=review_id,
                            budget=model.IndexBudget.of(ms.settings))
        known += scope.known_texts(snapshot)
        cited.update({**{f"{root_rel}/{k}": tf.data for k, tf in snapshot.topics.items()}, **instructions})
        if not sub:  # no notes for this root: its index housekeeping only
            drafts += index_maintenance(snapshot, [], scope)
            continue
        if provider != "extractive":
            # the HTTP stack (httpx, trio) loads only for a remote review
            from cairn.worker.memory import remote

            # the model's whole exchange ends well inside the review claim's lease
            policy = remote.review_policy(ms.settings, timeout_seconds=REVIEW_TTL - 30.0)
            r = route(policy, ms.settings)
            lost = remote.Dropped()
            drafts += remote.review_remote(sub, snapshot, scope, policy=policy, api_key=r.api_key,
                                           command=r.command, context_tokens=r.context_tokens,
                                           total_seconds=REVIEW_TTL - 30.0, dropped=lost)
            if dropped is not None:
                dropped.update(lost.report() or {})
        else:
            drafts += engine.review(sub, snapshot, scope, left_out=skipped)
    if working:
        workspace_scope = ReviewScope(root_rel=DEFAULT_ROOT, index_rel=f"{DEFAULT_ROOT}/MEMORY.md",
                                      instruction_files={}, rejected=suppressed, now=now, review_id=review_id)
        drafts += unrejected(dispositions(list(working), drafts, known, cited, workspace_scope), workspace_scope)
    # sources and citations of new topics, and of the topics an update adds evidence to (ADR 0020)
    roots = [r for r in ms.settings.memoryRoots if not os.path.isabs(r)]  # the memory is never cited
    return stamp_updated(ms.workspace, stamp_created(ms.workspace, drafts, batch, roots), batch, roots)


def apply_in_auto_mode(ms: MemoryStore, review_id: str) -> list[str]:
    """In ``auto`` mode, keep the review's promise now: apply each of its proposals through the
    checked path of a manual accept (see :mod:`worker.memory.autoapply`; a crash leaves it to recovery)."""
    return complete(ms, only=review_id)


def general_review(ms: MemoryStore, *, automatic: bool) -> tuple[ReviewJobResult, bool]:
    """One bounded general review. Returns (result, more: unreviewed digests remain).

    Each memory root gets the batch's notes meant for it; a root that gets
    none still has its index housekeeping (dangling entries, orphan topics).
    An explicit review with no unreviewed digest is housekeeping alone, and
    is published only when it proposes something; an automatic one with no
    digest debt reads nothing.
    """
    recovered = recover_review(ms)
    now = ms.now()
    if automatic:
        if ms.settings.mode == "manual":
            return ReviewJobResult(review=None, skipped="manual-mode", recovered=recovered), False
        if automatic_reviews_in_window(ms, now) >= AUTO_CAP:
            return ReviewJobResult(review=None, skipped="cap", recovered=recovered), False
    claim = ms.mclaims.elect("review/general", purpose="review", ttl=REVIEW_TTL, authority=ms.mauthority)
    try:
        working, notes_problems = read_notes(ms.root, ms.settings.notesDirs, now)
        todo = unreviewed(ms)
        batch = todo[:MAX_DIGESTS - len(working)]
        if not batch and not working and automatic:  # quiet when idle: no digest or note debt, no root scan
            ms.mclaims.settle(claim, OutcomeKind.CANCELLED, error=str(ErrorCode.CANCELLED))
            return ReviewJobResult(review=None, digests=0, proposals=0, recovered=recovered), False
        review_id = "r" + hashlib.sha256(("\0".join(d.id for d in batch) + f"\0{now}").encode()).hexdigest()[:12]
        provider = review_provider(ms)
        skipped: Counter[str] = Counter()
        dropped: Counter[str] = Counter()
        drafts = draft_review(ms, batch, review_id=review_id, now=now, housekeeping=True, working=working,
                              skipped=skipped, dropped=dropped)
        if not batch and not drafts:
            ms.mclaims.settle(claim, OutcomeKind.CANCELLED, error=str(ErrorCode.CANCELLED))
            return ReviewJobResult(review=None, digests=0, proposals=0, recovered=recovered, notes=len(working),
                                   notesProblems=tuple(notes_problems), skippedNotes=skipped_report(skipped),
                                   droppedProposals=dict(sorted(dropped.items())) or None), False
        proposals, ops = _to_proposals(ms, drafts, review_id, now)
        result = ReviewResult(id=review_id, digests=tuple(d.id for d in batch), proposals=tuple(proposals),
                              provider=provider, automatic=automatic)
        decided = accept_review(ms, claim, result, ops)
    except BaseException as exc:
        fail_unsettled(ms, claim, exc)
        raise
    publish_review(ms, result, decided)
    applied = apply_in_auto_mode(ms, review_id)
    return (ReviewJobResult(review=review_id, digests=len(batch), proposals=len(proposals), applied=tuple(applied),
                            recovered=recovered, notes=len(working), notesProblems=tuple(notes_problems),
                            skippedNotes=skipped_report(skipped), droppedProposals=dict(sorted(dropped.items())) or None),
            len(todo) > len(batch))


def drain(ms: MemoryStore, *, deadline: float | None = None) -> tuple[DrainResult, bool]:
    """Successive bounded reviews until nothing is left (or the deadline: then ``more``)."""
    reviews = proposals = 0
    while True:
        r, more = general_review(ms, automatic=False)
        if r.review:
            reviews += 1
            proposals += r.proposals or 0
        if not more:
            return DrainResult(reviews=reviews, proposals=proposals), False
        if deadline is not None and time.time() >= deadline:
            return DrainResult(reviews=reviews, proposals=proposals), True

