"""Focused reviews: remembered texts reviewed at once, alone, outside the automatic cap.

A focused review elects ``review/focused`` in the workspace memory store
(its own scope: a general review may run beside it), takes up to
:data:`MAX_BATCH` pending :class:`~protocol.memory.RememberRequest` records
oldest first, turns each into its one note (:mod:`worker.providers.remember`:
the requested type, or the embedded classifier's, else ``project``; cleaned
and redacted), reviews those notes alone against
the memory roots (no index housekeeping) through the same engine or remote
provider as a general review, accepts the :class:`ReviewResult` under the
claim, then publishes it (private proposals, then the public review record,
which lists the remember ids and no digest). Recovery first: a completed but
unpublished focused review is published, never re-run.

* **Coverage.** A request is covered when a published review record lists it
  and its proposals exist. A focused review lists no digest, so it never
  advances general coverage: the digest of the remembered turn is reviewed
  again by a general review, whose fingerprints then suppress a proposal
  still pending or rejected, and whose notes memory already holds are dropped.
* **Stale, reviewed again.** A covered request whose every proposal went
  stale (its files changed since) is reviewed once more, against memory as
  it is now, by the next ``remember`` of the same text or an explicit
  ``cairn review`` (:func:`stale_requests`); that review covers it anew.
* **Not capped.** Focused reviews are never automatic, so the rolling 24 h
  cap of automatic reviews neither counts nor stops them.
* **Bounded and coalesced.** :func:`run_focused` repeats focused reviews
  while requests are pending; a caller that finds ``review/focused`` busy
  leaves its request to the holder. Nothing is lost: a caller links its
  request *before* it tries to elect, and a holder looks for pending requests
  again *after* it settled its claim, so a request linked while the holder
  ran is seen by the holder or by whoever elected after it. A holder that
  dies leaves its requests pending for the next ``remember`` or review pass.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from typing import Any

from cairn.protocol import codec
from cairn.protocol.digest import DigestInput
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.journal import PublicDigest
from cairn.protocol.memory import RememberRequest, ReviewResult
from cairn.protocol.transcript import Turn
from cairn.protocol.vocab import OutcomeKind, Trigger
from cairn.worker.journal.batches import turn_evidence
from cairn.worker.memory.apply import publish_review, published_reviews
from cairn.worker.memory.review import (
    REVIEW_TTL,
    _to_proposals,
    accept_review,
    apply_in_auto_mode,
    draft_review,
    fail_unsettled,
    review_provider,
    skipped_keys,
)
from cairn.worker.memory.store import PROPOSALS, REMEMBERED, REVIEWS_PUBLIC, MemoryStore
from cairn.worker.memory.views import proposal_rows
from cairn.worker.providers import remember
from cairn.worker.redaction.redact import redact_record

SCOPE = "review/focused"
_ID = re.compile(r"m[0-9a-f]{15}")
MAX_BATCH = 20  # requests per focused review: one review's bounded scope, like a general review's digests


def _requests(ms: MemoryStore) -> list[RememberRequest]:
    names = [n for n in ms.names(REMEMBERED) if _ID.fullmatch(n)]  # never a killed writer's temp
    raws = ms.read_many(f"{REMEMBERED}/{n}" for n in names)
    out = [codec.decode(raw, RememberRequest, where=p) for p, raw in raws.items() if raw is not None]
    return sorted(out, key=lambda r: (r.created, r.id))


def covered(ms: MemoryStore) -> dict[str, tuple[str, ...]]:
    """Remember id -> proposal ids of the published review that covered it (its proposals exist)."""
    out: dict[str, tuple[str, ...]] = {}
    for r in published_reviews(ms):
        if not r.remembered:
            continue
        present = ms.read_many(f"{PROPOSALS}/{p}" for p in r.proposals)
        if all(v is not None for v in present.values()):
            for rid in r.remembered:
                out[rid] = r.proposals
    return out


def pending(ms: MemoryStore) -> list[RememberRequest]:
    reqs = _requests(ms)
    if not reqs:  # the common case: nothing was remembered, no review record is read
        return []
    done = covered(ms)
    return [r for r in reqs if r.id not in done]


def as_digest(ms: MemoryStore, req: RememberRequest) -> PublicDigest:
    """The one-note digest a focused review reads for ``req`` (no note when its evidence is gone)."""
    notes: tuple[Any, ...] = ()
    try:
        ev = turn_evidence(ms, req.bundle, req.turn_id) if req.bundle else None
    except CairnError:
        ev = None  # retired and expired meanwhile: its digest, if any, reaches memory by a general review
    if ev is not None and ev.user:
        turn = Turn(turn_id=req.turn_id, parent_turn_id=None, user=ev.user, assistant="")
        notes = remember.digest(DigestInput(session_id=req.session_id, title="remember", turns=(turn,)),
                                req.type).notes
    return redact_record(PublicDigest(id=req.id, capture=req.capture, session_id=req.session_id, title="remember",
                                      trigger=Trigger.SESSION_END, created=req.created, provider="remember",
                                      turn_ids=(req.turn_id,), notes=notes))


def recover_focused(ms: MemoryStore) -> bool:
    o = ms.mclaims.newest(SCOPE).outcome
    if o is None or o.kind is not OutcomeKind.COMPLETED or not o.bundle:
        return False
    result = codec.decode(ms.mbundles.get(o.bundle), ReviewResult)
    rec = f"{REVIEWS_PUBLIC}/{result.id}.json"
    props = ms.read_many([rec, *(f"{PROPOSALS}/{p.id}" for p in result.proposals)])
    if all(v is not None for v in props.values()):
        return False
    publish_review(ms, result, o.decided)
    return True


def stale_requests(ms: MemoryStore, only: str | None = None) -> dict[str, tuple[str, ...]]:
    """Remember id -> its proposals, for each covered request (``only``: that one) whose every proposal is
    stale (its files changed since, or memory now says otherwise): reviewed again, against memory as it is
    now, by the next ``remember`` of the same text or ``cairn review`` (:func:`focused_review` ``again``).
    Once per such proposal: the review again covers the request with its own, fresh proposals (or none)."""
    done = covered(ms)
    ids = [only] if only is not None else [r.id for r in _requests(ms)]
    ids = [i for i in ids if done.get(i)]
    if not ids:
        return {}
    rows = proposal_rows(ms.workspace, ms.settings)
    out: dict[str, tuple[str, ...]] = {}
    for rid in ids:
        mine = [r for r in rows if r["id"] in done[rid] and rid in r.get("evidence", ())]
        if mine and all(r["state"] == "stale" for r in mine):
            out[rid] = tuple(r["id"] for r in mine)
    return out


def focused_review(ms: MemoryStore, again: tuple[str, ...] = ()) -> tuple[dict[str, Any], bool]:
    """One bounded focused review. Returns (result, more: requests still pending); see the module docstring.

    ``again``: covered requests to review once more with the pending ones (:func:`stale_requests`)."""
    recovered = recover_focused(ms)
    try:
        claim = ms.mclaims.elect(SCOPE, purpose="focused-review", ttl=REVIEW_TTL, authority=ms.mauthority)
    except CairnError as exc:
        if exc.code is ErrorCode.CLAIM_BUSY:
            return {"review": None, "skipped": "busy", "recovered": recovered}, False
        raise
    try:
        todo = pending(ms)
        more = [r for r in _requests(ms) if r.id in again and r not in todo]
        batch = (todo + more)[:MAX_BATCH]
        todo = todo + more
        if not batch:
            ms.mclaims.settle(claim, OutcomeKind.CANCELLED, error=str(ErrorCode.CANCELLED))
            return {"review": None, "remembered": 0, "proposals": 0, "recovered": recovered}, False
        now = ms.now()
        review_id = "r" + hashlib.sha256(("\0".join(r.id for r in batch) + f"\0{now}").encode()).hexdigest()[:12]
        digests = [as_digest(ms, r) for r in batch]
        skipped: Counter[str] = Counter()
        drafts = draft_review(ms, [d for d in digests if d.notes], review_id=review_id, now=now, housekeeping=False,
                              skipped=skipped)
        proposals, ops = _to_proposals(ms, drafts, review_id, now)
        result = ReviewResult(id=review_id, digests=(), proposals=tuple(proposals), provider=review_provider(ms),
                              automatic=False, remembered=tuple(r.id for r in batch))
        decided = accept_review(ms, claim, result, ops)
    except BaseException as exc:
        fail_unsettled(ms, claim, exc)
        raise
    publish_review(ms, result, decided)
    applied = apply_in_auto_mode(ms, review_id)
    return ({"review": review_id, "remembered": len(batch), "proposals": len(proposals), "applied": applied,
             "recovered": recovered, **skipped_keys(skipped)}, len(todo) > len(batch))


def run_focused(ms: MemoryStore) -> dict[str, Any]:
    """Focused reviews until no request is pending or another holder has the scope (it covers the rest)."""
    reviews = 0
    applied: list[str] = []
    skipped: Counter[str] = Counter()
    while True:
        r, _ = focused_review(ms)
        if r.get("skipped") == "busy":
            return {"reviews": reviews, "busy": True, "applied": applied, **skipped_keys(skipped)}
        if r.get("review"):
            reviews += 1
            applied += r["applied"]
            skipped.update(r.get("skippedNotes", {}))
        # looked at again after the claim is settled: a request linked meanwhile is never left behind
        if not pending(ms):
            return {"reviews": reviews, "busy": False, "applied": applied, **skipped_keys(skipped)}


def proposals_for(ms: MemoryStore, rid: str) -> dict[str, Any]:
    """Whether ``rid`` was reviewed, and the proposals (id, kind, target, title, state) that cite it."""
    done = covered(ms)
    if rid not in done:
        return {"reviewed": False, "proposals": []}
    ids = set(done[rid])
    rows = [r for r in proposal_rows(ms.workspace, ms.settings) if r["id"] in ids and rid in r.get("evidence", ())]
    return {"reviewed": True, "proposals": [{k: r[k] for k in ("id", "kind", "target", "title", "state")}
                                            for r in rows]}
