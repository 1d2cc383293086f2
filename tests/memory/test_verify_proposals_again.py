"""What a verification proposes the second time round: after a confirmation, for a topic the user annotated,
after a file moved back and forth, and what its summary counts (ADR 0020)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from cairn.server import cli
from cairn.worker.memory.model import parse_topic, render_topic

DAY = 86400.0
JAN1 = 1767225600.0  # 2026-01-01T00:00:00Z


def _cairn(capsys: pytest.CaptureFixture[str], ws: Path, *argv: str) -> tuple[int, str]:
    code = cli.main([*argv, "-w", str(ws)])
    return code, capsys.readouterr().out


def _pending(capsys: pytest.CaptureFixture[str], ws: Path) -> list[dict[str, Any]]:
    return [p for p in json.loads(_cairn(capsys, ws, "proposals", "--json")[1]) if p["state"] == "pending"]


def _remember(capsys: pytest.CaptureFixture[str], ws: Path, text: str) -> Path:
    code, out = _cairn(capsys, ws, "remember", "--json", "--type", "project", text)
    [proposal] = json.loads(out)["proposals"]
    assert _cairn(capsys, ws, "accept", proposal["id"])[0] == 0
    return ws / proposal["target"]


def _aged_workspace(tmp_path: Path, file: str = "commits.md", name: str = "Small commits",
                    hook: str = "how we commit", body: str = "We prefer small commits.") -> Path:
    """A workspace whose one topic was last confirmed on 2026-01-01."""
    ws = tmp_path / "ws"
    mem = ws / ".agents" / "memory"
    mem.mkdir(parents=True)
    (mem / file).write_bytes(render_topic(name, hook, "project", f"\n- {body}\n", {"confirmed": "2026-01-01"}))
    (mem / "MEMORY.md").write_text(f"- [{name}]({file}) - {hook}\n")
    return ws


def test_revalidation_is_proposed_again_a_period_after_the_last_confirmation(tmp_path: Path) -> None:
    """The first "revalidate or retire" was answered by a confirmation; a period later nothing was proposed
    again, because the proposal's fingerprint named the topic's bytes (unchanged) only."""
    from cairn.protocol.settings import Settings
    from cairn.worker.memory.apply import load_proposal, reject
    from cairn.worker.memory.store import MemoryStore
    from cairn.worker.memory.verify import confirm_topic, verify_workspace

    ws = _aged_workspace(tmp_path)
    with MemoryStore(str(ws), Settings(revalidateDays=90)) as ms:
        [first] = verify_workspace(ms, now=JAN1 + 91 * DAY)["proposals"]
        answered = confirm_topic(ms, "commits.md", now=JAN1 + 91 * DAY)  # 2026-04-02
        assert answered["rejected"] == [first]
        assert verify_workspace(ms, now=JAN1 + 150 * DAY)["proposals"] == []  # not due yet
        r = verify_workspace(ms, now=JAN1 + 182 * DAY)
        [second] = r["proposals"]
        assert second != first and r["topics"][0]["confirmed"] == "2026-04-02"
        assert "not confirmed since 2026-04-02" in load_proposal(ms, second).title
        # the same period's proposal, rejected, stays rejected
        reject(ms, second)
        assert verify_workspace(ms, now=JAN1 + 200 * DAY)["proposals"] == []


def test_a_confirmation_answers_the_pending_revalidation_of_its_period(tmp_path: Path) -> None:
    from cairn.protocol.settings import Settings
    from cairn.worker.memory.store import MemoryStore
    from cairn.worker.memory.verify import confirm_topic, verify_workspace

    ws = _aged_workspace(tmp_path)
    with MemoryStore(str(ws), Settings(revalidateDays=90)) as ms:
        verify_workspace(ms, now=JAN1 + 91 * DAY)
        confirm_topic(ms, "commits.md", now=JAN1 + 91 * DAY)
        [second] = verify_workspace(ms, now=JAN1 + 182 * DAY)["proposals"]
        assert confirm_topic(ms, "commits.md", now=JAN1 + 183 * DAY)["rejected"] == [second]


def _make_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    """A workspace whose Makefile has ``check`` and the accepted topic that cites it: (workspace, topic)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "Makefile").write_text("check:\n\tpytest -q\n")
    return ws, _remember(capsys, ws, "run the tests with `make check`")


def _annotated(topic: Path) -> None:
    text = topic.read_text()
    assert "\ntype: project\n" in text
    topic.write_text(text.replace("\ntype: project\n", "\ntype: project  # my comment\nowner: alice\n"))


def test_a_renamed_target_in_a_hand_annotated_topic_is_an_update_keeping_the_users_keys(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws, topic = _make_check(tmp_path, capsys)
    index = ws / ".agents" / "memory" / "MEMORY.md"
    _annotated(topic)
    before = topic.read_bytes()
    (ws / "Makefile").write_text("test:\n\tpytest -q\n")
    assert _cairn(capsys, ws, "verify")[0] == 1
    [p] = _pending(capsys, ws)
    assert p["kind"] == "update" and "check \u2192 test" in p["title"], p
    assert _cairn(capsys, ws, "accept", p["id"])[0] == 0
    text = topic.read_text()
    assert "type: project  # my comment\nowner: alice\n" in text  # the user's lines, as they were
    after = parse_topic(topic.read_bytes())
    assert after.name == "run the tests with `make test`" and "`make test`" in after.body
    assert isinstance(after.citations, list) and after.citations[0]["target"] == "test"
    assert "make test" in index.read_text() and "make check" not in index.read_text()
    code, out = _cairn(capsys, ws, "verify", "--json")
    assert code == 0 and json.loads(out)["stale"] == 0
    assert _cairn(capsys, ws, "undo", p["id"])[0] == 0
    assert topic.read_bytes() == before


def test_a_front_matter_that_cannot_be_edited_line_by_line_is_still_updated_with_its_keys(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws, topic = _make_check(tmp_path, capsys)
    text = topic.read_text()
    topic.write_text(text.replace("\nname: ", '\n"owner": alice\n"name": '))  # a quoted key: no line of `name:`
    (ws / "Makefile").write_text("test:\n\tpytest -q\n")
    assert _cairn(capsys, ws, "verify")[0] == 1
    [p] = _pending(capsys, ws)
    assert p["kind"] == "update", p
    assert _cairn(capsys, ws, "accept", p["id"])[0] == 0
    assert "owner: alice" in topic.read_text()
    assert parse_topic(topic.read_bytes()).name == "run the tests with `make test`"


def test_a_file_moved_after_it_came_back_leaves_one_live_proposal(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "util.py").write_text("def helper():\n    return 1\n")
    topic = _remember(capsys, ws, "helpers live in `src/util.py`")
    rel = str(topic.relative_to(ws))
    os.rename(ws / "src" / "util.py", tmp_path / "util.py")
    assert _cairn(capsys, ws, "verify")[0] == 1
    [retire] = _pending(capsys, ws)
    assert retire["kind"] == "delete"
    os.rename(tmp_path / "util.py", ws / "src" / "util.py")
    assert _cairn(capsys, ws, "verify")[0] == 0
    assert _pending(capsys, ws) == []
    (ws / "lib").mkdir()
    os.rename(ws / "src" / "util.py", ws / "lib" / "util.py")
    assert _cairn(capsys, ws, "verify")[0] == 1
    pending = _pending(capsys, ws)
    assert [(p["kind"], p["target"]) for p in pending] == [("update", rel)], pending
    [old] = [p for p in json.loads(_cairn(capsys, ws, "proposals", "--json")[1]) if p["id"] == retire["id"]]
    assert old["state"] == "stale"
    # gone again: the retirement answers that, and the update is the one no longer live
    os.rename(ws / "lib" / "util.py", tmp_path / "util.py")
    assert _cairn(capsys, ws, "verify")[0] == 1
    assert [p["id"] for p in _pending(capsys, ws)] == [retire["id"]]


def test_the_summary_counts_an_unreadable_topic(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = tmp_path / "ws"
    mem = ws / ".agents" / "memory"
    mem.mkdir(parents=True)
    (mem / "broken.md").write_bytes(b"---\nname: [unclosed\n---\nbody\n")
    code, out = _cairn(capsys, ws, "verify")
    assert code == 1
    assert "1 unreadable" in out.splitlines()[-1], out


def test_the_summary_counts_a_topic_due_for_revalidation(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    _remember(capsys, ws, "We prefer small commits")
    monkeypatch.setenv("CAIRN_TEST_CLOCK_OFFSET", str(int(91 * DAY)))
    code, out = _cairn(capsys, ws, "verify")
    assert code == 1
    assert "1 due for revalidation" in out.splitlines()[-1], out


def test_a_revalidation_is_no_longer_live_once_the_topic_is_verified_or_found_stale(tmp_path: Path) -> None:
    """One live proposal per topic: the "revalidate or retire" of an unconfirmed topic is not left pending
    beside the retirement proposed when what it names is gone, nor once a verification confirms it."""
    from cairn.protocol.settings import Settings
    from cairn.worker.memory.apply import load_proposal, state_of
    from cairn.worker.memory.store import MemoryStore
    from cairn.worker.memory.verify import verify_workspace

    ws = _aged_workspace(tmp_path, "deploy.md", "Deploying", "how we deploy", "Deploy with `make release`.")
    with MemoryStore(str(ws), Settings(revalidateDays=90)) as ms:
        [aged] = verify_workspace(ms, now=JAN1 + 91 * DAY)["proposals"]

        def states() -> dict[str, str]:
            return {pid: str(state_of(ms, load_proposal(ms, pid))[0]) for pid in [aged, *extra]}

        extra: list[str] = []
        assert states() == {aged: "pending"}
        (ws / "Makefile").write_text("release:\n\t./ship.sh\n")
        assert verify_workspace(ms, now=JAN1 + 92 * DAY)["proposals"] == []  # verified: not due
        assert states() == {aged: "stale"}
        (ws / "Makefile").write_text("ship:\n\t./ship.sh\n\nbuild:\n\tcc main.c\n")
        extra[:] = verify_workspace(ms, now=JAN1 + 93 * DAY)["proposals"]
        assert len(extra) == 1 and states() == {aged: "stale", extra[0]: "pending"}


def test_an_update_applied_then_taken_back_by_a_checkout_is_proposed_again(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A checkout of another branch brings the topic back as it was before an update was applied: the topic
    is stale again, and the update (the same fingerprint: the same bytes) was proposed no more, while the
    one applied could be neither applied again nor undone. An update undone by the user stays undone."""
    ws, topic = _make_check(tmp_path, capsys)
    index = ws / ".agents" / "memory" / "MEMORY.md"
    (ws / "Makefile").write_text("test:\n\tpytest -q\n")
    assert _cairn(capsys, ws, "verify")[0] == 1
    [p] = _pending(capsys, ws)
    old_topic, old_index = topic.read_bytes(), index.read_bytes()
    assert _cairn(capsys, ws, "accept", p["id"])[0] == 0
    topic.write_bytes(old_topic)  # what `git checkout OTHER -- .agents` does
    index.write_bytes(old_index)
    assert _cairn(capsys, ws, "verify")[0] == 1
    [again] = _pending(capsys, ws)
    assert again["id"] != p["id"] and again["kind"] == "update" and again["title"] == p["title"]
    assert _cairn(capsys, ws, "verify")[0] == 1 and [q["id"] for q in _pending(capsys, ws)] == [again["id"]]
    assert _cairn(capsys, ws, "accept", again["id"])[0] == 0 and "`make test`" in topic.read_text()
    assert _cairn(capsys, ws, "undo", again["id"])[0] == 0  # the user's undo: not proposed again
    assert _cairn(capsys, ws, "verify")[0] == 1 and _pending(capsys, ws) == []
