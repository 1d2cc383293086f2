"""What a person using `cairn remember`, `accept` and `verify` on a small project found wrong, end to end.

Each test follows the steps as a user took them (a git workspace, a Makefile, a remembered text accepted,
the code changed, `cairn verify`), through the CLI in process.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, cast

import pytest
from cairn.protocol.text import memory_text
from cairn.server import cli
from cairn.worker.memory import citations as C
from cairn.worker.memory.model import IndexBudget, over_budget, parse_topic

MAKEFILE = "check:\n\tpytest -q\n\nlint:\n\truff check .\n"
APP = "def main():\n    return 1\n\n\ndef helper_fn():\n    return 2\n"


def _cairn(capsys: pytest.CaptureFixture[str], ws: Path, *argv: str) -> tuple[int, str, str]:
    code = cli.main([*argv, "-w", str(ws)])
    got = capsys.readouterr()
    return code, got.out, got.err


def _project(tmp_path: Path, commit: str = "a" * 40) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "Makefile").write_text(MAKEFILE)
    (ws / "src" / "app.py").write_text(APP)
    (ws / ".git" / "refs" / "heads").mkdir(parents=True)
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (ws / ".git" / "refs" / "heads" / "main").write_text(commit + "\n")
    return ws


def _cites(topic: Path) -> list[dict[str, Any]]:
    return cast("list[dict[str, Any]]", parse_topic(topic.read_bytes()).citations)


def _remember(capsys: pytest.CaptureFixture[str], ws: Path, text: str) -> Path:
    code, out, _ = _cairn(capsys, ws, "remember", "--json", "--type", "project", text)
    [proposal] = json.loads(out)["proposals"]
    assert _cairn(capsys, ws, "accept", proposal["id"])[0] == 0
    [row] = [r for r in json.loads(_cairn(capsys, ws, "memory", "--json")[1]) if proposal["target"] == r["file"]]
    return ws / row["file"]


@pytest.mark.parametrize("bad", ["confirmed: 2026-02-30", "confirmed: 2026-13-45", "citations: &a [*a]",
                                 "confirmed: 0x" + "f" * 10_000, "sources: {turns: [0x" + "f" * 10_000 + "]}",
                                 "x: &a [1]\ny: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                                 "z: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                                 "v: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                                 "u: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
                                 "w: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]"])
def test_a_front_matter_value_yaml_cannot_build_is_reported_and_every_command_goes_on(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str) -> None:
    """An impossible date, an alias inside its own value or an alias bomb made `memory`, `verify`, `doctor`
    and `review` fail with E_INTERNAL; they now report that one topic and go on."""
    ws = _project(tmp_path)
    topic = _remember(capsys, ws, "Run the tests with make check")
    other = _remember(capsys, ws, "Prefer rebase over merge for feature branches")
    text = topic.read_text()
    broken = text.replace("\nconfirmed:", f"\n{bad}\nold_confirmed:", 1)
    assert broken != text
    topic.write_text(broken)
    with pytest.raises(Exception) as exc:
        parse_topic(broken.encode())
    assert "E_TOPIC_FRONT_MATTER" in str(exc.value)

    code, out, err = _cairn(capsys, ws, "memory", "--json")
    rows = json.loads(out)
    assert code == 0 and "E_INTERNAL" not in err
    assert {r["file"]: "error" in r for r in rows} == {str(topic.relative_to(ws)): True,
                                                       str(other.relative_to(ws)): False}
    code, out, err = _cairn(capsys, ws, "verify")
    assert code == 1 and "front matter not read (E_TOPIC_FRONT_MATTER); left as it is" in out and not err
    code, out, err = _cairn(capsys, ws, "doctor")
    assert code == 1 and "E_TOPIC_FRONT_MATTER" in out and "E_INTERNAL" not in err
    code, out, err = _cairn(capsys, ws, "review")
    assert code == 0 and "E_INTERNAL" not in err
    assert topic.read_text() == broken  # reported, never rewritten


def test_a_renamed_class_is_stale_although_the_memory_itself_still_names_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The topic file naming `ConfigLoader` was found by the tree search and taken as proof it still exists."""
    ws = _project(tmp_path)
    (ws / "src" / "loader.py").write_text("class ConfigLoader:\n    def load_all(self):\n        pass\n")
    topic = _remember(capsys, ws, "Use `ConfigLoader` to load settings")
    assert _cites(topic)[0]["path"] == "src/loader.py"
    assert _cairn(capsys, ws, "verify")[0] == 0
    (ws / "src" / "loader.py").write_text("class SettingsLoader:\n    def load_all(self):\n        pass\n")
    code, out, _ = _cairn(capsys, ws, "verify", "--json")
    r = json.loads(out)
    assert code == 1 and r["stale"] == 1 and len(r["proposals"]) == 1
    assert "'ConfigLoader' no longer occurs in the tree" in r["topics"][0]["why"][0]


def test_a_symbol_an_older_version_cited_inside_the_memory_is_not_proof(tmp_path: Path) -> None:
    ws = _project(tmp_path)
    mem = ws / ".agents" / "memory"
    mem.mkdir(parents=True)
    (mem / "other.md").write_text("Use `ConfigLoader`.\n")
    [check] = C.verify_entry(str(ws), "Use `ConfigLoader`.",
                             [{"path": ".agents/memory/other.md", "symbol": "ConfigLoader"}])
    assert check.verdict == C.STALE


def test_a_renamed_target_in_an_index_line_is_renamed_too_and_the_commit_is_the_new_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The index line's link text `[Run the tests with make check](…)` kept the old command after the update,
    and the renamed citation kept the old commit beside the new hash."""
    ws = _project(tmp_path)
    topic = _remember(capsys, ws, "Run the tests with make check")
    index = ws / ".agents" / "memory" / "MEMORY.md"
    assert "make check" in index.read_text()
    (ws / "Makefile").write_text(MAKEFILE.replace("check:", "test:"))
    (ws / ".git" / "refs" / "heads" / "main").write_text("b" * 40 + "\n")
    code, out, _ = _cairn(capsys, ws, "verify", "--json")
    [pid] = json.loads(out)["proposals"]
    assert _cairn(capsys, ws, "accept", pid)[0] == 0
    assert "make check" not in index.read_text() and "[Run the tests with make test](" in index.read_text()
    [cite] = _cites(topic)
    assert (cite["target"], cite["commit"]) == ("test", "b" * 40)
    assert _cairn(capsys, ws, "verify")[0] == 0


@pytest.mark.parametrize(("text", "target"), [
    ("- [Run the tests with make check](run-the-tests-with-make-check.md) - how", "check"),
    ("run **make check** first", "check"), ('say "make check"', "check"), ("run make check!", "check"),
    ("[npm run build](x.md)", "build"), ('npm run "lint"', "lint"), ("make **check**", "check"),
    ("[make check]", "check"), ("yarn 'lint'", "lint")])
def test_a_command_inside_a_link_emphasis_or_quotes_is_read_and_renamed(text: str, target: str) -> None:
    assert [r.target for r in C._runs(text)] == [target]
    renamed = C.rename_in_text(text, target, "new")
    assert renamed.count("new") == 1 and renamed.replace("new", target, 1) == text


def test_a_bracket_inside_a_command_does_not_end_it() -> None:
    assert [r.target for r in C._runs("make test ARGS=[1] build")] == ["test", "build"]


def test_a_snake_case_function_is_cited_where_it_is_defined_and_its_rename_is_stale(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = _project(tmp_path)
    topic = _remember(capsys, ws, "Call `helper_fn()` to compute the second value")
    [cite] = _cites(topic)
    assert (cite["path"], cite["symbol"], cite["lines"]) == ("src/app.py", "helper_fn", "5-5")
    (ws / "src" / "app.py").write_text(APP.replace("helper_fn", "compute_second"))
    code, out, _ = _cairn(capsys, ws, "verify")
    assert code == 1 and "'helper_fn' no longer occurs in the tree" in out


def test_a_renamed_file_whose_function_lives_on_is_updated_not_retired(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`git mv src/app.py src/main.py`: the memory about `helper_fn` is still true. verify proposed to retire
    it ("src/app.py no longer exists"); it proposes an update citing the function where it is now, and the
    topic's text, true as it was, is left as it was."""
    ws = _project(tmp_path)
    topic = _remember(capsys, ws, "Call `helper_fn()` to compute the second value")
    both = _remember(capsys, ws, "The helpers live in src/app.py, such as `helper_fn()`")
    (ws / "src" / "app.py").rename(ws / "src" / "main.py")
    code, out, _ = _cairn(capsys, ws, "verify", "--json")
    report = json.loads(out)
    assert code == 1
    code, out, _ = _cairn(capsys, ws, "proposals", "--json")
    pending = {p["target"]: p for p in json.loads(out) if p["state"] == "pending"}
    for t in (topic, both):
        rel = str(t.relative_to(ws))
        assert pending[rel]["kind"] == "update", (rel, pending[rel]["title"], report)
        assert _cairn(capsys, ws, "accept", pending[rel]["id"])[0] == 0
    assert "Call `helper_fn()` to compute the second value" in topic.read_text()
    assert [(c["path"], c["symbol"]) for c in _cites(topic)] == [("src/main.py", "helper_fn")]
    assert "src/main.py" in both.read_text() and "src/app.py" not in both.read_text()
    code, out, _ = _cairn(capsys, ws, "verify")
    assert code == 0, out


@pytest.mark.parametrize("left", [("docs/notes.md", "We dropped `helper_fn` in v2.\n"),
                                  ("tests/test_app.py", "# helper_fn was removed\n"),
                                  ("bench/stub.py", "def helper_fn():\n    pass\n")])
def test_a_deleted_function_named_elsewhere_is_still_retired(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], left: tuple[str, str]) -> None:
    """A second reader's: with the file deleted, a mention (a note, a comment) made an update re-citing the
    mention; with the file renamed and a second definition elsewhere, the first in file order was cited."""
    ws = _project(tmp_path)
    topic = _remember(capsys, ws, "Call `helper_fn()` to compute the second value")
    path, text = left
    (ws / path).parent.mkdir(parents=True, exist_ok=True)
    (ws / path).write_text(text)
    if path.endswith("stub.py"):  # renamed, and defined twice now: which one is meant is unknown
        (ws / "src" / "app.py").rename(ws / "src" / "main.py")
    else:
        (ws / "src" / "app.py").unlink()
    assert _cairn(capsys, ws, "verify")[0] == 1
    pending = [p for p in json.loads(_cairn(capsys, ws, "proposals", "--json")[1]) if p["state"] == "pending"]
    assert [(p["kind"], p["target"]) for p in pending] == [("delete", str(topic.relative_to(ws)))], pending


def test_a_topic_verified_now_is_not_due_whatever_the_clocks(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A second reader's: a verification dated by the state's clock, days past the wall clock's, judged its own
    "verified today" a date in the future, and proposed to revalidate the topic it had just verified."""
    ws = _project(tmp_path)
    _remember(capsys, ws, "Call `helper_fn()` to compute the second value")
    monkeypatch.setenv("CAIRN_TEST_CLOCK_OFFSET", str(200 * 86400))
    _cairn(capsys, ws, "verify")
    pending = [p["title"] for p in json.loads(_cairn(capsys, ws, "proposals", "--json")[1]) if p["state"] == "pending"]
    assert pending == []


def test_accepting_the_update_a_verification_proposed_clears_its_stale_mark(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The topic stayed marked stale after its update was accepted: `cairn memory` and both cockpits showed
    "Makefile has no target 'check' any more" and `memory confirm` refused it, until a new `verify`."""
    ws = _project(tmp_path)
    topic = _remember(capsys, ws, "Run the tests with make check")
    (ws / "Makefile").write_text(MAKEFILE.replace("check:", "test:"))
    assert _cairn(capsys, ws, "verify")[0] == 1
    [row] = json.loads(_cairn(capsys, ws, "memory", "--json")[1])
    assert row["stale"]
    [update] = [p for p in json.loads(_cairn(capsys, ws, "proposals", "--json")[1]) if p["state"] == "pending"]
    assert _cairn(capsys, ws, "accept", update["id"])[0] == 0
    assert "make test" in topic.read_text()
    [row] = json.loads(_cairn(capsys, ws, "memory", "--json")[1])
    assert not row["stale"] and not row.get("why"), row
    assert _cairn(capsys, ws, "memory", "confirm", topic.name)[0] == 0


def test_a_snake_case_name_nothing_defines_is_not_cited(tmp_path: Path) -> None:
    ws = _project(tmp_path)
    (ws / "src" / "conf.py").write_text("line_length = 100\nprint('line_length')\n# def commented_fn(): gone\n"
                                        "HELP = 'def quoted_fn(x)'\n")
    assert C.find_citations(str(ws), "Keep `line_length` at 100 and `node_modules` out of git") == []
    assert C.find_citations(str(ws), "Call `commented_fn()` or `quoted_fn`") == []


def test_a_configured_memory_root_is_no_evidence_either(tmp_path: Path) -> None:
    ws = _project(tmp_path)
    (ws / "docs" / "memory").mkdir(parents=True)
    (ws / "docs" / "memory" / "w.md").write_text("Use `WidgetNine`.\n")
    assert [c.path for c in C.find_citations(str(ws), "Use `WidgetNine`")] == ["docs/memory/w.md"]
    assert C.find_citations(str(ws), "Use `WidgetNine`", exclude=["docs/memory"]) == []
    [check] = C.verify_entry(str(ws), "Use `WidgetNine`.", [{"path": "docs/memory/w.md", "symbol": "WidgetNine"}],
                             exclude=["docs/memory"])
    assert check.verdict == C.STALE


def test_an_index_past_its_budget_is_reported_by_verify_and_doctor(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = _project(tmp_path)
    for text in ("Prefer rebase over merge for feature branches", "The API server listens on port 8080 locally",
                 "Use tabs in Makefiles only"):
        _remember(capsys, ws, text)
    index = ws / ".agents" / "memory" / "MEMORY.md"
    lines = len(index.read_text().splitlines())
    assert _cairn(capsys, ws, "verify")[0] == 0
    (ws / ".cairn" / "config.toml").write_text(f"index_max_lines = {lines - 1}\n")
    before = index.read_bytes()
    code, out, _ = _cairn(capsys, ws, "verify", "--json")
    [o] = json.loads(out)["overBudget"]
    assert code == 1 and o == {"index": ".agents/memory/MEMORY.md", "lines": lines, "bytes": len(before),
                               "entriesPast": 1, "maxLines": lines - 1, "maxBytes": 25 * 1024}
    code, out, _ = _cairn(capsys, ws, "verify")
    assert f"past its budget (1 entry past line {lines - 1}): agents load the first {lines - 1} lines" in out
    code, out, _ = _cairn(capsys, ws, "doctor")
    assert code == 1 and "MEMORY.md: past its budget" in out
    code, out, err = _cairn(capsys, ws, "memory")
    assert code == 0 and out.count(".md  (project)") == 3 and "cairn: note: .agents/memory/MEMORY.md: past its" in err
    assert index.read_bytes() == before  # reported, never cut
    assert over_budget(before) is None and over_budget(b"") is None
    # the writer's rule: entries within the lines agents load; a footer or a blank line past them is no entry
    footer = b"# Memory\n\n- [a](a.md) - x\n\n## Notes\nfoo\nbar\n\n"
    assert over_budget(footer, IndexBudget(lines=3, bytes=1000)) is None
    assert over_budget(footer, IndexBudget(lines=2, bytes=1000)) == {
        "lines": 8, "bytes": len(footer), "entriesPast": 1, "maxLines": 2, "maxBytes": 1000}
    assert over_budget(footer, IndexBudget(lines=3, bytes=10))["bytes"] == len(footer)  # type: ignore[index]
    # the bytes too: an entry that ends past the bytes agents load is missed (entriesPast counted lines only)
    three = b"# Memory\n\n- [a](a.md) - first\n- [b](b.md) - second\n- [c](c.md) - third\n"
    assert over_budget(three, IndexBudget(lines=200, bytes=three.index(b"- [b]") + 5))["entriesPast"] == 2  # type: ignore[index]
    assert over_budget(three, IndexBudget(lines=200, bytes=len(three))) is None


def test_an_undo_the_budget_refuses_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = _project(tmp_path)
    first = _remember(capsys, ws, "Prefer rebase over merge for feature branches")
    _remember(capsys, ws, "The API server listens on port 8080 locally")
    index = ws / ".agents" / "memory" / "MEMORY.md"
    (ws / ".cairn" / "config.toml").write_text(f"index_max_lines = {len(index.read_text().splitlines())}\n")
    code, out, _ = _cairn(capsys, ws, "memory", "--json", "retire", first.name)
    retire = json.loads(out)["proposal"]
    assert _cairn(capsys, ws, "accept", retire)[0] == 0
    _remember(capsys, ws, "Commit messages use the imperative mood")
    before = index.read_bytes()
    code, _, err = _cairn(capsys, ws, "undo", retire)
    assert code == 2 and "E_INDEX_FULL: undo refused" in err and "E_TARGET_CHANGED" not in err
    assert index.read_bytes() == before and not first.exists()


def test_an_agents_hook_never_fails_on_its_workspace(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    r_fd, w_fd = os.pipe()
    os.write(w_fd, b"{}")
    os.close(w_fd)
    monkeypatch.setattr("sys.stdin", os.fdopen(r_fd, "r"))
    code, _, err = _cairn(capsys, tmp_path / "missing", "hook", "claude-code")
    assert code == 0 and "E_WORKSPACE_INVALID" not in err and "cairn: hook: E_" in err


@pytest.mark.parametrize("command", ["memory", "journal", "proposals", "verify", "doctor", "jobs"])
def test_a_workspace_that_is_no_folder_is_refused_the_same_way_by_every_command(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    (tmp_path / "file").write_text("")
    for ws, what in ((tmp_path / "missing", "does not exist"), (tmp_path / "file", "is not a directory")):
        code, out, err = _cairn(capsys, ws, command)
        assert code == 2 and not out and f"E_WORKSPACE_INVALID: workspace {ws} {what}; check -w" in err
    assert sorted(os.listdir(tmp_path)) == ["file"]


def test_an_invalid_citation_says_which_and_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = _project(tmp_path)
    topic = _remember(capsys, ws, "Run the tests with make check")
    text = topic.read_text()
    start = text.index("citations:")
    end = text.index("\nconfirmed:")
    topic.write_text(text[:start] + "citations:\n- 1\n- path: Makefile\n  lines: z-y\n- path: Makefile\n"
                     + text[end:])
    code, out, _ = _cairn(capsys, ws, "verify")
    assert code == 1
    assert "citation 1 of the front matter is not valid: it names no path" in out
    assert "citation 2 of the front matter is not valid: its lines are not a span such as 3-7" in out


@pytest.mark.parametrize("invisible", ["\u202e\u200b", "\ufeff", "\u2060", "\u00ad", "\u3164", "\u200d\u200c",
                                       " \u200b \n\u115f"])
def test_a_text_that_shows_nothing_is_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str], invisible: str) -> None:
    """It made a pending topic named, described and indexed by nothing a person sees (`- [\u200b](topic.md)`),
    one more each time; it is `E_USAGE` as a text of spaces is."""
    ws = _project(tmp_path)
    code, _, err = _cairn(capsys, ws, "remember", invisible)
    assert code == 2 and "E_USAGE" in err and "empty" in err
    assert not (ws / ".agents").exists()


def test_a_zero_width_space_inside_a_word_never_reaches_a_memory_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = _project(tmp_path)
    topic = _remember(capsys, ws, "Format\u200b code with black\u2060 before\ufeff every com\u00admit")
    for f in (topic, ws / ".agents" / "memory" / "MEMORY.md"):
        assert "Format code with black before every commit" in f.read_text()
    [row] = json.loads(_cairn(capsys, ws, "memory", "--json")[1])
    assert len(row["sources"]["turns"]) == 1  # the note is still found in the topic made of it
    assert memory_text("\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645") == "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"  # ZWNJ stays


def test_a_memory_file_never_read_is_listed_and_doctor_reports_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A topic that is a symlink or a FIFO, and an index that is not UTF-8: `cairn memory` said "(no memory
    topics)" and `doctor` "ok" while no remember or review could write memory."""
    ws = _project(tmp_path)
    mem = ws / ".agents" / "memory"
    mem.mkdir(parents=True)
    (tmp_path / "real.md").write_text("---\nname: Real\ndescription: r\ntype: project\n---\n\n- x\n")
    (mem / "linked.md").symlink_to(tmp_path / "real.md")
    os.mkfifo(mem / "pipe.md")
    code, out, _ = _cairn(capsys, ws, "memory")
    assert code == 0 and "linked.md  E_PATH_SYMLINK: a symlink" in out and "pipe.md  E_PATH_NOT_REGULAR" in out
    rows = json.loads(_cairn(capsys, ws, "memory", "--json")[1])
    assert {(r["name"], r["error"], r["refused"]) for r in rows} == {("linked.md", "E_PATH_SYMLINK", True),
                                                                    ("pipe.md", "E_PATH_NOT_REGULAR", True)}
    (mem / "MEMORY.md").write_bytes(b"# Memory\n\n- [X](x.md) caf\xe9\n")
    code, out, _ = _cairn(capsys, ws, "doctor")
    assert code == 1 and "3 problem(s)" in out
    assert "memory E_MEMORY_NOT_TEXT .agents/memory/MEMORY.md: the memory index cannot be read" in out
    assert {b["code"] for b in json.loads(_cairn(capsys, ws, "doctor", "--json")[1])["memory"]} == {
        "E_PATH_SYMLINK", "E_PATH_NOT_REGULAR", "E_MEMORY_NOT_TEXT"}


def test_bidirectional_controls_never_reach_a_memory_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = _project(tmp_path)
    topic = _remember(capsys, ws, "Deploy with \u202eevil\u202c scripts only from the main \u2067branch\u2069")
    for f in (topic, ws / ".agents" / "memory" / "MEMORY.md"):
        text = f.read_text()
        assert "evil scripts only from the main branch" in text.replace("Deploy with ", "")
        assert not any(c in text for c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
    assert memory_text("\u05e9\u05dc\u05d5\u05dd \u200f!") == "\u05e9\u05dc\u05d5\u05dd \u200f!"  # marks stay
    [row] = json.loads(_cairn(capsys, ws, "memory", "--json")[1])
    assert len(row["sources"]["turns"]) == 1  # the note is still found in the topic made of it


def test_an_instruction_file_never_read_is_said_by_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A linked, FIFO or folder AGENTS.md was skipped without a word (`instructionFiles: []`)."""
    ws = _project(tmp_path)
    (tmp_path / "real.md").write_text("Run `make check`.\n")
    (ws / "AGENTS.md").symlink_to(tmp_path / "real.md")
    os.mkfifo(ws / "CLAUDE.md")
    code, out, _ = _cairn(capsys, ws, "verify", "--dry-run")
    assert code == 0, out  # a note: agents follow such links, and cairn never does
    assert "AGENTS.md: not checked (E_PATH_SYMLINK)" in out and "CLAUDE.md: not checked (E_PATH_NOT_REGULAR)" in out
    r = json.loads(_cairn(capsys, ws, "verify", "--dry-run", "--json")[1])
    assert {(f["file"], f["code"]) for f in r["instructionRefused"]} == {("AGENTS.md", "E_PATH_SYMLINK"),
                                                                         ("CLAUDE.md", "E_PATH_NOT_REGULAR")}


def test_a_link_to_an_instruction_file_verify_checked_is_no_refusal(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """`CLAUDE.md -> AGENTS.md` (a common layout) was "not checked (E_PATH_SYMLINK)" although AGENTS.md was, and
    `cairn agents` reads the link as wiring: the lines were checked once, through the file the link names."""
    ws = _project(tmp_path)
    (ws / "AGENTS.md").write_text("Run `make check`.\n")
    (ws / "CLAUDE.md").symlink_to("AGENTS.md")
    (ws / "GEMINI.md").symlink_to(tmp_path / "outside.md")  # leaves the workspace: still never read
    (tmp_path / "outside.md").write_text("x\n")
    r = json.loads(_cairn(capsys, ws, "verify", "--dry-run", "--json")[1])
    assert "AGENTS.md" in r["instructionFiles"]
    assert [(f["file"], f["code"]) for f in r["instructionRefused"]] == [("GEMINI.md", "E_PATH_SYMLINK")]


def test_a_link_reached_through_a_linked_folder_is_still_refused(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """`.github -> ../other/gh` with `gh/copilot-instructions.md -> ../AGENTS.md`: the file read would be
    `other/AGENTS.md`, outside the workspace; the note that it is not checked must stay."""
    ws = _project(tmp_path)
    (ws / "AGENTS.md").write_text("Run `make check`.\n")
    (tmp_path / "other" / "gh").mkdir(parents=True)
    (tmp_path / "other" / "AGENTS.md").write_text("x\n")
    (tmp_path / "other" / "gh" / "copilot-instructions.md").symlink_to("../AGENTS.md")
    (ws / ".github").symlink_to(tmp_path / "other" / "gh")
    r = json.loads(_cairn(capsys, ws, "verify", "--dry-run", "--json")[1])
    assert ".github/copilot-instructions.md" in {f["file"] for f in r["instructionRefused"]}
