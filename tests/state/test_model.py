"""The real claim store, on a real file system, against a simple in-memory model.

Time is a store-level offset added to the target clock; claims live 1000 s
and "expire" jumps 2000 s, so real time passing during the run can never
change a decision.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time

import attrs
from cairn.protocol.claims import Authority
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.vocab import OutcomeKind
from cairn.state import program as P
from cairn.state.claims import Claim, ClaimStore, scope_dirname
from cairn.state.doctor import check_workspace
from cairn.state.fsdir import PinnedDir
from cairn.state.prune import prune
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, rule

CLAIMS = ".cairn/state/journal/claims"
SCOPES = ("digest/a", "review/general")
TTL = 1000.0


@attrs.define
class Gen:
    deadline: float
    nonce: str
    outcome: str | None = None  # outcome kind
    winner: str | None = None  # nonce of whoever elected the outcome


class ClaimModel(RuleBasedStateMachine):
    held = Bundle("held")

    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="cairn-model-")
        self.root = PinnedDir.open_root(self.dir)
        self.store = ClaimStore(self.root, CLAIMS)
        self.offset = 0.0
        self.gens: dict[str, dict[int, Gen]] = {s: {} for s in SCOPES}
        self.writes: dict[str, bytes] = {}

    def teardown(self) -> None:
        self.store.close()
        self.root.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- model helpers ----------------------------------------------------
    def now(self) -> float:
        return time.time() + self.offset

    def newest(self, scope: str) -> int:
        return max(self.gens[scope], default=0)

    def owns(self, c: Claim) -> bool:
        g = self.gens[c.scope].get(c.generation)
        return (g is not None and c.generation == self.newest(c.scope) and g.outcome is None
                and self.now() < g.deadline)

    # -- rules ------------------------------------------------------------
    @rule(target=held, scope=st.sampled_from(SCOPES))
    def claim(self, scope: str) -> Claim | None:
        n = self.newest(scope)
        cur = self.gens[scope].get(n)
        try:
            c = self.store.elect(scope, purpose="model", ttl=TTL, authority=Authority(workspace=self.dir))
        except CairnError as exc:
            assert exc.code is ErrorCode.CLAIM_BUSY
            assert cur is not None and cur.outcome is None and self.now() < cur.deadline
            return None
        assert not (cur is not None and cur.outcome is None and self.now() < cur.deadline), "elected over a live owner"
        if cur is not None and cur.outcome is None:
            cur.outcome = "expired"  # takeover settles the predecessor first
        assert c.generation == n + 1
        self.gens[scope][c.generation] = Gen(deadline=c.deadline, nonce=c.record.nonce)
        return c

    @rule(c=consumes(held), kind=st.sampled_from([OutcomeKind.COMPLETED, OutcomeKind.FAILED, OutcomeKind.CANCELLED]))
    def settle(self, c: Claim | None, kind: OutcomeKind) -> None:
        if c is None:
            return
        g = self.gens[c.scope].get(c.generation)
        if g is None:  # pruned since: the late settler is refused and creates nothing
            try:
                self.store.settle(c, kind)
            except CairnError as exc:
                assert exc.code is ErrorCode.CLAIM_LOST
                return
            raise AssertionError("settled a pruned generation")
        expected_mine = g.outcome is None and (kind is not OutcomeKind.COMPLETED or self.owns(c))
        try:
            out = self.store.settle(c, kind, payload={"k": str(kind)})
        except CairnError as exc:
            assert not expected_mine
            if g.outcome is None:
                assert exc.code is ErrorCode.CLAIM_EXPIRED
                g.outcome, g.winner = "expired", c.record.nonce
            else:
                assert exc.code is ErrorCode.CLAIM_LOST
            return
        if expected_mine:
            assert out.kind is kind and out.nonce == c.record.nonce
            g.outcome, g.winner = str(kind), c.record.nonce
        else:
            assert str(out.kind) == g.outcome  # the loser reads the winner's outcome

    @rule(c=held, data=st.binary(min_size=1, max_size=16))
    def guarded_write(self, c: Claim | None, data: bytes) -> None:
        """Covers stale writes: a claim that lost its generation must be rejected at the target."""
        if c is None:
            return
        should = self.owns(c)
        try:
            self.store.guarded(c, [P.EnsureDir("public"), P.Write(f"public/{scope_dirname(c.scope)}", data)])
        except CairnError as exc:
            assert not should and exc.code in (ErrorCode.CLAIM_LOST, ErrorCode.CLAIM_EXPIRED)
            return
        assert should, "a stale owner wrote"
        self.writes[c.scope] = data

    @rule()
    def expire(self) -> None:
        self.offset += 2 * TTL
        self.store.clock_offset = self.offset

    @rule(c=consumes(held), leave_temp=st.booleans())
    def crash(self, c: Claim | None, leave_temp: bool) -> None:
        """The owner dies: its handle is gone, perhaps leaving a stray temp behind."""
        if c is not None and leave_temp:
            d = os.path.join(self.dir, CLAIMS, c.scope_dir)
            with open(os.path.join(d, f".tmp-999999999-{c.generation}"), "wb") as fh:
                fh.write(b'{"record":"claim"')

    @rule(scope=st.sampled_from(SCOPES))
    def recover(self, scope: str) -> None:
        """A fresh process observes the scope exactly as the model says."""
        fresh = ClaimStore(self.root, CLAIMS, clock_offset=self.offset)
        obs = fresh.newest(scope)
        assert obs.generation == self.newest(scope)
        if obs.generation:
            g = self.gens[scope][obs.generation]
            assert (str(obs.outcome.kind) if obs.outcome else None) == g.outcome
        fresh.close()

    @rule()
    def prune_batch(self) -> None:
        res = prune(self.store)
        removed = 0
        for scope in SCOPES:
            newest = self.newest(scope)
            for n, g in list(self.gens[scope].items()):
                if n < newest and g.outcome is not None and g.deadline <= self.now():
                    del self.gens[scope][n]
                    removed += 1
        assert res.pairs == removed and not res.more

    # -- invariants -------------------------------------------------------
    @invariant()
    def files_match_model(self) -> None:
        for scope in SCOPES:
            d = os.path.join(self.dir, CLAIMS, scope_dirname(scope))
            names = set(os.listdir(d)) if os.path.isdir(d) else set()
            claims = {int(n.split(".")[0]) for n in names if n.endswith(".claim")}
            outcomes = {int(n.split(".")[0]) for n in names if n.endswith(".outcome")}
            assert claims == set(self.gens[scope])
            assert outcomes == {n for n, g in self.gens[scope].items() if g.outcome}
            for n in outcomes:
                with open(os.path.join(d, f"{n}.outcome"), "rb") as fh:
                    assert f'"kind":"{self.gens[scope][n].outcome}"'.encode() in fh.read()

    @invariant()
    def doctor_clean(self) -> None:
        assert check_workspace(self.root).violations == ()


TestClaimModel = ClaimModel.TestCase
TestClaimModel.settings = settings(stateful_step_count=40,
                                   suppress_health_check=[HealthCheck.too_slow])
