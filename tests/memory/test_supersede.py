"""Supersession: a note that changes what memory says replaces the old statement (CLI end to end)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cairn.worker.memory.supersede import change_of, supersedes

from tests.journal.helpers import cairn, cairn_json

ROOT = ".agents/memory"


def _remember(ws: Path, text: str) -> dict:
    out = cairn_json(ws, "remember", text)
    [p] = out["proposals"]
    return p | {"remember": out["remember"]}


def _files(ws: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((ws / ROOT).glob("*.md"))}


def _topics(ws: Path) -> dict[str, str]:
    return {k: v.decode() for k, v in _files(ws).items() if k != "MEMORY.md"}


def test_npm_then_pnpm_replaces_the_statement_in_the_existing_topic(workspace: Path) -> None:
    first = _remember(workspace, "Use npm to install dependencies")
    cairn(workspace, "accept", first["id"])
    [topic] = _topics(workspace)
    second = _remember(workspace, "Use pnpm, not npm, to install dependencies")
    # a replacement of the existing topic, not a second topic beside it
    assert second["kind"] == "update" and second["target"] == f"{ROOT}/{topic}"
    assert "\u201cUse npm to install dependencies\u201d \u2192 \u201cUse pnpm, not npm" in second["title"]
    shown = cairn(workspace, "show", second["id"]).stdout
    assert "-- Use npm to install dependencies (noted" in shown
    assert "+- Use pnpm, not npm, to install dependencies (noted" in shown
    [row] = [r for r in cairn_json(workspace, "proposals") if r["id"] == second["id"]]
    # both sources: the old statement with the day it was noted, the new one with its evidence
    assert "Use npm to install dependencies\u201d (noted 20" in row["summary"]
    assert second["remember"] in row["summary"] and row["evidence"] == [second["remember"]]
    before = _files(workspace)
    cairn(workspace, "accept", second["id"])
    [(name, text)] = _topics(workspace).items()
    assert name == topic and "pnpm" in text and "Use npm to install" not in text
    index = (workspace / ROOT / "MEMORY.md").read_text()
    assert index.count("](") == 1 and "Use pnpm, not npm" in index
    cairn(workspace, "undo", second["id"])
    assert _files(workspace) == before  # undo restores every byte


@pytest.mark.parametrize(
    "text",
    [
        "Install dependencies with pnpm instead of npm",
        "We moved from npm to pnpm",
        "We no longer use npm; dependencies are installed with pnpm",
    ],
)
def test_change_shapes_supersede(workspace: Path, text: str) -> None:
    cairn(workspace, "accept", _remember(workspace, "Use npm to install dependencies")["id"])
    [topic] = _topics(workspace)
    p = _remember(workspace, text)
    assert p["kind"] == "update" and p["title"].startswith("Replace in ") and p["target"].endswith(topic)
    cairn(workspace, "accept", p["id"])
    [body] = _topics(workspace).values()
    assert "Use npm to install dependencies" not in body and text in body


def test_compatible_facts_about_one_tool_do_not_supersede(workspace: Path) -> None:
    cairn(workspace, "accept", _remember(workspace, "Use pnpm to install dependencies")["id"])
    p = _remember(workspace, "The pnpm store is in ~/.pnpm-store")
    assert not p["title"].startswith("Replace")
    cairn(workspace, "accept", p["id"])
    text = "\n".join(_topics(workspace).values())
    assert "Use pnpm to install dependencies" in text and "~/.pnpm-store" in text


@pytest.mark.parametrize(
    ("note", "line"),
    [
        ("Use pnpm, not npm, to install dependencies", "- Don't use npm"),  # already agrees
        ("Use pnpm, not npm, to install dependencies", "- Use npm to publish packages"),  # another subject
        ("Use npm ci in CI", "- Use npm to install dependencies"),  # the same choice
        ("Use pnpm workspaces for the monorepo", "- Use npm to install dependencies"),
        ("Prefer tabs over spaces in Makefiles", "- Use spaces in Python files"),
        ("Use 4 spaces for indentation in Python files", "- Use tabs in Makefiles"),
        ("Use 4 spaces for indentation", "- Use 4 spaces for indentation (noted 2026-01-02)"),  # said again
        ("The test database is SQLite", "- The database is PostgreSQL"),  # another database
        ("Use single quotes", "- Never use double quotes"),  # agrees: one turns the other down
        ("Use dark mode in the docs site", "- Use light mode in the app"),  # more than one word differs
        ("Deploy the docs with `fly deploy`", "- We no longer deploy with heroku"),
        # numbered subjects, each its own (a tester's: the second replaced the first, also at accept)
        ("Worker 2 runs on host node2", "- Worker 1 runs on host node1"),
        ("Runbook 2 is at https://runbooks.example.org/r2/page-restart",
         "- Runbook 1 is at https://runbooks.example.org/r1/page-restart"),
    ],
)
def test_precision_of_subjects(note: str, line: str) -> None:
    assert not supersedes(note, line)


@pytest.mark.parametrize(
    ("note", "line"),
    [
        ("Run `just build` instead of `make build`", "- Run `make build` to build the site"),
        ("Use ruff instead of flake8 for linting", "- Lint with flake8 (noted 2026-01-02)"),
        ("From now on, use pnpm to install dependencies", "- Use npm to install dependencies"),
        ("From now on, tests run with vitest", "- Tests run with jest"),  # the choice after "run with"
        ("Use ruff format, not black", "- Format Python with black"),  # words between the choice and "not"
        ("Use tabs in Makefiles, not spaces", "- Indent Makefiles with spaces"),
        # a changed value: the same statement with another number
        ("The API server now listens on port 9000", "- The API server listens on port 8000 (noted 2026-11-02)"),
        ("Run the tests with 8 workers", "- Run the tests with 4 workers"),
        ("Requires Python 3.12 or newer", "- Requires Python 3.11 or newer"),
        ("We now require Node 20", "- Node 18 is required"),
        # a count before the choice is not the choice ("use 4 spaces": spaces), and another count is a change
        ("Use 4 spaces for indentation, not tabs", "- Use tabs for indentation"),
        ("Use 2 spaces for indentation", "- Use 4 spaces for indentation (noted 2026-01-02)"),
        ("Indent with spaces instead of tabs", "- Use tabs for indentation"),  # indent / indentation: one subject
        # found by trying it as a user: each of these added a contradicting line or topic
        ("We no longer deploy with fly; deploy with `kamal deploy`", "- Deploy with `fly deploy`"),
        ("Format code with ruff format instead of black", "- Format code with black"),  # the tool, not its command
        ("The database is SQLite, not PostgreSQL", "- The database is PostgreSQL"),
        ("The database is SQLite", "- The database is PostgreSQL"),
        ("Prefer double quotes in Python", "- Prefer single quotes in Python"),  # one word for an alternative
        ("Write commit messages in French from now on", "- Always write commit messages in English"),
        ("Use LF line endings", "- Use CRLF line endings"),
    ],
)
def test_subject_keys_beyond_package_managers(note: str, line: str) -> None:
    assert supersedes(note, line)


@pytest.mark.parametrize(
    ("note", "line"),
    [
        ("The admin API listens on port 9000", "- The API listens on port 8000"),  # another server
        ("The integration tests use 8 workers", "- Run the unit tests with 4 workers"),
        ("Use Node 20", "- Use Python 3.12"),
        ("The API server listens on port 8000", "- The API server listens on port 8000"),  # the same value
        ("Ports 8000 and 9000 are taken", "- Port 8000 is taken"),  # not one value for another
    ],
)
def test_other_subjects_with_numbers_are_no_change(note: str, line: str) -> None:
    assert not supersedes(note, line)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Tests run with jest", "From now on, tests run with vitest"),
        ("Format Python with black", "Use ruff format, not black"),
        ("The API server listens on port 8000", "The API server now listens on port 9000"),
        ("Always write commit messages in English", "Write commit messages in French from now on"),
        ("The database is PostgreSQL", "The database is SQLite, not PostgreSQL"),
    ],
)
def test_a_changed_tool_or_value_replaces_the_statement_through_remember(workspace: Path, old: str,
                                                                         new: str) -> None:
    # as a user would: each of these used to add a second topic (or a second line) that disagreed
    cairn(workspace, "accept", _remember(workspace, old)["id"])
    [topic] = _topics(workspace)
    p = _remember(workspace, new)
    assert p["kind"] == "update" and p["title"].startswith("Replace in ") and p["target"].endswith(topic)
    cairn(workspace, "accept", p["id"])
    [body] = _topics(workspace).values()
    assert old not in body and new in body


# -- the index budget -----------------------------------------------------------------


def _near_full_index(ws: Path) -> str:
    """An index of project topics 40 bytes short of the 25 KB agents load; the text of the first topic."""
    root = ws / ROOT
    root.mkdir(parents=True)
    lines = ["# Memory", ""]
    for i in range(60):
        name = f"Area{i} kappa{i}"  # no two topics alike: nothing to merge
        body = f"- Area{i} runs on host alpha{i}"
        (root / f"area-{i}.md").write_text(
            f"---\nname: {name}\ndescription: {name}\ntype: project\n---\n\n{body}\n"
        )
        lines.append(f"- [{name}](area-{i}.md) - " + f"detail {i} " * 37)
    text = "\n".join(lines) + "\n"
    text += "\n" + "x" * (25 * 1024 - 40 - len(text)) + "\n"  # 40 bytes short: no room for one more entry
    (root / "MEMORY.md").write_text(text)
    return (root / "area-0.md").read_text()


def test_a_review_near_the_budget_moves_the_note_into_a_topic_and_drops_nothing(workspace: Path) -> None:
    _near_full_index(workspace)
    index = (workspace / ROOT / "MEMORY.md").read_bytes()
    p = _remember(workspace, "The billing service is written in Rust")
    # a new topic would push the index past 25 KB: the note goes into an existing topic instead
    assert p["kind"] == "update" and p["target"].startswith(f"{ROOT}/area-")
    # filed under a topic that may be only loosely related: the proposal says why, and how to make room
    assert p["title"].endswith("(the index is full)")
    shown = cairn_json(workspace, "show", p["id"])
    assert "no room for a new entry" in shown["summary"] and "retire or merge entries" in shown["summary"]
    cairn(workspace, "accept", p["id"])
    assert (workspace / ROOT / "MEMORY.md").read_bytes() == index  # every entry kept, nothing added
    assert "The billing service is written in Rust" in "\n".join(_topics(workspace).values())


def test_an_accept_past_the_budget_is_refused_with_its_code(workspace: Path) -> None:
    p = _remember(workspace, "The billing service is written in Rust")
    assert p["kind"] == "create"
    index = workspace / ROOT / "MEMORY.md"
    index.parent.mkdir(parents=True)
    big = "# Memory\n\n" + "x" * (25 * 1024 - 40) + "\n"  # grown by hand since: one entry more crosses 25 KB
    index.write_text(big)
    r = cairn(workspace, "accept", p["id"], check=False)
    assert r.returncode != 0 and "E_INDEX_FULL" in r.stdout + r.stderr and "25600" in r.stdout + r.stderr
    assert "Traceback" not in r.stderr and index.read_text() == big
    assert sorted(_files(workspace)) == ["MEMORY.md"]


def test_the_budget_is_a_setting(workspace: Path) -> None:
    root = workspace / ROOT
    root.mkdir(parents=True)
    for name in ("alpha", "beta"):
        (root / f"{name}.md").write_text(
            f"---\nname: {name}\ndescription: {name}\ntype: project\n---\n\n- {name}\n"
        )
    index = "# Memory\n\n- [alpha](alpha.md)\n- [beta](beta.md)\n"
    (root / "MEMORY.md").write_text(index)
    (workspace / ".cairn").mkdir()
    (workspace / ".cairn/config.toml").write_text("index_max_lines = 4\n")
    p = _remember(workspace, "The billing service is written in Rust")
    assert p["kind"] == "update" and p["target"] in (f"{ROOT}/alpha.md", f"{ROOT}/beta.md")
    (workspace / ".cairn/config.toml").write_text("index_max_lines = 5\n")
    assert _remember(workspace, "Staging deploys happen every Tuesday morning")["kind"] == "create"
    assert (root / "MEMORY.md").read_text() == index


def _row(ws: Path) -> dict:
    [row] = cairn_json(ws, "memory")
    return row


def test_a_replacement_adds_its_evidence_to_the_topics_sources(workspace: Path) -> None:
    first = _remember(workspace, "Use npm to install dependencies")
    cairn(workspace, "accept", first["id"])
    before = _row(workspace)
    assert before["sources"]["digests"] == [first["remember"]]
    second = _remember(workspace, "Use pnpm, not npm, to install dependencies")
    cairn(workspace, "accept", second["id"])
    after = _row(workspace)
    # the topic says where both statements came from: the old evidence stays, the new one joins it
    assert after["sources"]["digests"] == sorted([first["remember"], second["remember"]])
    assert set(before["sources"]["turns"]) < set(after["sources"]["turns"])
    assert after["confirmed"] >= before["confirmed"]


def test_an_appended_note_adds_its_evidence_and_what_it_names_to_the_topic(workspace: Path) -> None:
    (workspace / "Makefile").write_text("check:\n\tpytest\n")
    first = _remember(workspace, "Use pnpm to install dependencies")
    cairn(workspace, "accept", first["id"])
    assert not _row(workspace).get("citations")
    p = _remember(workspace, "Use pnpm to install dependencies and make check to test them")
    assert p["kind"] == "update"
    cairn(workspace, "accept", p["id"])
    row = _row(workspace)
    assert row["sources"]["digests"] == sorted([first["remember"], p["remember"]])
    assert [(c["path"], c.get("target")) for c in row["citations"]] == [("Makefile", "check")]


def test_a_front_matter_the_user_edited_is_not_written_again(workspace: Path) -> None:
    first = _remember(workspace, "Use npm to install dependencies")
    cairn(workspace, "accept", first["id"])
    [name] = _topics(workspace)
    path = workspace / ROOT / name
    path.write_text(path.read_text().replace("\ntype: ", "\n# kept by hand\ntype: ", 1))
    cairn(workspace, "accept", _remember(workspace, "Use pnpm, not npm, to install dependencies")["id"])
    text = path.read_text()
    # the statement is replaced in place; the front matter is not written again, so the comment stays
    assert "# kept by hand" in text and "Use pnpm, not npm" in text
    assert _row(workspace)["sources"]["digests"] == [first["remember"]]


def test_a_statement_said_from_now_on_names_the_topic_with_a_capital(tmp_path: Path) -> None:
    """"From now on use yarn instead of pnpm" replaces the statement and the topic's name: "Use yarn instead of
    pnpm", not the lower-case rest of the sentence once its lead was read; a name written lower-case stays so."""
    from cairn.worker.providers.remember import note_type

    assert note_type("From now on use yarn instead of pnpm", "")[1] == "Use yarn instead of pnpm"
    assert note_type("npm is not used here; use pnpm", "")[1].startswith("npm")


def test_unrelated_memories_noted_the_same_day_are_not_merged(workspace: Path) -> None:
    """Each bullet ends "(noted YYYY-MM-DD)": those words are no subject. Two short, unrelated memories noted on
    one day were about the same thing by their words (the date's), and the next review proposed to fold
    "Use tabs for indentation" into "Run the tests with just test"."""
    for text in ("Run the tests with just test", "Use tabs for indentation"):
        cairn(workspace, "accept", _remember(workspace, text)["id"])
    cairn_json(workspace, "remember", "The API server listens on port 8080")
    kinds = [p["kind"] for p in cairn_json(workspace, "proposals") if p["state"] == "pending"]
    assert kinds == ["create"], kinds


def test_a_note_said_again_in_other_words_finds_its_topic_though_its_bullet_is_dated(workspace: Path) -> None:
    cairn(workspace, "accept", _remember(workspace, "Use tabs for indentation")["id"])
    again = cairn_json(workspace, "remember", "Indentation uses tabs")["proposals"]
    assert [p["kind"] for p in again] != ["create"], again


@pytest.mark.parametrize(
    "sentence",
    [  # user sentences of the quality corpus's dev split (tests/corpus/), where a shape's slot caught a word
        "data (Any): The data to convert (must be a single item, not a collection).",
        "keep it tight — reviewers will use it as a navigation aid, not a deep dive.",
        "The \"API_KEY\" fragment may relate to all sorts of APIs, not just search engines.",
        "Also, instead of just looking for `.mmd` file, look for `.mermaid` as well",
    ],
)
def test_a_function_word_is_never_a_choice(sentence: str) -> None:
    change = change_of(sentence)
    assert change is None or not ({change.new, change.old} & {"a", "the", "just", "also", "that"}), change


@pytest.mark.parametrize(("note", "line", "expected"), [
    ("I prefer answers in English", "I prefer answers in French", True),  # "prefer" and "answers" in common
    ("Prefer double quotes", "Prefer single quotes", True),  # ADR 0019's own example, without "in Python"
    ("Use double quotes", "Single quotes", False),  # one word in common: too little to be one statement
    ("I prefer answers in English", "I prefer short answers in French", False),  # two words differ
    ("I prefer answers in English", "Never answer in French", False),  # one turns it down
    # one subject word in common and no preference: two statements that may both hold
    ("Run the sync tests", "Run the async tests", False),
    ("We need French translations", "We need English translations", False),
    ("We need a light theme", "We need a dark theme", False),
    ("Tests run on main", "Tests run on master", False),
    ("Replaced the dark logo", "Replaced the light logo", False),
])
def test_a_preference_with_one_word_swapped_is_a_change(note: str, line: str, expected: bool) -> None:
    assert supersedes(note, line) is expected
