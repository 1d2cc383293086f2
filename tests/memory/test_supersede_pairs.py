"""Supersession, precision first: the pairs a second reader checked, and the changes a tester found missed.

A replacement deletes a line of the user's memory, so a wrong one is worse than a missed one (ADR 0019). The
first list is every pair (old line, newer note) a second reader tried against a widening of the shapes that
was reverted (7d645ee): each is two statements that may both hold, so the note never replaces the line, and
the line never overrules the note either (rule 4b would drop it). The second list is what a tester found
missed: the same statement with its tool or command changed, or turned down; each replaces the line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cairn.worker.memory.contradiction import conflict, may_supersede
from cairn.worker.memory.supersede import supersedes

from tests.memory.test_contradiction import _after, _drafts, _topic

#: (old line, newer note): compatible, or too unsure to delete the line
KEEP_BOTH = [
    # a negation of another command, object or scope of the tool; a change for another subject
    ("Use npm to install dependencies", "Never use npm to publish packages"),
    ("Jest is used for unit tests", "Don't use Jest snapshots"),
    ("Use the light theme in docs screenshots", "Switched to the dark theme"),
    ("Use npm to install dependencies", "Don't use npm ci locally"),
    ("Use npm to install dependencies", "Never run npm audit fix"),
    ("Run the tests with pytest", "Don't run pytest with -x in CI"),
    ("Run the tests with pytest", "Never use pytest fixtures with autouse"),
    ("Format Python code with black", "Don't run black on generated files"),
    ("Format Python code with black", "Never format migrations with black"),
    ("Lint Python code with ruff", "Don't use ruff --fix on the vendored code"),
    ("Use pnpm to install dependencies", "Never use pnpm dlx for scripts"),
    ("Use docker for local development", "Don't use docker compose v1"),
    ("Use docker for local development", "Never run docker as root"),
    ("Use yarn to install dependencies", "Use npm to publish packages, not yarn"),
    ("Use npm to install dependencies", "Switched to yarn for publishing packages"),
    ("Use make to build the project", "Don't use make clean before deploys"),
    ("Run the tests with make test", "Never run make deploy from a laptop"),
    ("Deploy with make release", "From now on run the linters with make lint"),
    ("Use poetry to manage dependencies", "Don't use poetry export"),
    ("Use poetry to manage dependencies", "Never use pip to install into the system Python"),
    ("Use pip to install the docs requirements", "Switched to uv for the lockfile"),
    ("Use pytest for unit tests", "Switched to vitest for the frontend tests"),
    ("Jest is used for unit tests", "Switched to vitest for end-to-end tests"),
    ("Jest is used for frontend unit tests", "We migrated to vitest for the backend unit tests"),
    ("Use eslint for JavaScript", "Switched to biome for formatting JSON"),
    ("Use prettier to format markdown", "Never run prettier on CHANGELOG.md"),
    ("Use prettier to format TypeScript", "Don't use prettier for SQL files"),
    ("Use webpack to bundle the app", "Switched to vite for the docs site"),
    ("Use postgres in production", "Never use sqlite in production"),
    ("Tests run against sqlite", "Never use sqlite in production"),
    ("Use sqlite for unit tests", "Don't use sqlite for integration tests, use postgres"),
    ("Use mypy for type checking", "Don't run mypy on tests"),
    ("Use tabs in Makefiles", "Never use tabs in Python files"),
    ("Use spaces for indentation", "Never use tabs in Python files, use spaces"),
    ("Indent YAML with spaces", "Use tabs in Makefiles"),
    ("Use yarn to install dependencies", "Stop using npm link"),
    ("Use npm to install dependencies", "Avoid npm install -g"),
    ("Use npm to install dependencies", "Avoid running npm as root"),
    ("Run npm test before committing", "Never run npm publish manually"),
    # a change of a tool the line does not state, or one that names no subject (unsure: a line that names
    # where it holds is not replaced by a change said without one; the note is added beside it, never dropped)
    ("Format Python code with black", "Use ruff instead of flake8"),
    ("Format Python code with black", "We migrated from flake8 to ruff"),
    ("Format Python code with black", "Replace flake8 with ruff"),
    ("Format Python code with black", "Switched from pylint to ruff"),
    ("Format Python code with black", "Use ruff, not flake8"),
    ("Lint Python code with flake8", "Use ruff format instead of black"),
    ("Lint Python code with flake8", "Switched from black to ruff"),
    ("Unit tests run against SQLite", "We migrated from MySQL to Postgres"),
    ("Tests use an in-memory sqlite database", "Use postgres instead of mysql"),
    ("Use SQLite for local development", "Moved from MySQL to PostgreSQL"),
    ("E2E tests run with mocha", "Switched from jest to vitest"),
    ("End-to-end tests use mocha", "Migrated from Jest to Vitest"),
    ("Bundle the service worker with esbuild", "Migrated from webpack to vite"),
    ("Use rollup to build the library", "We moved from webpack to vite"),
    ("Use yarn for the docs site", "Moved from npm to pnpm"),
    ("Use poetry to publish the package", "Replace pip with uv"),
    ("Use conda for the ML environment", "Switched from pip to uv"),
    ("Use bun to run scripts", "We switched from npm to pnpm"),
    ("Use mypy for type checking", "Switched from pyre to pyright"),
    ("Use tabs in Makefiles", "Switched to spaces"),
    ("Use tabs in Makefiles", "From now on use spaces"),
    ("Use tabs in Makefiles", "Use spaces, not tabs"),
    ("Indent Go code with tabs", "Use spaces instead of tabs"),
    ("Unit tests run against SQLite", "Switched to Postgres"),
    ("E2E tests run with mocha", "Switched to vitest"),
    ("E2E tests run with mocha", "We migrated to vitest"),
    ("Use esbuild to bundle the service worker", "Switched to vite"),
    ("Use npm to publish packages", "Switched to pnpm"),
    ("Lint Python code with flake8", "Switched to ruff"),
    ("Format Python code with black", "Switched to ruff"),
    ("Format Python code with black", "Going forward use ruff"),
    ("Use pylint for the legacy module", "From now on use ruff"),
    ("Use just to run tasks", "Switched to make"),
    ("Use yarn for the docs site", "From now on use pnpm"),
    # a narrower scope (CI, locally, e2e, for the docs, in Docker), another command (make test-all), a flag
    ("Format Python code and tests with black", "Don't run black on tests"),
    ("Run the tests with make test", "Never run the tests with make test-all"),
    ("Run the tests with make test", "Don't run the tests with make test-all locally"),
    ("Use docker to run the database for the tests", "Don't use docker for the tests"),
    ("Use npm scripts to run the dev server and tests", "Don't use npm to run tests"),
    ("Use jest for unit and e2e tests", "Don't run the e2e tests with jest"),
    ("Run pytest in CI", "Never use pytest -x in CI"),
    ("Run the unit tests with make unit", "From now on run the e2e tests with make e2e"),
    ("Build the site with make site", "From now on build the docs with make docs"),
    ("Run npm test before pushing", "From now on run npm ci before pushing"),
    ("Run the tests with pytest --cov", "Now run the tests with pytest -x"),
    ("Run the integration tests with make integration", "Now run the unit tests with make unit"),
    ("Deploy staging with make deploy-staging", "From now on deploy production with make deploy-prod"),
    ("Start the dev server with npm run dev", "Now start the storybook server with npm run storybook"),
    ("Run the backend with docker compose up", "From now on run the worker with docker run"),
    ("Lint with make lint", "Now format with make fmt"),
    ("Use npm to install dependencies", "Switched to pnpm for installing dependencies in CI"),
    ("Use npm to install dependencies", "We migrated to pnpm for installing dependencies of the web app"),
    ("Use npm to install dependencies", "Going forward, install dev dependencies with pnpm"),
    ("Jest is used for unit tests", "Vitest is now used for unit tests in the new frontend"),
    ("Use yarn to install dependencies", "Use pnpm, not npm, to install dependencies for the docs"),
    ("Run the tests with pytest", "Don't run the tests with pytest directly; use tox"),
    ("Run the tests with pytest", "Never run the tests with pytest in parallel"),
    ("Use prettier to format code", "Don't format generated code with prettier"),
    ("Use eslint to lint JavaScript and TypeScript", "Don't lint TypeScript with eslint, use biome"),
    ("Use poetry to manage dependencies", "Don't use poetry to manage the dev tools"),
    ("Use docker compose for local services", "Avoid running the tests with docker"),
    ("Use the main branch for releases", "Never push directly to main"),
    # a negation with a qualifier the line does not have: a narrower case, added beside the line
    ("Run the tests with pytest", "Don't run the tests with pytest -s"),
    ("Run the tests with pytest", "Never run pytest with coverage locally"),
    ("Run the tests with pytest", "Don't run the slow tests with pytest by default"),
    ("Run tests with jest", "Don't run jest in watch mode in CI"),
    ("Use npm to install dependencies", "Never use npm install --force"),
    ("Use npm to install dependencies", "Don't install global dependencies with npm"),
    ("Use npm to install dependencies", "Don't use npm to install dependencies globally"),
    ("Format code with prettier", "Never format vendored code with prettier"),
    ("Lint with eslint", "Don't lint generated files with eslint"),
    ("Type-check with mypy", "Don't type-check tests with mypy"),
    ("Build the frontend with vite", "Never build the frontend with vite in watch mode in CI"),
    ("Use docker for local development", "Don't use docker for production builds"),
    ("Run the app with docker compose", "Never run the app with docker as root"),
    ("Format Python code with black", "Don't format migrations with black"),
    ("Use yarn to install dependencies", "Don't use yarn to install dependencies in Docker images"),
]

#: (old line, newer note): the same statement with its tool or command changed, or turned down
REPLACE = [
    ("Use yarn to install dependencies", "Use pnpm, not npm, to install dependencies"),  # a third manager
    ("Jest is used for unit tests", "Jest is no longer used for unit tests"),
    ("Always use npm to install dependencies", "Never use npm to install dependencies, use pnpm"),
    ("Use npm to install dependencies", "Don't use npm to install dependencies; use pnpm"),
    ("Deploy with make release", "From now on deploy with make ship"),  # another command of the tool
    ("Use npm to install dependencies", "Switched to pnpm for installing dependencies"),
    ("Format Python code with black", "Python code is now formatted with ruff"),  # ruff formats too
    ("Run the tests with jest", "Do not run the tests with jest"),
    ("Unit tests run with jest", "We migrated to vitest for unit tests"),
    ("Run the linters with just lint", "Going forward, run the linters with just lint-all"),
    ("Format Python code with black", "Use ruff format instead of black"),  # "Python": what black formats
    ("Use yarn to install dependencies", "Install dependencies with bun instead of npm"),
]


@pytest.mark.parametrize(("old", "new"), KEEP_BOTH)
def test_a_compatible_note_neither_replaces_the_line_nor_is_overruled_by_it(old: str, new: str) -> None:
    assert not supersedes(new, old), (old, new)
    assert not supersedes(old, new) or supersedes(new, old), (old, new)  # rule 4b would drop the note


@pytest.mark.parametrize(("old", "new"), REPLACE)
def test_the_same_statement_changed_replaces_the_line(old: str, new: str) -> None:
    assert supersedes(new, old), (old, new)
    assert not supersedes(old, new) or supersedes(new, old)
    assert may_supersede(new, old) and may_supersede(old, new)  # the cheap filter lets it through


@pytest.mark.parametrize(("old", "new"), REPLACE[:7])
def test_a_change_is_a_replacement_through_the_engine(tmp_path: Path, old: str, new: str) -> None:
    drafts = _drafts(tmp_path, [[("project", new)]], topics={"t.md": _topic(old)})
    [d] = drafts  # never a second topic beside it, and never dropped (the yarn line overruled the pnpm note)
    assert d.kind == "update" and d.title.startswith("Replace in ") and d.target.endswith("/t.md")
    after = _after(d)
    assert new in after and old not in after
    assert conflict([(v[0], v[1]) for v in d.files.values()], {}) == ""


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Use yarn to install dependencies", "Use pnpm, not npm, to install dependencies for the docs"),
        ("Use npm to install dependencies", "Switched to pnpm for installing dependencies in CI"),
        ("Run the tests with pytest", "Never run the tests with pytest in parallel"),
        ("Use tabs in Makefiles", "Use spaces, not tabs"),
        ("Use yarn for the docs site", "From now on use pnpm"),
    ],
)
def test_a_narrower_or_unsure_note_is_added_beside_the_line_not_lost(
    tmp_path: Path, old: str, new: str
) -> None:
    drafts = _drafts(tmp_path, [[("project", new)]], topics={"t.md": _topic(old)})
    assert drafts and not any(d.title.startswith("Replace") for d in drafts)
    assert any(new in _after(d) for d in drafts)  # the newer note is proposed
    assert all(old in _after(d) for d in drafts if d.target.endswith("/t.md"))  # the line stays


@pytest.mark.parametrize(("new", "old", "replaces"), [
    ("Use npm, not pnpm", "Use pnpm, not npm", True),
    ("Use npm, not pnpm, to install dependencies", "Use pnpm, not npm, to install dependencies", True),
    ("We moved back to npm", "Use pnpm, not npm", True),
    ("We moved back to npm for installing dependencies", "Use pnpm, not npm, to install dependencies", True),
    # not said as a change: memory's explicit change stands (ADR 0025, rule 4b)
    ("Always use npm to install dependencies", "Use pnpm, not npm, to install dependencies", False),
    # a narrower scope, or a third tool the line does not state
    ("Use npm, not pnpm, for the docs site", "Use pnpm, not npm, to install dependencies", False),
    ("Use npm, not yarn, to install dependencies", "Use pnpm, not npm, to install dependencies", False),
])
def test_a_reversal_said_as_a_change_replaces_the_line_that_turned_it_down(new: str, old: str,
                                                                            replaces: bool) -> None:
    """ADR 0025 said "use npm, not pnpm" replaces "use pnpm, not npm"; it never did (the line names npm, so
    it was read as a fact about the new choice)."""
    assert supersedes(new, old) is replaces


@pytest.mark.parametrize(("old", "new"), [
    ("Jest is used for unit tests", "Vitest is also used for unit tests"),
    ("Use jest for unit tests", "Also use vitest for unit tests"),
    ("CI tests Python 3.11", "CI also tests Python 3.12"),
    ("Tests run on Python 3.11", "Tests also run on Python 3.12"),
    ("Docs are written in English", "Docs are also written in French"),
    ("The API listens on port 8000", "The API also listens on port 9090"),
    ("Use npm to install dependencies", "Also use pnpm to install dependencies"),
    ("Use npm to install dependencies", "We use pnpm to install dependencies as well"),
])
def test_a_note_that_adds_replaces_nothing_and_is_not_overruled(old: str, new: str) -> None:
    """"also" is a stop word to the subject, so an added runner, version or port read as a change (a second
    reader's pairs): both statements hold, both ways."""
    assert not supersedes(new, old) and not supersedes(old, new)


def test_a_leading_also_only_joins_the_sentence_to_what_came_before() -> None:
    assert supersedes("Also, we switched to pnpm to install dependencies", "Use npm to install dependencies")


@pytest.mark.parametrize(("line", "note"), [
    ("We moved from npm to pnpm", "Use npm to publish packages"),
    ("Use pnpm instead of npm", "Use npm for global tools"),
    ("yarn is no longer used", "Use yarn for the legacy docs site"),
    ("Replace pip with uv", "Use pip to install the docs requirements"),
    ("Migrated from webpack to vite", "Use webpack for the legacy admin app"),
    ("Use pnpm", "Use npm to publish packages"),
])
def test_an_older_change_never_drops_a_newer_note_about_another_job_of_the_old_tool(line: str, note: str) -> None:
    """Rule 4b dropped these notes ("memory already holds it or says otherwise"): the note was lost. A line
    overrules a note only when the note speaks of no more than it."""
    from cairn.worker.memory.supersede import overrules

    assert not overrules(line, note)


@pytest.mark.parametrize(("line", "note"), [
    ("Use pnpm, not npm", "Use npm"),
    ("Use pnpm, not npm, to install dependencies", "Always use npm to install dependencies"),
])
def test_memory_still_overrules_a_bare_step_back(line: str, note: str) -> None:
    from cairn.worker.memory.supersede import overrules

    assert overrules(line, note)


@pytest.mark.parametrize(("old", "new"), [
    ("Use prettier to format code", "Use biome to format code"),
    ("Run biome on save", "Run prettier on save"),
])
def test_biome_formats_too(old: str, new: str) -> None:
    """Biome lints and formats: a formatter change to or from it replaces the line (a third reader's misses)."""
    assert supersedes(new, old)


@pytest.mark.parametrize(("old", "new", "replaces"), [
    ("The database is Postgres", "We switched the database to MySQL", True),
    ("Use Postgres for the database", "We moved the database to MySQL", True),
    ("The database is Postgres", "We switched the test database to SQLite", False),  # another database
    ("Use npm to install dependencies", "We switched the docs site to pnpm", False),  # another scope
])
def test_switched_the_thing_to_another_choice(old: str, new: str, replaces: bool) -> None:
    """"switched/moved THE X to Y" names what moved (a third reader's miss: the shape needed "to" at once)."""
    assert supersedes(new, old) is replaces


@pytest.mark.parametrize(("old", "new", "replaces"), [
    ("Use semicolons", "Don't use semicolons", True),
    ("Use single quotes", "Use double quotes", True),
    ("Use single quotes for strings", "Use double quotes for strings", True),
    ("Use single quotes for strings", "Use double buffering for the canvas", False),
    ("Use semicolons", "Use semicolons in generated code too", False),
])
def test_code_style_values_change_like_tools(old: str, new: str, replaces: bool) -> None:
    """Semicolons and single/double quotes are choices like tabs and spaces (a third reader's misses); the
    subject must still be the same ("quotes for strings"), so another use of "double" is no change."""
    assert supersedes(new, old) is replaces
