"""General reviews: coverage, the automatic cap, the drain, auto mode, recovery."""

from __future__ import annotations

import json
from pathlib import Path

from cairn.protocol.settings import Settings
from cairn.worker.memory import review as R
from cairn.worker.memory.store import MemoryStore

from tests.journal.helpers import DEMO, cairn, cairn_json


def _digests(ws: Path, n: int) -> None:
    """n sessions, each teaching something different, digested."""
    for i in range(n):
        src = ws / f"s{i}.md"
        src.write_text(f"# aider chat started at 2025-02-{i % 27 + 1:02d} 10:00:00\n\n"
                       f"#### From now on never use the word banana{i} in identifiers.\n\nUnderstood.\n")
        cairn(ws, "import", "--ended", str(src))
    cairn(ws, "seal")
    cairn(ws, "process")


def test_reviews_are_bounded_and_coverage_advances_only_when_published(workspace: Path) -> None:
    _digests(workspace, 23)
    with MemoryStore(str(workspace)) as ms:
        assert len(R.unreviewed(ms)) == 23
        first, more = R.general_review(ms, automatic=False)
        assert first.digests == 20 and more
        assert len(R.unreviewed(ms)) == 3
        # a review record without its accepted proposals does not count as published coverage
        rec = R.published_reviews(ms)[0]
        assert rec.proposals and len(rec.digests) == 20
    pdir = workspace / ".cairn/state/memory/proposals"
    hidden = pdir / rec.proposals[0]
    moved = hidden.read_bytes()
    hidden.unlink()
    with MemoryStore(str(workspace)) as ms:
        assert len(R.unreviewed(ms)) == 23
    hidden.write_bytes(moved)
    out = cairn_json(workspace, "drain")
    assert out == {"reviews": 1, "proposals": out["proposals"]} and out["proposals"] >= 1
    with MemoryStore(str(workspace)) as ms:
        assert R.unreviewed(ms) == []
        assert R.general_review(ms, automatic=False)[0].review is None  # nothing left: No review at all


def test_automatic_reviews_are_capped_at_eight_per_day_but_drain_is_not(workspace: Path) -> None:
    _digests(workspace, 10)
    with MemoryStore(str(workspace)) as ms:
        # ten automatic opportunities, one new digest each time
        done = 0
        for _ in range(10):
            r, _more = R.general_review(ms, automatic=True)
            if r.review:
                done += 1
            if r.skipped == "cap":
                break
        assert done == 1  # everything was reviewed in the first bounded batch
    with MemoryStore(str(workspace)) as ms:
        for _ in range(7):  # seven more successful automatic reviews fill the rolling window
            (workspace / "x.md").write_text(
                f"# aider chat started at 2025-03-0{_ + 1} 10:00:00\n\n#### From now on always sign commits "
                f"with key {_}{_}{_}.\n\nOK.\n")
            cairn(workspace, "import", "--ended", str(workspace / "x.md"))
            cairn(workspace, "seal")
            cairn(workspace, "process")
            assert R.general_review(ms, automatic=True)[0].review
        assert R.automatic_reviews_in_window(ms, ms.now()) == 8
        (workspace / "y.md").write_text("# aider chat started at 2025-04-01 10:00:00\n\n#### From now on never "
                                        "squash merge.\n\nOK.\n")
        cairn(workspace, "run", str(workspace / "y.md"))  # `run` reviews explicitly: also past the cap
        (workspace / "z.md").write_text("# aider chat started at 2025-04-02 10:00:00\n\n#### From now on always "
                                        "rebase before pushing.\n\nOK.\n")
        cairn(workspace, "import", "--ended", str(workspace / "z.md"))
        cairn(workspace, "seal")
        cairn(workspace, "process")
        assert R.general_review(ms, automatic=True)[0].skipped == "cap"
        assert R.general_review(ms, automatic=False)[0].review  # explicit: bypasses the cap


def test_auto_mode_applies_through_the_checked_path_and_manual_mode_waits(workspace: Path) -> None:
    (workspace / "AGENTS.md").write_text("# Agents\n")
    cairn(workspace, "import", str(DEMO))
    cairn(workspace, "seal")
    cairn(workspace, "process")
    with MemoryStore(str(workspace), Settings(mode="manual")) as ms:
        assert R.general_review(ms, automatic=True)[0].skipped == "manual-mode"
    with MemoryStore(str(workspace), Settings(mode="auto")) as ms:
        r, _ = R.general_review(ms, automatic=True)
    assert r.applied and len(r.applied) == r.proposals
    rows = cairn_json(workspace, "proposals")
    assert {x["state"] for x in rows} == {"applied"}
    assert "## Working agreements" in (workspace / "AGENTS.md").read_text()
    # every application is undoable like a manual one
    inst = next(x for x in rows if x["kind"] == "instruction")
    cairn(workspace, "undo", inst["id"])
    assert (workspace / "AGENTS.md").read_text() == "# Agents\n"


def test_an_accepted_unpublished_review_is_recovered_not_rerun(workspace: Path) -> None:
    cairn(workspace, "import", str(DEMO))
    cairn(workspace, "seal")
    cairn(workspace, "process")
    with MemoryStore(str(workspace)) as ms:
        r, _ = R.general_review(ms, automatic=False)
    rid = r.review
    # crash between acceptance and publication: the public record and proposals vanish
    (workspace / f".cairn/journal/reviews/{rid}.json").unlink()
    for p in (workspace / ".cairn/state/memory/proposals").iterdir():
        p.unlink()
    out = json.loads(cairn(workspace, "review", "--json").stdout)
    assert out["recovered"] is True and out["review"] is None
    assert [x.id for x in R.published_reviews(MemoryStore(str(workspace)))] == [rid]
    assert len(cairn_json(workspace, "proposals")) == r.proposals
