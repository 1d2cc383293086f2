"""History as a reflog through the CLI: decisions newest first with their time, a rejection taken back
(`cairn unreject`: pending again, accepted through the checked path), an undone proposal accepted again."""

from __future__ import annotations

import time
from pathlib import Path

from tests.journal.helpers import DEMO, cairn, cairn_json

MEM = ".agents/memory"


def _creates(ws: Path) -> list[dict]:
    out = cairn_json(ws, "run", str(DEMO))
    return [p for p in out["proposals"] if p["kind"] == "create"]


def test_history_is_newest_first_with_time_and_action(workspace: Path) -> None:
    first, second = _creates(workspace)[:2]
    cairn(workspace, "accept", first["id"])
    cairn(workspace, "reject", second["id"])
    cairn(workspace, "undo", first["id"])
    rows = cairn_json(workspace, "history")
    assert [(r["id"], r["action"], r["state"]) for r in rows] == [
        (first["id"], "undo", "undone"), (second["id"], "reject", "rejected"), (first["id"], "accept", "applied")]
    assert rows[0]["decided"] >= rows[1]["decided"] >= rows[2]["decided"] > time.time() - 3600
    assert rows[0]["canAccept"] and rows[1]["canUnreject"] and not rows[2]["canUndo"]  # only a newest row acts
    text = cairn(workspace, "history").stdout.splitlines()
    assert text[0].split()[2:5] == ["undo", "undone", first["id"]]
    assert f"cairn unreject {second['id']}" in text[1]


def test_unreject_returns_the_proposal_to_pending_and_accept_checks_it(workspace: Path) -> None:
    create = _creates(workspace)[0]
    topic = workspace / create["target"]
    cairn(workspace, "reject", create["id"])
    r = cairn(workspace, "accept", create["id"], check=False)
    assert r.returncode == 2 and "E_PROPOSAL_STATE" in r.stderr
    assert cairn(workspace, "unreject", create["id"]).stdout.strip() == f"{create['id']}: pending"
    rows = {r["id"]: r for r in cairn_json(workspace, "proposals")}
    assert rows[create["id"]]["state"] == "pending"
    # the stale check holds for it like any pending proposal: a file put there meanwhile blocks it
    topic.parent.mkdir(parents=True, exist_ok=True)
    topic.write_text("mine\n")
    assert {r["id"]: r for r in cairn_json(workspace, "proposals")}[create["id"]]["state"] == "stale"
    r = cairn(workspace, "accept", create["id"], check=False)
    assert r.returncode == 2 and "E_PROPOSAL_STALE" in r.stderr and topic.read_text() == "mine\n"
    topic.unlink()
    cairn(workspace, "accept", create["id"])
    assert topic.exists() and "type:" in topic.read_text()
    # only a rejected proposal can be un-rejected
    r = cairn(workspace, "unreject", create["id"], check=False)
    assert r.returncode == 2 and "E_PROPOSAL_STATE" in r.stderr and "undo it instead" in r.stderr


def test_an_undone_proposal_is_accepted_again_through_the_checked_path(workspace: Path) -> None:
    create = _creates(workspace)[0]
    topic = workspace / create["target"]
    cairn(workspace, "accept", create["id"])
    written = topic.read_bytes()
    cairn(workspace, "undo", create["id"])
    assert not topic.exists()
    topic.parent.mkdir(parents=True, exist_ok=True)
    topic.write_text("mine\n")  # the before-state (no file) no longer holds: refused, nothing written
    r = cairn(workspace, "accept", create["id"], check=False)
    assert r.returncode == 2 and "E_PROPOSAL_STALE" in r.stderr and topic.read_text() == "mine\n"
    topic.unlink()
    assert cairn(workspace, "accept", create["id"]).stdout.strip() == f"{create['id']}: applied"
    assert topic.read_bytes() == written
    assert [r["action"] for r in cairn_json(workspace, "history") if r["id"] == create["id"]] == [
        "accept", "undo", "accept"]


def test_unreject_lifts_the_do_not_propose_again_fingerprint(workspace: Path) -> None:
    """A rejected change is never proposed again; once un-rejected it is an ordinary pending proposal,
    which holds its fingerprint only while it can still be applied: once its file changed (stale),
    a later review may propose the change afresh against the files as they are."""
    from cairn.protocol.settings import Settings
    from cairn.worker.memory import apply
    from cairn.worker.memory.review import _suppressed
    from cairn.worker.memory.store import MemoryStore

    create = _creates(workspace)[0]
    topic = workspace / create["target"]
    cairn(workspace, "reject", create["id"])
    topic.parent.mkdir(parents=True, exist_ok=True)
    topic.write_text("mine\n")  # its before-state (no file) is gone
    with MemoryStore(str(workspace), Settings()) as ms:
        fingerprint = apply.load_proposal(ms, create["id"]).fingerprint
        assert fingerprint in _suppressed(ms)  # rejected: held whatever the files say
    cairn(workspace, "unreject", create["id"])
    with MemoryStore(str(workspace), Settings()) as ms:
        assert fingerprint not in _suppressed(ms)  # pending again, and stale: no longer held
    topic.unlink()
    with MemoryStore(str(workspace), Settings()) as ms:
        assert fingerprint in _suppressed(ms)  # pending and applicable: held like any pending proposal
