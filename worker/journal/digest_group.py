"""Digest work in groups: several sealed captures per claim, published with batched durability.

Captures digested by the embedded extractive engine (their frozen policy,
or a remote one the settings no longer allow; fast,
deterministic, offline) are digested together: up to :data:`GROUP` captures,
within a time budget well inside the claim's deadline, under one generation
of the single ``digest/group`` scope. A remote provider's capture takes a
whole deadline of its own and stays on the per-capture path
(:func:`digest.process_capture`).

Per group, in order (each step recoverable, the same rules as per capture):

* **Election** of ``digest/group`` N+1 requires N's outcome. If N was
  ``completed``, its accepted result is published first (recovery before new
  work); if N was taken over (``expired``), every capture N named in its
  claim's inputs gets a ``fail-g<N>`` marker: an attempt, so a capture that
  kills its worker cannot loop forever.
* **Inference** per capture, from pinned, verified evidence; a capture whose
  inference fails gets its ``fail-g<gen>`` marker and is left out.
* **Acceptance**: one :class:`DigestGroup` bundle and the ``completed``
  outcome naming it, in one fenced program.
* **Publication** (idempotent, any process may finish it): every public
  entry (through the redaction gate; their fsyncs waited on together) → one :class:`GroupCoverage` record
  for the group → per capture, pins (and kept window replies, ``w-``) released and ``retired`` linked.

Explicit ``discard`` holds the same scope, so it never races a group.
"""

from __future__ import annotations

import time
from typing import Any

from cairn.protocol import codec
from cairn.protocol.claims import ClaimRecord, OutcomeRecord
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.journal import (
    PUBLIC_ENTRY_LIMIT,
    CoveredCapture,
    DigestGroup,
    DigestResult,
    Failure,
    GroupCoverage,
    PublicDigest,
    Retired,
    session_fields,
)
from cairn.protocol.knobs import env_int
from cairn.protocol.results import DigestFailure
from cairn.protocol.settings import Settings
from cairn.protocol.vocab import OpStatus, OutcomeKind
from cairn.state import program as P
from cairn.state.claims import Claim
from cairn.worker.journal.batches import capture_states
from cairn.worker.journal.store import CAPTURES, COVERAGE, PUBLIC, Journal
from cairn.worker.redaction.redact import redact_record

GROUP = env_int("CAIRN_DIGEST_GROUP", 16)
GROUP_SCOPE = "digest/group"
GROUP_TTL = 90.0
#: stop adding captures to a group once this much of its deadline is spent
BUDGET = GROUP_TTL / 3



def publish_group(j: Journal, sha: str, decided: float, *, fresh: list[str] | None = None) -> dict[str, str]:
    """Publish an accepted group; idempotent. Returns capture -> published | all-none; ``fresh`` gets the
    captures this call published (none when an earlier call did it all)."""
    from cairn.worker.journal.digest import digest_id  # digest imports this module (a cycle)

    group = codec.decode(j.bundles.get(sha), DigestGroup, where=f"accepted group {sha[:16]}")
    names = j.list_many([f"{CAPTURES}/{r.capture}" for r in group.results])
    todo = [r for r in group.results if "retired" not in names[f"{CAPTURES}/{r.capture}"]]
    out = {r.capture: "published" if r.notes else "all-none" for r in group.results}
    if fresh is not None:
        fresh.extend(r.capture for r in todo)
    if not todo:
        return out
    entries: list[tuple[str, bytes]] = []
    covered = []
    for r in group.results:
        did = digest_id(r.capture, sha) if r.notes else None
        covered.append(CoveredCapture(capture=r.capture, session_id=r.session_id, digest=did, turn_ids=r.turn_ids))
        if did is not None and r in todo:
            data = codec.encode(redact_record(PublicDigest(id=did, capture=r.capture, session_id=r.session_id,
                                                           title=r.title, trigger=r.trigger, created=decided,
                                                           provider=r.provider, turn_ids=r.turn_ids, notes=r.notes,
                                                           session_started=r.session_started,
                                                           session_ended=r.session_ended)))
            if len(data) > PUBLIC_ENTRY_LIMIT:
                raise CairnError(ErrorCode.RECORD_TOO_LARGE, f"digest of {r.capture} exceeds the public entry bound")
            entries.append((f"{PUBLIC}/{did}.json", data))
    # public entries first, their fsyncs and their directory's waited on together
    res = j.run([P.EnsureDir(PUBLIC), P.LinkAll(tuple(entries), mode=0o644, optional=True)])
    res.raise_failed()
    for (path, data), linked in zip(entries, res[1].value or (), strict=True):
        if not linked and j.run([P.Verify(path, data=data)])[0].status is not OpStatus.OK:
            raise CairnError(ErrorCode.TARGET_CHANGED, f"public digest {path.rsplit('/', 1)[-1]} differs from its "
                             "accepted result")
    # then identity-only coverage of every turn, one record for the group
    cov = GroupCoverage(group=sha, captures=tuple(covered))
    j.run([P.EnsureDir(COVERAGE), P.Link(f"{COVERAGE}/g-{sha[:32]}", codec.encode(cov), optional=True)]).raise_failed()
    # then pins released and captures retired: every removal first, then the retired records published
    # together (each capture's directory fsynced after its record, covering its removals)
    ops: list[P.Op] = []
    retire: list[tuple[str, bytes]] = []
    for r in todo:
        cdir = f"{CAPTURES}/{r.capture}"
        did = digest_id(r.capture, sha) if r.notes else None
        retired = Retired(capture=r.capture, at=decided, digest=did, reason="published" if did else "all-none")
        # pins, and window replies a model digest kept before the settings turned to the embedded engine
        ops += [P.Remove(f"{cdir}/{n}", optional=True, sync=False) for n in names[cdir] if n.startswith(("pin-", "w-"))]
        retire.append((f"{cdir}/retired", codec.encode(retired)))
    ops.append(P.LinkAll(tuple(retire), optional=True))
    j.run(ops).raise_failed()
    return out


def recover_group(j: Journal) -> int:
    """Publish the newest group generation's accepted result if it is not yet published; captures retired."""
    newest = j.claims.newest(GROUP_SCOPE)
    o = newest.outcome
    if o is None or o.kind is not OutcomeKind.COMPLETED or not o.bundle:
        return 0
    fresh: list[str] = []
    publish_group(j, o.bundle, o.decided, fresh=fresh)
    return len(fresh)  # what this pass published: a group published long ago is no recovery


def elect_group(j: Journal, purpose: str, cids: list[str]) -> Claim:
    """Elect ``digest/group``; finish what the previous generation left (publication or attempts)."""
    claim = j.claims.elect(GROUP_SCOPE, purpose=purpose, ttl=GROUP_TTL, authority=j.authority,
                           inputs={"captures": ",".join(cids)})
    gen = claim.generation
    if gen == 1:
        return claim
    try:
        r = j.claims.run([P.Read(f"{claim.scope_dir}/{gen - 1}.outcome", optional=True),
                          P.Read(f"{claim.scope_dir}/{gen - 1}.claim", optional=True)])
        if r[0].status is OpStatus.OK:
            prev = codec.decode(r[0].value, OutcomeRecord)
            if prev.kind is OutcomeKind.COMPLETED and prev.bundle:
                publish_group(j, prev.bundle, prev.decided)
            elif prev.kind is OutcomeKind.EXPIRED and r[1].status is OpStatus.OK:
                rec = codec.decode(r[1].value, ClaimRecord)
                _fail(j, claim, [c for c in rec.inputs.get("captures", "").split(",") if c], gen - 1,
                      str(ErrorCode.WORKER_CRASHED))
    except BaseException:
        _settle_failed(j, claim)
        raise
    return claim


def _fail(j: Journal, claim: Claim, cids: list[str], gen: int, code: str) -> None:
    present = set(j.names(CAPTURES))
    ops: list[P.Op] = []
    for c in cids:
        if c in present:
            fail = Failure(capture=c, generation=gen, error=code, at=claim.record.created)
            ops.append(P.Link(f"{CAPTURES}/{c}/fail-g{gen}", codec.encode(fail), optional=True))
    if ops:
        j.claims.guarded(claim, ops).raise_failed()


def _settle_failed(j: Journal, claim: Claim) -> None:
    try:
        if j.claims.outcome(claim) is None:
            j.claims.settle(claim, OutcomeKind.FAILED, error=str(ErrorCode.INTERNAL))
    except CairnError:
        pass


def _clear_of_single_claims(j: Journal, claim: Claim, cid: str) -> bool:
    """No per-capture digest claim of ``cid`` is live or unfinished (claims of an earlier release).

    A live one defers the capture; an expired one is taken over and counts as
    an attempt (``fail-<gen>``); an accepted one is published, not re-inferred.
    """
    from cairn.worker.journal.digest import recover_capture  # digest imports this module (a cycle)

    newest = j.claims.newest(f"digest/{cid}")
    if newest.claim is None:
        return True
    if newest.outcome is None:
        if newest.now < newest.claim.deadline:
            return False
        # take it over as any election would (the expired outcome is not the old owner's), then hand back
        took = j.claims.elect(f"digest/{cid}", purpose="takeover", ttl=GROUP_TTL, authority=j.authority)
        j.claims.settle(took, OutcomeKind.CANCELLED, error=str(ErrorCode.CANCELLED))
        fail = Failure(capture=cid, generation=newest.generation, error=str(ErrorCode.WORKER_CRASHED),
                       at=claim.record.created)
        j.claims.guarded(claim, [P.Link(f"{CAPTURES}/{cid}/fail-{newest.generation}",
                                        codec.encode(fail), optional=True)]).raise_failed()
        return True
    return recover_capture(j, cid) is None


def process_group(j: Journal, cids: list[str], *, env: dict[str, str] | None = None, settings: Settings | None = None,
                  failures: list[DigestFailure] | None = None) -> dict[str, Any]:
    """Digest up to :data:`GROUP` extractive captures under one generation.

    Returns per-capture outcomes (published | all-none | failed | exhausted)
    and ``deferred``: captures left for the per-capture path (a remote
    policy) or for a later group (the time budget was spent, or a per-capture
    claim of an earlier release still holds the capture). A failed inference
    appends its report to ``failures`` (as :func:`digest.failure_report`).
    """
    from cairn.worker.journal.digest import _policy, failure_report, infer, load_evidence  # a cycle, as above

    try:
        claim = elect_group(j, "digest-group", cids)
    except CairnError as exc:
        if exc.code is ErrorCode.CLAIM_BUSY:
            return {"outcomes": {}, "deferred": [], "busy": len(cids)}
        raise
    started = time.monotonic()
    outcomes: dict[str, str] = {}
    deferred: list[str] = []
    try:
        results: list[DigestResult] = []
        failed: list[tuple[str, CairnError]] = []
        for st in capture_states(j, cids):
            if not st.sealed or st.retired or st.exhausted:
                continue
            if time.monotonic() - started > BUDGET:
                deferred.append(st.cid)
                continue
            evidence, seal = load_evidence(j, st.cid)
            # a remote provider's capture is the per-capture path's, its claims too (a taken-over
            # generation that kept windows is no failed attempt there)
            if _policy(evidence, settings).provider != "extractive" or not _clear_of_single_claims(j, claim, st.cid):
                deferred.append(st.cid)
                continue
            try:
                out = infer(evidence, deadline=time.time() + BUDGET, env=env, settings=settings)
            except CairnError as exc:
                failed.append((st.cid, exc))
                continue
            results.append(DigestResult(capture=st.cid, session_id=seal.session_id,
                                        title=evidence[0].title if evidence else None, trigger=seal.trigger,
                                        turn_ids=tuple(e.turn_id for e in evidence), notes=out.notes,
                                        provider="extractive", **session_fields(evidence)))
        for cid, err in failed:
            _fail(j, claim, [cid], claim.generation, str(err.code))
        if not results:
            j.claims.settle(claim, OutcomeKind.CANCELLED, error=str(ErrorCode.CANCELLED))
        else:
            sha, put = j.bundles.put_ops(codec.encode(DigestGroup(results=tuple(results))))
            outcome = j.claims.settle(claim, OutcomeKind.COMPLETED, bundle=sha, extra_ops=put)
    except BaseException:
        _settle_failed(j, claim)
        raise
    if results:
        outcomes.update(publish_group(j, sha, outcome.decided))
    if failed:
        again = {s.cid: s for s in capture_states(j, [c for c, _ in failed])}
        outcomes.update({c: "exhausted" if again[c].exhausted else "failed" for c, _ in failed})
        if failures is not None:
            failures += [failure_report(again[c], err) for c, err in failed]
    return {"outcomes": outcomes, "deferred": deferred, "busy": 0}
