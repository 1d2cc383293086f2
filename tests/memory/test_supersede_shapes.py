"""Supersession shapes a tester found missing: a third tool of one family, negations, change verbs, scope.

Each used to leave memory disagreeing with itself (two lines or two topics), drop the newer statement, or
replace a global statement by a narrower one. The rules are general (subject keys, negation and change
shapes); the sentences below are examples of them, not the rules.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cairn.worker.memory.contradiction import conflict, may_supersede
from cairn.worker.memory.supersede import supersedes

from tests.memory.test_contradiction import _after, _drafts, _topic


@pytest.mark.parametrize(
    ("new", "old"),
    [
        # a change of choice names an old tool memory does not hold, but memory states a third of the family
        ("Use pnpm, not npm, to install dependencies", "Use yarn to install dependencies"),
        ("Install dependencies with bun instead of npm", "Use yarn to install dependencies"),
        # negation shapes
        ("Jest is no longer used for unit tests", "Jest is used for unit tests"),
        ("Never use npm to install dependencies, use pnpm", "Always use npm to install dependencies"),
        ("Don't use npm to install dependencies; use pnpm", "Use npm to install dependencies"),
        ("Do not run the tests with jest", "Run the tests with jest"),
        # change verbs and markers
        ("Switched to pnpm for installing dependencies", "Use npm to install dependencies"),
        ("We migrated to vitest for unit tests", "Unit tests run with jest"),
        ("From now on deploy with make ship", "Deploy with make release"),
        ("Going forward, run the linters with just lint-all", "Run the linters with just lint"),
        # a tool of two families (ruff lints and formats)
        ("Python code is now formatted with ruff", "Format Python code with black"),
        # the old choice named, the subject said more briefly
        ("Use ruff format instead of black", "Format Python code with black"),
    ],
)
def test_the_newer_statement_supersedes(new: str, old: str) -> None:
    assert supersedes(new, old), (new, old)
    assert not supersedes(old, new) or supersedes(new, old)
    assert may_supersede(new, old) and may_supersede(old, new)


@pytest.mark.parametrize(
    ("new", "old"),
    [
        # a narrower scope: the old statement still holds elsewhere
        (
            "Use pnpm, not npm, to install dependencies in the docs folder only",
            "Use npm to install dependencies",
        ),
        ("Use pnpm to install dependencies only in `web/`", "Use npm to install dependencies"),
        # near misses that must stay separate
        ("Never use npm to publish packages", "Use npm to install dependencies"),
        ("Don't use npm run build in CI, use make", "Use npm to install dependencies"),
        ("From now on deploy the docs with make ship", "Run the tests with make check"),
        ("Jest is no longer used for unit tests", "Vitest is used for unit tests"),
        ("Switched to pnpm for installing dependencies", "Use npm to publish packages"),
        ("Lint Python code with ruff", "Format Python code with black"),
        ("Python code is now formatted with ruff", "Lint Python code with flake8"),
        ("Use `npm run build` to build the site", "Use npm to install dependencies"),
        ("The docs service listens on port 9000", "The API service listens on port 8000"),
        ("Never use double quotes", "Use single quotes"),
    ],
)
def test_near_misses_and_narrower_scopes_do_not_supersede(new: str, old: str) -> None:
    assert not supersedes(new, old), (new, old)


# -- the engine: reviewed against memory --------------------------------------------------------------


def _one(tmp_path: Path, old: str, new: str) -> tuple[list, str]:
    drafts = _drafts(tmp_path, [[("project", new)]], topics={"t.md": _topic(old)})
    return drafts, "".join(_after(d) for d in drafts)


def test_a_newer_note_is_never_overruled_by_a_third_tool_memory_holds(tmp_path: Path) -> None:
    drafts, after = _one(
        tmp_path, "Use yarn to install dependencies", "Use pnpm, not npm, to install dependencies"
    )
    [d] = drafts  # it was dropped: the older yarn line "overruled" it
    assert d.kind == "update" and d.title.startswith("Replace in ")
    assert "Use pnpm, not npm" in after and "Use yarn" not in after


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Jest is used for unit tests", "Jest is no longer used for unit tests"),
        ("Always use npm to install dependencies", "Never use npm to install dependencies, use pnpm"),
        ("Use npm to install dependencies", "Don't use npm to install dependencies; use pnpm"),
        ("Deploy with make release", "From now on deploy with make ship"),
        ("Use npm to install dependencies", "Switched to pnpm for installing dependencies"),
        ("Format Python code with black", "Python code is now formatted with ruff"),
    ],
)
def test_a_change_replaces_the_line_in_place(tmp_path: Path, old: str, new: str) -> None:
    drafts, after = _one(tmp_path, old, new)
    [d] = drafts  # never a second line in the topic, nor a second topic beside it
    assert d.kind == "update" and d.title.startswith("Replace in ") and d.target.endswith("/t.md")
    assert new in after and old not in after
    # and accepting it leaves nothing that disagrees
    assert conflict([(v[0], v[1]) for v in d.files.values()], {}) == ""


def test_a_narrower_scope_is_added_beside_the_global_statement(tmp_path: Path) -> None:
    old, new = (
        "Use npm to install dependencies",
        "Use pnpm, not npm, to install dependencies in the docs folder only",
    )
    drafts, after = _one(tmp_path, old, new)
    assert drafts and not any(d.title.startswith("Replace") for d in drafts)
    assert old in after or all("t.md" not in d.target for d in drafts)
    assert new in after


def test_the_cheap_filter_knows_a_tool_of_two_families() -> None:
    # ruff is a formatter and a linter: "use ruff" may supersede "use black" as well as "use flake8"
    for other in ("Use black", "Use flake8"):
        assert (
            supersedes("Use ruff", other)
            and may_supersede("Use ruff", other)
            and may_supersede(other, "Use ruff")
        )


def test_a_topic_whose_front_matter_does_not_parse_holds_no_statement_a_proposal_is_held_to() -> None:
    # the review cannot read it (E_TOPIC_FRONT_MATTER), so it could never replace its line: a proposal made
    # beside it was stale at once, and every later review only added another stale one
    pnpm, npm = "Use pnpm, not npm, to install dependencies", "Use npm to install dependencies"
    good = _topic(npm)
    broken = good.replace(b"type: project\n", b"type: project\n  bad: indent: here\n")
    assert conflict([(None, _topic(pnpm))], {"npm.md": good}).startswith("it changes what npm.md says")
    assert conflict([(None, _topic(pnpm))], {"npm.md": broken}) == ""
