"""Memory that stays true: citations in topic front matter, `cairn verify`, staleness marks and their proposals."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from cairn.server import cli
from cairn.worker.memory import citations as C
from cairn.worker.memory.marks import line_key, stale_lines
from cairn.worker.memory.model import parse_topic, render_topic

MAKEFILE = "all: build\n\nbuild:\n\tcc -o app main.c\n\ncheck:\n\t./run-tests.sh\n"
INDEX = "- [Running the tests](tests.md) - how to run them\n"


def _cairn(capsys: pytest.CaptureFixture[str], ws: Path, *argv: str) -> tuple[int, str]:
    code = cli.main([*argv, "-w", str(ws)])
    return code, capsys.readouterr().out


def _workspace(tmp_path: Path, body: str, provenance: dict[str, object] | None = None) -> Path:
    ws = tmp_path / "ws"
    mem = ws / ".agents" / "memory"
    mem.mkdir(parents=True)
    (ws / "Makefile").write_text(MAKEFILE)
    if provenance is None:
        provenance = {"sources": {"digests": ["d0123456789ab"], "turns": ["t1"],
                                  "sessions": ["2026-11-30T10:00:00Z/2026-11-30T11:00:00Z"]},
                      "citations": [c.as_front_matter() for c in C.find_citations(str(ws), body)]}
    (mem / "tests.md").write_bytes(render_topic("Running the tests", "how to run them", "project", body, provenance))
    (mem / "MEMORY.md").write_text(INDEX)
    return ws


def test_a_renamed_make_target_is_flagged_and_an_update_proposed_accept_and_undo(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = _workspace(tmp_path, "\n- Run the tests with `make check` before pushing.\n")
    topic = ws / ".agents" / "memory" / "tests.md"
    meta = parse_topic(topic.read_bytes())
    assert meta.citations == [{"path": "Makefile", "target": "check", "lines": "6-6",
                               "sha256": C.lines_sha(["check:"])}]
    code, out = _cairn(capsys, ws, "verify", "--json")
    assert code == 0 and json.loads(out)["stale"] == 0 and json.loads(out)["proposals"] == []

    (ws / "Makefile").write_text(MAKEFILE.replace("check:", "test:"))
    before = topic.read_bytes()
    code, out = _cairn(capsys, ws, "verify", "--json")
    r = json.loads(out)
    assert code == 1 and r["stale"] == 1
    [row] = r["topics"]
    assert row["citations"][0]["verdict"] == "stale" and "no target 'check'" in row["citations"][0]["reason"]
    assert "test:" in row["citations"][0]["evidence"]
    [pid] = r["proposals"]
    assert topic.read_bytes() == before  # marked, never rewritten

    # the mark is private state, shown by `cairn memory --json`
    code, out = _cairn(capsys, ws, "memory", "--json")
    [mem] = json.loads(out)
    assert mem["stale"] is True and "no target 'check'" in mem["why"][0]
    assert mem["citations"][0]["target"] == "check" and mem["sources"]["digests"] == ["d0123456789ab"]

    # a second verification proposes nothing new
    code, out = _cairn(capsys, ws, "verify", "--json")
    assert json.loads(out)["proposals"] == []

    code, out = _cairn(capsys, ws, "show", pid)
    assert "+- Run the tests with `make test` before pushing." in out and "renamed check \u2192 test" in out
    shown = json.loads(_cairn(capsys, ws, "show", "--json", pid)[1])
    assert "no target 'check'" in shown["summary"] and "test:" in shown["summary"]  # the changed lines as evidence
    assert _cairn(capsys, ws, "accept", pid)[0] == 0
    after = parse_topic(topic.read_bytes())
    assert after.body == "\n- Run the tests with `make test` before pushing.\n"
    assert after.citations == [{"path": "Makefile", "target": "test", "lines": "6-6", "sha256": C.lines_sha(["test:"])}]
    assert after.sources == meta.sources
    code, out = _cairn(capsys, ws, "verify", "--json")
    assert code == 0 and json.loads(out)["stale"] == 0
    assert _cairn(capsys, ws, "undo", pid)[0] == 0
    assert topic.read_bytes() == before


def test_a_removed_make_target_gets_a_retirement_accept_and_undo(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    ws = _workspace(tmp_path, "\n- Run the tests with `make check` before pushing.\n")
    topic = ws / ".agents" / "memory" / "tests.md"
    before = topic.read_bytes()
    (ws / "Makefile").write_text("all: build\n\nbuild:\n\tcc -o app main.c\n")
    code, out = _cairn(capsys, ws, "verify")
    assert code == 1 and "tests.md: stale: Makefile has no target 'check' any more" in out
    [p] = [p for p in json.loads(_cairn(capsys, ws, "proposals", "--json")[1]) if p["state"] == "pending"]
    assert p["kind"] == "delete" and p["title"].startswith("Retire tests.md")
    assert _cairn(capsys, ws, "accept", p["id"])[0] == 0
    assert not topic.exists() and "tests.md" not in (ws / ".agents" / "memory" / "MEMORY.md").read_text()
    assert _cairn(capsys, ws, "undo", p["id"])[0] == 0
    assert topic.read_bytes() == before
    assert (ws / ".agents" / "memory" / "MEMORY.md").read_text() == INDEX



@pytest.mark.parametrize("kind, stale_tree", [
    ("update", MAKEFILE.replace("check:", "test:")),  # renamed: an update is proposed
    ("delete", "all: build\n\nbuild:\n\tcc -o app main.c\n"),  # removed: a retirement
])
def test_a_proposal_made_for_a_stale_mark_goes_stale_when_the_code_comes_back(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, stale_tree: str) -> None:
    # a branch with the target renamed is checked out, then the one without: the memory holds again, and
    # accepting the proposal would rewrite or retire a true memory
    ws = _workspace(tmp_path, "\n- Run the tests with `make check` before pushing.\n")
    topic = ws / ".agents" / "memory" / "tests.md"
    before = topic.read_bytes()
    (ws / "Makefile").write_text(stale_tree)
    [pid] = json.loads(_cairn(capsys, ws, "verify", "--json")[1])["proposals"]
    [p] = [p for p in json.loads(_cairn(capsys, ws, "proposals", "--json")[1]) if p["id"] == pid]
    assert p["kind"] == kind and p["state"] == "pending"

    (ws / "Makefile").write_text(MAKEFILE)
    code, out = _cairn(capsys, ws, "verify", "--json")
    assert code == 0 and json.loads(out)["stale"] == 0
    [p] = [p for p in json.loads(_cairn(capsys, ws, "proposals", "--json")[1]) if p["id"] == pid]
    assert p["state"] == "stale"
    code = cli.main(["accept", pid, "-w", str(ws)])
    err = capsys.readouterr().err
    assert code == 2 and "E_PROPOSAL_STALE" in err and "cites holds again" in err
    assert topic.read_bytes() == before  # nothing was written

    # the target goes away again: the same proposal is pending again, not a second one
    (ws / "Makefile").write_text(stale_tree)
    assert json.loads(_cairn(capsys, ws, "verify", "--json")[1])["proposals"] == []
    rows = [p for p in json.loads(_cairn(capsys, ws, "proposals", "--json")[1]) if p["kind"] == kind]
    assert [(p["id"], p["state"]) for p in rows] == [(pid, "pending")]
    assert _cairn(capsys, ws, "accept", pid)[0] == 0

def test_memory_json_shows_sources_citations_verified_and_stale(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    ws = _workspace(tmp_path, "\n- The build recipe is in `Makefile`, see `make build`.\n")
    code, out = _cairn(capsys, ws, "memory", "--json")
    [row] = json.loads(out)
    assert row["verified"] is None and row["stale"] is False
    assert {c.get("target") for c in row["citations"]} == {"build", None}
    assert row["sources"]["sessions"] == ["2026-11-30T10:00:00Z/2026-11-30T11:00:00Z"]
    assert row["confirmed"] == "2026-11-30"
    _cairn(capsys, ws, "verify")
    [row] = json.loads(_cairn(capsys, ws, "memory", "--json")[1])
    assert row["verified"] is not None and row["stale"] is False


def test_moved_lines_are_not_stale_but_changed_lines_are(tmp_path: Path) -> None:
    ws = tmp_path
    (ws / "src").mkdir()
    (ws / "src" / "conf.py").write_text("A = 1\nTIMEOUT = 30\nB = 2\n")
    [cite] = C.find_citations(str(ws), "the timeout is set in `src/conf.py:2`")
    assert cite.lines == (2, 2)
    (ws / "src" / "conf.py").write_text("# header\n# more\nA = 1\nTIMEOUT = 30\nB = 2\n")
    [check] = C.verify_entry(str(ws), "", [cite])
    assert check.verdict == "ok" and check.lines == (4, 4)
    (ws / "src" / "conf.py").write_text("A = 1\nTIMEOUT = 60\nB = 2\n")
    [check] = C.verify_entry(str(ws), "", [cite])
    assert check.verdict == "stale" and check.evidence == ("TIMEOUT = 60",)


def test_outside_symlinked_fifo_and_huge_paths_are_unverifiable_with_a_code(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "secret.txt").write_text("x\n")
    os.symlink(tmp_path / "secret.txt", ws / "link.txt")
    os.mkfifo(ws / "pipe.txt")
    (ws / "huge.txt").write_bytes(b"a" * (C.FILE_MAX + 1))
    text = "see `../secret.txt`, `/etc/passwd`, `link.txt`, `pipe.txt` and `huge.txt`"
    codes = {c.citation.path: (c.verdict, c.code) for c in C.verify_entry(str(ws), text)}
    assert codes == {"../secret.txt": ("unverifiable", "E_PATH_OUTSIDE_ROOT"),
                     "/etc/passwd": ("unverifiable", "E_PATH_OUTSIDE_ROOT"),
                     "link.txt": ("unverifiable", "E_PATH_SYMLINK"),
                     "pipe.txt": ("unverifiable", "E_PATH_NOT_REGULAR"),
                     "huge.txt": ("unverifiable", "E_RECORD_TOO_LARGE")}
    recorded = [{"path": "../secret.txt", "lines": "1-1", "sha256": "0" * 64}, {"path": "link.txt"}]
    assert [(c.verdict, c.code) for c in C.verify_entry(str(ws), "", recorded)] == [
        ("unverifiable", "E_PATH_OUTSIDE_ROOT"), ("unverifiable", "E_PATH_SYMLINK")]


def test_a_broken_front_matter_is_reported_not_rewritten(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = _workspace(tmp_path, "\n- Run `make check`.\n")
    topic = ws / ".agents" / "memory" / "tests.md"
    topic.write_bytes(b"---\nname: [unclosed\n---\n- Run `make check`.\n")
    (ws / "Makefile").write_text("other:\n")
    code, out = _cairn(capsys, ws, "verify")
    assert code == 1 and "front matter not read (E_TOPIC_FRONT_MATTER)" in out
    assert topic.read_bytes() == b"---\nname: [unclosed\n---\n- Run `make check`.\n"


def test_an_entry_unconfirmed_for_revalidate_days_gets_a_revalidate_or_retire_proposal(tmp_path: Path) -> None:
    from cairn.protocol.settings import Settings
    from cairn.worker.memory.store import MemoryStore
    from cairn.worker.memory.verify import verify_workspace

    ws = _workspace(tmp_path, "\n- We prefer small commits.\n",
                    {"confirmed": "2026-01-01"})
    day = 86400.0
    jan1 = 1767225600.0  # 2026-01-01T00:00:00Z
    with MemoryStore(str(ws), Settings(revalidateDays=90)) as ms:
        assert verify_workspace(ms, now=jan1 + 90 * day)["proposals"] == []
        r = verify_workspace(ms, now=jan1 + 91 * day)
    assert len(r["proposals"]) == 1 and r["topics"][0]["aged"] is True


def test_the_idle_job_verifies_after_a_checkout_and_the_status_counts_stale_topics(tmp_path: Path) -> None:
    from cairn.protocol.settings import Settings
    from cairn.worker.jobs.status import read_status
    from cairn.worker.memory.store import MemoryStore
    from cairn.worker.memory.verify import idle_verify

    ws = _workspace(tmp_path, "\n- Run the tests with `make check`.\n")
    (ws / ".git" / "refs" / "heads").mkdir(parents=True)
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (ws / ".git" / "refs" / "heads" / "main").write_text("1" * 40 + "\n")
    noon = 1767268800.0  # 2026-01-01T12:00:00Z
    with MemoryStore(str(ws), Settings()) as ms:
        assert idle_verify(ms, now=noon)["stale"] == 0
        (ws / "Makefile").write_text(MAKEFILE.replace("check:", "test:"))
        assert idle_verify(ms, now=noon + 60) == {"skipped": "unchanged"}  # same checkout, same day: a few stats
        (ws / ".git" / "refs" / "heads" / "main").write_text("2" * 40 + "\n")  # a pull moved HEAD
        r = idle_verify(ms, now=noon + 120)
    assert r["stale"] == 1 and len(r["proposals"]) == 1
    assert read_status(str(ws))["staleMemories"] == 1
    # an instruction file's stale line is counted; its reason (which names the workspace's targets) stays out
    (ws / "AGENTS.md").write_text("- Build with `make build`\n- Lint with `make lint`\n")
    (ws / ".git" / "refs" / "heads" / "main").write_text("3" * 40 + "\n")
    with MemoryStore(str(ws), Settings()) as ms:
        r = idle_verify(ms, now=noon + 180)
    assert r["staleInstructionLines"] == 1 and "instructions" not in r and "lint" not in json.dumps(r)



def test_the_idle_job_checks_an_instruction_file_where_there_is_no_memory_yet(tmp_path: Path) -> None:
    """A project with an AGENTS.md and no cairn memory: its stale lines are found in idle time too (the
    editor marks them from that record); a project with neither costs nothing."""
    from cairn.protocol.settings import Settings
    from cairn.worker.memory.store import MemoryStore
    from cairn.worker.memory.verify import idle_verify

    ws = tmp_path / "ws"
    ws.mkdir()
    noon = 1767268800.0
    with MemoryStore(str(ws), Settings()) as ms:
        assert idle_verify(ms, now=noon) == {"skipped": "no-memory"}
    (ws / "Makefile").write_text(MAKEFILE)
    (ws / "CLAUDE.md").write_text("- Lint with `make lint`\n")
    with MemoryStore(str(ws), Settings()) as ms:
        r = idle_verify(ms, now=noon)
    assert r["staleInstructionLines"] == 1 and r["checked"] == 0
    assert [row["line"] for row in stale_lines(str(ws))["CLAUDE.md"]] == [1]


def test_git_commit_is_read_from_the_git_directory(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/dev\n")
    (tmp_path / ".git" / "packed-refs").write_text("# pack-refs\n" + "a" * 40 + " refs/heads/dev\n")
    assert C.git_commit(str(tmp_path)) == "a" * 40
    assert C.git_commit(str(tmp_path / "nowhere")) is None


def test_a_remembered_memory_records_its_sources_citations_and_commit(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "Makefile").write_text(MAKEFILE)
    (ws / ".git" / "refs" / "heads").mkdir(parents=True)
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (ws / ".git" / "refs" / "heads" / "main").write_text("c" * 40 + "\n")
    code, out = _cairn(capsys, ws, "remember", "--json", "--type", "project", "Run the tests with make check")
    [proposal] = json.loads(out)["proposals"]
    assert _cairn(capsys, ws, "accept", proposal["id"])[0] == 0
    [row] = json.loads(_cairn(capsys, ws, "memory", "--json")[1])
    assert row["citations"] == [{"path": "Makefile", "target": "check", "lines": "6-6",
                                 "sha256": C.lines_sha(["check:"]), "commit": "c" * 40}]
    assert row["sources"]["digests"] and row["sources"]["turns"] and row["confirmed"]
    topic = (ws / row["file"]).read_text()
    assert topic.startswith("---\nname: ") and "\ncitations:\n- path: Makefile\n  target: check\n" in topic
    (ws / "Makefile").write_text(MAKEFILE.replace("check:", "test:"))
    code, out = _cairn(capsys, ws, "verify")
    assert code == 1 and "stale: Makefile has no target 'check' any more" in out


def test_a_note_added_to_a_stale_topic_keeps_what_its_citations_recorded(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """An update adds its evidence to the topic's provenance, but a citation recorded earlier keeps its hash
    and stays while the text names what it cites: adding a note never hides a change the topic recorded."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "Makefile").write_text(MAKEFILE)
    code, out = _cairn(capsys, ws, "remember", "--json", "--type", "project", "Run the tests with make check")
    assert _cairn(capsys, ws, "accept", json.loads(out)["proposals"][0]["id"])[0] == 0
    [first] = json.loads(_cairn(capsys, ws, "memory", "--json")[1])
    (ws / "Makefile").write_text(MAKEFILE.replace("check:", "test:"))
    code, out = _cairn(capsys, ws, "remember", "--json", "--type", "project",
                       "Run the tests with make check and keep them fast")
    [p] = json.loads(out)["proposals"]
    assert p["kind"] == "update"
    assert _cairn(capsys, ws, "accept", p["id"])[0] == 0
    [row] = json.loads(_cairn(capsys, ws, "memory", "--json")[1])
    assert len(row["sources"]["digests"]) == 2 and row["citations"] == first["citations"]
    code, out = _cairn(capsys, ws, "verify")
    assert code == 1 and "stale: Makefile has no target 'check' any more" in out


def test_a_rename_also_renames_the_topic_name_description_and_index_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # agents load MEMORY.md, not the topic body: an update that fixed only the body left them the old command
    ws = tmp_path / "ws"
    mem = ws / ".agents" / "memory"
    mem.mkdir(parents=True)
    (ws / "Makefile").write_text(MAKEFILE)
    body = "\n- Run the tests with `make check` (noted 2026-11-30)\n"
    prov: dict[str, object] = {"citations": [c.as_front_matter() for c in C.find_citations(str(ws), body)],
                               "confirmed": "2026-11-30"}
    topic = mem / "run-the-tests-with-make-check.md"
    topic.write_bytes(render_topic("Run the tests with `make check`", "Run the tests with `make check` first",
                                   "project", body, prov))
    index = ("# Memory\n\n- [Run the tests with `make check`](run-the-tests-with-make-check.md) - Run the tests"
             " with `make check` first (confirmed 2026-11-30)\n")
    (mem / "MEMORY.md").write_text(index)
    before = topic.read_bytes()
    (ws / "Makefile").write_text(MAKEFILE.replace("check:", "test:"))
    code, out = _cairn(capsys, ws, "verify", "--json")
    [pid] = json.loads(out)["proposals"]
    assert _cairn(capsys, ws, "accept", pid)[0] == 0
    after = parse_topic(topic.read_bytes())
    assert (after.name, after.description) == ("Run the tests with `make test`", "Run the tests with `make test` first")
    assert after.body == "\n- Run the tests with `make test` (noted 2026-11-30)\n"
    assert (mem / "MEMORY.md").read_text() == index.replace("make check", "make test")
    assert "make check" not in (mem / "MEMORY.md").read_text()
    assert _cairn(capsys, ws, "undo", pid)[0] == 0
    assert topic.read_bytes() == before and (mem / "MEMORY.md").read_text() == index


def test_a_topic_records_the_turns_its_note_came_from_not_every_turn_of_the_session(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The shipped example session has ten turns and six notes: each topic made from one note names that
    note's turns as its sources (what a reader follows to see why it is remembered), not all ten."""
    ws = tmp_path / "ws"
    ws.mkdir()
    code, out = _cairn(capsys, ws, "run", "--json")
    assert code == 0
    [digest] = json.loads(_cairn(capsys, ws, "journal", "--json")[1])
    assert len(digest["turn_ids"]) == 10 and len(digest["notes"]) >= 2
    for p in json.loads(_cairn(capsys, ws, "proposals", "--json")[1]):
        assert _cairn(capsys, ws, "accept", p["id"])[0] == 0
    rows = json.loads(_cairn(capsys, ws, "memory", "--json")[1])
    assert len(rows) == len(digest["notes"])
    by_body = {n["body"]: n for n in digest["notes"]}
    for row in rows:
        body = parse_topic((ws / row["file"]).read_bytes()).body
        [note] = [n for b, n in by_body.items() if b in body]
        assert row["sources"]["turns"] == list(note["turn_ids"]), row["file"]
        assert row["sources"]["digests"] == [digest["id"]]


def _remembered(tmp_path: Path, capsys: pytest.CaptureFixture[str], files: dict[str, str], text: str) -> tuple[Path, str]:
    """A workspace holding ``files`` whose memory holds ``text``, remembered and accepted; (workspace, topic)."""
    ws = tmp_path / "ws"
    for rel, content in files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(content)
    code, out = _cairn(capsys, ws, "remember", "--json", "--type", "project", text)
    [proposal] = json.loads(out)["proposals"]
    assert _cairn(capsys, ws, "accept", proposal["id"])[0] == 0
    return ws, proposal["target"]


def _verify_proposal(capsys: pytest.CaptureFixture[str], ws: Path) -> dict[str, object]:
    code, out = _cairn(capsys, ws, "verify", "--json")
    assert code == 1
    [pid] = json.loads(out)["proposals"]
    return dict(json.loads(_cairn(capsys, ws, "show", "--json", pid)[1]), id=pid)


@pytest.mark.parametrize("moved_to", ["src/app/main.py", "pkg/app/cli.py"])
def test_a_cited_file_moved_gets_an_update_naming_where_it_is_now(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], moved_to: str) -> None:
    """Renamed in its folder (found by the bytes it had) or moved to another folder under its name: the update
    names the new path in the text, the name and the index line, and cites it; undo puts the old one back."""
    ws, target = _remembered(tmp_path, capsys, {"src/app/cli.py": "def main():\n    pass\n", "src/app/util.py": "x = 1\n"},
                             "The CLI entry point is src/app/cli.py")
    topic, index = ws / target, ws / ".agents" / "memory" / "MEMORY.md"
    before, before_index = topic.read_bytes(), index.read_text()
    (ws / moved_to).parent.mkdir(parents=True, exist_ok=True)
    os.rename(ws / "src/app/cli.py", ws / moved_to)
    p = _verify_proposal(capsys, ws)
    assert p["kind"] == "update" and f"src/app/cli.py \u2192 {moved_to}" in str(p["title"])
    assert f"src/app/cli.py moved to {moved_to}" in str(p["summary"])
    assert _cairn(capsys, ws, "accept", str(p["id"]))[0] == 0
    after = parse_topic(topic.read_bytes())
    assert f"is {moved_to}" in after.body and "cli.py" not in after.body.replace(moved_to, "")
    assert after.name == f"The CLI entry point is {moved_to}"
    assert index.read_text() == before_index.replace("src/app/cli.py", moved_to)
    assert isinstance(after.citations, list) and after.citations[0]["path"] == moved_to
    code, out = _cairn(capsys, ws, "verify", "--json")
    assert code == 0 and json.loads(out)["stale"] == 0
    assert _cairn(capsys, ws, "undo", str(p["id"]))[0] == 0
    assert topic.read_bytes() == before and index.read_text() == before_index


def test_a_changed_value_gets_an_update_with_the_value_the_configuration_gives(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws, target = _remembered(tmp_path, capsys, {"pyproject.toml": "[tool.ruff]\nline-length = 100\n"},
                             "Ruff line-length is 100")
    (ws / "pyproject.toml").write_text("[tool.ruff]\nline-length = 120\n")
    p = _verify_proposal(capsys, ws)
    assert p["kind"] == "update" and "100 \u2192 120" in str(p["title"]) and "120 now, not 100" in str(p["summary"])
    assert _cairn(capsys, ws, "accept", str(p["id"]))[0] == 0
    after = parse_topic((ws / target).read_bytes())
    assert after.name == "Ruff line-length is 120" and "Ruff line-length is 120" in after.body
    assert "[Ruff line-length is 120]" in (ws / ".agents" / "memory" / "MEMORY.md").read_text()


@pytest.mark.parametrize("files, text, change", [
    # the old value is said twice: which of them changed is not known
    ({"pyproject.toml": "[tool.ruff]\nline-length = 100\n"}, "Ruff line-length is 100, keep lines under 100",
     lambda ws: (ws / "pyproject.toml").write_text("[tool.ruff]\nline-length = 120\n")),
    # two files of the cited name elsewhere, with other bytes: where it went is not known
    ({"src/cli.py": "def main():\n    pass\n"}, "The entry point is src/cli.py",
     lambda ws: ((ws / "src/cli.py").unlink(), (ws / "a").mkdir(), (ws / "a/cli.py").write_text("a\n"),
                 (ws / "b").mkdir(), (ws / "b/cli.py").write_text("b\n"))),
])
def test_a_change_with_no_single_replacement_gets_a_retirement(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], files: dict[str, str], text: str,
        change: Callable[[Path], object]) -> None:
    ws, _ = _remembered(tmp_path, capsys, files, text)
    change(ws)
    assert _verify_proposal(capsys, ws)["kind"] == "delete"


def test_verify_reports_stale_lines_of_the_instruction_files_agents_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """AGENTS.md and CLAUDE.md are memory agents load every session: their lines are checked like a topic's
    text and a stale one is reported by file and line with its reason (never rewritten, nothing proposed: the
    file is the user's). The pointer cairn wired to its own memory is not judged. A link is never read."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "Makefile").write_text(MAKEFILE)
    (ws / "src").mkdir()
    (ws / "src" / "cli.py").write_text("def main():\n    pass\n")
    agents = "# Agents\n\n## Working agreements\n\n- Run the tests with `make check`\n- The entry point is src/cli.py\n"
    (ws / "AGENTS.md").write_text(agents)
    (ws / "CLAUDE.md").write_text("## Project memory\n\nSee .agents/memory/.\n\n@.agents/memory/MEMORY.md\n\n"
                                  "Build with `make build`.\n")
    code, out = _cairn(capsys, ws, "verify", "--json")
    r = json.loads(out)
    assert code == 0 and r["instructions"] == [] and r["instructionFiles"] == ["AGENTS.md", "CLAUDE.md"]

    (ws / "Makefile").write_text(MAKEFILE.replace("check:", "test:").replace("build:", "compile:"))
    (ws / "src" / "cli.py").unlink()
    code, out = _cairn(capsys, ws, "verify", "--json")
    r = json.loads(out)
    assert code == 1 and r["proposals"] == []
    got = {(i["file"], i["line"]): i["why"] for i in r["instructions"]}
    assert sorted(got) == [("AGENTS.md", 5), ("AGENTS.md", 6), ("CLAUDE.md", 7)]
    assert "no target 'check'" in got[("AGENTS.md", 5)][0] and "src/cli.py no longer exists" in got[("AGENTS.md", 6)][0]
    assert (ws / "AGENTS.md").read_text() == agents
    assert all(set(i) == {"file", "line", "why"} for i in r["instructions"]), r["instructions"]
    # kept for the editor (its warnings on these lines): each line's hash and reasons, never its text
    kept = stale_lines(str(ws))
    assert sorted((f, row["line"]) for f, rows in kept.items() for row in rows) == sorted(got)
    assert kept[("AGENTS.md")][0]["key"] == line_key("- Run the tests with `make check`")
    assert "Run the tests" not in (ws / ".cairn/state/memory/instruction-lines.json").read_text()
    code, out = _cairn(capsys, ws, "verify")
    assert code == 1 and "AGENTS.md:5: stale: " in out and "CLAUDE.md:7: stale: " in out
    assert "3 stale line(s) in 2 instruction file(s)" in out

    (ws / "CLAUDE.md").unlink()
    (ws / "CLAUDE.md").symlink_to(ws / "AGENTS.md")  # a link: not read
    r = json.loads(_cairn(capsys, ws, "verify", "--json")[1])
    assert r["instructionFiles"] == ["AGENTS.md"] and {i["file"] for i in r["instructions"]} == {"AGENTS.md"}
    assert set(stale_lines(str(ws))) == {"AGENTS.md"}, "a file no longer read keeps no warnings"


def test_a_file_of_the_same_name_elsewhere_is_no_move_to_write_into_memory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A cited file gone while a test fixture of the same name (other bytes, another folder) exists: the
    finding may name it, but the proposal is a retirement, never an update that writes the fixture's path."""
    ws, _ = _remembered(tmp_path, capsys, {"src/shared/providers.json": "{}\n"},
                        "Provider ids are listed in src/shared/providers.json")
    (ws / "src/shared/providers.json").unlink()
    (ws / "tests/configs/default").mkdir(parents=True)
    (ws / "tests/configs/default/providers.json").write_text('{"fixture": true}\n')
    p = _verify_proposal(capsys, ws)
    assert p["kind"] == "delete", p


def test_a_configuration_key_a_memory_states_is_cited_and_its_new_value_updates_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Said as a user says it: the topic cites the line of pyproject.toml that sets the key (issue 30: "a
    config key"), and when the value changes the proposal is an update naming the new value, not a retirement."""
    pyproject = '[project]\nname = "app"\n\n[tool.ruff]\nline-length = 100\n'
    ws, target = _remembered(tmp_path, capsys, {"pyproject.toml": pyproject},
                             "Lines are at most 100 characters (ruff line-length)")
    [row] = json.loads(_cairn(capsys, ws, "memory", "--json")[1])
    assert row["citations"] == [{"path": "pyproject.toml", "symbol": "line-length", "lines": "5-5",
                                 "sha256": C.lines_sha(["line-length = 100"])}], row["citations"]
    (ws / "pyproject.toml").write_text(pyproject.replace("100", "120"))
    p = _verify_proposal(capsys, ws)
    assert p["kind"] == "update" and "100 \u2192 120" in str(p["title"]), p["title"]
