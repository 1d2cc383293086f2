"""Invariant checks over a workspace's control state (``cairn doctor``).

Violations (each with a fixed code and the path it concerns, never content):

* a claim or outcome that does not decode (empty, torn, unknown version or
  field) or whose name, scope or generation disagree with its content;
* an outcome that does not settle its claim (wrong claim nonce);
* a generation below the newest with no outcome (a successor without its
  predecessor's outcome);
* an outcome referring to a bundle that is missing or fails its hash;
* a bundle whose bytes do not match its name;
* a ready capture batch of an unretired capture whose evidence segment is
  missing, torn or does not match its name (``V_SEGMENT_TORN``; a re-import
  of the transcript, read whole with ``cairn import --reread``, rebuilds it), or whose pin is missing
  (``V_SEGMENT_UNPINNED``);
* a decided proposal (a private decision) without its public decision
  record (``V_DECISION_UNPUBLISHED``: a crash between the two; the next
  recovery publishes it);
* a state folder git tracks (``V_STATE_TRACKED``; one bounded ``git
  ls-files``);
* a scope whose newest outcome says that :data:`FAILING_REVIEWS` or more of
  its runs failed in a row (``V_REVIEWS_FAILING``, with the last error code:
  a review fails the same way each time, so memory stops growing until the
  cause is dealt with; a review records the count in its outcome's payload,
  ``failures``).

A state folder that is not this user's (``E_STATE_FOREIGN``,
:mod:`state.stateroot`) is the only finding: nothing in it is read.

Stray temps and outcome files left without their claim by an interrupted
prune are reported as notes, not violations: both are collected by cleanup.
So are writer temps beside memory and instruction files (``N_MEMORY_TEMP``,
in the memory root and the workspace folder): the next recovery removes
those of dead writers.
"""

from __future__ import annotations

import attrs
from cairn.protocol import codec
from cairn.protocol.claims import ClaimRecord, OutcomeRecord
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.journal import CaptureBatch
from cairn.protocol.vocab import OpStatus, OutcomeKind
from cairn.state import layout, stateroot
from cairn.state import program as P
from cairn.state.bundles import BundleStore
from cairn.state.claims import scope_dirname
from cairn.state.fsdir import TEMP_PREFIX, PinnedDir, refusal
from cairn.state.prune import _gens
from cairn.state.segments import SegmentStore

#: failed runs in a row of one scope (a review) that ``cairn doctor`` reports
FAILING_REVIEWS = 3


@attrs.frozen
class Finding:
    code: str
    path: str
    message: str


@attrs.frozen
class Report:
    violations: tuple[Finding, ...]
    notes: tuple[Finding, ...]
    scopes: int
    generations: int
    bundles: int

    def to_json(self) -> dict[str, object]:
        return {
            "ok": not self.violations,
            "violations": [attrs.asdict(v) for v in self.violations],
            "notes": [attrs.asdict(n) for n in self.notes],
            "scopes": self.scopes,
            "generations": self.generations,
            "bundles": self.bundles,
        }


def check_workspace(root: PinnedDir, roots: tuple[tuple[str, str], ...] = layout.CLAIM_ROOTS,
                    temp_dirs: tuple[str, ...] = (layout.MEMORY_ROOT, layout.NOTES_ROOT, "")) -> Report:
    """Check the workspace; ``temp_dirs``: folders of memory, working-note and instruction files to look for temps in."""
    violations: list[Finding] = []
    notes: list[Finding] = []
    foreign = refusal(root)
    if foreign is not None:  # nothing in a foreign state folder is read: one finding that says why and what to do
        return Report((Finding(str(foreign.code), layout.STATE, foreign.message),), (), 0, 0, 0)
    if stateroot.git_tracked(str(root.path)):
        violations.append(Finding("V_STATE_TRACKED", layout.STATE, "git tracks files in the private state folder: "
                                  "untrack it (git rm -r --cached .cairn/state); cairn keeps a .gitignore in it"))
    scopes = gens = nbundles = 0
    for claims_rel, bundles_rel in roots:
        bstore = BundleStore(root, bundles_rel)
        listing = P.run(root, [P.ListDir(claims_rel)])[0]
        if listing.status is OpStatus.FAILED:
            violations.append(Finding(str(listing.code), claims_rel, listing.message))
            continue
        referenced: set[str] = set()
        for sd in listing.value or []:
            scopes += 1
            path = f"{claims_rel}/{sd}"
            try:
                d = root.descend(path)
            except CairnError as exc:
                violations.append(Finding(str(exc.code), path, exc.message))
                continue
            try:
                names = d.listdir()
                for n in names:
                    if n.startswith(TEMP_PREFIX):
                        notes.append(Finding("N_STRAY_TEMP", f"{path}/{n}", "stray temp file (collected by cleanup)"))
                claims_g, outcomes_g = _gens(names)
                newest = max(claims_g) if claims_g else 0
                gens += len(claims_g)
                claim_recs: dict[int, ClaimRecord] = {}
                last: OutcomeRecord | None = None  # the newest outcome that decodes
                for g in sorted(claims_g):
                    fp = f"{path}/{g}.claim"
                    try:
                        rec = codec.decode(d.read(f"{g}.claim") or b"", ClaimRecord, where=fp)
                    except CairnError as exc:
                        violations.append(Finding(str(exc.code), fp, exc.message))
                        continue
                    if rec.generation != g or scope_dirname(rec.scope) != sd:
                        violations.append(Finding(str(ErrorCode.CLAIM_CORRUPT), fp,
                                                  "claim content disagrees with its name or scope"))
                        continue
                    claim_recs[g] = rec
                    if g < newest and g not in outcomes_g:
                        violations.append(Finding("V_NO_PREDECESSOR_OUTCOME", fp,
                                                  f"generation {g} has no outcome but generation {newest} exists"))
                for g in sorted(outcomes_g):
                    fp = f"{path}/{g}.outcome"
                    try:
                        out = codec.decode(d.read(f"{g}.outcome") or b"", OutcomeRecord, where=fp)
                    except CairnError as exc:
                        violations.append(Finding(str(exc.code), fp, exc.message))
                        continue
                    if out.generation != g or scope_dirname(out.scope) != sd:
                        violations.append(Finding(str(ErrorCode.CLAIM_CORRUPT), fp,
                                                  "outcome content disagrees with its name or scope"))
                        continue
                    last = out
                    if g not in claims_g:
                        notes.append(Finding("N_ORPHAN_OUTCOME", fp, "outcome without claim (interrupted prune)"))
                    elif g in claim_recs and claim_recs[g].nonce != out.claim_nonce:
                        violations.append(Finding("V_OUTCOME_MISMATCH", fp, "outcome does not settle its claim"))
                    if out.bundle:
                        referenced.add(out.bundle)
                        try:
                            bstore.get(out.bundle)
                        except CairnError as exc:
                            violations.append(Finding(str(exc.code), fp, f"referenced bundle: {exc.message}"))
                failing = _failing(path, last)
                if failing is not None:
                    violations.append(failing)
            finally:
                d.close()
        for sha in bstore.iter_shas():
            nbundles += 1
            if sha in referenced:
                continue  # already verified above
            try:
                bstore.get(sha)
            except CairnError as exc:
                violations.append(Finding(str(exc.code), bstore.path(sha), exc.message))
    violations += _unpublished_decisions(root)
    violations += check_segments(root)
    notes += _memory_temps(root, temp_dirs)
    return Report(tuple(violations), tuple(notes), scopes, gens, nbundles)


def _failing(path: str, last: OutcomeRecord | None) -> Finding | None:
    """``V_REVIEWS_FAILING`` when the scope's newest outcome counts :data:`FAILING_REVIEWS` failures in a row."""
    if last is None or last.kind is not OutcomeKind.FAILED:
        return None
    n = (last.payload or {}).get("failures")
    if not isinstance(n, int) or n < FAILING_REVIEWS:
        return None
    return Finding("V_REVIEWS_FAILING", f"{path}/{last.generation}.outcome",
                   f"the last {n} runs of {last.scope} failed, the newest with {last.error}: `cairn review` "
                   "shows the error (see docs/errors.md for the code)")


def _names(root: PinnedDir, rel: str) -> list[str]:
    r = P.run(root, [P.ListDir(rel, optional=True)])[0]
    return list(r.value or []) if r.status is not OpStatus.FAILED else []


def _unpublished_decisions(root: PinnedDir) -> list[Finding]:
    public = set(_names(root, layout.PUBLIC_DECISIONS))
    out = []
    for pid in _names(root, layout.MEMORY_DECISIONS):
        for seq in _names(root, f"{layout.MEMORY_DECISIONS}/{pid}"):
            if f"{pid}-{seq}.json" not in public:
                out.append(Finding("V_DECISION_UNPUBLISHED", f"{layout.MEMORY_DECISIONS}/{pid}/{seq}",
                                   f"proposal {pid} is decided but {layout.PUBLIC_DECISIONS}/{pid}-{seq}.json is "
                                   "missing (published by the next recovery)"))
    return out


def _memory_temps(root: PinnedDir, dirs: tuple[str, ...]) -> list[Finding]:
    out = []
    for rel in dirs:
        try:
            d = root.descend(rel)
        except CairnError:
            continue
        with d:
            for n in sorted(d.listdir()):
                if n.startswith(TEMP_PREFIX):
                    out.append(Finding("N_MEMORY_TEMP", f"{rel}/{n}" if rel else n,
                                       "writer temp beside memory files (removed by the next recovery or cleanup)"))
    return out


def check_segments(root: PinnedDir) -> list[Finding]:
    """Every ready batch of an unretired capture has its pinned, intact segment."""
    captures = f"{layout.JOURNAL_STATE}/captures"
    segments = SegmentStore(root, f"{layout.JOURNAL_STATE}/segments")
    out: list[Finding] = []
    for cid in _names(root, captures):
        names = _names(root, f"{captures}/{cid}")
        if "retired" in names:
            continue
        for n in names:
            if not n.startswith("b-"):
                continue
            fp = f"{captures}/{cid}/{n}"
            try:
                batch = codec.decode(P.run(root, [P.Read(fp)])[0].value or b"", CaptureBatch, where=fp)
            except CairnError as exc:
                out.append(Finding(str(exc.code), fp, exc.message))
                continue
            try:
                segments.get(batch.segment)
            except CairnError as exc:
                out.append(Finding("V_SEGMENT_TORN", fp, f"{exc.code}: {exc.message}; import its transcript again "
                                       "with `cairn import --reread PATH`"))
                continue
            if f"pin-{batch.segment}" not in names:
                out.append(Finding("V_SEGMENT_UNPINNED", fp, "ready batch whose segment is not pinned"))
    return out
