"""Bounded pruning of settled claim generations.

A batch removes at most ``max_pairs`` settled claim/outcome pairs and at most
``max_groups`` content groups (the private bundle an outcome held). It never
removes the newest generation of a scope, a generation a retained record
refers to, a generation whose deadline has not passed, or a bundle still
referenced. Each scope's removals run in one program under the scope's
target lock that re-verifies the exact bytes that were judged prunable, so
an election or settlement racing the pruner cannot be undone by it.

``more`` is true only when a batch limit was reached: a shorter batch means
there is nothing left worth another pass, so cleanup never feeds its own
continuation.

Removal order is claim first, then outcome: a crash in between leaves an
outcome without a claim, which is harmless and collected next time, whereas
the other order would leave an unsettled-looking old generation.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

import attrs
from cairn.protocol import codec
from cairn.protocol.claims import ClaimRecord, OutcomeRecord
from cairn.protocol.errors import CairnError
from cairn.protocol.vocab import OpStatus
from cairn.state import program as P
from cairn.state.bundles import BundleStore
from cairn.state.claims import ClaimStore

MAX_PAIRS = 200
MAX_GROUPS = 50


@attrs.frozen
class PruneResult:
    pairs: int
    groups: int
    temps: int
    more: bool
    scopes_seen: int


def _gens(names: list[str]) -> tuple[set[int], set[int]]:
    claims, outcomes = set(), set()
    for n in names:
        stem, _, ext = n.partition(".")
        if stem.isdigit():
            if ext == "claim":
                claims.add(int(stem))
            elif ext == "outcome":
                outcomes.add(int(stem))
    return claims, outcomes


def prune(
    store: ClaimStore,
    *,
    bundles: BundleStore | None = None,
    referenced: Collection[tuple[str, int]] = (),
    keep_bundle: Callable[[str], bool] = lambda sha: False,
    max_pairs: int = MAX_PAIRS,
    max_groups: int = MAX_GROUPS,
) -> PruneResult:
    """Run one bounded pruning batch over every scope of ``store``.

    ``referenced`` holds (scope, generation) pairs that retained records
    still point at. ``keep_bundle(sha)`` says whether something outside the
    claim records still needs a bundle.
    """
    ref = set(referenced)
    pairs = groups = temps = 0
    limited = False  # a batch limit cut the candidate list short
    top = store.run([P.ListDir(""), P.Clock("", offset=store.clock_offset)])
    scope_dirs = [n for n in (top[0].value or [])]
    now = float(top[1].value)
    seen = 0
    for sd in scope_dirs:
        if pairs >= max_pairs or groups >= max_groups or limited:
            limited = True
            break
        seen += 1
        try:
            d = store.root.child(sd)
        except CairnError:
            continue
        try:
            temps += d.collect_temps()
            claims, outcomes = _gens(d.listdir())
        finally:
            d.close()
        if not claims and not outcomes:
            continue
        newest = max(claims) if claims else 0
        orphans = sorted(g for g in outcomes - claims if g < newest)
        candidates = sorted(g for g in claims & outcomes if g < newest)
        if not candidates and not orphans:
            continue  # only the newest (or unsettled) generations: nothing to read
        budget = max_pairs - pairs
        if len(candidates) > budget:
            limited = True
            candidates = candidates[:budget]
        reads: list[P.Op] = []
        for g in candidates:
            reads += [P.Read(f"{sd}/{g}.claim"), P.Read(f"{sd}/{g}.outcome")]
        got = store.run(reads) if reads else None
        ops: list[P.Op] = []
        dropped: list[str] = []
        for i, g in enumerate(candidates):
            assert got is not None
            rc, ro = got[2 * i], got[2 * i + 1]
            if rc.status is not OpStatus.OK or ro.status is not OpStatus.OK:
                break
            try:
                claim = codec.decode(rc.value, ClaimRecord)
                outcome = codec.decode(ro.value, OutcomeRecord)
            except CairnError:
                continue  # malformed records are the doctor's to report, never silently deleted
            if (claim.scope, g) in ref or claim.deadline > now:
                continue
            if outcome.bundle and bundles is not None and groups + len(dropped) >= max_groups:
                limited = True
                break
            ops += [
                P.Verify(f"{sd}/{g}.claim", data=rc.value),
                P.Verify(f"{sd}/{g}.outcome", data=ro.value),
                P.Remove(f"{sd}/{g}.claim", sync=False),
                P.Remove(f"{sd}/{g}.outcome", sync=False),
            ]
            if outcome.bundle:
                dropped.append(outcome.bundle)
        for g in orphans:
            ops.append(P.Remove(f"{sd}/{g}.outcome", sync=False, optional=True))
        if not ops:
            continue
        res = store.run(ops, lock=sd)
        removed_claims = sum(
            1 for op, r in zip(ops, res.results, strict=False)
            if isinstance(op, P.Remove) and op.path.endswith(".claim") and r.status is OpStatus.OK
        )
        pairs += removed_claims
        _fsync_dir(store, sd)
        if bundles is not None and dropped and removed_claims:
            retained = _retained_bundles(store, sd)
            for sha in dict.fromkeys(dropped):
                if groups >= max_groups:
                    break
                if sha in retained or keep_bundle(sha):
                    continue
                r = P.run(bundles.base, [bundles.remove_op(sha)])
                if r[0].status is OpStatus.OK:
                    groups += 1
    more = limited or pairs >= max_pairs or groups >= max_groups
    return PruneResult(pairs=pairs, groups=groups, temps=temps, more=more, scopes_seen=seen)


def _fsync_dir(store: ClaimStore, sd: str) -> None:
    d = store.root.child(sd)
    try:
        d.sync()
    finally:
        d.close()


def _retained_bundles(store: ClaimStore, sd: str) -> set[str]:
    d = store.root.child(sd)
    try:
        _, outcomes = _gens(d.listdir())
        out: set[str] = set()
        for g in outcomes:
            raw = d.read(f"{g}.outcome")
            if raw:
                try:
                    rec = codec.decode(raw, OutcomeRecord)
                except CairnError:
                    continue
                if rec.bundle:
                    out.add(rec.bundle)
        return out
    finally:
        d.close()
