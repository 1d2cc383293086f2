"""Automatic application in ``auto`` mode: promised with the review's acceptance, completed by recovery.

A review (general or focused) made in ``auto`` mode applies its proposals
through the checked path of a manual accept. That application must survive
a crash between the review's publication and the last accept, so it is a
durable promise, not a step that merely follows:

1. **Promise.** The program that accepts the review (its proposals, its
   :class:`~protocol.memory.ReviewResult` bundle, its completed outcome, all
   fenced by the review claim) also links ``auto/<review>``, an
   :class:`~protocol.memory.AutoApply` record naming the claim generation and
   the result bundle. It exists only when the workspace was in ``auto`` mode
   and the review proposed something.
2. **Completion** (:func:`complete`), run by the review itself right after
   publication and by every recovery (:func:`worker.memory.apply.recover`:
   before each review, drain, decision, undo and remember). A record whose
   generation was never completed with its bundle (a crash between the link
   and the outcome, seen once the claim's deadline passed, or a failed review)
   is void and removed. A completed but unpublished review is published
   first. Then each proposal, in the review's order, that has *no* decision
   is accepted with ``undecided=True``: under the proposal claim the accept
   proves afresh that nobody decided it meanwhile, so a proposal the user
   accepted, rejected or undid is never applied by this path, and one is
   never applied twice (a crashed accept's marked write is reconciled by
   recovery before this runs; concurrent runs join through the claims).
   A proposal the user took over with an edited version
   (:func:`worker.memory.edited.propose_edited` links ``auto/<review>.edited.<proposal>``
   before it publishes the edit) is never applied as proposed: a process
   killed between the edit's publication and its acceptance leaves the edit
   pending for the user, as without ``auto`` mode.
3. **Retirement.** The record is removed once every proposal was applied,
   decided or refused for good (stale, refused by a requirement, a failed
   write: it stays pending for the cockpit, as without a crash). A proposal
   whose claim is busy or was lost, or one the caller is deciding right now
   (``skip``: the user's own decision goes first), keeps the record for the
   next recovery.

The workspace mode is read again at completion: a workspace switched out of
``auto`` since the review drops the promise (its proposals stay pending for
the user), so no memory is written that the user no longer wants written
without review.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from cairn.protocol import codec
from cairn.protocol.claims import ClaimRecord, OutcomeRecord
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.memory import AutoApply, ReviewResult
from cairn.protocol.vocab import OpStatus, OutcomeKind
from cairn.state import program as P
from cairn.state.claims import Claim
from cairn.worker.memory.apply import accept, decisions, publish_review
from cairn.worker.memory.store import PROPOSALS, REVIEWS_PUBLIC, M, MemoryStore

AUTO = f"{M}/auto"
_NAME = re.compile(r"r[0-9a-f]{12}")  # a review id; never a killed writer's temp
_EDITED = re.compile(r"(r[0-9a-f]{12})\.edited\.(p[0-9a-f]{12})")  # review, proposal the user took over
#: an accept that may succeed later: the proposal or target claim is held, or was lost on the way
RETRY = (ErrorCode.CLAIM_BUSY, ErrorCode.CLAIM_LOST, ErrorCode.CLAIM_EXPIRED)


def promise_ops(ms: MemoryStore, claim: Claim, result: ReviewResult, bundle: str) -> list[P.Op]:
    """The ops that record the promise, for the program that accepts the review (none outside ``auto``)."""
    if ms.settings.mode != "auto" or not result.proposals:
        return []
    rec = AutoApply(review=result.id, scope=claim.scope, generation=claim.generation, bundle=bundle)
    return [P.EnsureDir(AUTO), P.Link(f"{AUTO}/{result.id}", codec.encode(rec))]


def taken_over_ops(review: str, pid: str) -> list[P.Op]:
    """Ops recording that the user edits proposal ``pid`` of ``review``: no promise applies it as proposed.

    Run before the edited version is published (a crash in between leaves the
    original pending for the user); removed with the review's promise.
    """
    if not _NAME.fullmatch(review) or not re.fullmatch(r"p[0-9a-f]{12}", pid):
        return []
    return [P.EnsureDir(AUTO), P.Create(f"{AUTO}/{review}.edited.{pid}", optional=True)]


def _accepted(ms: MemoryStore, rec: AutoApply) -> ReviewResult | None | bool:
    """The published result the record promises; None: void (never accepted); False: not decidable yet."""
    try:
        result = codec.decode(ms.mbundles.get(rec.bundle), ReviewResult)
    except CairnError:
        return None  # no accepted result behind it: it creates no authority
    if result.id != rec.review:
        return None
    published = ms.read_many([f"{REVIEWS_PUBLIC}/{result.id}.json", *(f"{PROPOSALS}/{p.id}" for p in result.proposals)])
    if all(v is not None for v in published.values()):
        return result
    sd = ms.mclaims.scope_dir(rec.scope)
    r = ms.mclaims.run([P.Read(f"{sd}/{rec.generation}.claim", optional=True),
                        P.Read(f"{sd}/{rec.generation}.outcome", optional=True),
                        P.Clock("", offset=ms.mclaims.clock_offset)])
    for x in r.results:
        if x.status is OpStatus.FAILED:
            raise CairnError(x.code or ErrorCode.IO_FAILED, x.message)
    if r[1].status is OpStatus.OK:
        o = codec.decode(r[1].value, OutcomeRecord)
        if o.kind is not OutcomeKind.COMPLETED or o.bundle != rec.bundle:
            return None
        publish_review(ms, result, o.decided)  # accepted, its publication cut off: recovery comes first
        return result
    if r[0].status is OpStatus.OK and codec.decode(r[0].value, ClaimRecord).deadline > float(r[2].value):
        return False  # its owner may still settle it
    return None  # unsettled past its deadline (or gone): it can never be accepted any more


def complete(ms: MemoryStore, *, only: str | None = None, skip: Collection[str] = ()) -> list[str]:
    """Keep every pending promise (or review ``only``'s); the ids of the proposals applied now."""
    listed = ms.names(AUTO)
    taken: dict[str, set[str]] = {}
    for n in listed:
        if m := _EDITED.fullmatch(n):
            taken.setdefault(m.group(1), set()).add(m.group(2))
    names = sorted(n for n in listed if _NAME.fullmatch(n) and (only is None or n == only))
    if only is None:  # a review's markers left by a crash after its promise was removed
        orphans = [f"{AUTO}/{r}.edited.{pid}" for r, pids in taken.items() if r not in listed for pid in pids]
        if orphans:
            ms.run([P.Remove(o, optional=True) for o in orphans])
    applied: list[str] = []
    for name in names:
        path = f"{AUTO}/{name}"
        try:
            rec = ms.read_record(path, AutoApply)
        except CairnError:
            rec = None
        result = None if rec is None or rec.review != name else _accepted(ms, rec)
        if result is False:
            continue
        keep = False
        if isinstance(result, ReviewResult) and ms.settings.mode == "auto":
            for p in result.proposals:
                if p.id in skip:
                    keep = True  # the caller decides it now; the next recovery sees that decision
                    continue
                if p.id in taken.get(name, ()):
                    continue  # the user took it over with an edited version: never applied as proposed
                if decisions(ms, p.id):
                    continue  # decided (by this promise or by the user): never applied again
                try:
                    if accept(ms, p.id, undecided=True).changed:
                        applied.append(p.id)
                except CairnError as exc:
                    keep = keep or exc.code in RETRY  # otherwise stale or refused: pending for the cockpit
        if not keep:  # the promise first: its markers without it are orphans, removed by the next run
            ms.run([P.Remove(path, optional=True),
                    *(P.Remove(f"{path}.edited.{pid}", optional=True) for pid in sorted(taken.get(name, ())))])
    return applied
