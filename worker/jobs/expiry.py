"""Expiry of fully reviewed public digests through hash-bound manifests.

A public digest expires once every general review that covered it has only
terminal proposals (applied, rejected or undone) and the history window
(default 14 days) has passed since the latest terminal decision (a No-action
review counts from its own completion). Unreviewed digests and digests with
an undecided proposal are never expired, whatever their age.

Order, each step recoverable: (1) an :class:`ExpiryManifest` naming every
entry with the sha256 of its bytes is accepted under the cleanup claim
(at most 4 MiB); (2) each entry is hidden (a dot-named copy is linked, then
the visible entry is removed only if its bytes still match); (3) hidden
bytes are removed; (4) the manifest is marked done. A later run finishes any
accepted manifest before admitting a new one. Coverage and retirement
records stay, so expired work is never captured or digested again.
"""

from __future__ import annotations

import hashlib
from typing import Any

from cairn.protocol import codec
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.journal import MANIFEST_LIMIT, ExpiryEntry, ExpiryManifest
from cairn.protocol.memory import ProposalState
from cairn.protocol.vocab import OpStatus
from cairn.state import program as P
from cairn.state.claims import Claim
from cairn.worker.journal.store import PUBLIC, Journal
from cairn.worker.memory.apply import decisions, published_reviews

EXPIRY = ".cairn/state/journal/expiry"
MAX_GROUPS = 50


def _finish(j: Journal, claim: Claim, m: ExpiryManifest) -> int:
    removed = 0
    for e in m.entries:
        name, sha = e.name, e.sha256
        hidden = f"{PUBLIC}/.expired-{name}"
        data = j.read_many([f"{PUBLIC}/{name}"])[f"{PUBLIC}/{name}"]
        ops: list[P.Op] = []
        if data is not None and hashlib.sha256(data).hexdigest() == sha:
            ops += [P.Link(hidden, data, mode=0o644, optional=True), P.Remove(f"{PUBLIC}/{name}", sha256=sha)]
        ops.append(P.Remove(hidden, sha256=sha, optional=True))
        res = j.claims.guarded(claim, ops)
        removed += int(any(r.status is OpStatus.OK and o.op == "remove" for r, o in zip(res.results[1:], ops,
                                                                                          strict=True)))
    j.claims.guarded(claim, [P.Create(f"{EXPIRY}/{m.id}.done", optional=True)])
    return removed


def candidates(ms: Any, now: float, history_days: float) -> list[str]:
    """Public digest ids whose every covering review is terminal and past the history window."""
    latest: dict[str, float] = {}
    blocked: set[str] = set()
    for r in published_reviews(ms):
        times = [r.created]
        terminal = True
        for pid in r.proposals:
            ds = decisions(ms, pid)
            if not ds or ds[-1].state not in (ProposalState.APPLIED, ProposalState.REJECTED, ProposalState.UNDONE):
                terminal = False
                break
            times.append(ds[-1].decided)
        for d in r.digests:
            if not terminal:
                blocked.add(d)
            latest[d] = max(latest.get(d, 0.0), max(times))
    cutoff = now - history_days * 86400
    return sorted(d for d, t in latest.items() if d not in blocked and t <= cutoff)


def expire(j: Journal, claim: Claim, ms: Any, *, history_days: float) -> tuple[int, bool]:
    """Finish accepted manifests, then admit at most one new bounded one. Returns (removed, more)."""
    names = j.names(EXPIRY)
    done = {n[:-5] for n in names if n.endswith(".done")}
    removed = 0
    for n in sorted(names):
        if n.endswith(".done") or n in done:
            continue
        m = codec.decode(j.read_many([f"{EXPIRY}/{n}"])[f"{EXPIRY}/{n}"] or b"", ExpiryManifest)
        removed += _finish(j, claim, m)
    ids = candidates(ms, claim.record.created, history_days)
    present = set(j.names(PUBLIC))
    ids = [d for d in ids if f"{d}.json" in present]
    batch, more = ids[:MAX_GROUPS], len(ids) > MAX_GROUPS
    if not batch:
        return removed, False
    raws = j.read_many(f"{PUBLIC}/{d}.json" for d in batch)
    entries = tuple(ExpiryEntry(name=f"{d}.json", sha256=hashlib.sha256(raws[f"{PUBLIC}/{d}.json"] or b"").hexdigest())
                    for d in batch if raws[f"{PUBLIC}/{d}.json"] is not None)
    mid = "m" + hashlib.sha256("\0".join(e.sha256 for e in entries).encode()).hexdigest()[:16]
    manifest = ExpiryManifest(id=mid, created=claim.record.created, entries=entries)
    data = codec.encode(manifest)
    if len(data) > MANIFEST_LIMIT:
        raise CairnError(ErrorCode.RECORD_TOO_LARGE, "expiry manifest exceeds its 4 MiB bound")
    j.claims.guarded(claim, [P.EnsureDir(EXPIRY), P.Link(f"{EXPIRY}/{mid}", data, optional=True)])
    removed += _finish(j, claim, manifest)
    return removed, more
