"""Decisions on proposals: checked application, rejection, undo and recovery.

**Accept** holds the workspace claim ``proposal/<id>`` and the target claim
(scope ``target`` in the target base's memory-write store), then:

1. proves the before-state afresh (file hashes; index *entries* only, so
   unrelated index edits never block) — otherwise the proposal is stale;
2. persists a complete private :class:`WriteIntent` (whole-file before and
   after hashes, bytes in bundles), fenced by the workspace claim;
3. publishes a hash-only :class:`WriteMarker` at the target, fenced by the
   target claim;
4. in ONE program under the target lock: proves target ownership, verifies
   every file is still exactly its before-state, writes/removes each file
   (temp + fsync + rename, so every file is always whole: before or after;
   a file whose after-state is its before-state is a freshness guard, only
   verified, never rewritten), and settles the target claim;
5. records the private decision (the authority), then retires the marker,
   then publishes the public decision record (a failure of either, such as
   no space or a failed fsync, is reported with its code; the decision
   stands and the next command's recovery finishes both). If the workspace claim was
   lost after step 4 (a late process: its deadline passed or a recovery took
   it over), the files are written all the same: accept reports them
   written and records the decision as recovery does, never a lost claim.

**Recovery** inspects only intents whose marker exists (plus intents this
process has not read before — all of them, for a fresh process, but reading
an unmarked intent only learns its marker path) and classifies each marked
write by exact comparison: *complete* (all files at their after-state: the
decision is recorded if missing), *untouched* (all at before), *partial*
(a mix: files at after are restored to before, exact-expected), *foreign*
(anything else: nothing is touched, the marker stays, the write is
reported). Success is never inferred from an unmarked intent, and an
intent naming a path its proposal may not touch is foreign too (a cloned
repository can ship ``.cairn/state``; see :func:`_own_paths`).

**Rebase**: an instruction proposal that only adds working agreements, whose
file changed since it was made only by cairn's own recorded writes (other
proposals accepted or undone: :func:`changed_by` follows their intents'
hashes), is fresh: accept re-derives it against the file as it is now
(:func:`rebase`) and writes that through the same protocol (the current bytes
are the before-state its locked program proves). A change by anyone else
keeps it stale, as does a bullet the file already holds.

**Undo** is a separate reversal intent that requires the exact recorded
after-state of every topic/instruction file (and the applied entry lines of
the index); otherwise it refuses with ``E_TARGET_CHANGED`` and changes
nothing. An index still exactly as the application left it gets its exact
before bytes back (a removed entry returns to its own line); one edited
since is reverted entry by entry. The original application stays as evidence.

**Note dispositions** (:mod:`worker.memory.notes`) are ordinary checked
writes that remove a working note: they apply only once every proposal they
``require`` is applied, the note must still be exactly its recorded bytes,
and undo restores those bytes from the private bundle store. A disposition
without files (nothing to remove) is a decision alone.

**Reject** is accepted privately (a decision bundle, fenced by the workspace
claim) before its public record is published. **Un-reject** (:func:`unreject`)
is a decision of the same kind that returns a rejected proposal to pending;
an undone proposal is accepted again by :func:`accept` itself (its files are
at their before-state again, which the ordinary freshness check proves).

Recovery also publishes the public record of any private decision that has
none (a crash or an I/O failure between the two; the record is a function of the decision, so
republishing is idempotent) and removes temps that dead writers left beside
memory and instruction files (users commit those folders). The public record
of an accepted review (:func:`publish_review`) is published and read
(:func:`published_reviews`) here too: the review, its ``auto``-mode
application, recovery and expiry all go through them.

Size: about 600 lines, kept in one module on purpose: accept, undo and
recovery are three readings of one write protocol (intent, marker, locked
program, decision, marker retirement) and share its claim and freshness
helpers; split apart, each would have to restate the order in which they
may die.

Imports inside functions: the topic files' model (yaml) loads only where a
file is checked or written (:func:`check_fresh`, :func:`accept`,
:func:`undo`), so the proposal listings and status counts, which read the
decisions here, start without it; measured with ``python -X importtime``:
16 ms more for them with it at the top. :func:`recover` imports
:mod:`.autoapply`, which imports this module (completing a promise is an
accept).
"""

from __future__ import annotations

import hashlib
import os
import secrets
import time
from collections.abc import Callable, Collection
from typing import Any

import attrs
from cairn.protocol import codec
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.memory import (
    DecisionRecord,
    FileEdit,
    PrivateDecision,
    Proposal,
    ProposalKind,
    ProposalState,
    ReviewRecord,
    ReviewResult,
    WriteIntent,
    WriteMarker,
)
from cairn.protocol.results import Decision
from cairn.protocol.vocab import OpStatus, OutcomeKind
from cairn.state import program as P
from cairn.state.claims import Claim, ClaimStore
from cairn.state.fsdir import PinnedDir
from cairn.worker.memory.marks import premise_gone
from cairn.worker.memory.store import (
    DECISIONS,
    DECISIONS_PUBLIC,
    INTENTS,
    MARKERS,
    PROPOSALS,
    REVIEWS_PUBLIC,
    WRITE,
    MemoryStore,
    Target,
)
from cairn.worker.redaction.redact import redact_added, redact_record

CLAIM_TTL = 60.0
#: how long a decision waits for another one writing the same memory (each holds it for one decision, well
#: under a second): several accepts at once take turns instead of failing with ``E_CLAIM_BUSY``
TARGET_WAIT = 10.0
TARGET_LOCK = f"{WRITE}/claims/target"  # the target claim's scope directory: one lock for writes and markers


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- observation ------------------------------------------------------------

def load_proposal(ms: MemoryStore, pid: str) -> Proposal:
    p = ms.read_record(f"{PROPOSALS}/{_check_id(pid)}", Proposal)
    if p is None:
        raise CairnError(ErrorCode.NOT_FOUND, f"no proposal {pid[:40]}")
    return p


def _check_id(pid: str) -> str:
    if not pid or not all(c.isalnum() or c in "-_" for c in pid) or len(pid) > 80:
        raise CairnError(ErrorCode.USAGE, f"invalid proposal id {pid[:40]!r}")
    return pid


def proposal_ids(ms: MemoryStore) -> list[str]:
    return sorted(ms.names(PROPOSALS))


def decisions(ms: MemoryStore, pid: str) -> list[PrivateDecision]:
    names = sorted(ms.names(f"{DECISIONS}/{pid}"))
    raws = ms.read_many(f"{DECISIONS}/{pid}/{n}" for n in names)
    out = []
    for n in names:
        raw = raws[f"{DECISIONS}/{pid}/{n}"]
        if raw is None:
            continue
        # the entry names the accepted bundle; the bundle (hash-verified) is the decision
        out.append(codec.decode(ms.mbundles.get(raw.decode().strip()), PrivateDecision))
    return sorted(out, key=lambda d: d.seq)


def _read_current(base: PinnedDir, paths: list[str]) -> dict[str, bytes | None]:
    res = P.run(base, [P.Read(p, optional=True) for p in paths])
    out: dict[str, bytes | None] = {}
    for p, r in zip(paths, res.results, strict=True):
        if r.status is OpStatus.FAILED:
            raise CairnError(r.code or ErrorCode.IO_FAILED, r.message, path=p)
        out[p] = r.value if r.status is OpStatus.OK else None
    return out


def _resolve(ms: MemoryStore, p: Proposal) -> tuple[Target, dict[str, str]]:
    """One target base for all of a proposal's paths; path -> base-relative path."""
    targets: dict[str, tuple[Target, str]] = {}
    for f in p.files:
        targets[f.path] = ms.check_target(f.path)
    for e in p.index:
        targets[e.index] = ms.check_target(e.index)
    bases = {t.base for t, _ in targets.values()}
    if len(bases) > 1:
        raise CairnError(ErrorCode.TARGET_OUTSIDE_ROOTS, f"proposal {p.id} spans more than one target root")
    if not targets:
        return Target(ms.workspace, True), {}
    (target,) = {t for t, _ in targets.values()}
    return target, {k: rel for k, (_, rel) in targets.items()}


def check_fresh(ms: MemoryStore, p: Proposal, base: PinnedDir, rels: dict[str, str], *,
                contradictions: bool = True) -> tuple[bool, str]:
    """(fresh?, reason): every file at its recorded before-state, every affected index entry unchanged, its
    premise holding and (``contradictions``) nothing it adds contradicted by the root's other topics."""
    from cairn.worker.memory import model  # yaml loads only to check or write files: module docstring

    current = _read_current(base, sorted(set(rels.values())))
    rebased = ""
    for f in p.files:
        data = current[rels[f.path]]
        now = None if data is None else sha(data)
        if now != f.before:
            rb = rebase(ms, p, rels, current)
            if rb is None:
                return False, f"{f.path} changed since the proposal was made" + _changed_by(ms, p, rels, current)
            rebased = (f"{f.path} changed since the proposal was made, by accepted proposal(s) {', '.join(rb[1])}: "
                       "accepting it adds its working agreements to the file as it is now")
    for e in p.index:
        data = current[rels[e.index]] or b""
        if model.entry_line(model.parse_index(data), e.file) != e.before:
            return False, f"the {e.file} entry of {e.index} changed since the proposal was made"
    gone = premise_gone(ms.workspace, p.premise, p.target)
    if gone:
        return False, gone
    why = _contradicted(ms, p, base, rels, current) if contradictions else ""
    if why:
        return False, why
    return True, rebased


def _contradicted(ms: MemoryStore, p: Proposal, base: PinnedDir, rels: dict[str, str],
                  current: dict[str, bytes | None]) -> str:
    """Why the statements ``p`` adds to topic files contradict the other topics of their root as they are
    now (:mod:`.contradiction`), or ""."""
    from cairn.worker.memory import contradiction
    from cairn.worker.memory.model.root import FILE_MAX_BYTES

    if p.kind in (ProposalKind.INSTRUCTION, ProposalKind.DISPOSITION):
        return ""
    indexes = {rels[e.index] for e in p.index}
    written = {rels[f.path] for f in p.files}
    changes: list[tuple[bytes | None, bytes | None]] = []
    folders: set[str] = set()
    for f in p.files:
        rel = rels[f.path]
        if rel in indexes or not rel.endswith(".md"):
            continue
        after = ms.mbundles.get(f.after_bundle) if f.after is not None and f.after_bundle else None
        changes.append((current[rel], after))  # a file deleted counts too: what it held is not new elsewhere
        folders.add(rel.rpartition("/")[0])
    if not changes:
        return ""
    names: list[str] = []
    for folder in sorted(folders):
        listed = P.run(base, [P.ListDir(folder or ".", optional=True)]).results[0]
        for name in (listed.value or []) if listed.status is OpStatus.OK else []:
            rel = f"{folder}/{name}" if folder else name
            if name.endswith(".md") and not name.startswith(".") and rel not in written and rel not in indexes \
                    and name != "MEMORY.md":
                names.append(rel)
    others: dict[str, bytes] = {}
    results = P.run(base, [P.Read(rel, limit=FILE_MAX_BYTES, optional=True) for rel in names]).results
    for rel, r in zip(names, results, strict=True):
        if r.status is not OpStatus.OK and r.status is not OpStatus.ABSENT:
            # a file refused (a link, too large) stops the program: the rest one at a time, it left out
            r = P.run(base, [P.Read(rel, limit=FILE_MAX_BYTES, optional=True)]).results[0]
        if r.status is OpStatus.OK and r.value is not None:
            others[rel.rpartition("/")[2]] = r.value
    return contradiction.conflict(changes, others)


# -- rebasing: a proposal whose file only other accepted proposals changed -------------------

#: (workspace, write id) -> (proposal, action, ((rel, before, after), ...)) of a write whose decision is recorded:
#: immutable facts (an intent is written once, a decision never goes away), remembered per process
_RECORDED: dict[tuple[str, str], tuple[str, str, tuple[tuple[str, str | None, str | None], ...]]] = {}


def _recorded_writes(ms: MemoryStore) -> list[tuple[str, str, tuple[tuple[str, str | None, str | None], ...]]]:
    """(proposal, action, files) of every write cairn made and recorded a decision for (an accept or an undo
    the person decided, or ``auto`` mode applied): the changes of memory files that are cairn's own.

    A write without its decision (rolled back, under way, foreign) is never one of them."""
    out = []
    for w in ms.names(INTENTS):
        key = (ms.workspace, w)
        if key not in _RECORDED:
            try:
                intent = load_intent(ms, w)
                if not any(d.write == w for d in decisions(ms, intent.proposal)):
                    continue
            except CairnError:
                continue  # an intent or decision that cannot be read is no proof of anything
            _RECORDED[key] = (intent.proposal, intent.action,
                              tuple((f.path, f.before, f.after) for f in intent.files if f.before != f.after))
        out.append(_RECORDED[key])
    return out


def changed_by(ms: MemoryStore, rel: str, start: str | None, end: str | None) -> list[tuple[str, str]] | None:
    """The recorded cairn writes, ``(proposal, action)`` in order, that took the file ``rel`` (base-relative)
    from the bytes hashed ``start`` to those hashed ``end``; ``[]`` when they are the same, None when no
    chain of them does (someone else changed the file)."""
    if start == end:
        return []
    edges: dict[str | None, list[tuple[str | None, str, str]]] = {}
    for pid, action, files in _recorded_writes(ms):
        for name, before, after in files:
            if name == rel:
                edges.setdefault(before, []).append((after, pid, action))
    seen = {start}
    frontier: list[tuple[str | None, list[tuple[str, str]]]] = [(start, [])]
    while frontier:  # breadth first: the shortest chain
        nxt: list[tuple[str | None, list[tuple[str, str]]]] = []
        for h, chain in frontier:
            for after, pid, action in edges.get(h, ()):
                if after == end:
                    return [*chain, (pid, action)]
                if after not in seen:
                    seen.add(after)
                    nxt.append((after, [*chain, (pid, action)]))
        frontier = nxt
    return None


def _added_bullets(before: bytes | None, after: bytes) -> list[str] | None:
    """The bullet lines ``after`` adds to ``before`` when it only inserts lines, else None."""
    import difflib

    try:
        a = (before or b"").decode("utf-8").splitlines(keepends=True)
        b = after.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None
    bullets = []
    for tag, _i1, _i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if tag != "insert":
            return None
        bullets += [line.rstrip("\r\n") for line in b[j1:j2] if line.lstrip().startswith(("- ", "* ", "+ "))]
    return bullets


def rebase(ms: MemoryStore, p: Proposal, rels: dict[str, str],
           current: dict[str, bytes | None]) -> tuple[bytes, tuple[str, ...]] | None:
    """An instruction proposal that only adds working agreements, re-derived against its file as it is now:
    (the file with them added, the proposals whose writes changed it since the proposal was made), or None.

    Only when every change since is one of cairn's recorded writes (:func:`changed_by`: another proposal
    accepted, or undone), so a person's own edit still makes the proposal stale; only when its bytes are
    exactly its bullets added to its before-state (:func:`~worker.memory.model.add_working_agreements`), and
    none of them is in the file already. The accept that writes it is as checked as any (the file as read
    here is the before-state its write proves under the target lock)."""
    from cairn.worker.memory import model  # yaml loads only to check or write files: module docstring

    if p.kind is not ProposalKind.INSTRUCTION or p.index or p.premise or len(p.files) != 1:
        return None
    (f,) = p.files
    now = current.get(rels.get(f.path, ""))
    if now is None or f.after is None or not f.after_bundle:
        return None
    h = sha(now)
    if h == f.before:
        return None
    chain = changed_by(ms, rels[f.path], f.before, h)
    if not chain:
        return None
    try:
        before = ms.mbundles.get(f.before_bundle) if f.before_bundle else None
        after = ms.mbundles.get(f.after_bundle)
        bullets = _added_bullets(before, after)
        if not bullets or model.add_working_agreements(before, bullets) != after:
            return None
        present = {line.strip() for line in now.decode("utf-8").splitlines()}
    except (CairnError, UnicodeDecodeError):
        return None
    if any(b.strip() in present for b in bullets):
        return None  # already said: adding it again would say it twice
    return model.add_working_agreements(now, bullets), tuple(dict.fromkeys(pid for pid, _ in chain))


def rebased_file(ms: MemoryStore, p: Proposal) -> tuple[str, bytes, bytes] | None:
    """(path, its bytes now, with the proposal's agreements added) for a proposal :func:`rebase` re-derives now;
    what ``show`` diffs and the editors mark for it before it is accepted. None otherwise."""
    if p.kind is not ProposalKind.INSTRUCTION or len(p.files) != 1:
        return None
    try:
        target, rels = _resolve(ms, p)
        base, tclaims = ms.target_stores(target)
        try:
            current = _read_current(base, sorted(set(rels.values())))
            rb = rebase(ms, p, rels, current)
        finally:
            tclaims.close()
            if base is not ms.root:
                base.close()
    except CairnError:
        return None
    path = p.files[0].path
    now = current[rels[path]]
    return None if rb is None or now is None else (path, now, rb[0])


def _changed_by(ms: MemoryStore, p: Proposal, rels: dict[str, str], current: dict[str, bytes | None]) -> str:
    """Who changed a stale proposal's files, when only cairn did: `` (by proposal P applied)`` or ""."""
    names: list[str] = []
    for f in p.files:
        data = current.get(rels.get(f.path, ""))
        chain = changed_by(ms, rels[f.path], f.before, None if data is None else sha(data))
        names += [f"{pid} {'applied' if action == 'apply' else 'undone'}" for pid, action in chain or ()]
    return f" (by proposal {', '.join(dict.fromkeys(names))})" if names else ""


def state_of(ms: MemoryStore, p: Proposal) -> tuple[ProposalState, str]:
    ds = decisions(ms, p.id)
    if ds and ds[-1].state is not ProposalState.PENDING:  # pending again after an un-reject: checked as any
        return ds[-1].state, ""
    if p.kind is ProposalKind.DISPOSITION and not p.files:
        return ProposalState.PENDING, ""
    try:
        target, rels = _resolve(ms, p)
        base, tclaims = ms.target_stores(target)
        try:
            fresh, why = check_fresh(ms, p, base, rels)
        finally:
            tclaims.close()
            if base is not ms.root:
                base.close()
    except CairnError as exc:
        return ProposalState.STALE, f"{exc.code}: {exc.message}"
    return (ProposalState.PENDING, why) if fresh else (ProposalState.STALE, why)


def contradicted(ms: MemoryStore, p: Proposal) -> bool:
    """Whether memory as it is now contradicts what ``p`` would add (:func:`_contradicted`), its files
    otherwise as the proposal expects them; False when that cannot be judged."""
    if p.kind in (ProposalKind.INSTRUCTION, ProposalKind.DISPOSITION):
        return False
    try:
        target, rels = _resolve(ms, p)
        base, tclaims = ms.target_stores(target)
        try:
            current = _read_current(base, sorted(set(rels.values())))
            return bool(_contradicted(ms, p, base, rels, current))
        finally:
            tclaims.close()
            if base is not ms.root:
                base.close()
    except CairnError:
        return False


# -- shared steps -------------------------------------------------------------

def _settle_quiet(store: ClaimStore, claim: Claim, kind: OutcomeKind, code: ErrorCode) -> None:
    try:
        store.settle(claim, kind, error=str(code))
    except CairnError:
        pass


def _record_decision(ms: MemoryStore, claim: Claim, p: Proposal, action: str, state: ProposalState,
                     write: str | None) -> PrivateDecision:
    seq = len(decisions(ms, p.id)) + 1
    dec = PrivateDecision(proposal=p.id, seq=seq, action=action, state=state, decided=ms.now(), write=write,
                          fingerprint=p.fingerprint)
    data = codec.encode(dec)
    h, put = ms.mbundles.put_ops(data)
    ms.mclaims.settle(claim, OutcomeKind.COMPLETED, bundle=h, extra_ops=[
        *put, P.EnsureDir(f"{DECISIONS}/{p.id}"), P.Link(f"{DECISIONS}/{p.id}/{seq:04d}", h.encode()),
    ])
    return dec


def _publish_decision(ms: MemoryStore, dec: PrivateDecision) -> None:
    """Publish a private decision's public record (idempotent: a record already there is kept).

    The private decision is durable before this runs, so a crash here loses nothing: recovery publishes
    the missing record. A failure (no space, an I/O error, a failed fsync) is reported with its code,
    never swallowed: the failed write is not fsynced again (its temp is dropped), and the next command
    publishes the record afresh.
    """
    h = sha(codec.encode(dec))
    rec = DecisionRecord(proposal=dec.proposal, action=dec.action, state=dec.state, decided=dec.decided, accepted=h)
    res = ms.run(ms.public_ops(f"{DECISIONS_PUBLIC}/{dec.proposal}-{dec.seq:04d}.json",
                               codec.encode(redact_record(rec))))
    for r in res.results:
        if r.status is OpStatus.FAILED:
            raise CairnError(r.code or ErrorCode.IO_FAILED, f"proposal {dec.proposal} is {dec.state} (its decision "
                             f"is recorded), but its public record could not be written: {r.message}; "
                             "the next command publishes it")


def publish_review(ms: MemoryStore, result: ReviewResult, created: float) -> None:
    """Link an accepted review's proposals and publish its record (redacted); idempotent."""
    ops: list[P.Op] = [P.EnsureDir(PROPOSALS)]
    for p in result.proposals:
        ops.append(P.Link(f"{PROPOSALS}/{p.id}", codec.encode(p), optional=True))
    rec = ReviewRecord(id=result.id, created=created, digests=result.digests,
                       proposals=tuple(p.id for p in result.proposals), provider=result.provider,
                       automatic=result.automatic, remembered=result.remembered)
    ops += ms.public_ops(f"{REVIEWS_PUBLIC}/{result.id}.json", codec.encode(redact_record(rec)))
    res = ms.run(ops)
    for r in res.results:
        if r.status.value == "failed":
            raise CairnError(r.code or ErrorCode.IO_FAILED, r.message)


def published_reviews(ms: MemoryStore) -> list[ReviewRecord]:
    """The public review records, oldest first."""
    names = [n for n in ms.names(REVIEWS_PUBLIC) if n.endswith(".json")]
    raws = ms.read_many(f"{REVIEWS_PUBLIC}/{n}" for n in names)
    out = []
    for n in names:
        raw = raws[f"{REVIEWS_PUBLIC}/{n}"]
        if raw is not None:
            out.append(codec.decode(raw, ReviewRecord, where=n))
    return sorted(out, key=lambda r: (r.created, r.id))


def _missing_dirs(base: PinnedDir, plan: list[tuple[str, str, bytes | None, bytes | None]]) -> tuple[str, ...]:
    """Directories (outermost first) a plan's written files need that do not exist yet."""
    out: list[str] = []
    for _path, rel, _b, after in plan:
        parts = rel.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d in out:
                continue
            try:
                base.descend(d).close()
            except CairnError as exc:
                if exc.code is not ErrorCode.NOT_FOUND:
                    raise
                if after is not None:
                    out.append(d)
    return tuple(out)


def _remove_dirs_ops(dirs: tuple[str, ...]) -> list[P.Op]:
    """Remove directories innermost first, each only if empty (anything a person put there keeps it)."""
    return [P.RemoveDir(d, optional=True) for d in sorted(dirs, key=lambda d: -d.count("/"))]


def _execute_write(ms: MemoryStore, p: Proposal, wclaim: Claim, action: str,
                   plan: list[tuple[str, str, bytes | None, bytes | None]], target: Target,
                   base: PinnedDir, tclaims: ClaimStore, tclaim: Claim, dirs: tuple[str, ...] | None) -> str:
    """Intent → marker → guarded write+settle. ``plan``: (proposal path, base rel, before, after).

    ``dirs``: for an undo, the directories its application created (removed
    when empty); ``None`` for an application, which records the ones it creates.
    """
    undo_dirs = dirs is not None
    dirs = dirs if dirs is not None else _missing_dirs(base, plan)
    write = f"w{secrets.token_hex(8)}"
    edits: list[FileEdit] = []
    put_ops: list[P.Op] = []
    for _path, rel, before, after in plan:
        edit, bundle_ops = ms.edit_ops(rel, before, after)
        edits.append(edit)
        put_ops += bundle_ops
    intent = WriteIntent(id=write, proposal=p.id, action=action, files=tuple(edits), marker=f"{MARKERS}/{write}",
                         created=wclaim.record.created, dirs=dirs)
    intent_bytes = codec.encode(intent)
    ms.mclaims.guarded_all(wclaim, [*put_ops, P.EnsureDir(INTENTS), P.Link(f"{INTENTS}/{write}", intent_bytes)])
    marker = codec.encode(WriteMarker(write=write, intent=sha(intent_bytes)))
    tclaims.guarded_all(tclaim, [P.EnsureDir(MARKERS), P.Link(f"{MARKERS}/{write}", marker)])
    ops: list[P.Op] = []
    for e, (_path, rel, _b, _a) in zip(edits, plan, strict=True):
        ops.append(P.Verify(rel, absent=True) if e.before is None else P.Verify(rel, sha256=e.before))
    for e, (_path, rel, _b, after) in zip(edits, plan, strict=True):
        if e.before == e.after:
            continue  # unchanged (a freshness guard): verified above, never rewritten
        d = rel.rsplit("/", 1)[0] if "/" in rel else ""
        if after is None:
            ops.append(P.Remove(rel))
        else:
            if d:
                ops.append(P.EnsureDir(d))
            ops.append(P.Write(rel, after, mode=0o644, keep_mode=True))  # a user's 0600 file stays 0600
    if undo_dirs:
        ops += _remove_dirs_ops(dirs)
    verifies = len(edits)
    try:
        tclaims.settle(tclaim, OutcomeKind.COMPLETED, payload={"write": write}, extra_ops=ops)
    except CairnError as exc:
        effect = exc.detail.get("effect")
        if exc.code in (ErrorCode.CLAIM_LOST, ErrorCode.CLAIM_EXPIRED) or (
                isinstance(effect, int) and effect < verifies):
            # nothing was written (the program stops at the first verify that does not hold): retire the marker
            _retire_marker(base, write)
            if exc.code in (ErrorCode.CLAIM_LOST, ErrorCode.CLAIM_EXPIRED):
                raise
            if exc.detail.get("status") != str(OpStatus.FAILED):
                raise CairnError(ErrorCode.PROPOSAL_STALE, f"proposal {p.id}: a target file changed during "
                                 "application; nothing was written") from None
            raise CairnError(exc.code, f"proposal {p.id}: {exc.message}; nothing was written") from None
        # a write (or the outcome) failed: no space, an I/O error. Files written before it are put back
        # exactly, now, so the proposal stays pending and the next attempt finds the target free.
        _settle_quiet(tclaims, tclaim, OutcomeKind.FAILED, exc.code)
        kind = _reconcile(ms, p, intent, base, tclaims, roll_back=True)
        undone = "nothing was written" if kind in ("untouched", "partial") else "a marked write is left for recovery"
        raise CairnError(exc.code, f"proposal {p.id}: {exc.message}; {undone}") from None
    return write


def _retire_marker(base: PinnedDir, write: str) -> None:
    """Remove a marker under the same target lock that guards the writes.

    A failure (an I/O error on the unlink or on its directory's fsync) is reported, never swallowed. The
    write is settled by then (complete and recorded, or rolled back), so a marker that survives is only
    what a crash here leaves: the next recovery classifies the write again and retires it.
    """
    res = P.run(base, [P.Remove(f"{MARKERS}/{write}", optional=True)], lock=TARGET_LOCK)
    for r in res.results:
        if r.status is OpStatus.FAILED:
            raise CairnError(r.code or ErrorCode.IO_FAILED, f"the marker of write {write} could not be removed: "
                             f"{r.message}; the write itself is settled, and the next command removes it")


def _with_claims(
    ms: MemoryStore, p: Proposal, purpose: str
) -> tuple[Target, dict[str, str], Claim, PinnedDir, ClaimStore, Claim]:
    target, rels = _resolve(ms, p)
    wclaim = ms.mclaims.elect(f"proposal/{p.id}", purpose=purpose, ttl=CLAIM_TTL, authority=ms.mauthority)
    base, tclaims = ms.target_stores(target)
    try:
        tclaim = _elect_target(tclaims, f"{purpose}:{p.id}", attrs.evolve(ms.mauthority, target=target.base))
    except CairnError as exc:
        _settle_quiet(ms.mclaims, wclaim, OutcomeKind.CANCELLED, exc.code)
        tclaims.close()
        raise
    except BaseException:
        _settle_quiet(ms.mclaims, wclaim, OutcomeKind.CANCELLED, ErrorCode.CANCELLED)
        tclaims.close()
        raise
    return target, rels, wclaim, base, tclaims, tclaim


def _elect_target(tclaims: ClaimStore, purpose: str, authority: Any, *, wait: float = TARGET_WAIT,
                  clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> Claim:
    """The target's claim, waiting up to ``wait`` seconds for a live holder (another decision on the same
    memory) to finish; a holder known gone (this host, a free pid) is not waited for: its claim holds until
    its deadline. Still held: ``E_CLAIM_BUSY`` saying so in words, not in generations."""
    end = clock() + wait
    while True:
        try:
            return tclaims.elect("target", purpose=purpose, ttl=CLAIM_TTL, authority=authority)
        except CairnError as exc:
            if exc.code is not ErrorCode.CLAIM_BUSY:
                raise
            pid, host = exc.detail.get("pid"), exc.detail.get("host")
            gone = type(pid) is int and pid > 0 and host == tclaims.host and not _alive(pid)
            if gone or clock() >= end:
                who = f" (process {pid})" if type(pid) is int else ""
                raise CairnError(ErrorCode.CLAIM_BUSY, "another cairn command is writing this memory"
                                 f"{who}; try again in a moment" + (" (it ended: its hold lapses within a minute)"
                                                                    if gone else ""), **exc.detail) from None
        sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's
    return True


# -- decisions ----------------------------------------------------------------

def accept(ms: MemoryStore, pid: str, *, undecided: bool = False, keep_both: bool = False) -> Decision:
    """Apply a proposal. ``undecided``: only one nobody has decided on, proven under its claim (``auto`` mode).
    ``keep_both``: even where memory says otherwise on its subject (the person's call, docs/adr/0025)."""
    from cairn.worker.memory import model  # yaml loads only to check or write files: module docstring

    p = load_proposal(ms, pid)
    if done := _already(ms, pid, ProposalState.APPLIED, ProposalState.REJECTED, "was rejected; it cannot be applied"):
        return done
    _check_required(ms, p)

    def still_undecided() -> None:
        # under the proposal claim: a decision recorded before it was elected is seen here
        if undecided and (history := decisions(ms, pid)):
            raise CairnError(ErrorCode.PROPOSAL_STATE, f"proposal {pid} was decided meanwhile "
                             f"({history[-1].state}); nothing was written")

    if p.kind is ProposalKind.DISPOSITION and not p.files:
        _decide_only(ms, p, "accept", ProposalState.APPLIED, check=still_undecided)
        return Decision(id=pid, state=ProposalState.APPLIED, changed=True, written=())

    def plan(rels: dict[str, str], base: PinnedDir) -> list[tuple[str, str, bytes | None, bytes | None]]:
        still_undecided()
        fresh, why = check_fresh(ms, p, base, rels, contradictions=not keep_both)
        if not fresh:
            if check_fresh(ms, p, base, rels, contradictions=False)[0]:
                # the newer statement is proposed again as a replacement once its digest is reviewed again
                # (ADR 0025); a remembered text's digest is published by `cairn process` first
                again = ("; `cairn process && cairn review` proposes it as a replacement"
                         if "without replacing it" in why else "")
                why += f" (to keep both: accept --keep-both){again}"  # the editors' hint first: messages are clipped
            elif "changed since the proposal was made" in why and (again := _again(ms, p)):
                why += f"; {again}"
            raise CairnError(ErrorCode.PROPOSAL_STALE, f"proposal {pid} is stale: {why}; nothing was written for it")
        current = _read_current(base, sorted(set(rels.values())))
        rb = rebase(ms, p, rels, current)
        out: list[tuple[str, str, bytes | None, bytes | None]] = []
        for f in p.files:
            after = ms.mbundles.get(f.after_bundle) if f.after_bundle else None
            if (None if after is None else sha(after)) != f.after:
                raise CairnError(ErrorCode.BUNDLE_HASH_MISMATCH, f"proposal {pid}: after-state of {f.path} is corrupt")
            # the redaction gate once more before a memory file is written (a no-op for proposals it made), over
            # what the write adds: the user's own lines are theirs (a token in their agent settings stays)
            before = current[rels[f.path]]
            if rb is not None:  # only cairn's own writes changed it: its agreements added to the file as it is now
                after = rb[0]
                rebased.extend(rb[1])
            elif (None if before is None else sha(before)) != f.before:  # changed since it was checked just now
                raise CairnError(ErrorCode.PROPOSAL_STALE, f"proposal {pid}: {f.path} changed during application; "
                                 "nothing was written for it")
            out.append((f.path, rels[f.path], before, None if after is None else redact_added(before, after)))
        by_index: dict[str, list[tuple[str, str | None, str | None]]] = {}
        for e in p.index:
            by_index.setdefault(e.index, []).append((e.file, e.before, e.after))
        for index, edits in by_index.items():
            before = current[rels[index]]
            after = model.apply_index_edits(before or b"", edits, model.IndexBudget.of(ms.settings))
            out.append((index, rels[index], before, redact_added(before, after)))
        return out

    rebased: list[str] = []
    written = _checked_write(ms, p, "accept", "apply", ProposalState.APPLIED, plan)
    return Decision(id=pid, state=ProposalState.APPLIED, changed=True, written=tuple(written),
                    rebased=tuple(dict.fromkeys(rebased)) or None)


def _again(ms: MemoryStore, p: Proposal) -> str:
    """The command that proposes a stale proposal's change again, against the files as they are now."""
    from cairn.worker.memory.store import REMEMBERED

    if p.kind is ProposalKind.DISPOSITION:
        return ""
    remembered = set(ms.names(REMEMBERED))
    if any(e in remembered for e in p.evidence):
        return ("`cairn review` (or `cairn remember` of the same text) proposes it again against the files "
                "as they are now")
    return "`cairn review` proposes it again against the files as they are now"


def _check_required(ms: MemoryStore, p: Proposal) -> None:
    """A note disposition applies only after the proposals carrying the note's content are applied."""
    for rid in p.requires:
        history = decisions(ms, rid)
        if not history or history[-1].state is not ProposalState.APPLIED:
            state = history[-1].state if history else "pending"
            raise CairnError(ErrorCode.PROPOSAL_STATE, f"proposal {p.id} disposes of {p.target} only after proposal "
                             f"{rid} (now {state}) is applied; nothing was changed")


def _checked_write(ms: MemoryStore, p: Proposal, purpose: str, action: str, state: ProposalState,
                   make_plan: Any, dirs: tuple[str, ...] | None = None) -> list[str]:
    """Both claims, the plan (made under them), intent → marker → write, decision, marker retirement.

    Any failure before the decision settles both claims as cancelled; a crash
    leaves at most a marked write for :func:`recover`.
    """
    target, rels, wclaim, base, tclaims, tclaim = _with_claims(ms, p, purpose)
    try:
        plan = make_plan(rels, base)
        write = _execute_write(ms, p, wclaim, action, plan, target, base, tclaims, tclaim, dirs)
        try:
            dec: PrivateDecision | None = _record_decision(ms, wclaim, p, "accept" if action == "apply" else "undo",
                                                           state, write)
        except CairnError as exc:
            if exc.code not in (ErrorCode.CLAIM_LOST, ErrorCode.CLAIM_EXPIRED):
                raise
            dec = None  # the files ARE written (step 4 settled with them): report that, see below
    except CairnError as exc:  # settled as failed, so the next attempt never waits for a deadline
        _settle_quiet(tclaims, tclaim, OutcomeKind.FAILED, exc.code)
        _settle_quiet(ms.mclaims, wclaim, OutcomeKind.FAILED, exc.code)
        raise
    except BaseException:
        _settle_quiet(tclaims, tclaim, OutcomeKind.CANCELLED, ErrorCode.CANCELLED)
        _settle_quiet(ms.mclaims, wclaim, OutcomeKind.CANCELLED, ErrorCode.CANCELLED)
        raise
    finally:
        tclaims.close()
    if dec is None:
        # late: the workspace claim was lost after the write landed (deadline passed, or a
        # recovery took it over). The write is marked, exactly as after a crash: recovery
        # records its decision (now, unless another recovery is at it) and retires the marker
        try:
            recover(ms)
        except CairnError:
            pass  # still marked: the next recovery (every decision job starts with one) records it
        return [path for path, *_ in plan]
    _retire_marker(base, write)
    _publish_decision(ms, dec)
    return [path for path, *_ in plan]


def reject(ms: MemoryStore, pid: str, *, action: str = "reject") -> Decision:
    """Reject a proposal; ``action`` ``supersede`` records that an edited version replaced it."""
    p = load_proposal(ms, pid)
    if done := _already(ms, pid, ProposalState.REJECTED, ProposalState.APPLIED,
                        "is applied; undo it instead of rejecting it"):
        return done
    _decide_only(ms, p, action, ProposalState.REJECTED)
    return Decision(id=pid, state=ProposalState.REJECTED, changed=True)


def unreject(ms: MemoryStore, pid: str) -> Decision:
    """A rejection taken back: the proposal is pending again (a decision ``unreject``, state pending).

    Its fingerprint is no longer a rejected one (:func:`worker.memory.review._suppressed` reads the last
    decision), so reviews may propose the change again; while it stays pending and applicable it holds its
    fingerprint like any pending proposal. Accepting it later is the ordinary checked accept (exact
    before-state, stale check).
    """
    p = load_proposal(ms, pid)
    history = decisions(ms, pid)
    last = history[-1].state if history else ProposalState.PENDING
    if last is ProposalState.PENDING:
        return Decision(id=pid, state=ProposalState.PENDING, changed=False)
    if last is not ProposalState.REJECTED:
        raise CairnError(ErrorCode.PROPOSAL_STATE, f"proposal {pid} is {last}; only a rejected proposal can be "
                         "un-rejected" + (" (undo it instead)" if last is ProposalState.APPLIED else ""))

    def still_rejected() -> None:
        now = decisions(ms, pid)
        if not now or now[-1].state is not ProposalState.REJECTED:
            raise CairnError(ErrorCode.PROPOSAL_STATE, f"proposal {pid} was decided meanwhile; nothing was changed")

    _decide_only(ms, p, "unreject", ProposalState.PENDING, check=still_rejected)
    return Decision(id=pid, state=ProposalState.PENDING, changed=True)


def _already(ms: MemoryStore, pid: str, wanted: ProposalState, refused: ProposalState,
             why: str) -> Decision | None:
    """The unchanged answer if the last decision is already ``wanted``; refused if it is ``refused``."""
    history = decisions(ms, pid)
    last = history[-1].state if history else None
    if last is wanted:
        return Decision(id=pid, state=wanted, changed=False)
    if last is refused:
        raise CairnError(ErrorCode.PROPOSAL_STATE, f"proposal {pid} {why}")
    return None


def _decide_only(ms: MemoryStore, p: Proposal, action: str, state: ProposalState,
                 check: Callable[[], None] | None = None) -> None:
    """A decision that writes no file (a rejection, a disposition): recorded privately, then published.

    ``check``: called under the claim before the decision is recorded (it raises to refuse).
    """
    wclaim = ms.mclaims.elect(f"proposal/{p.id}", purpose=action, ttl=CLAIM_TTL, authority=ms.mauthority)
    try:
        if check is not None:
            check()
        dec = _record_decision(ms, wclaim, p, action, state, None)
    except CairnError as exc:  # settled as failed (no space …): the next attempt never waits for a deadline
        _settle_quiet(ms.mclaims, wclaim, OutcomeKind.FAILED, exc.code)
        raise
    except BaseException:
        _settle_quiet(ms.mclaims, wclaim, OutcomeKind.CANCELLED, ErrorCode.CANCELLED)
        raise
    _publish_decision(ms, dec)


def load_intent(ms: MemoryStore, write: str) -> WriteIntent:
    rec = ms.read_record(f"{INTENTS}/{write}", WriteIntent)
    if rec is None:
        raise CairnError(ErrorCode.NOT_FOUND, f"write intent {write} is missing")
    return rec


def undo(ms: MemoryStore, pid: str) -> Decision:
    from cairn.worker.memory import model  # yaml loads only to check or write files: module docstring

    p = load_proposal(ms, pid)
    history = decisions(ms, pid)
    if not history or history[-1].state is not ProposalState.APPLIED:
        state = history[-1].state if history else "pending"
        raise CairnError(ErrorCode.PROPOSAL_STATE, f"proposal {pid} is {state}; only an applied proposal can be undone")
    applied = history[-1]
    if applied.write is None:  # a disposition: nothing was written
        _decide_only(ms, p, "undo", ProposalState.UNDONE)
        return Decision(id=pid, state=ProposalState.UNDONE, changed=True, written=())
    intent = load_intent(ms, applied.write)
    index_paths = {e.index for e in p.index}

    def plan(rels: dict[str, str], base: PinnedDir) -> list[tuple[str, str, bytes | None, bytes | None]]:
        rel_to_path = {v: k for k, v in rels.items()}
        current = _read_current(base, [f.path for f in intent.files])
        out: list[tuple[str, str, bytes | None, bytes | None]] = []
        for f in intent.files:
            path = rel_to_path.get(f.path, f.path)
            now = current[f.path]
            if path in index_paths:
                original = ms.mbundles.get(f.before_bundle) if f.before_bundle else None
                if now is not None and sha(now) == f.after:
                    out.append((path, f.path, now, original))  # untouched since: the exact original (or absence)
                    continue
                edits = [(e.file, e.after, e.before) for e in p.index if e.index == path]
                try:
                    after = model.apply_index_edits(now or b"", edits, model.IndexBudget.of(ms.settings))
                except CairnError as exc:
                    if exc.code is ErrorCode.INDEX_FULL:  # the index grew since: putting the entry back crosses it
                        raise CairnError(ErrorCode.INDEX_FULL, f"undo refused: putting its entry back would take {path} "
                                         "over its budget; merge or retire a topic first, or raise the budget; "
                                         "nothing was changed") from None
                    raise CairnError(ErrorCode.TARGET_CHANGED, f"undo refused: {path} changed since it was applied "
                                     f"({exc.code}); nothing was changed") from None
                out.append((path, f.path, now, after))
                continue
            if (None if now is None else sha(now)) != f.after:
                raise CairnError(ErrorCode.TARGET_CHANGED, f"undo refused: {path} changed since it was applied"
                                 f"{_later(ms, pid, f.path, f.after, now)}; nothing was changed")
            before = ms.mbundles.get(f.before_bundle) if f.before_bundle else None
            out.append((path, f.path, now, before))
        return out

    written = _checked_write(ms, p, "undo", "undo", ProposalState.UNDONE, plan, dirs=intent.dirs)
    return Decision(id=pid, state=ProposalState.UNDONE, changed=True, written=tuple(written))


def _later(ms: MemoryStore, pid: str, rel: str, applied: str | None, now: bytes | None) -> str:
    """Why an undo of ``pid`` finds ``rel`` changed, when cairn changed it: the proposals applied after it that
    wrote the file and are still applied, to undo first (:func:`changed_by`); otherwise that someone else did."""
    chain = changed_by(ms, rel, applied, None if now is None else sha(now))
    if chain is None:
        return " (not by a cairn proposal: edit the file by hand)"
    later = [q for q, action in chain if action == "apply" and q != pid]
    later = [q for q in dict.fromkeys(reversed(later))
             if (ds := decisions(ms, q)) and ds[-1].state is ProposalState.APPLIED]
    if not later:
        return ""
    return (f", by proposal {', '.join(later)} applied after it: undo {' and '.join(later)} first "
            f"(`cairn undo {' '.join(later)} {pid}` undoes them all, the latest first)")


# -- recovery -------------------------------------------------------------------

_MARKER_PATHS: dict[str, str] = {}  # write id -> marker path: immutable facts remembered per process


def recover(ms: MemoryStore, *, deciding: Collection[str] = ()) -> dict[str, int]:
    """Reconcile marked writes, publish missing decision records, collect dead writers' temps, then
    keep the ``auto``-mode applications a killed review promised (:mod:`worker.memory.autoapply`).

    See the module docstring. Every decision, undo, review, drain and run goes
    through here first, so a crash at any point is repaired by whatever
    runs next. ``deciding``: proposals the caller is about to decide; the
    user's decision goes first, so no promised application takes them now.
    """
    from cairn.worker.memory.autoapply import complete  # autoapply imports this module (a cycle)

    counts = _reconcile_marked(ms)
    counts["published"] = publish_missing(ms)
    counts["temps"] = ms.collect_target_temps()
    counts["auto"] = len(complete(ms, skip=deciding))
    return counts


def unpublished(ms: MemoryStore) -> list[tuple[str, str]]:
    """(proposal, seq) of private decisions without their public record."""
    public = set(ms.names(DECISIONS_PUBLIC))
    return [(pid, seq) for pid in ms.names(DECISIONS) for seq in ms.names(f"{DECISIONS}/{pid}")
            if f"{pid}-{seq}.json" not in public]


def publish_missing(ms: MemoryStore) -> int:
    """Publish the record of every private decision whose publication a crash cut off (idempotent).

    The record is a pure function of the private decision, so a republished
    record is byte-identical to the one the interrupted run would have made.
    """
    missing = unpublished(ms)
    for pid in sorted({pid for pid, _ in missing}):
        seqs = {seq for p, seq in missing if p == pid}
        for dec in decisions(ms, pid):
            if f"{dec.seq:04d}" in seqs:
                _publish_decision(ms, dec)
    return len(missing)


def _reconcile_marked(ms: MemoryStore) -> dict[str, int]:
    counts = {"complete": 0, "untouched": 0, "partial": 0, "foreign": 0, "busy": 0}
    writes = ms.names(INTENTS)
    unread = [w for w in writes if w not in _MARKER_PATHS]
    raws = ms.read_many(f"{INTENTS}/{w}" for w in unread)
    intents: dict[str, WriteIntent] = {}
    for w in unread:
        raw = raws[f"{INTENTS}/{w}"]
        if raw is None:
            continue
        rec = codec.decode(raw, WriteIntent, where=f"{INTENTS}/{w}")
        _MARKER_PATHS[w] = rec.marker
        intents[w] = rec
    for w in writes:
        if w not in _MARKER_PATHS:
            continue
        intent = intents.get(w) or load_intent(ms, w)
        p = load_proposal(ms, intent.proposal)
        target, rels = _resolve(ms, p)
        if not _own_paths(intent, set(rels.values())):
            counts["foreign"] += 1  # not this proposal's files (a forged intent): nothing is touched
            continue
        base, tclaims = ms.target_stores(target)
        try:
            if P.run(base, [P.Verify(_MARKER_PATHS[w], absent=True)])[0].status is OpStatus.OK:
                continue  # unmarked: never inspected further, never taken as success
            counts[_reconcile(ms, p, intent, base, tclaims)] += 1
        finally:
            tclaims.close()
    return counts


def _own_paths(intent: WriteIntent, allowed: set[str]) -> bool:
    """Whether every file an intent names is one of its proposal's (checked) targets, and every
    directory it would remove holds one of them.

    Intents are private state, but a cloned repository can ship ``.cairn/state``: recovery trusts
    an intent's hashes only for the paths its proposal may touch, never for ``.git/config``.
    """
    return (all(f.path in allowed for f in intent.files)
            and all(any(a.startswith(d.rstrip("/") + "/") for a in allowed) for d in intent.dirs))


def _reconcile(ms: MemoryStore, p: Proposal, intent: WriteIntent, base: PinnedDir, tclaims: ClaimStore, *,
               roll_back: bool = False) -> str:
    """Classify one marked write and settle it (see the module docstring).

    ``roll_back``: the writer itself failed mid-write and reports the failure,
    so even a complete write is put back to its before-state (its decision
    was never recorded; it must not appear applied behind an error).
    """
    try:
        tclaim = tclaims.elect("target", purpose=f"recover:{p.id}", ttl=CLAIM_TTL, authority=ms.mauthority)
    except CairnError as exc:
        if exc.code is ErrorCode.CLAIM_BUSY:
            return "busy"  # a live writer owns the target: its own program will settle it
        raise
    try:
        current = _read_current(base, [f.path for f in intent.files])
        states = []
        for f in intent.files:
            now = current[f.path]
            h = None if now is None else sha(now)
            guard = f.before == f.after and h == f.before  # verified only, never written
            states.append("guard" if guard else "after" if h == f.after else "before" if h == f.before else "foreign")
        if "foreign" in states:
            tclaims.settle(tclaim, OutcomeKind.CANCELLED, error=str(ErrorCode.TARGET_CHANGED))
            return "foreign"
        if all(s in ("after", "guard") for s in states) and not roll_back:
            tclaims.settle(tclaim, OutcomeKind.COMPLETED, payload={"write": intent.id, "recovered": "complete"},
                           extra_ops=_remove_dirs_ops(intent.dirs) if intent.action == "undo" else [])
            if not any(d.write == intent.id for d in decisions(ms, p.id)):
                try:
                    wclaim = ms.mclaims.elect(f"proposal/{p.id}", purpose="recover", ttl=CLAIM_TTL,
                                              authority=ms.mauthority)
                except CairnError as exc:
                    if exc.code is ErrorCode.CLAIM_BUSY:
                        return "busy"  # the writer is recording its decision right now
                    raise
                if any(d.write == intent.id for d in decisions(ms, p.id)):
                    _settle_quiet(ms.mclaims, wclaim, OutcomeKind.CANCELLED, ErrorCode.CANCELLED)
                    _retire_marker(base, intent.id)
                    return "complete"
                state = ProposalState.APPLIED if intent.action == "apply" else ProposalState.UNDONE
                dec = _record_decision(ms, wclaim, p, "accept" if intent.action == "apply" else "undo", state,
                                       intent.id)
                _publish_decision(ms, dec)
            _retire_marker(base, intent.id)
            return "complete"
        kind = "untouched" if all(s in ("before", "guard") for s in states) else "partial"
        ops: list[P.Op] = []
        for f, s in zip(intent.files, states, strict=True):
            if s == "after":  # exact-expected rollback: only what this write itself wrote
                ops.append(P.Verify(f.path, absent=True) if f.after is None else P.Verify(f.path, sha256=f.after))
                before = ms.mbundles.get(f.before_bundle) if f.before_bundle else None
                ops.append(P.Remove(f.path) if before is None else P.Write(f.path, before, mode=0o644, keep_mode=True))
        if intent.action == "apply":  # back to before: what the application created goes again, once empty
            ops += _remove_dirs_ops(intent.dirs)
        tclaims.settle(tclaim, OutcomeKind.COMPLETED, payload={"write": intent.id, "recovered": kind}, extra_ops=ops)
        _retire_marker(base, intent.id)
        return kind
    except BaseException:
        _settle_quiet(tclaims, tclaim, OutcomeKind.FAILED, ErrorCode.INTERNAL)
        raise
