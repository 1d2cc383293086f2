"""Claims and outcomes: numbered, fenced generations of one line of work.

A *scope* (``digest/<capture>``, ``review/general``, ``cleanup`` …) has
generations 1, 2, 3 …; the generation number is the fencing token.

* **Elect** (at most three programs): (1) ensure the scope directory, list it
  and read the target clock; (2) read the newest claim and its outcome;
  (3) under the scope's target lock, re-verify what was read and publish
  ``N+1.claim`` by exclusive link. If N is unsettled and its deadline has not
  passed the scope is busy; if it has passed, program 3 first elects N's
  ``expired`` outcome (takeover), then claims N+1.
* **Deadline** is fixed at election on the target clock. Claims never renew.
* **Outcome**: exactly one per generation, by exclusive link of
  ``N.outcome`` under the lock. Completion, failure, cancellation and
  takeover race for it; the loser reads and returns the winner's.
  ``completed`` additionally requires ownership (:class:`VerifyOwner`) in the
  same program, so a result can never be accepted after its deadline.
* **Guarded writes** run ``VerifyOwner`` and the writes it guards in one
  program under the same lock that takeover and settlement use: a late
  writer from an expired generation is rejected at the target.
* **Successor requires outcome**: program 3 verifies N's outcome exists.
* **Late completion** (:meth:`ClaimStore.finish`): a job whose guarded writes
  landed before its completion was refused reports those writes, not a lost
  claim; what it reports matches the files.
* **Lock waits are bounded** (``lock_wait``, ADR 0002): a scope lock held past
  the bound, e.g. by a stopped process, is ``E_CLAIM_BUSY``.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from typing import Any

import attrs
from cairn.protocol import codec
from cairn.protocol.claims import Authority, ClaimRecord, OutcomeRecord
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.vocab import OpStatus, OutcomeKind
from cairn.state import program as P
from cairn.state.fsdir import PinnedDir
from cairn.state.locks import DEFAULT_WAIT, LockWait

_PLAIN_SCOPE = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}$")
_PART = re.compile(r"[^A-Za-z0-9._-]+")


def scope_dirname(scope: str) -> str:
    """Map a scope id to a directory name; anything not plainly safe is hashed."""
    if _PLAIN_SCOPE.match(scope):
        return scope
    readable = _PART.sub("_", scope)[:60].strip("._") or "scope"
    digest = hashlib.sha256(scope.encode("utf-8")).hexdigest()[:16]
    return f"{readable}.{digest}"


@attrs.frozen
class Claim:
    """A generation this process elected; carry it to every guarded step."""

    scope: str
    scope_dir: str  # relative to the claims root
    record: ClaimRecord

    @property
    def generation(self) -> int:
        return self.record.generation

    @property
    def deadline(self) -> float:
        return self.record.deadline


@attrs.frozen
class Newest:
    generation: int
    claim: ClaimRecord | None
    outcome: OutcomeRecord | None
    now: float


class ClaimStore:
    """Claims of many scopes under one directory of a pinned base."""

    def __init__(self, base: PinnedDir, rel: str, *, clock_offset: float = 0.0,
                 lock_wait: LockWait = DEFAULT_WAIT) -> None:
        self.base = base
        self.rel = rel
        self.clock_offset = clock_offset  # tests only: shifts this store's view of the target clock
        self.lock_wait = lock_wait  # bound on waiting for a scope's lock (then E_CLAIM_BUSY)
        self.host = os.uname().nodename
        self._root: PinnedDir | None = None
        self._hint: dict[str, int] = {}
        # scope -> (generation, exact outcome bytes) this store settled itself: lets the
        # next election of the scope prove "N is newest and settled" in its one locked program
        self._settled: dict[str, tuple[int, bytes]] = {}  # scope -> newest generation last seen (an observation, never authority)

    # -- paths ------------------------------------------------------------
    def scope_dir(self, scope: str) -> str:
        """The scope's directory, relative to the claims root (:attr:`root`)."""
        return scope_dirname(scope)

    @property
    def root(self) -> PinnedDir:
        """The claims root, pinned once per store (a store lives for one job)."""
        if self._root is None:
            try:
                self._root = self.base.descend(self.rel, create=True)
            except OSError as exc:  # creating it found the device full: still a fixed code
                raise CairnError(P.os_error_code(exc), P.os_error_message(exc)) from None
        return self._root

    def close(self) -> None:
        if self._root is not None:
            self._root.close()
            self._root = None

    # -- observation ------------------------------------------------------
    def newest(self, scope: str) -> Newest:
        """Two programs: list+clock, then read the newest claim with its outcome."""
        sd = self.scope_dir(scope)
        r = self.run([P.ListDir(sd, optional=True), P.Clock("", offset=self.clock_offset)])
        if r[0].status is OpStatus.FAILED or r[1].status is not OpStatus.OK:
            bad = next(x for x in r.results if x.status not in (OpStatus.OK, OpStatus.ABSENT))
            raise CairnError(bad.code or ErrorCode.IO_FAILED, bad.message)
        names = r[0].value or []
        now = float(r[1].value)
        n = P.newest_generation(names)
        self._hint[scope] = n
        if n == 0:
            return Newest(0, None, None, now)
        return self._read_pair(scope, sd, n, now)

    def _read_pair(self, scope: str, sd: str, n: int, now: float) -> Newest:
        r = self.run([P.Read(f"{sd}/{n}.claim"), P.Read(f"{sd}/{n}.outcome", optional=True)])
        for res in r.results:
            if res.status is OpStatus.FAILED:
                raise CairnError(res.code or ErrorCode.IO_FAILED, res.message)
        if r[0].status is OpStatus.ABSENT:
            # pruned between list and read, or a racing election: observe again
            return self.newest(scope)
        claim = codec.decode(r[0].value, ClaimRecord, where=f"{sd}/{n}.claim")
        outcome = None
        if r[1].status is OpStatus.OK:
            outcome = codec.decode(r[1].value, OutcomeRecord, where=f"{sd}/{n}.outcome")
        _check_pair(scope, n, claim, outcome, sd)
        return Newest(n, claim, outcome, now)

    def outcome(self, claim: Claim) -> OutcomeRecord | None:
        sd = claim.scope_dir
        r = self.run([P.Read(f"{sd}/{claim.generation}.outcome")])
        if r[0].status is OpStatus.ABSENT:
            return None
        if r[0].status is not OpStatus.OK:
            raise CairnError(r[0].code or ErrorCode.IO_FAILED, r[0].message)
        return codec.decode(r[0].value, OutcomeRecord, where=f"{sd}/{claim.generation}.outcome")

    # -- election ---------------------------------------------------------
    def elect(
        self,
        scope: str,
        *,
        purpose: str,
        ttl: float | None = None,
        deadline: float | None = None,
        authority: Authority,
        inputs: dict[str, str] | None = None,
        attempts: int = 8,
    ) -> Claim:
        """Elect the next generation or raise ``E_CLAIM_BUSY`` while a live owner holds it."""
        sd = self.scope_dir(scope)
        fast = self._elect_fast(scope, sd, purpose=purpose, ttl=ttl, deadline=deadline, authority=authority,
                                inputs=inputs)
        if fast is not None:
            return fast
        for _ in range(attempts):
            hint = self._hint.get(scope)
            r = self.run([P.EnsureDir(sd), P.FindNewest(sd, hint), P.Clock(sd, offset=self.clock_offset)])
            if not r.ok:
                bad = next(x for x in r.results if x.status is not OpStatus.OK)
                raise CairnError(bad.code or ErrorCode.IO_FAILED, bad.message or f"cannot prepare {sd}")
            now = float(r[2].value)
            n = int(r[1].value)
            ops: list[P.Op] = [P.VerifyNewest(sd, n)]
            prev_outcome: OutcomeRecord | None = None
            if n > 0:
                cur = self._read_pair(scope, sd, n, now)
                if cur.generation != n:
                    continue
                assert cur.claim is not None
                if cur.outcome is None:
                    if now < cur.claim.deadline:
                        raise CairnError(
                            ErrorCode.CLAIM_BUSY,
                            f"{scope}: generation {n} is held until its deadline",
                            generation=n,
                            deadline=cur.claim.deadline,
                            pid=cur.claim.pid,
                            host=cur.claim.host,
                        )
                    expired = OutcomeRecord(
                        scope=scope, generation=n, kind=OutcomeKind.EXPIRED, nonce=os.urandom(16).hex(),
                        decided=now, claim_nonce=cur.claim.nonce, error=str(ErrorCode.CLAIM_EXPIRED),
                    )
                    ops.append(P.Link(f"{sd}/{n}.outcome", codec.encode(expired)))
                else:
                    prev_outcome = cur.outcome
                    ops.append(P.Verify(f"{sd}/{n}.outcome", data=codec.encode(prev_outcome)))
            end = deadline if deadline is not None else now + (ttl if ttl is not None else 120.0)
            rec = ClaimRecord(
                scope=scope, generation=n + 1, nonce=os.urandom(16).hex(), pid=os.getpid(), host=self.host,
                purpose=purpose, created=now, deadline=end, authority=authority, inputs=dict(inputs or {}),
            )
            ops.append(P.Link(f"{sd}/{n + 1}.claim", codec.encode(rec)))
            res = self.run(ops, lock=sd)
            if res.ok:
                self._hint[scope] = n + 1
                return Claim(scope, sd, rec)
            self._hint.pop(scope, None)
            bad = next(x for x in res.results if x.status is not OpStatus.OK)
            if bad.status is OpStatus.FAILED:
                if bad is res.results[-1]:
                    self._abandon(Claim(scope, sd, rec), bad.code)
                raise CairnError(bad.code or ErrorCode.IO_FAILED, bad.message)
            # lost a race (someone elected or settled meanwhile): observe afresh
        raise CairnError(ErrorCode.CLAIM_BUSY, f"{scope}: contention did not settle after {attempts} attempts")

    def _elect_fast(self, scope: str, sd: str, *, purpose: str, ttl: float | None, deadline: float | None,
                    authority: Authority, inputs: dict[str, str] | None) -> Claim | None:
        """One locked program when this store settled the newest generation itself.

        The same proof as the full path (N is newest, N's outcome is exactly the
        bytes we wrote, the clock is read under the lock) without the two
        observation programs; any mismatch falls back to the full path.
        """
        known = self._settled.get(scope)
        if known is None:
            return None
        n, outcome_raw = known
        made: list[ClaimRecord] = []

        def render(now: float | None) -> bytes:
            assert now is not None
            end = deadline if deadline is not None else now + (ttl if ttl is not None else 120.0)
            made.append(ClaimRecord(
                scope=scope, generation=n + 1, nonce=os.urandom(16).hex(), pid=os.getpid(), host=self.host,
                purpose=purpose, created=now, deadline=end, authority=authority, inputs=dict(inputs or {}),
            ))
            return codec.encode(made[-1])

        res = self.run([P.VerifyNewest(sd, n), P.Verify(f"{sd}/{n}.outcome", data=outcome_raw),
                        P.Clock(sd, offset=self.clock_offset), P.Link(f"{sd}/{n + 1}.claim", render)], lock=sd)
        self._settled.pop(scope, None)
        if not res.ok:
            if made and res[3].status is OpStatus.FAILED:
                self._abandon(Claim(scope, sd, made[-1]), res[3].code)
            return None
        self._hint[scope] = n + 1
        return Claim(scope, sd, made[-1])

    def _abandon(self, claim: Claim, code: ErrorCode | None) -> None:
        """After a claim's publication reported a failure (no space for the directory sync …):
        if the claim is nevertheless there, settle it ``failed`` so no one waits for its deadline."""
        try:
            self.settle(claim, OutcomeKind.FAILED, error=str(code or ErrorCode.IO_FAILED))
        except CairnError:
            pass  # not ours after all (never linked), or the device is still full: the deadline frees it

    def elect_new(self, scopes: Sequence[str], *, purpose: str, ttl: float,
                  authority: Authority) -> list[Claim | None]:
        """Generation 1 of the scopes in ``scopes`` never used, elected in one program (ADR 0023).

        For a cold import's new sessions. A first program looks for each
        scope's first claim (no lock: an observation); the scopes that have
        none get the same proof as :meth:`elect`'s, made for each under every
        such scope's lock at once (no generation is there), and their claims
        are published by one :class:`~state.program.LinkAll` (their fsyncs
        waited on together). One item per scope, in order: its claim, or None
        when it was in use (or another writer raced this one to a scope: then
        None for all), for the caller to elect alone. ``E_CLAIM_BUSY`` when a
        lock stayed held; a failure that may have left claims behind settles
        each of them ``failed`` first (as :meth:`elect` does).
        """
        looked = self.run([P.Verify(f"{self.scope_dir(s)}/1.claim", absent=True, optional=True) for s in scopes])
        looked.raise_failed()
        free = [s for s, r in zip(scopes, looked.results, strict=True) if r.status is OpStatus.OK]
        if not free:
            return [None] * len(scopes)
        sds = [self.scope_dir(s) for s in free]
        made: dict[str, ClaimRecord] = {}
        pid = os.getpid()

        def render(scope: str) -> Any:
            def bytes_at(now: float | None) -> bytes:
                assert now is not None
                made[scope] = ClaimRecord(scope=scope, generation=1, nonce=os.urandom(16).hex(), pid=pid,
                                          host=self.host, purpose=purpose, created=now, deadline=now + ttl,
                                          authority=authority, inputs={})
                return codec.encode(made[scope])
            return bytes_at

        ops: list[P.Op] = [P.VerifyNewest(sd, 0) for sd in sds]  # the scopes' folders: made to lock them
        ops += [P.Clock("", offset=self.clock_offset),
                P.LinkAll(tuple((f"{sd}/1.claim", render(s)) for s, sd in zip(free, sds, strict=True)))]
        res = self.run(ops, locks=sds)
        if res.ok:
            got = {s: Claim(s, sd, made[s]) for s, sd in zip(free, sds, strict=True)}
            for s in free:
                self._hint[s] = 1
            return [got.get(s) for s in scopes]
        bad = next(x for x in res.results if x.status is not OpStatus.OK)
        if bad.status is OpStatus.FAILED:
            if res.results[-1] is bad:
                for s, sd in zip(free, sds, strict=True):
                    if s in made:
                        self._abandon(Claim(s, sd, made[s]), bad.code)
            raise CairnError(bad.code or ErrorCode.IO_FAILED, bad.message)
        return [None] * len(scopes)  # raced to a scope by another writer: one at a time

    def run(self, ops: Sequence[P.Op], *, lock: str | None = None, locks: Sequence[str] = ()) -> P.ProgramResult:
        """Run a program against the claims root (``locks``: several scope directories held at once)."""
        return P.run(self.root, ops, lock=lock, wait=self.lock_wait, locks=locks)

    def guarded_many(self, claims: Sequence[Claim], ops: Sequence[P.Op]) -> P.ProgramResult:
        """:meth:`guarded` for several claims at once: ``ops`` run only if every claim still owns its
        scope, proven in the one program that holds every scope's lock (results 0 … len(claims)-1 are
        the proofs). Raises the first proof's failure; the operations then did not run."""
        fulls = [f"{self.rel}/{c.scope_dir}" for c in claims]
        guards = [P.VerifyOwner(f, c.generation, c.record.nonce, c.deadline, self.clock_offset,
                                codec.encode(c.record), clock_dir=self.rel) for f, c in zip(fulls, claims, strict=True)]
        res = P.run(self.base, [*guards, *ops], locks=fulls, wait=self.lock_wait)
        for c, g in zip(claims, res.results, strict=False):
            if g.status is not OpStatus.OK:
                raise CairnError(g.code or ErrorCode.CLAIM_LOST, g.message or f"{c.scope}: ownership lost")
        return res

    def finish_many(self, claims: Sequence[Claim], payloads: Sequence[dict[str, Any]]) -> None:
        """:meth:`finish` of several claims whose fenced effects landed: every ``completed`` outcome in
        one program holding every scope's lock, after each claim's ownership is proven. When a proof fails
        (a deadline passed, a takeover), each claim is finished alone, as :meth:`finish` does."""
        sds = [c.scope_dir for c in claims]
        guards = [P.VerifyOwner(sd, c.generation, c.record.nonce, c.deadline, self.clock_offset,
                                codec.encode(c.record), clock_dir="") for sd, c in zip(sds, claims, strict=True)]
        outs: dict[str, bytes] = {}

        def render(c: Claim, payload: dict[str, Any]) -> Any:
            def bytes_at(now: float | None) -> bytes:
                rec = OutcomeRecord(scope=c.scope, generation=c.generation, kind=OutcomeKind.COMPLETED,
                                    nonce=c.record.nonce, decided=float(now or 0.0), claim_nonce=c.record.nonce,
                                    payload=payload)
                outs[c.scope] = codec.encode(rec)
                return outs[c.scope]
            return bytes_at

        link = P.LinkAll(tuple((f"{sd}/{c.generation}.outcome", render(c, p))
                               for sd, c, p in zip(sds, claims, payloads, strict=True)))
        res = self.run([*guards, link], locks=sds)
        if res.ok:
            for c in claims:
                self._settled[c.scope] = (c.generation, outs[c.scope])
            return
        if res.results[-1].status is not OpStatus.SKIPPED:  # the outcomes' link itself failed or conflicted
            res.raise_failed()
        for c, p in zip(claims, payloads, strict=True):
            self.finish(c, payload=p)

    # -- settlement -------------------------------------------------------
    def settle(
        self,
        claim: Claim,
        kind: OutcomeKind,
        *,
        payload: dict[str, Any] | None = None,
        bundle: str | None = None,
        error: str | None = None,
        extra_ops: Sequence[P.Op] = (),
    ) -> OutcomeRecord:
        """Elect this generation's outcome; return the winning outcome (maybe not ours).

        ``completed`` is elected only while we still own the generation; if the
        deadline has passed the generation is settled ``expired`` instead and
        ``E_CLAIM_EXPIRED`` is raised. ``extra_ops`` run in the same locked
        program after the ownership proof and before the outcome link (for
        effects that must be fenced together with acceptance).
        """
        n = claim.generation
        # with extra operations the program runs against the base (their paths
        # are base-relative); otherwise against the pinned claims root
        sd = f"{self.rel}/{claim.scope_dir}" if extra_ops else claim.scope_dir
        rec = OutcomeRecord(
            scope=claim.scope, generation=n, kind=kind, nonce=claim.record.nonce, decided=0.0,
            claim_nonce=claim.record.nonce, payload=payload, bundle=bundle, error=error,
        )
        # the claim must still be there and be ours (a late settler of a pruned
        # generation must not resurrect an outcome for it); for completion and
        # fenced effects, ownership is proven afresh, which reads the clock too
        claim_bytes = codec.encode(claim.record)
        guard: P.Op
        if kind is OutcomeKind.COMPLETED or extra_ops:
            guard = P.VerifyOwner(sd, n, claim.record.nonce, claim.deadline, self.clock_offset, claim_bytes)
            ops: list[P.Op] = [guard, *extra_ops]
        else:
            guard = P.Verify(f"{sd}/{n}.claim", data=claim_bytes)
            ops = [guard, P.Clock(sd, offset=self.clock_offset)]
        clock_at = 0 if isinstance(guard, P.VerifyOwner) else 1
        outcome_bytes: list[bytes] = []

        def render(now: float | None) -> bytes:
            outcome_bytes.append(codec.encode(codec.evolve(rec, decided=now)))
            return outcome_bytes[-1]

        ops.append(P.Link(f"{sd}/{n}.outcome", render))
        res = P.run(self.base, ops, lock=sd, wait=self.lock_wait) if extra_ops else self.run(ops, lock=sd)
        # an optional operation may be refused (a bundle that already exists), never fail (no space)
        def fine(r: P.OpResult, o: P.Op) -> bool:
            return r.status is OpStatus.OK or (o.optional and r.status is not OpStatus.FAILED)

        if all(fine(r, o) for r, o in zip(res.results, ops, strict=True)):
            self._settled[claim.scope] = (n, outcome_bytes[-1])
            return codec.evolve(rec, decided=float(res[clock_at].value))
        bad_i = next(i for i, x in enumerate(res.results) if not fine(x, ops[i]))
        bad = res[bad_i]
        if bad.status is OpStatus.FAILED or 1 <= bad_i < 1 + len(extra_ops):
            # ``effect``: which extra operation stopped the program (those before it ran; none after it did)
            where = {"effect": bad_i - 1} if 1 <= bad_i < 1 + len(extra_ops) else {}
            raise CairnError(bad.code or ErrorCode.IO_FAILED, bad.message or f"{claim.scope}: fenced effect refused",
                             status=str(bad.status), **where)
        if isinstance(guard, P.VerifyOwner) and res[0].status is not OpStatus.OK:
            if self.outcome(claim) is None and res[0].code is ErrorCode.CLAIM_EXPIRED:
                expired = self.settle(claim, OutcomeKind.EXPIRED, error=str(ErrorCode.CLAIM_EXPIRED))
                raise CairnError(ErrorCode.CLAIM_EXPIRED, f"{claim.scope}: generation {n} expired before settlement",
                                 outcome=str(expired.kind))
        winner = self.outcome(claim)
        if winner is None:
            raise CairnError(ErrorCode.CLAIM_LOST, f"{claim.scope}: generation {n} is gone or not ours")
        if kind is OutcomeKind.COMPLETED and winner.nonce != claim.record.nonce:
            raise CairnError(ErrorCode.CLAIM_LOST, f"{claim.scope}: generation {n} was settled {winner.kind}",
                             outcome=str(winner.kind))
        return winner

    def finish(self, claim: Claim, *, payload: dict[str, Any] | None = None) -> OutcomeRecord | None:
        """Settle ``completed`` after this claim's fenced effects have already landed.

        For a job whose guarded writes ran in programs of their own before the
        completion (capture, seal, cleanup): each write proved ownership in its
        own program, so it stands whatever happens now. If the generation can
        no longer be completed — its deadline passed (it is settled
        ``expired``), or a successor took it over — the outcome that settled it
        is returned instead of ``E_CLAIM_LOST``/``E_CLAIM_EXPIRED``: the caller
        reports the effects that landed, never a lost claim about work that
        happened. None when the generation is gone (pruned after a takeover).
        Effects that must stand or fall with the completion belong in
        :meth:`settle`'s ``extra_ops`` instead.
        """
        try:
            return self.settle(claim, OutcomeKind.COMPLETED, payload=payload)
        except CairnError as exc:
            if exc.code not in (ErrorCode.CLAIM_LOST, ErrorCode.CLAIM_EXPIRED):
                raise
        return self.outcome(claim)

    # -- guarded writes ---------------------------------------------------
    def guarded(self, claim: Claim, ops: Sequence[P.Op]) -> P.ProgramResult:
        """Run ``ops`` only if ``claim`` still owns its scope, in one locked program.

        ``ops`` paths are relative to the store's *base* (e.g. the workspace),
        so the guarded writes can land anywhere under it.

        Raises ``E_CLAIM_LOST``/``E_CLAIM_EXPIRED`` when the proof fails; the
        guarded operations then did not run.
        """
        full = f"{self.rel}/{claim.scope_dir}"
        guard = P.VerifyOwner(full, claim.generation, claim.record.nonce, claim.deadline, self.clock_offset)
        res = P.run(self.base, [guard, *ops], lock=full, wait=self.lock_wait)
        g = res[0]
        if g.status is not OpStatus.OK:
            raise CairnError(g.code or ErrorCode.CLAIM_LOST, g.message or f"{claim.scope}: ownership lost")
        return res

    def guarded_all(self, claim: Claim, ops: Sequence[P.Op]) -> P.ProgramResult:
        """:meth:`guarded`, and every operation must then succeed (an optional one may only be refused).

        A failed operation (no space, an I/O error) raises its code, so a
        write that did not happen is never taken for one that did.
        """
        res = self.guarded(claim, ops)
        for r, o in zip(res.results[1:], ops, strict=True):
            if r.status is OpStatus.FAILED or (r.status is not OpStatus.OK and not o.optional):
                raise CairnError(r.code or ErrorCode.IO_FAILED, r.message or f"{claim.scope}: guarded write refused",
                                 status=str(r.status))
        return res


def _check_pair(scope: str, n: int, claim: ClaimRecord, outcome: OutcomeRecord | None, where: str) -> None:
    if claim.scope != scope or claim.generation != n:
        raise CairnError(ErrorCode.CLAIM_CORRUPT, f"{where}/{n}.claim names {claim.scope!r} generation {claim.generation}")
    if outcome is not None and (outcome.generation != n or outcome.scope != scope or outcome.claim_nonce != claim.nonce):
        raise CairnError(ErrorCode.CLAIM_CORRUPT, f"{where}/{n}.outcome does not settle its claim")
