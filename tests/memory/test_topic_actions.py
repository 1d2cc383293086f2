"""One memory topic at the user's word (issue 30, "keys to verify, update or retire"): `cairn memory retire
TOPIC` proposes its retirement through the ordinary proposal path, `cairn memory confirm TOPIC` says it is
still true (no longer due for revalidation), and both refuse what is not a topic of this workspace."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.journal.helpers import cairn, cairn_json

MEM = ".agents/memory"
DAY = 86400


def _topic(ws: Path, text: str = "Use pnpm, not npm, to install dependencies") -> str:
    cairn(ws, "remember", text)
    pending = [p for p in cairn_json(ws, "proposals") if p["state"] == "pending"]
    cairn(ws, "accept", pending[0]["id"])
    return pending[0]["target"]


def test_retire_proposes_and_accept_removes_topic_and_index_line_undo_restores(workspace: Path) -> None:
    target = _topic(workspace)
    topic, index = workspace / target, workspace / MEM / "MEMORY.md"
    before_topic, before_index = topic.read_bytes(), index.read_bytes()

    out = cairn_json(workspace, "memory", "retire", Path(target).name)
    assert out["new"] is True and out["file"] == target
    assert topic.read_bytes() == before_topic, "a proposal only: nothing removed before accept"
    # asked twice: the pending one is named, not proposed again
    again = cairn(workspace, "memory", "retire", target).stdout
    assert f"{out['proposal']} already proposes to retire" in again
    assert [p["id"] for p in cairn_json(workspace, "proposals") if p["state"] == "pending"] == [out["proposal"]]

    cairn(workspace, "accept", out["proposal"])
    assert not topic.exists() and Path(target).name not in index.read_text()
    cairn(workspace, "undo", out["proposal"])
    assert topic.read_bytes() == before_topic and index.read_bytes() == before_index


def test_retire_asked_again_after_a_rejection_is_proposed_again(workspace: Path) -> None:
    target = _topic(workspace)
    first = cairn_json(workspace, "memory", "retire", target)["proposal"]
    cairn(workspace, "reject", first)
    second = cairn_json(workspace, "memory", "retire", target)
    assert second["new"] is True and second["proposal"] != first


def test_confirm_makes_a_due_topic_fresh(workspace: Path) -> None:
    target = _topic(workspace)
    # the topic was last confirmed 200 days ago (its front matter's date), past revalidateDays (90)
    topic = workspace / target
    old = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 200 * DAY))
    text = topic.read_text()
    assert "confirmed: '" in text
    topic.write_text("\n".join(f"confirmed: '{old}'" if line.startswith("confirmed:") else line
                               for line in text.split("\n")))
    row = cairn_json(workspace, "memory")[0]
    assert row["due"] is True and row["age"] >= 200
    cairn(workspace, "verify", check=False)  # proposes "revalidate or retire"
    revalidate = [p for p in cairn_json(workspace, "proposals") if p["state"] == "pending"]
    assert len(revalidate) == 1 and revalidate[0]["kind"] == "delete"

    out = cairn_json(workspace, "memory", "confirm", target)
    assert out == {"file": target, "confirmed": time.strftime("%Y-%m-%d", time.gmtime()),
                   "rejected": [revalidate[0]["id"]]}
    assert {p["id"]: p["state"] for p in cairn_json(workspace, "proposals")}[revalidate[0]["id"]] == "rejected"
    row = cairn_json(workspace, "memory")[0]
    assert row["due"] is False and row["age"] == 0 and row["confirmed"] == out["confirmed"]
    assert topic.read_text().count(old) == 1, "private mark only: the topic file is not rewritten"


def test_confirm_refuses_a_stale_topic(workspace: Path) -> None:
    (workspace / "Makefile").write_text("check:\n\tpytest\n")
    target = _topic(workspace, "Run the tests with `make check`")
    (workspace / "Makefile").write_text("test:\n\tpytest\n")  # the target was renamed
    cairn(workspace, "verify", "--dry-run", check=False)
    assert cairn_json(workspace, "memory")[0]["stale"] is True
    r = cairn(workspace, "memory", "confirm", target, check=False)
    assert r.returncode == 2 and "E_TOPIC_STALE" in r.stderr and "update it or retire it" in r.stderr
    assert "Traceback" not in r.stderr


def test_what_is_not_a_topic_here_is_refused_with_a_code(workspace: Path) -> None:
    _topic(workspace)
    (workspace / "notes.md").write_text("x\n")
    for bad in ("nope.md", "../../etc/passwd", "notes.md", f"{MEM}/MEMORY.md", f"{MEM}/../notes.md"):
        r = cairn(workspace, "memory", "retire", bad, check=False)
        assert r.returncode == 2 and "E_NOT_FOUND" in r.stderr, (bad, r.stderr)
        assert "Traceback" not in r.stderr
    r = cairn(workspace, "memory", "confirm", check=False)
    assert r.returncode == 2 and "E_USAGE" in r.stderr and "name a topic file" in r.stderr
    assert json.loads(cairn(workspace, "proposals", "--json").stdout) == [
        p for p in cairn_json(workspace, "proposals")], "nothing proposed by the refusals"
    assert all(p["state"] == "applied" for p in cairn_json(workspace, "proposals"))


def test_a_topic_with_broken_front_matter_is_reported_not_rewritten(workspace: Path) -> None:
    target = _topic(workspace)
    topic = workspace / target
    topic.write_text("no front matter at all\n")
    r = cairn(workspace, "memory", "retire", target, check=False)
    assert r.returncode == 2 and "E_TOPIC_FRONT_MATTER" in r.stderr
    assert topic.read_text() == "no front matter at all\n"
