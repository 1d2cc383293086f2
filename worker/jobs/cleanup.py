"""One bounded cleanup batch: claim pruning, stray temps, retired evidence.

Runs under the ``cleanup`` claim. Prunes settled claim generations of the
journal and memory-write roots (bounded as :mod:`state.prune` says), collects
stray temps of dead writers, and removes the evidence (segments) of captures
retired longer than the history window (default 14 days): their coverage,
batch entries and retirement records stay, so the turns are never captured
again; a ``purged`` marker records that the evidence is gone.
``more`` is true only when a batch limit was reached.
"""

from __future__ import annotations

from typing import Any

from cairn.protocol import codec
from cairn.protocol.journal import CaptureTurn, Retired
from cairn.protocol.settings import Settings
from cairn.protocol.vocab import OutcomeKind
from cairn.protocol.worker import WorkerRequest
from cairn.state import layout
from cairn.state import program as P
from cairn.state.claims import ClaimStore
from cairn.state.prune import MAX_GROUPS, prune
from cairn.state.temps import collect_tree
from cairn.worker.jobs.expiry import expire
from cairn.worker.journal.batches import is_entry, read_batches
from cairn.worker.journal.store import CAPTURES, Journal
from cairn.worker.memory.store import MemoryStore
from cairn.worker.settings import config

HISTORY_DAYS = 14.0


def _expire(j: Journal, claim: Any, settings: Settings, history_days: float) -> tuple[int, bool]:
    """Expiry of fully reviewed public digests (only where consolidation has reviewed them)."""
    with MemoryStore(j.workspace, settings) as ms:
        return expire(j, claim, ms, history_days=history_days)


def _collect_target_temps(j: Journal, settings: Settings) -> int:
    """Temps a killed memory writer left beside the files it was replacing (never recursive)."""
    with MemoryStore(j.workspace, settings) as ms:
        return ms.collect_target_temps()


def _holds_evidence(names: list[str]) -> bool:
    return "purged" not in names and any(is_entry(n) for n in names)


def _purge_ops(j: Journal, cid: str, names: list[str]) -> list[P.Op]:
    """Remove a retired capture's evidence: segments (batch entries stay as its turn identity, then
    ``purged`` marks it done) and per-turn bundles with their entries (evidence first, then the entry
    naming it: a crash leaves an entry whose evidence is gone only for a retired, covered capture)."""
    ops: list[P.Op] = []
    for b in read_batches(j, cid, names):
        ops.append(j.segments.remove_op(b.segment))
    if ops:
        ops.append(P.Create(f"{CAPTURES}/{cid}/purged", optional=True))
    legacy = [n for n in names if n.startswith("t-")]
    raws = j.read_many(f"{CAPTURES}/{cid}/{n}" for n in legacy)
    for n in legacy:
        raw = raws[f"{CAPTURES}/{cid}/{n}"]
        if raw is not None:
            entry = codec.decode(raw, CaptureTurn)
            ops += [j.evidence.remove_op(entry.bundle), P.Remove(f"{CAPTURES}/{cid}/{n}", optional=True)]
    return ops


def cleanup(j: Journal, *, history_days: float = HISTORY_DAYS, max_groups: int = MAX_GROUPS,
            settings: Settings | None = None) -> tuple[dict[str, Any], bool]:
    req_settings = settings or Settings()
    claim = j.claims.elect("cleanup", purpose="cleanup", ttl=120.0, authority=j.authority)
    try:
        pr = prune(j.claims, bundles=j.bundles)
        pairs, groups, more = pr.pairs, pr.groups, pr.more
        mw_pairs = 0
        # the memory stores: decisions and reviews (bundles there are referenced by
        # proposals and decisions, so only claim pairs are pruned) and target writes
        for claims_rel in (layout.MEMORY_CLAIMS, layout.MEMORY_WRITE_CLAIMS):
            if not j.names(claims_rel):
                continue
            other = ClaimStore(j.root, claims_rel, clock_offset=j.claims.clock_offset)
            try:
                r2 = prune(other)
                mw_pairs, more = mw_pairs + r2.pairs, more or r2.more
            finally:
                other.close()
        temps = pr.temps + collect_tree(j.root, layout.CAIRN) + _collect_target_temps(j, req_settings)
        expired, more_expiry = _expire(j, claim, req_settings, history_days)
        more = more or more_expiry
        evidence_groups = 0
        cutoff = claim.record.created - history_days * 86400
        cids = j.names(CAPTURES)
        listings = j.list_many([f"{CAPTURES}/{c}" for c in cids])
        retired = [c for c in cids if "retired" in listings[f"{CAPTURES}/{c}"]
                   and _holds_evidence(listings[f"{CAPTURES}/{c}"])]
        recs = j.read_many(f"{CAPTURES}/{c}/retired" for c in retired)
        for c in retired:
            if groups + evidence_groups >= max_groups:
                more = True
                break
            rec = codec.decode(recs[f"{CAPTURES}/{c}/retired"] or b"", Retired)
            if rec.at > cutoff:
                continue
            j.claims.guarded(claim, _purge_ops(j, c, listings[f"{CAPTURES}/{c}"]))
            evidence_groups += 1
    except BaseException:
        try:
            j.claims.settle(claim, OutcomeKind.FAILED, error="E_INTERNAL")
        except Exception:
            pass
        raise
    result = {"pairs": pairs + mw_pairs, "groups": groups, "evidence": evidence_groups, "temps": temps,
              "expired": expired}
    j.claims.finish(claim, payload={k: int(v) for k, v in result.items()})  # removals done stand, late or not
    return result, more


def job_cleanup(req: WorkerRequest) -> tuple[dict[str, Any], bool]:
    with Journal(req.workspace) as j:
        settings, _ = config.merge(Settings(), {k: v for k, v in req.config.items() if k != "historyDays"},
                                   source="request")
        return cleanup(j, history_days=float(req.config.get("historyDays", HISTORY_DAYS)), settings=settings)
