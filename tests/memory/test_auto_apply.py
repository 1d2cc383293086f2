"""``auto`` mode: a review that dies after publishing its proposals has them applied by whatever runs next.

The review's promise (``.cairn/state/memory/auto/<review>``) is kept by the
recovery every review, drain and decision runs first; a proposal the user
decides meanwhile is never applied by it, and none is applied twice.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.settings import Settings
from cairn.worker.memory import apply
from cairn.worker.memory import review as R
from cairn.worker.memory.store import MemoryStore

from tests.journal.helpers import DEMO, cairn, cairn_json
from tests.support import users_auto_mode

AGENTS = "# Agents\n\nBe terse.\n"


def _reviewed_then_killed(ws: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """An ``auto``-mode review accepted and published, its process gone before it applied anything.

    Returns proposal id -> kind.
    """
    (ws / ".cairn").mkdir(exist_ok=True)
    users_auto_mode()
    (ws / "AGENTS.md").write_text(AGENTS)
    cairn(ws, "import", str(DEMO))
    cairn(ws, "seal")
    cairn(ws, "process")
    with monkeypatch.context() as m:
        m.setattr(R, "apply_in_auto_mode", lambda *a: [])  # the process dies right after publication
        with MemoryStore(str(ws), Settings(mode="auto")) as ms:
            r, _ = R.general_review(ms, automatic=False)
    rows = cairn_json(ws, "proposals")
    assert r.proposals is not None and len(rows) == r.proposals >= 3 and {x["state"] for x in rows} == {"pending"}
    return {x["id"]: x["kind"] for x in rows}


def _decisions(ws: Path) -> dict[str, list[str]]:
    """Proposal id -> its private decisions' states, oldest first; every one has its public record."""
    with MemoryStore(str(ws)) as ms:
        out = {pid: [str(d.state) for d in apply.decisions(ms, pid)] for pid in apply.proposal_ids(ms)}
    public = sorted(p.name for p in (ws / ".cairn/journal/decisions").glob("*.json"))
    assert public == sorted(f"{pid}-{i:04d}.json" for pid, ds in out.items() for i in range(1, len(ds) + 1))
    return out


def _promises(ws: Path) -> list[str]:
    d = ws / ".cairn/state/memory/auto"
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def test_the_next_review_applies_what_a_killed_auto_review_published(workspace: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    kinds = _reviewed_then_killed(workspace, monkeypatch)
    assert len(_promises(workspace)) == 1
    out = cairn_json(workspace, "review")
    assert out["writes"]["auto"] == len(kinds)
    assert _decisions(workspace) == {pid: ["applied"] for pid in kinds}  # each exactly once
    assert "## Working agreements" in (workspace / "AGENTS.md").read_text()
    assert _promises(workspace) == []
    cairn_json(workspace, "review")  # nothing left to do: nothing applied again
    assert _decisions(workspace) == {pid: ["applied"] for pid in kinds}


def test_a_drain_keeps_the_promise_too(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kinds = _reviewed_then_killed(workspace, monkeypatch)
    cairn(workspace, "drain")
    assert _decisions(workspace) == {pid: ["applied"] for pid in kinds}
    assert _promises(workspace) == []


def test_the_users_decision_meanwhile_wins_and_is_never_overridden(workspace: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    kinds = _reviewed_then_killed(workspace, monkeypatch)
    inst = next(pid for pid, k in kinds.items() if k == "instruction")
    cairn(workspace, "reject", inst)  # its recovery applies the others, never the one being decided
    assert _decisions(workspace) == {pid: ["rejected" if pid == inst else "applied"] for pid in kinds}
    assert (workspace / "AGENTS.md").read_text() == AGENTS
    assert len(_promises(workspace)) == 1  # kept: the next recovery sees the rejection
    cairn_json(workspace, "review")
    assert _decisions(workspace) == {pid: ["rejected" if pid == inst else "applied"] for pid in kinds}
    assert _promises(workspace) == []


def test_an_undone_proposal_is_not_applied_again_by_the_promise(workspace: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    kinds = _reviewed_then_killed(workspace, monkeypatch)
    inst = next(pid for pid, k in kinds.items() if k == "instruction")
    cairn(workspace, "accept", inst)
    cairn(workspace, "undo", inst)
    with MemoryStore(str(workspace), Settings(mode="auto")) as ms:
        # the guard holds under the proposal's claim, whatever the caller read before
        with pytest.raises(CairnError) as exc:
            apply.accept(ms, inst, undecided=True)
        assert exc.value.code is ErrorCode.PROPOSAL_STATE
    cairn_json(workspace, "review")
    assert _decisions(workspace)[inst] == ["applied", "undone"]
    assert (workspace / "AGENTS.md").read_text() == AGENTS
    assert _promises(workspace) == []


def test_a_workspace_switched_out_of_auto_mode_keeps_them_pending(workspace: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    kinds = _reviewed_then_killed(workspace, monkeypatch)
    (workspace / ".cairn/config.toml").write_text('mode = "propose"\n')
    cairn_json(workspace, "review")
    assert {x["state"] for x in cairn_json(workspace, "proposals")} == {"pending"}
    assert _decisions(workspace) == {pid: [] for pid in kinds}
    assert _promises(workspace) == []


def test_a_proposal_being_accepted_edited_when_the_process_dies_is_not_applied_as_proposed(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cairn.worker.memory import edited

    kinds = _reviewed_then_killed(workspace, monkeypatch)
    inst = next(pid for pid, k in kinds.items() if k == "instruction")
    mine = AGENTS + "\n## Mine\n\nThe user's own wording.\n"
    with MemoryStore(str(workspace), Settings(mode="auto")) as ms:
        apply.recover(ms, deciding=[inst])  # what accept-edited runs first
        new = edited.propose_edited(ms, inst, mine)  # its edited version published; then the process dies
    cairn_json(workspace, "review")  # the next recovery keeps the promise ...
    decided = _decisions(workspace)
    assert decided[inst] == []  # ... without applying the original the user chose to edit
    assert (workspace / "AGENTS.md").read_text() == AGENTS
    assert {x["id"]: x["state"] for x in cairn_json(workspace, "proposals")}[new.id] == "pending"
    with MemoryStore(str(workspace), Settings(mode="auto")) as ms:  # the rerun lands the user's version
        apply.recover(ms, deciding=[inst])
        edited.accept_edited(ms, inst, mine)
    assert (workspace / "AGENTS.md").read_text() == mine
    cairn_json(workspace, "review")
    assert _decisions(workspace)[inst] == ["rejected"]
    assert (workspace / "AGENTS.md").read_text() == mine
    assert _promises(workspace) == []  # the promise and its marker are gone
