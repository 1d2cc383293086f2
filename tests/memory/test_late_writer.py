"""A late process whose fenced write landed reports that write, not a lost claim.

Accept writes the target files and settles the target claim in one locked
program, then records the decision under the workspace claim in another. If
that claim is lost in between (its deadline passed while the process was
stopped, or a recovery took it over), the files are already written: accept
must report the proposal applied — recording the decision the way recovery
does — and never ``E_CLAIM_LOST``/``E_CLAIM_EXPIRED`` about files that changed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cairn.worker.memory import apply as A
from cairn.worker.memory.store import MemoryStore

from tests.journal.helpers import DEMO, cairn_json

LATER = 100_000.0  # past every claim deadline


def _instruction(ws: Path) -> dict:
    (ws / "AGENTS.md").write_bytes(b"# Agents\n\nBe terse.\n")
    out = cairn_json(ws, "run", str(DEMO))
    return next(p for p in out["proposals"] if p["kind"] == "instruction")


@pytest.mark.parametrize("late", ["expired", "taken-over"])
def test_accept_reports_applied_when_the_decision_claim_was_lost_after_the_write(
        workspace: Path, monkeypatch: pytest.MonkeyPatch, late: str) -> None:
    prop = _instruction(workspace)
    before = (workspace / "AGENTS.md").read_bytes()
    ms = MemoryStore(str(workspace))
    real = A._execute_write

    def then_late(*args: object, **kw: object) -> str:
        write = real(*args, **kw)  # type: ignore[arg-type]
        # the process stalls here: its workspace claim's deadline passes ...
        ms.mclaims.clock_offset = LATER
        if late == "taken-over":
            # ... and a recovery in another process takes the claim over and records the decision
            with MemoryStore(str(workspace), clock_offset=LATER) as other:
                assert A.recover(other)["complete"] == 1
        return write

    monkeypatch.setattr(A, "_execute_write", then_late)
    try:
        result = A.accept(ms, prop["id"])
    finally:
        ms.close()
    after = (workspace / "AGENTS.md").read_bytes()
    assert after != before  # the write landed ...
    assert result.state == "applied" and result.changed is True  # ... and that is what is reported
    assert result.written == ("AGENTS.md",)
    # the decision is recorded exactly once, the marker is retired, the proposal reads applied
    rows = {r["id"]: r for r in cairn_json(workspace, "proposals")}
    assert rows[prop["id"]]["state"] == "applied"
    with MemoryStore(str(workspace)) as ms2:
        assert [d.state for d in A.decisions(ms2, prop["id"])] == ["applied"]
    assert not list((workspace / ".cairn/state/memory-write/markers").iterdir())


# -- jobs whose fenced writes land in several programs before the completion ----------------

@pytest.mark.parametrize("late", ["expired", "taken-over"])
def test_an_import_whose_claim_was_lost_after_its_writes_reports_the_turns_captured(
        workspace: Path, monkeypatch: pytest.MonkeyPatch, late: str) -> None:
    from cairn.worker.ingest.importers import load
    from cairn.worker.journal import capture as C
    from cairn.worker.journal.capture import ModelPolicy
    from cairn.worker.journal.imports import import_paths
    from cairn.worker.journal.store import Journal, session_dir

    real = C._write_batch

    def then_late(j: Journal, claim: object, session: object, *args: object, **kw: object) -> None:
        real(j, claim, session, *args, **kw)  # type: ignore[arg-type]
        j.claims.clock_offset = LATER  # stalled past the session claim's deadline before completing it
        if late == "taken-over":
            with Journal(str(workspace), clock_offset=LATER) as other:
                sid = session.session_id  # type: ignore[attr-defined]
                other.claims.elect(f"session/{session_dir(sid)}", purpose="capture", ttl=60,
                                   authority=other.authority)

    monkeypatch.setattr(C, "_write_batch", then_late)
    with Journal(str(workspace)) as j:
        out = import_paths(j, [str(DEMO)], "auto", ModelPolicy(provider="extractive"))
    turns = sum(len(s.turns) for s in load(DEMO))
    assert out.captured == turns  # reported ...
    (cap,) = (workspace / ".cairn/state/journal/captures").iterdir()
    from tests.journal.helpers import batches

    assert sum(len(b.turn_ids) for b in batches(cap)) == turns  # ... and what the files hold: every turn ready


@pytest.mark.parametrize("late", ["expired", "taken-over"])
def test_a_seal_whose_claim_was_lost_after_it_landed_reports_it(workspace: Path, monkeypatch: pytest.MonkeyPatch,
                                                                late: str) -> None:
    from cairn.protocol.vocab import Trigger
    from cairn.worker.journal import capture as C
    from cairn.worker.journal.store import Journal, session_dir

    cairn_json(workspace, "import", str(DEMO))
    with Journal(str(workspace)) as j:
        (sid,) = C.open_sessions(j)
        real = j.claims.guarded

        def guarded_then_late(claim: object, ops: object) -> object:
            res = real(claim, ops)  # type: ignore[arg-type]
            j.claims.clock_offset = LATER
            if late == "taken-over":
                with Journal(str(workspace), clock_offset=LATER) as other:
                    other.claims.elect(f"session/{session_dir(sid)}", purpose="seal", ttl=60,
                                       authority=other.authority)
            return res

        monkeypatch.setattr(j.claims, "guarded", guarded_then_late)
        sealed = C.seal_session(j, sid, Trigger.SESSION_END)
    assert sealed is not None
    assert (workspace / ".cairn/state/journal/captures" / sealed / "seal").exists()
