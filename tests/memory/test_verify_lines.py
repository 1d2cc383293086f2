"""Plain instruction and memory lines: what a line names is checked against the tree (ADR 0020).

Each test writes a real workspace, checks a line as a user or maintainer wrote it
(no recorded citation), changes the code, and checks again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from cairn.worker.memory import citations as C


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, body in files.items():
        f = root / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(body)


def _verdicts(root: Path, line: str) -> list[tuple[str, str, str]]:
    return [(c.citation.kind, c.verdict, c.reason) for c in C.verify_entry(str(root), line)]


def _stale(root: Path, line: str) -> list[str]:
    return [c.reason for c in C.verify_entry(str(root), line) if c.verdict == C.STALE]


def test_a_renamed_make_target_on_a_plain_line_is_flagged(tmp_path: Path) -> None:
    _write(tmp_path, {"Makefile": "build:\n\tcc main.c\n\ncheck:\n\t./run-tests.sh\n"})
    line = "- Run the tests with `make check` before pushing."
    assert _verdicts(tmp_path, line) == [("target", "ok", "")]
    _write(tmp_path, {"Makefile": "build:\n\tcc main.c\n\ntest:\n\t./run-tests.sh\n"})
    assert _stale(tmp_path, line) == ["Makefile has no target 'check' any more"]


def test_a_target_run_after_cd_is_looked_up_in_that_folder(tmp_path: Path) -> None:
    _write(tmp_path, {"package.json": '{"scripts": {"lint": "x"}}',
                      "frontend/package.json": '{"scripts": {"test": "vitest"}}'})
    assert _stale(tmp_path, "cd frontend && npm run test") == []
    assert _stale(tmp_path, "cd frontend && npm run lint") == ["frontend/package.json has no target 'lint' any more"]


def test_a_name_that_survives_only_inside_a_longer_one_is_stale(tmp_path: Path) -> None:
    _write(tmp_path, {"src/agents.py": "TOOLS = ['qodercli', 'codex']\nclass QoderCliRunner: ...\n"})
    assert _stale(tmp_path, "The agent list includes `qoder`.") == ["'qoder' occurs only inside 'qodercli' now"]
    assert _stale(tmp_path, "Use `QoderRunner` to start it.") == ["'QoderRunner' no longer occurs in the tree"]
    assert _stale(tmp_path, "The agent list includes `codex`; `QoderCliRunner` starts it.") == []


def test_a_name_left_only_in_the_change_history_is_stale(tmp_path: Path) -> None:
    # Effect-TS/effect renamed `ServiceMap`: tree B names it only in the changeset that records the rename
    _write(tmp_path, {"packages/effect/src/Context.ts": "export class Service {}\n",
                      ".changeset/slow-beans-battle.md": "Renamed `ServiceMap` to `Context`.\n",
                      "CHANGELOG.md": "## 4.0\n- `ServiceMap.Service` is now `Context.Service`\n"})
    line = "Prefer the class syntax when working with `ServiceMap.Service`. For example:"
    assert _stale(tmp_path, line) == ["'ServiceMap' no longer occurs in the tree"]
    _write(tmp_path, {"packages/effect/src/ServiceMap.ts": "export const ServiceMap = {}\n"})
    assert _stale(tmp_path, line) == []


def test_a_command_is_looked_up_in_its_programs_own_package(tmp_path: Path) -> None:
    # pipecat-ai/pipecat renamed `pipecat mcp` to `pipecat context-hub`; "mcp" is still quoted by a service
    _write(tmp_path, {"pyproject.toml": '[project]\nname = "pipecat-ai"\n\n[project.scripts]\n'
                                        'pipecat = "pipecat.cli.main:run"\n',
                      "src/pipecat/cli/main.py": 'KNOWN = {"context-hub": ("pipecat-ai-context-hub", "Query docs")}\n'
                                                 'app.command("init")(init_command)\n',
                      "src/pipecat/services/xai/events.py": 'type: Literal["mcp"] = "mcp"\n'})
    assert _stale(tmp_path, "   pipecat mcp status        # index health") == ["pipecat has no command 'mcp' any more"]
    assert _stale(tmp_path, "   pipecat context-hub status") == []
    assert _stale(tmp_path, "   pipecat init my-bot") == []


def test_a_command_kept_only_to_say_it_was_removed_is_stale(tmp_path: Path) -> None:
    # pipecat-ai/pipecat replaced `pipecat create` with `pipecat init` and kept `create` as a hidden stub
    _write(tmp_path, {"pyproject.toml": '[project]\nname = "pipecat-ai"\n\n[project.scripts]\n'
                                        'pipecat = "pipecat.cli.main:run"\n',
                      "src/pipecat/cli/main.py": 'app.command("init")(init_command)\n'
                                                 'app.command(\n    "create",\n    help=(\n'
                                                 '        "The create command was removed. Use the init command."\n'
                                                 '    ),\n    hidden=True,\n)(_removed_create)\n'
                                                 'app.command("debug", hidden=True)(debug_command)\n'})
    assert _stale(tmp_path, "pipecat create --name mybot \\") == ["pipecat has no command 'create' any more"]
    assert _stale(tmp_path, "   pipecat init my-bot") == []
    assert _stale(tmp_path, "   pipecat debug") == []


def test_a_file_moved_to_another_folder_is_flagged_with_where_it_went(tmp_path: Path) -> None:
    _write(tmp_path, {"scripts/build.ts": "", "tools/dev.mts": "", "tools/release.py": ""})
    assert _stale(tmp_path, "- `scripts/release.py` cuts a release.") == [
        "scripts/release.py moved to tools/release.py"]
    assert _stale(tmp_path, "- `scripts/build.ts` builds it.") == []


def test_a_changed_default_value_is_flagged(tmp_path: Path) -> None:
    _write(tmp_path, {"pyproject.toml": "[tool.ruff]\nline-length = 100\n", "config/app.yaml": "timeout: 60\n"})
    assert _stale(tmp_path, "Lines are at most `line-length = 88` (ruff).") == ["line-length is 100 now, not 88"]
    assert _stale(tmp_path, "The `timeout` defaults to `30` seconds.") == ["timeout is 60 now, not 30"]
    assert _stale(tmp_path, "The `timeout` defaults to 60 seconds.") == []


def test_a_command_of_the_projects_own_script_that_is_gone_is_flagged(tmp_path: Path) -> None:
    _write(tmp_path, {"pyproject.toml": '[project]\nname = "tool"\n\n[project.scripts]\nmytool = "tool.cli:main"\n',
                      "tool/cli.py": "import click\n\n@click.command('init')\ndef init(): ...\n"})
    assert _stale(tmp_path, "mytool init --name bot") == []
    assert _stale(tmp_path, "mytool create --name bot") == ["mytool has no command 'create' any more"]


def test_a_line_with_nothing_checkable_has_no_checks(tmp_path: Path) -> None:
    _write(tmp_path, {"Makefile": "all:\n"})
    assert C.verify_entry(str(tmp_path), "We prefer small commits and kind reviews.") == []


def test_outside_paths_links_fifos_and_huge_files_are_never_read(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    _write(outside, {"lib/secret.py": "class OutsideThing: ...\n"})
    _write(ws, {"src/main.py": "print('hi')\n", "src/huge.py": "class HugeThing: ...\n" + "#" * C.FILE_MAX,
                "CHANGELOG.md": "- `OutsideThing` and `HugeThing` moved\n"})  # the project's names once
    os.symlink(outside / "lib", ws / "src" / "linked")
    os.mkfifo(ws / "src" / "pipe.py")
    # what only a link, a FIFO or a huge file holds does not count as present
    assert _stale(ws, "Use `OutsideThing` and `HugeThing`.") == ["'OutsideThing' no longer occurs in the tree",
                                                                 "'HugeThing' no longer occurs in the tree"]
    checks = {c.citation.path: (c.verdict, c.code) for c in C.verify_entry(
        str(ws), "See `src/linked/secret.py`, `src/pipe.py`, `src/huge.py` and `../outside/lib/secret.py`.")}
    assert checks == {"src/linked/secret.py": ("unverifiable", "E_PATH_SYMLINK"),
                      "src/pipe.py": ("unverifiable", "E_PATH_NOT_REGULAR"),
                      "src/huge.py": ("unverifiable", "E_RECORD_TOO_LARGE"),
                      "../outside/lib/secret.py": ("unverifiable", "E_PATH_OUTSIDE_ROOT")}


def test_memory_written_by_cairn_cites_identifiers_with_the_same_extractor(tmp_path: Path) -> None:
    _write(tmp_path, {"src/app.py": "import os\n\nclass ServiceMap:\n    pass\n"})
    text = "- Register services on `ServiceMap.Service`."
    [cite] = C.find_citations(str(tmp_path), text)
    assert cite.as_front_matter() == {"path": "src/app.py", "symbol": "ServiceMap.Service", "lines": "3-3",
                                      "sha256": C.lines_sha(["class ServiceMap:"])}
    recorded = [cite.as_front_matter()]
    assert [c.verdict for c in C.verify_entry(str(tmp_path), text, recorded)] == ["ok"]
    _write(tmp_path, {"src/app.py": "import os\n\nclass Context:\n    pass\n"})
    [check] = C.verify_entry(str(tmp_path), text, recorded)
    assert (check.verdict, check.reason) == ("stale", "'ServiceMap' no longer occurs in the tree")


def test_a_runtime_version_the_project_no_longer_supports_is_flagged(tmp_path: Path) -> None:
    _write(tmp_path, {"package.json": '{"engines": {"node": "^18.0.0 || >=20.0.0"}}',
                      "pyproject.toml": '[project]\nname = "app"\nrequires-python = ">=3.9"\n'})
    lines = ["- **Node.js**: v18, v20, or v22 (v22 recommended)", "Requires Python 3.9 or later."]
    assert [_stale(tmp_path, line) for line in lines] == [[], []]
    _write(tmp_path, {"package.json": '{"engines": {"node": "^22.0.0 || ^24.0.0"}}',
                      "pyproject.toml": '[project]\nname = "app"\nrequires-python = ">=3.10"\n'})
    assert [_stale(tmp_path, line) for line in lines] == [
        ["node 18 is no longer supported (the project needs 22 or later)"],
        ["python 3.9 is no longer supported (the project needs 3.10 or later)"]]
    assert _stale(tmp_path, "The image is built `FROM node:20-alpine`.") == []  # an image tag, not the range


def test_a_folder_that_no_longer_holds_what_a_line_lists_is_flagged(tmp_path: Path) -> None:
    _write(tmp_path, {"tools/eslint-config/index.js": "", "tools/tsconfig/base.json": "",
                      "examples/next-openai-pages/x.ts": "", "examples/ai-functions/y.ts": ""})
    line = "| `tools/` | Internal tooling (eslint-config, tsconfig) |"
    assert _stale(tmp_path, line) == []
    (tmp_path / "tools/eslint-config/index.js").unlink()
    (tmp_path / "tools/eslint-config").rmdir()
    assert _stale(tmp_path, line) == ["tools/ holds no eslint-config any more"]
    # a family of examples named by their common prefix, and a list of examples, are not claims about the folder
    assert _stale(tmp_path, "| `examples/` | Example apps (ai-functions, next-openai, etc.) |") == []
    # a folder renamed and kept under its old name as a link still holds that name (vercel/ai kept
    # examples/ai-core -> ai-functions); the link is seen, never followed
    listing = "| `examples/` | Example applications (ai-core, next-openai, etc.) |"
    assert _stale(tmp_path, listing) == ["examples/ holds no ai-core any more"]
    os.symlink("ai-functions", tmp_path / "examples/ai-core")
    assert _stale(tmp_path, listing) == []
    assert _stale(tmp_path, "- Use fixtures from `tools/` (e.g., `old.js`, `new.js`)") == []


def test_a_package_of_the_workspace_that_is_gone_is_flagged(tmp_path: Path) -> None:
    _write(tmp_path, {"packages/kit/package.json": '{"name": "@sveltejs/kit"}',
                      "packages/package/package.json": '{"name": "@sveltejs/package"}',
                      "packages/amp/package.json": '{"name": "@sveltejs/amp"}',
                      "package.json": '{"devDependencies": {"@sveltejs/vite-plugin-svelte": "^6"}}'})
    lines = ["- `@sveltejs/amp` - AMP support", "- `@sveltejs/vite-plugin-svelte` - the Vite plugin"]
    assert [_stale(tmp_path, line) for line in lines] == [[], []]
    (tmp_path / "packages/amp/package.json").unlink()
    assert [_stale(tmp_path, line) for line in lines] == [["no package @sveltejs/amp in the workspace any more"], []]


def test_a_tool_named_for_a_role_that_no_manifest_names_is_flagged(tmp_path: Path) -> None:
    _write(tmp_path, {"package.json": '{"devDependencies": {"prettier": "3", "oxlint": "1"}}'})
    lines = ["- **Formatter**: Prettier", "- **Linter**: oxlint (run before pushing)",
             "- **Formatter**: Snapshot tests with valid and invalid cases"]
    assert [_stale(tmp_path, line) for line in lines] == [[], [], []]
    _write(tmp_path, {"package.json": '{"devDependencies": {"oxfmt": "1", "oxlint": "1"}}'})
    assert [_stale(tmp_path, line) for line in lines] == [
        ["nothing in the tree configures prettier any more (oxfmt is)"], [], []]


def test_examples_naming_conventions_and_modules_turned_packages_are_not_flagged(tmp_path: Path) -> None:
    _write(tmp_path, {"app/istate/manager/__init__.py": "", "tests/units/istate/manager/test_redis.py": "",
                      "app/main.py": "class App: ...\n"})
    assert _stale(tmp_path, "- Classes: `PascalCase`, functions: `snake_case`") == []
    assert _stale(tmp_path, "- Name tests after the module (e.g. `tests/units/istate/test_manager.py` for "
                            "`app/istate/manager.py`)") == []
    assert _stale(tmp_path, "- State lives in `app/istate/manager.py`.") == []
    assert _stale(tmp_path, "- State lives in `app/istate/store.py`.") == ["app/istate/store.py no longer exists"]


def test_a_package_script_whose_name_starts_with_test_is_checked(tmp_path: Path) -> None:
    _write(tmp_path, {"package.json": '{"scripts": {"test:browser:playwright": "x"}}'})
    assert _stale(tmp_path, "- `CI=true pnpm test:browser:playwright` or `CI=true pnpm test:browser:webdriverio`") == [
        "package.json has no target 'test:browser:webdriverio' any more"]
    assert _stale(tmp_path, "- `pnpm test` runs everything") == []


def test_the_program_of_a_dependency_run_through_pnpm_is_not_a_missing_script(tmp_path: Path) -> None:
    _write(tmp_path, {"package.json": '{"scripts": {"build": "x"}, "devDependencies": {"nx": "21"}}'})
    assert _stale(tmp_path, "- Use `pnpm nx show projects` to list all packages") == []
    assert _stale(tmp_path, "- Use `pnpm nx-lint` to lint") == ["package.json has no target 'nx-lint' any more"]
    assert _stale(tmp_path, "uv run pytest tests/path/test_file.py::test_name") == []  # a placeholder path


def test_make_and_package_manager_options_are_not_taken_for_targets(tmp_path: Path) -> None:
    _write(tmp_path, {"Makefile": "all:\n\techo\n", "docs/Makefile": "html:\n\tsphinx-build\n",
                      "package.json": '{"scripts": {"build": "tsc"}}', "yarn.lock": ""})
    assert _stale(tmp_path, "Build the docs with `make -C docs html`.") == []
    assert _stale(tmp_path, "Run `make -j4 all` or `yarn run build`.") == []
    assert _stale(tmp_path, "Build the docs with `make -C docs pdf`.") == ["docs/Makefile has no target 'pdf' any more"]
    # a sentence that starts like a command is not one
    assert _stale(tmp_path, "- make sure the tests pass before pushing") == []


def test_a_script_run_in_a_workspace_package_is_looked_up_in_that_package(tmp_path: Path) -> None:
    _write(tmp_path, {"package.json": '{"scripts": {"storybook": "x"}}', "pnpm-workspace.yaml": "packages: [apps/*]\n",
                      "apps/web/package.json": '{"name": "@acme/web", "scripts": {"dev": "vite"}}'})
    assert _stale(tmp_path, "Start it with `pnpm --filter @acme/web dev`.") == []
    assert _stale(tmp_path, "Open `pnpm --filter @acme/web storybook`.") == [
        "apps/web/package.json has no target 'storybook' any more"]
    assert _stale(tmp_path, "Open `pnpm --filter @acme/* storybook`.") == []  # a pattern: which package is not told


def test_targets_of_included_makefiles_and_pattern_rules_are_defined(tmp_path: Path) -> None:
    _write(tmp_path, {"Makefile": "include mk/*.mk\n\ntest-%:\n\tpytest tests/$*\n", "mk/lint.mk": "lint:\n\truff check\n"})
    assert _stale(tmp_path, "Run `make lint` and `make test-unit`.") == []
    assert _stale(tmp_path, "Run `make typecheck`.") == ["Makefile has no target 'typecheck' any more"]
    _write(tmp_path, {"Makefile": "include $(ROOT)/rules.mk\n"})
    assert _stale(tmp_path, "Run `make typecheck`.") == []  # an include through a variable: not told


def test_a_script_run_from_a_folder_is_looked_up_in_that_folder(tmp_path: Path) -> None:
    _write(tmp_path, {"tools/gen.py": "print(1)\n", "run.sh": "echo\n"})
    lines = ["cd tools && python gen.py", "From `tools/`, run `python gen.py`.", "Start it with `./run.sh`."]
    assert [_stale(tmp_path, line) for line in lines] == [[], [], []]
    (tmp_path / "scripts").mkdir()
    (tmp_path / "tools/gen.py").rename(tmp_path / "scripts/gen.py")
    (tmp_path / "run.sh").unlink()
    assert [_stale(tmp_path, line) for line in lines] == [["tools/gen.py moved to scripts/gen.py"],
                                                          ["tools/gen.py moved to scripts/gen.py"],
                                                          ["run.sh no longer exists"]]
    assert _stale(tmp_path, "Run `python gen.py` to regenerate.") == []  # from where is not said: it exists


def test_a_default_the_code_no_longer_has_is_flagged(tmp_path: Path) -> None:
    _write(tmp_path, {"src/app/cli.py": 'import click\n\n@click.option(\n    "--max-retries",\n    default=5,\n)\n'
                                        "def serve(port: int = 8000, workers=4): ...\n",
                      "tests/test_cli.py": "serve(port=1)\n"})
    lines = ["- `--max-retries` (default: 5) retries a failed call.", "The port defaults to 8000.",
             "`workers` defaults to `4`."]
    assert [_stale(tmp_path, line) for line in lines] == [[], [], []]
    _write(tmp_path, {"src/app/cli.py": 'import click\n\n@click.option("--max-retries", default=3)\n'
                                        "def serve(port: int = 9000, workers=4): ...\n"})
    assert [_stale(tmp_path, line) for line in lines] == [
        ["max-retries is 3 now, not 5 (its default in the code)"], ["port is 9000 now, not 8000 (its default in the code)"], []]


def test_a_line_length_stated_in_prose_is_checked_against_the_formatter_settings(tmp_path: Path) -> None:
    _write(tmp_path, {"pyproject.toml": '[project]\nname = "app"\n\n[tool.ruff]\nline-length = 100\n',
                      ".prettierrc": '{"printWidth": 80}\n'})
    assert _stale(tmp_path, "- Python: max line length 100 (ruff); TypeScript: 80 (prettier)") == []
    assert _stale(tmp_path, "- Keep lines under 120-character lines.") == ["the line length is 100 now, not 120"]
    assert _stale(tmp_path, "- Max line length is 88 (ruff).") == ["the line length is 100 now, not 88"]
    assert _stale(tmp_path, "- Wrap Markdown lines at 72 characters.") == []  # prose wrapping, not the code's
    # said as a user says it: a bound on the lines, or characters per line
    assert _stale(tmp_path, "Lines are at most 120 characters (ruff line-length)") == ["the line length is 100 now, not 120"]
    assert _stale(tmp_path, "- Keep lines under 88 columns.") == ["the line length is 100 now, not 88"]
    assert _stale(tmp_path, "- 100 characters per line.") == []
    assert _stale(tmp_path, "- Keep functions under 40 lines.") == []  # a count of lines, not their width
    assert _stale(tmp_path, "- Commit message lines are at most 72 characters.") == []


def test_a_tool_the_project_replaced_with_another_is_flagged(tmp_path: Path) -> None:
    _write(tmp_path, {"package.json": '{"devDependencies": {"eslint": "9", "vitest": "3"}}', "eslint.config.js": ""})
    lines = ["Lint with `npx eslint .` before pushing.", "- **Testing**: Jest", "We use ESLint for linting."]
    assert [_stale(tmp_path, line) for line in lines] == [[], ["nothing in the tree configures jest any more "
                                                               "(vitest is)"], []]
    (tmp_path / "eslint.config.js").unlink()
    _write(tmp_path, {"package.json": '{"devDependencies": {"oxlint": "1", "vitest": "3"}}', ".oxlintrc.json": "{}"})
    assert _stale(tmp_path, lines[0]) == ["nothing in the tree configures eslint any more (oxlint is)"]
    assert _stale(tmp_path, lines[2]) == ["nothing in the tree configures eslint any more (oxlint is)"]
    # a comparison names a tool the project does not use; a tool no other tool of its kind replaced is not told
    assert _stale(tmp_path, "oxlint is 50x faster than ESLint.") == []
    assert _stale(tmp_path, "- Docs are built with `npx typedoc`.") == []
    # a test runner of another language replaces nothing: the Python tests still run with pytest
    _write(tmp_path, {"tools/tests/test_resize.py": "def test_resize(): ...\n"})
    assert _stale(tmp_path, "- Run tests scoped to the area you touch, for example `pytest tools/tests`.") == []


def test_a_moved_file_still_named_by_the_docs_is_flagged(tmp_path: Path) -> None:
    _write(tmp_path, {"tools/release.py": "", "docs/guide.md": "Run scripts/release.py to cut a release.\n",
                      ".gitignore": "build/out/report.json\n", "build/x.txt": ""})
    assert _stale(tmp_path, "- `scripts/release.py` cuts a release.") == ["scripts/release.py moved to tools/release.py"]
    assert _stale(tmp_path, "- The report lands in `build/out/report.json`.") == []  # a path the project makes


def test_the_common_part_of_several_names_is_not_a_missing_name(tmp_path: Path) -> None:
    _write(tmp_path, {"src/auth.rs": "enum AltAuthIR {}\nenum AwsAuthIR {}\nstruct QoderCli;\n"})
    assert _stale(tmp_path, "- `AuthIR` enums encode the semantics.") == []
    assert _stale(tmp_path, "- `ModuleNotFoundError`: activate the environment first.") == []  # the language's own
    assert _stale(tmp_path, "- `QoderRunner` starts it.") == ["'QoderRunner' no longer occurs in the tree"]
    # a version listed among browsers' is a compatibility note, not what the project needs
    _write(tmp_path, {"package.json": '{"engines": {"node": ">=22"}}'})
    assert _stale(tmp_path, "Available in modern browsers (Chrome 110+, Safari 16+, Node.js 20+).") == []


def test_a_file_named_in_prose_whose_extension_changed_is_flagged(tmp_path: Path) -> None:
    _write(tmp_path, {"scripts/dev.ts": "", "package.json": "{}"})
    line = "- Automation: dev.ts starts the watchers (see the Node.js docs)."
    assert _stale(tmp_path, line) == []
    (tmp_path / "scripts/dev.ts").rename(tmp_path / "scripts/dev.mts")
    assert _stale(tmp_path, line) == ["dev.ts is now scripts/dev.mts"]


DIAGRAM = """# Layout

```
repo/
├── src/app/
│   ├── cli.py           # entry point
│   ├── config.py
│   ├── plugins/
│   │   └── skills/
│   │       └── skill.py # the Skill class
│   └── store.py
└── README.md
```
"""


def _diagram_stale(root: Path, text: str, lineno: int) -> list[str]:
    lines = text.splitlines()
    return [c.reason for c in C.verify_entry(str(root), lines[lineno - 1], context=lines[:lineno - 1])
            if c.verdict == C.STALE]


def test_a_file_shown_in_a_tree_diagram_is_checked_where_the_diagram_puts_it(tmp_path: Path) -> None:
    _write(tmp_path, {"src/app/cli.py": "", "src/app/config.py": "", "src/app/plugins/skills/skill.py": "",
                      "src/app/store.py": "", "README.md": ""})
    assert [_diagram_stale(tmp_path, DIAGRAM, n) for n in (10, 11)] == [[], []]
    (tmp_path / "src/app/vended").mkdir()
    (tmp_path / "src/app/plugins/skills").rename(tmp_path / "src/app/vended/skills")
    # alone the line names a file that still exists; under its diagram's folders it moved
    assert _stale(tmp_path, DIAGRAM.splitlines()[10 - 1]) == []
    assert _diagram_stale(tmp_path, DIAGRAM, 10) == ["repo/src/app/plugins/skills/skill.py moved to "
                                                    "src/app/vended/skills/skill.py"]
    (tmp_path / "src/app/store.py").unlink()
    assert _diagram_stale(tmp_path, DIAGRAM, 11) == ["repo/src/app/store.py no longer exists"]
    # a diagram of another tree (what a generator writes) is not this tree's
    other = DIAGRAM.replace("src/app/", "mybot/server/")
    assert [_diagram_stale(tmp_path, other, n) for n in (10, 11)] == [[], []]


def test_a_command_after_cd_in_the_same_code_block_runs_in_that_folder(tmp_path: Path) -> None:
    _write(tmp_path, {"tools/gen.py": "", "scripts/other.py": ""})
    text = "```\ncd tools\npython gen.py\n```\n"
    lines = text.splitlines()
    assert [c.reason for c in C.verify_entry(str(tmp_path), lines[2], context=lines[:2])
            if c.verdict == C.STALE] == []
    (tmp_path / "tools/gen.py").rename(tmp_path / "scripts/gen.py")
    assert [c.reason for c in C.verify_entry(str(tmp_path), lines[2], context=lines[:2])
            if c.verdict == C.STALE] == ["tools/gen.py moved to scripts/gen.py"]


def test_a_command_is_judged_only_where_the_program_defines_its_commands_can_be_read(tmp_path: Path) -> None:
    _write(tmp_path, {"pyproject.toml": '[project]\nname = "tool"\n\n[project.scripts]\nmytool = "tool.main:run"\n',
                      "tool/helpers.py": "def helper(): ...\n"})
    # the entry point is not in the tree: what commands it has is not told
    assert _stale(tmp_path, "mytool create --name bot") == []
    _write(tmp_path, {"tool/commands/init.py": "def run(): ...\n", "tool/commands/eval.py": "def run(): ...\n"})
    assert _stale(tmp_path, "mytool init --name bot") == []  # a module named for the command
    assert _stale(tmp_path, "mytool create --name bot") == ["mytool has no command 'create' any more"]


def test_paths_a_line_does_not_claim_are_in_the_tree_are_not_flagged(tmp_path: Path) -> None:
    _write(tmp_path, {"docs/guide.md": "", "test/fixtures/ansi/select.sql": "", "src/lib.rs": "pub fn f() {}\n",
                      "docs/arch docs/patterns/factory.md": "", ".gitignore": ".agents/*\n!.agents/rules/\n"})
    lines = ["- [Testing Guide](docs/Testing%20Guide.md) - how we test",  # URL-encoded: not `docs/Testing`
             "- Drive lives in [`docs/drive/`](https://github.com/acme/other/tree/main/docs/drive).",  # elsewhere
             'echo "SELECT 1;" > test/fixtures/ansi/top_clause.sql',  # what a command writes
             "- Open `docs/build/html/index.html` after building.",  # a build output
             "let value = opt.ok_or(Error::MissingValue)?;",  # a variable an example defines
             "- `docs/` (CSS, images)",  # kinds of files, not names
             "- Pattern: [`docs/arch docs/patterns/factory.md`](docs/arch%20docs/patterns/factory.md)",  # a space
             "- Local notes go in `.agents/telemetry.md`."]  # ignored by git: a fresh clone need not hold it
    assert [_stale(tmp_path, line) for line in lines] == [[]] * len(lines)
    assert _stale(tmp_path, "- See `docs/drive/` for the design.") == ["docs/drive no longer exists"]


def test_a_missing_name_is_news_only_when_the_tree_shows_it_was_the_projects(tmp_path: Path) -> None:
    """A name no file has is stale evidence only when the tree ties it to the project; a library's API, an
    example or a name the line forbids is no name the project ever had (lines seen at the head of real
    instruction files; the first is from the AGENTS.md that Phoenix's project generator writes)."""
    _write(tmp_path, {"lib/shop_web/live/cart_live.ex": "defmodule ShopWeb.CartLive do\n  use ShopWeb, :live_view\nend\n",
                      "src/dispatch.rs": "pub struct DispatchResult { docs: Vec<String> }\nimpl DispatchResult {\n"
                                         "    pub fn remap(&mut self) {}\n}\n",
                      "src/engine.py": "class ScanContext: ...\nclass DecisionEngine: ...\n"})
    for line in ["- `Phoenix.LiveViewTest` module and `LazyHTML` (included) for making your assertions",
                 "- Wrap the app in `QueryClientProvider` at the root layout (client component)",
                 "passed explicitly. Do NOT use `AutoModelForMaskedLM` — smaller ecosystem.",
                 "- LI.FI SDK methods of interest: `getQuote()`, `executeRoute()`, `getContractCallsQuote()`."]:
        assert _stale(tmp_path, line) == [], line
    # a member of a type the project defines, a name beside the project's own types: renamed away
    assert _stale(tmp_path, "each embed site calls `DispatchResult::remap_tailwind_into(collector)`.") == [
        "'remap_tailwind_into' no longer occurs in the tree"]
    assert _stale(tmp_path, "`ScanContext` (state) → `DecisionEngine` → `ToolExecutor` (runs tools)") == [
        "'ToolExecutor' no longer occurs in the tree"]


def test_planned_placeholder_and_spaced_paths_are_read_as_written(tmp_path: Path) -> None:
    _write(tmp_path, {"lib/app.ts": "", "docs/adr/0001-start.md": "", "doc/Multimodal GUI Design.md": "x\n"})
    # a path the line says is planned is no claim that it exists
    assert _stale(tmp_path, "| `lib/api-client.ts` *(planned, FW-074)* | Browser → API: typed fetch |") == []
    # a placeholder in a file name is an example
    assert _stale(tmp_path, "Place it in `docs/adr/NNNN-slug.md` with sequential numbering.") == []
    assert _stale(tmp_path, "- Add a news item: drop a new `_news/announcement_N.md` with a `date`.") == []
    assert _stale(tmp_path, "moon run testUnit -- lib/filename.unit.test.ts") == []
    # a backticked path with spaces is one path
    assert _stale(tmp_path, "- `doc/Multimodal GUI Design.md` — the product frame of the GUI.") == []
    (tmp_path / "doc" / "Multimodal GUI Design.md").unlink()
    assert _stale(tmp_path, "- `doc/Multimodal GUI Design.md` — the product frame of the GUI.") == [
        "doc/Multimodal GUI Design.md no longer exists"]


def test_a_line_reference_a_type_and_a_field_of_records_are_no_settings(tmp_path: Path) -> None:
    """Lines as public instruction files have them at their own head (bench/staleness_heads.py): none is stale."""
    _write(tmp_path, {
        "src/components/DashboardDesktopLayout.tsx": "export const Layout = () => null;\n",
        "config/schema.yaml": "_id: <string(ObjectId())>\ntransport: string\n",
        "config/lint.json": '{\n  "tsx": true\n}\n',  # the key a "name.tsx: 221" would be read as
        **{f"scripts/results-{i}.json": f'{{\n  "severity": "{v}"\n}}\n'
           for i, v in enumerate(("blocking", "non-blocking", "pre-existing"))},
        "pyproject.toml": "[tool.ruff]\nline-length = 100\n",
    })
    # a file and a line in it (A-Hazzard/Casino-Manangement-System)
    assert _stale(tmp_path, "- `DashboardDesktopLayout.tsx:221` — Location type mismatch") == []
    # a type annotation, on either side
    assert _stale(tmp_path, "- Use **String IDs** for everything (`_id: string`, NOT `ObjectId`).") == []
    assert _stale(tmp_path, "An ask on default routing (`transport: inbox`) waits.") == []
    # a key the configuration gives many values is a field of records: the line's value is an example (edobry/minsky)
    assert _stale(tmp_path, 'Create the ask with `severity: "incident"` and a summary.') == []
    # a real setting is still checked
    assert _stale(tmp_path, "Lines are at most `line-length = 88` (ruff).") == ["line-length is 100 now, not 88"]


def test_kinds_of_content_in_parentheses_are_not_names_a_folder_holds(tmp_path: Path) -> None:
    _write(tmp_path, {"shared/types/models.ts": "", "cli/app.py": "", "cli/main.py": "", "tools/eslint-config-x/index.js": ""})
    # kinds of content and the libraries used (A-Hazzard/Casino-Manangement-System, Ashveil1/Elengenix)
    assert _stale(tmp_path, "  - `shared/types/` — used by both frontend and backend (models, DTOs).") == []
    assert _stale(tmp_path, "- `cli/` — UI components (app, main, rich)") == []
    # a name as files are named still counts
    assert _stale(tmp_path, "- `tools/` (eslint-config-x, prettier-config-y)") == ["tools/ holds no prettier-config-y any more"]


def test_a_kind_of_tool_is_not_a_tool_named_for_a_role(tmp_path: Path) -> None:
    _write(tmp_path, {"pyproject.toml": "[tool.ruff]\nline-length = 100\n"})
    # edobry/minsky at its own head: a heading for a kind of MCP tool, not the project's tool for a job
    assert _stale(tmp_path, "- **Missing MCP tool**: bash-before-MCP, MCP erroring for it, or:") == []
    assert _stale(tmp_path, "- **Tool**: blackfire") == ["no manifest or configuration names blackfire any more"]


def _stale_in(root: Path, text: str, n: int) -> list[str]:
    """The stale reasons of line ``n`` (1-based) of ``text``, checked with the lines before it as context."""
    lines = text.split("\n")
    return [c.reason for c in C.verify_entry(str(root), lines[n - 1], context=lines[: n - 1]) if c.verdict == C.STALE]


def test_a_path_in_a_code_block_of_examples_is_an_illustration(tmp_path: Path) -> None:
    """Found on instruction files of public projects at their own head (bench/README.md, "Stale memory"):
    a file-name comment heading an "Example pattern" or "❌ Avoid" block names a file that need not exist."""
    _write(tmp_path, {"src/app.ts": "export {}\n", "lib/queries/stream.ts": "export {}\n",
                      "commands/tools/git.ts": "export {}\n"})
    example = "## Data fetching\n\n#### Example pattern\n\n```ts\n// lib/queries/weather.ts\nexport const k = 1\n```\n"
    assert _stale_in(tmp_path, example, 6) == []
    avoid = "### \u274c Avoid: cross-module imports\n\n```ts\n// commands/tools/brew.ts\nimport x from '../x'\n```\n"
    assert _stale_in(tmp_path, avoid, 4) == []
    # the same comment in a block that shows the project's own file is checked
    own = "## Entry point\n\nThe server starts here:\n\n```ts\n// src/server.ts\nlisten(8080)\n```\n"
    assert _stale_in(tmp_path, own, 6) == ["src/server.ts no longer exists"]


def test_a_path_its_context_calls_planned_is_not_flagged(tmp_path: Path) -> None:
    """A folder an earlier line of the file marks planned, or a command under a heading that names a plan."""
    _write(tmp_path, {"lib/payments.ts": "export {}\n", "graph.py": "print()\n"})
    table = ("| Path | Role |\n|---|---|\n| `lib/ledger/` *(planned, ADR-12)* | fee math |\n\n"
             "**Module rules:**\n\n- Fee math lives only inside `lib/ledger/`.\n")
    assert _stale_in(tmp_path, table, 7) == []
    plan = "## Current status & plan\n\n### Architecture plan\n\n- Start the graph: `python graph.py`\n" \
           "- Start the agent: `python agent_main.py`\n"
    assert _stale_in(tmp_path, plan, 6) == []
    # without the plan, the same lines are stale
    assert _stale_in(tmp_path, "## Running\n\n- Start the agent: `python agent_main.py`\n", 3) != []
    assert _stale_in(tmp_path, "**Module rules:**\n\n- Fee math lives only inside `lib/ledger/`.\n", 3) != []


def test_placeholders_globs_and_what_a_command_makes_are_not_missing_paths(tmp_path: Path) -> None:
    """Found on a third pool of instruction files at their own head (bench/README.md, "Stale memory"): a blank to
    fill in (instructor's `tests/path_to_test.py`, haystack's `SCRIPT.py`), a glob's folder in a layout sketch
    (rsbuild's `packages/plugin-*/`) and the link a command makes (aiohttp's `ln -s … CHANGES/1240.bugfix.rst`)."""
    _write(tmp_path, {"tests/test_client.py": "", "packages/plugin-react/index.ts": "", "packages/core/index.ts": "",
                      "CHANGES/1234.bugfix.rst": "", "pyproject.toml": "[tool.hatch.envs.test]\n"})
    assert _stale(tmp_path, "- Run specific test: `pytest tests/path_to_test.py::test_name`") == []
    assert _stale_in(tmp_path, "```bash\nhatch -e test run python SCRIPT.py\n```\n", 2) == []
    assert _stale_in(tmp_path, "```\npackages/\npackages/plugin-*/          # plugins\n```\n", 3) == []
    line = "- Both issue and PR wanted: keep the issue's file and link it: `ln -s 1234.bugfix.rst CHANGES/1240.bugfix.rst`."
    assert _stale(tmp_path, line) == []
    # a real name that is gone is still flagged
    assert _stale(tmp_path, "- Run specific test: `pytest tests/test_server.py`") == ["tests/test_server.py no longer exists"]


def test_a_prose_pair_and_a_test_file_named_as_a_blank_are_no_paths(tmp_path: Path) -> None:
    """Found on a fifth pool of instruction files at their own head and on new dev cases (bench/README.md, "Stale
    memory"): a pair written with a slash in prose, no backticks (cibuildwheel's "single integration test/file",
    celery's "adjust the docs/code" and "docs/whatsnew updates", chainlit's "docs/API references", paradocs'
    "PascalCase for types/classes"), and a test file named as a blank to fill in (tinygrad's
    `test/unit/test_something.py`, deepagents' `tests/unit_tests/test_specific.py`)."""
    _write(tmp_path, {"docs/index.rst": "", "test/unit/test_ops.py": "", "tests/unit_tests/test_agent.py": "",
                      "types/index.d.ts": ""})
    assert _stale(tmp_path, "- `nox -s tests -- test -k before_build` — single integration test/file via pytest `-k`.") == []
    assert _stale(tmp_path, "  - If no: Should we revert or adjust the docs/code so they remain consistent") == []
    assert _stale(tmp_path, "- Defaults changed without corresponding docs/whatsnew updates.") == []
    assert _stale(tmp_path, "- Kebab-case for files, camelCase for functions/vars, PascalCase for types/classes.") == []
    assert _stale(tmp_path, "SPEC=2 python3 test/unit/test_something.py") == []
    assert _stale(tmp_path, "uv run --group test pytest tests/unit_tests/test_specific.py") == []
    # the same names in backticks, with a file's extension or a folder's slash, are still read as paths
    assert _stale(tmp_path, "- Release notes go in `docs/whatsnew`.") == ["docs/whatsnew no longer exists"]
    assert _stale(tmp_path, "- Release notes go in docs/whatsnew/ as one file per release.") == [
        "docs/whatsnew no longer exists"]
    assert _stale(tmp_path, "SPEC=2 python3 test/unit/test_schedule.py") == ["test/unit/test_schedule.py no longer exists"]


def test_a_type_the_code_no_longer_has_is_stale_though_documents_still_name_it(tmp_path: Path) -> None:
    """agent-framework's "`ChatAgent` - Main agent class" after `ChatAgent` became `Agent`, and netbox's "Use
    `FeatureQuery` for config contexts" after `FeatureQuery` was removed: the guides, decision records and release
    notes that still name a type say what it was, not that the code has it. A name some code file still uses, or
    one no file of the project ever defined (a library's), is not flagged."""
    code = "".join(f"class Helper{i}:\n    pass\n" for i in range(1000))  # a tree with code to search
    _write(tmp_path, {"python/agent_framework/_agents.py": "class Agent:\n    pass\n\nclass ChatOptions:\n    pass\n" + code,
                      "python/samples/README.md": "Build a `ChatAgent` and run it.\n",
                      "docs/decisions/0001-agent-run-response.md": "`ChatAgent.run` returns an `AgentResponse`.\n",
                      "docs/guide.md": "Use `QueryClientProvider` from the library.\n"})
    line = "- **`ChatAgent`** - Main agent class wrapping a chat client with tools, instructions, and middleware"
    assert _stale(tmp_path, line) == ["'ChatAgent' is named only in documentation now"]
    assert _stale(tmp_path, "- **`ChatOptions`** - Options for a chat client") == []
    assert _stale(tmp_path, "- Wrap the app in `QueryClientProvider`.") == []
    _write(tmp_path, {"python/agent_framework/_compat.py": "ChatAgent = Agent  # kept for old callers\n"})
    assert _stale(tmp_path, line) == []


def test_what_an_example_s_variable_is_made_of_is_checked(tmp_path: Path) -> None:
    """mirascope's test examples, "const db = yield* EffectDatabase;", after `EffectDatabase` became `Database`:
    the example defines `db`, but what it is made of is the project's own name. A class the example itself
    declares is still not checked."""
    _write(tmp_path, {"cloud/db/database.ts": "export class Database {}\nexport class DatabaseLive {}\n",
                      "cloud/CHANGELOG.md": "- Renamed `EffectDatabase` to `Database`.\n"})
    assert _stale(tmp_path, "      const db = yield* EffectDatabase;") == ["'EffectDatabase' no longer occurs in the tree"]
    assert _stale(tmp_path, "      const db = yield* Database;") == []
    assert _stale(tmp_path, "class ExampleService extends Database {}") == []


def test_a_path_named_as_a_pattern_of_the_tree_is_not_one_of_its_files(tmp_path: Path) -> None:
    """instructor's "Evaluation tests in `tests/llm/test_provider/evals/`" (one folder per provider) and podman's
    `// pkg/domain/infra/abi/command.go` (one file per command): with the generic word as a wildcard the path
    matches several of the tree's; a path whose word is a name of its own is checked as before."""
    _write(tmp_path, {"tests/llm/test_openai/evals/test_a.py": "", "tests/llm/test_gemini/evals/test_b.py": "",
                      "pkg/domain/infra/abi/play.go": "", "pkg/domain/infra/abi/pods.go": ""})
    assert _stale(tmp_path, "- Evaluation tests in `tests/llm/test_provider/evals/` assess model capabilities") == []
    assert _stale(tmp_path, "- Local engine: `pkg/domain/infra/abi/command.go`") == []
    assert _stale(tmp_path, "- Evaluation tests in `tests/llm/test_mistral/evals/`") == [
        "tests/llm/test_mistral/evals no longer exists"]


def test_a_typescript_source_by_its_emitted_name_and_a_path_in_other_case_exist(tmp_path: Path) -> None:
    """payload's "import client components from `exports/client/index.js`" (ES modules name the `.js` a `.ts`
    compiles to) and workers-sdk's `.github/PULL_REQUEST_TEMPLATE.md` (the tree's is lower case)."""
    _write(tmp_path, {"packages/ui/src/exports/client/index.ts": "export {}\n",
                      ".github/pull_request_template.md": "## Summary\n"})
    assert _stale(tmp_path, "Server components must import client components from `exports/client/index.js`") == []
    assert _stale(tmp_path, "- Use `.github/PULL_REQUEST_TEMPLATE.md` when preparing a pull request.") == []
    assert _stale(tmp_path, "- Use `.github/ISSUE_TEMPLATE.md` for bugs.") == [".github/ISSUE_TEMPLATE.md no longer exists"]


def test_a_name_the_line_says_not_to_use_or_another_project_provides_is_not_checked(tmp_path: Path) -> None:
    """temporal's "`func (a *Activity) Store()` not `GetStore()`", aspire's "the `UpdateXlf` MSBuild target (provided
    by [Microsoft.DotNet.XliffTasks](…))", payload's `AnotherComponent` beside `SomeComponent`, and "pnpm version:"
    as a label, not a script."""
    _write(tmp_path, {"service/activity.go": "type Activity struct{}\nfunc (a *Activity) Store() {}\nfunc GetStatus() {}\n",
                      "src/update.py": "class UpdateChecker: ...\nclass UpdateRunner: ...\n",
                      "src/elements/Other/index.ts": "export const AnotherThing = 1\n",
                      "package.json": '{"scripts": {"build": "tsc"}}', "pnpm-lock.yaml": ""})
    assert _stale(tmp_path, "- Don't use `Get` prefix for getters: `func (a *Activity) Store()` not `GetStore()`") == []
    line = ("Do not edit `*.xlf` files. They are updated by the `UpdateXlf` MSBuild target (provided by "
            "[Microsoft.DotNet.XliffTasks](https://github.com/dotnet/arcade/tree/main/src/Microsoft.DotNet.XliffTasks)).")
    assert _stale(tmp_path, line) == []
    assert _stale(tmp_path, "export { AnotherComponent } from '../../elements/AnotherComponent/index.js'") == []
    assert _stale(tmp_path, "- pnpm version: ^11.9.0") == []
    # the same names said plainly are checked
    assert _stale(tmp_path, "- Run the `UpdateXlf` target after editing resources.") == [
        "'UpdateXlf' no longer occurs in the tree"]
    assert _stale(tmp_path, "- Run `pnpm run version` to bump.") == ["package.json has no target 'version' any more"]


def test_a_folder_or_glob_in_a_nested_list_is_checked_under_its_parent_item(tmp_path: Path) -> None:
    """aspire's "- **`/src`**: …" then "  - `Microsoft.Extensions.ServiceDiscovery/`: …" (moved to another
    repository), rerun's "- Type definitions in `crates/build/re_type_definitions/rerun/`" then "  - `datatypes/*.def.rs`"
    (the folder renamed `encodings/`): new dev cases of bench/staleness-cases."""
    _write(tmp_path, {"src/Aspire.Cli/Program.cs": "", "src/Components/README.md": "",
                      "defs/rerun/components/color.def.rs": "", "defs/rerun/encodings/vec3d.def.rs": ""})
    listing = ("### Directory Structure\n- **`/src`**: Main source code\n  - `Aspire.Cli/`: Command-line interface tools\n"
               "  - `Components/`: 40+ integration packages\n  - `Microsoft.Extensions.ServiceDiscovery/`: Service discovery\n")
    assert _stale_in(tmp_path, listing, 3) == []
    assert _stale_in(tmp_path, listing, 4) == []
    assert _stale_in(tmp_path, listing, 5) == ["src/Microsoft.Extensions.ServiceDiscovery no longer exists"]
    types = ("- Type definitions in `defs/rerun/`\n  - `components/*.def.rs` - Component types\n"
             "  - `datatypes/*.def.rs` - Low-level types (Vec3D, Mat4x4, etc.)\n")
    assert _stale_in(tmp_path, types, 2) == []
    assert _stale_in(tmp_path, types, 3) == ["no file matches defs/rerun/datatypes/*.def.rs"]
    gone = "- Type definitions in `defs/flatbuffers/`\n  - `datatypes/*.fbs` - Low-level types\n"
    assert _stale_in(tmp_path, gone, 2) == [
        "defs/flatbuffers/datatypes/*.fbs: its folder defs/flatbuffers no longer exists"]
    # a folder of the machine, not of the tree: its items are not the tree's
    system = "- Configuration lives in `/etc/myapp/`\n  - `conf.d/`: drop-in files\n"
    assert _stale_in(tmp_path, system, 2) == []


def test_a_value_the_line_says_a_named_file_sets_is_read_in_that_file(tmp_path: Path) -> None:
    """workers-sdk's "Shared vitest config (`vitest.shared.ts`): 50s timeouts, `retry: 2`, `restoreMocks: true`"
    after the file moved to `retry: 1`: a key too common to look up in the whole tree is read in the file named."""
    _write(tmp_path, {"vitest.shared.ts": "export default {\n  test: {\n    retry: 1,\n    restoreMocks: true,\n  },\n};\n"})
    line = "- Shared vitest config (`vitest.shared.ts`): 50s timeouts, `retry: 2`, `restoreMocks: true`"
    assert _stale(tmp_path, line) == ["vitest.shared.ts sets retry to 1 now, not 2"]
    assert _stale(tmp_path, line.replace("retry: 2", "retry: 1")) == []
    # an instruction to set a value says nothing of the value the file holds now
    assert _stale(tmp_path, "- To retry more in CI, set `retry: 2` in `vitest.shared.ts`.") == []
    # a file and a line in it is no key and value (minsky's "`.claude/hooks/memory-search.ts:93`")
    _write(tmp_path, {"hooks/search.ts": "const ts: string = ''\n"})
    assert _stale(tmp_path, "The hook (`hooks/search.ts`) injects results (`search.ts:93`).") == []


def test_a_monorepo_runner_and_a_formatter_the_tree_dropped_are_stale(tmp_path: Path) -> None:
    """rsbuild's `npx nx build @rsbuild/core` after nx.json and the nx dependency went; workers-sdk's "Format with
    Prettier" after oxfmt replaced it, though a scaffold's templates still ship `.prettierrc`, the lock file
    still lists prettier (transitively) and a workflow's README names it."""
    _write(tmp_path, {"package.json": '{"scripts": {"format": "oxfmt"}, "devDependencies": {"oxfmt": "1"}}',
                      ".oxfmtrc.jsonc": "{}",
                      "pnpm-lock.yaml": "packages:\n  prettier@3.0.0: {}\n",
                      "packages/create-app/templates/hello/.prettierrc": "{}",
                      ".github/workflows/README.md": "Runs prettier.\n", ".github/workflows/ci.yml": "on: push\n"})
    assert _stale(tmp_path, "npx nx build @rsbuild/core") == ["nothing in the tree shows nx is used any more"]
    assert _stale(tmp_path, "- Format with Prettier - run `pnpm format` in the workspace root before committing") == [
        "nothing in the tree configures prettier any more (oxfmt is)"]
    _write(tmp_path, {"nx.json": "{}", ".prettierrc": "{}"})
    assert _stale(tmp_path, "npx nx build @rsbuild/core") == []
    assert _stale(tmp_path, "- Format with Prettier before committing") == []


def test_a_package_named_after_a_folder_that_is_gone_is_stale(tmp_path: Path) -> None:
    """workers-sdk renamed `packages/vitest-pool-workers/` to `packages/vitest-plugin/`: a later line's
    "Use `vitest-pool-workers`" names a package the workspace no longer has (a codemod still mentions it)."""
    _write(tmp_path, {"packages/vitest-plugin/package.json": '{"name": "@cloudflare/vitest-plugin"}',
                      "packages/wrangler/package.json": '{"name": "wrangler"}',
                      "packages/codemods/src/v3.ts": "// vitest-pool-workers -> vitest-plugin\n"})
    text = ("- `packages/vitest-pool-workers/` - Vitest integration\n- `packages/wrangler/` - the CLI\n\n"
            "- Use `vitest-pool-workers` for testing actual Workers runtime behavior\n- Use `wrangler` to deploy\n")
    assert _stale_in(tmp_path, text, 4) == [
        "no package vitest-pool-workers in the workspace any more (packages/vitest-pool-workers is gone)"]
    assert _stale_in(tmp_path, text, 5) == []


def test_packages_agree_on_the_runtime_when_examples_pin_their_own(tmp_path: Path) -> None:
    pkgs = {f"packages/p{i}/package.json": '{"engines": {"node": ">=24.15.0"}}' for i in range(3)}
    _write(tmp_path, {"package.json": '{"private": true}', **pkgs,
                      "examples/blog/package.json": '{"engines": {"node": "^18.20.2 || >=20.9.0"}}'})
    assert _stale(tmp_path, "- Node version: ^18.20.2 || >=20.9.0") == [
        "node 18 is no longer supported (the project needs 24 or later)"]
    assert _stale(tmp_path, "- Node version: >=24.15.0") == []


def test_a_kind_of_file_the_tree_no_longer_has_is_flagged(tmp_path: Path) -> None:
    files = {f"crates/types/src/t{i}.rs": "" for i in range(60)}
    _write(tmp_path, {**files, "definitions/point.fbs": "table Point {}\n", ".gitignore": "*.log\n"})
    lines = ["- After modifying .fbs files, run `pixi run codegen` to regenerate",
             "Three levels (generated from `.fbs` files):"]
    assert [_stale(tmp_path, line) for line in lines] == [[], []]
    (tmp_path / "definitions" / "point.fbs").unlink()
    _write(tmp_path, {"definitions/point.d.rs": ""})
    assert [_stale(tmp_path, line) for line in lines] == [["no .fbs file is left in the tree"]] * 2
    _write(tmp_path, {"test/fixtures/.sqlfluff": "[sqlfluff]\n"})  # a dotfile's name is its kind
    assert _stale(tmp_path, "SQLFluff uses `.sqlfluff` files (INI format) for configuration:") == []
    # what a program reads, what the tree ignores, an example or a kind the line says is gone: not checked
    for line in ["The importer reads .csv files from the inbox.", "Never commit .log files.",
                 "Write new definitions in `.rs`, e.g. `.fbs` files are gone.", "We moved away from .fbs files."]:
        assert _stale(tmp_path, line) == [], line


def test_a_version_a_named_file_pins_is_checked_in_that_file(tmp_path: Path) -> None:
    _write(tmp_path, {"global.json": '{"sdk": {"version": "10.0.100-rc.1.25411.109"}}'})
    line = "- **`global.json`**: Pins .NET SDK version (10.0.100-rc.1.25411.109) - never modify without a request"
    assert _stale(tmp_path, line) == []
    _write(tmp_path, {"global.json": '{"sdk": {"version": "10.0.100"}}'})
    assert _stale(tmp_path, line) == ["global.json no longer holds 10.0.100-rc.1.25411.109 (10.0.100 now)"]
    assert _stale(tmp_path, "- Bump the SDK in `global.json` to 10.0.101 when it ships") == []  # what to set
    # versions given as examples of a rule, or beside a file the line does not say holds them
    _write(tmp_path, {"Cargo.toml": '[dependencies]\nserde = "1"\ntokio = "1.40.0"\n'})
    assert _stale(tmp_path, "- Use the lowest requirement in `Cargo.toml` (for example, prefer `\"1\"` over "
                            "`\"1.2.3\"`); versions are pinned") == []
    assert _stale(tmp_path, "- Build with `Cargo.toml`'s features; needs rustc 1.82.0") == []


def test_what_a_fourth_pool_of_heads_showed_is_no_stale_evidence(tmp_path: Path) -> None:
    """Lines of widely used projects' instruction files, each checked against its own tree at the same commit:
    a name the line says not to give, a path the reader checks on their own machine, an example value, a
    repository issues are opened in, a package manager's commands in its own tree or handed to the registry."""
    _write(tmp_path, {"package.json": '{"name": "root", "scripts": {"lint": "eslint ."}}',
                      "dask/core.py": "def f(): ...\n", "deps.json": '{"statuses": "2.0.2"}',
                      "hugo_test.go": "func TestDisablePathToLower(t *testing.T) {}\n"})
    for line in ["* Never name tests `TestIssue1234`; always give the test function a descriptive name",
                 "Confirm the hooks are active by checking that `.husky/_/` exists.",
                 "  Missing permissions (e.g. `statuses: write`) cause silent 403 failures.",
                 "6. **Community issue**: Open tracking issue in `dask/community`",
                 "Bump versions with `pnpm version -r`; log in with `pnpm login` first."]:
        assert _stale(tmp_path, line) == [], line
    assert _stale(tmp_path, "Record a changeset with `pnpm change`.") == ["package.json has no target 'change' any more"]
    _write(tmp_path, {"cli/package.json": '{"name": "pnpm", "bin": {"pnpm": "bin/pnpm.mjs"}}'})
    assert _stale(tmp_path, "Record a changeset with `pnpm change`.") == []  # the project is pnpm: its own command


def test_a_relative_link_is_read_from_the_files_own_folder(tmp_path: Path) -> None:
    """pnpm's AGENTS.md after ``pacquet/`` became ``pnpm/``: a link's target is the file's own path, even where its
    first folder is gone (a plain ``a/b`` might be owner/name; a link is not)."""
    _write(tmp_path, {"pacquet/AGENTS.md": "rules\n", "pacquet/crates/cli/src/lib.rs": "", "docs/guide.md": ""})
    line = "- The Rust port: see [`pacquet/AGENTS.md`](./pacquet/AGENTS.md) for its rules."
    assert _stale(tmp_path, line) == []
    os.rename(tmp_path / "pacquet", tmp_path / "pnpm")
    assert _stale(tmp_path, line) == ["pacquet/AGENTS.md moved to pnpm/AGENTS.md"]
    # a file in a folder links from there: ``crates/cli/src/lib.rs`` is ``pnpm/crates/cli/src/lib.rs``
    nested = "- The CLI lives in [`crates/cli/src/lib.rs`](crates/cli/src/lib.rs)."
    assert [c.reason for c in C.verify_entry(str(tmp_path), nested, base="pnpm") if c.verdict == C.STALE] == []
    assert [c.reason for c in C.verify_entry(str(tmp_path), nested, base="pnpm/crates")
            if c.verdict == C.STALE] == ["pnpm/crates/crates/cli/src/lib.rs moved to pnpm/crates/cli/src/lib.rs"]


def test_a_crate_of_a_family_renamed_whole_is_flagged(tmp_path: Path) -> None:
    crates = {f"crates/{n}/Cargo.toml": f'[package]\nname = "pacquet-{n}"\n' for n in ("cli", "lockfile", "diagnostics")}
    _write(tmp_path, crates)
    lines = ["cargo nextest run -p pacquet-lockfile --test <file_stem>",
             "User-facing errors go through `miette` via the `pacquet-diagnostics` crate."]
    assert [_stale(tmp_path, line) for line in lines] == [[], []]
    _write(tmp_path, {p: body.replace("pacquet-", "pnpm-") for p, body in crates.items()})
    assert [_stale(tmp_path, line) for line in lines] == [
        ["no package pacquet-lockfile in the workspace any more (pnpm-lockfile now?)"],
        ["no package pacquet-diagnostics in the workspace any more (pnpm-diagnostics now?)"]]
    assert _stale(tmp_path, "cargo test -p serde-json") == []  # no family of that name: another project's


def test_a_java_version_and_a_maven_module_are_checked_against_the_build(tmp_path: Path) -> None:
    pom = ("<project><parent><artifactId>pinot</artifactId></parent><artifactId>{}</artifactId>"
           "<properties><jdk.version>{}</jdk.version></properties></project>")
    _write(tmp_path, {"pom.xml": pom.format("pinot", 21), **{f"pinot-{m}/pom.xml": pom.format(f"pinot-{m}", 21)
                                                          for m in ("core", "common", "kafka-2.0")}})
    lines = ["- Build JDK: Use JDK 21+ for services; client artifacts still target Java 11 bytecode.",
             "- Use Javadoc comments; service code targets Java 21 by default.",
             "- pinot-kafka-2.0: Kafka 2.x ingestion implementation."]
    assert [_stale(tmp_path, line) for line in lines] == [[], [], []]
    _write(tmp_path, {"pom.xml": pom.format("pinot", 25)})
    (tmp_path / "pinot-kafka-2.0" / "pom.xml").unlink()
    (tmp_path / "pinot-kafka-2.0").rmdir()
    assert [_stale(tmp_path, line) for line in lines] == [
        ["java 21 is no longer supported (the project needs 25 or later)"],
        ["java 21 is no longer supported (the project needs 25 or later)"],
        ["no package pinot-kafka-2.0 in the workspace any more"]]
    assert _stale(tmp_path, "- e.g. runs on Java 17+ in CI images") == []  # an example


def test_a_script_said_to_run_a_tool_that_now_runs_another_is_flagged(tmp_path: Path) -> None:
    scripts = {"lint:js": "biome check", "lint:rs": "cargo check --workspace", "format:js": "rs fmt"}
    _write(tmp_path, {"package.json": json.dumps({"devDependencies": {"@biomejs/biome": "1"}, "scripts": scripts}),
                      "pnpm-lock.yaml": ""})
    line = "- **Linting**: `pnpm run lint:js` (Biome), `pnpm run lint:rs` (cargo check)"
    assert _stale(tmp_path, line) == []
    _write(tmp_path, {"package.json": json.dumps({"scripts": {**scripts, "lint:js": "rslint --fix"}})})
    assert _stale(tmp_path, line) == ["the lint:js script runs rslint now, not biome (`rslint --fix`)"]
    # a wrapper may run the tool it names: nothing else is named, nothing is said
    assert _stale(tmp_path, "- `pnpm run format:js` (prettier)") == []


def test_a_configuration_file_named_alone_is_looked_for_in_the_whole_tree(tmp_path: Path) -> None:
    _write(tmp_path, {**{f"src/m{i}.ts": "" for i in range(60)}, "tools/.dlint.json": "{}",
                      ".gitignore": ".env.local.json\n"})
    line = "`dlint` is a prebuilt binary. Configuration is in `.dlint.json`."
    assert _stale(tmp_path, line) == []
    (tmp_path / "tools" / ".dlint.json").unlink()
    assert _stale(tmp_path, line) == ["no .dlint.json is left in the tree"]
    for other in ["Put your keys in `.env.local.json`.", "Look at the existing `.tst.ts` files for examples.",
                  "Create a `.prettierrc.json` if you need one."]:
        assert _stale(tmp_path, other) == [], other


def test_a_name_an_example_imports_from_the_project_s_package_must_still_be_defined_there(tmp_path: Path) -> None:
    """agent-framework's examples, `from agent_framework import ChatAgent` and `agent = ChatAgent(`, after
    `ChatAgent` became `Agent`: a sample nobody migrated still uses the old name, so it still occurs in the tree;
    the package no longer defines it. A name the package defines, re-exports or lists is not flagged, nor one a
    module may make at run time (a module `__getattr__`), nor one imported from another project's package."""
    _write(tmp_path, {
        "python/core/agent_framework/__init__.py": "from ._agents import *  # noqa: F403\nfrom ._types import Message as Message\n",
        "python/core/agent_framework/_agents.py": "__all__ = ['Agent', 'AgentMiddleware']\n\nclass Agent: ...\n\n"
                                                  "class AgentMiddleware: ...\n",
        "python/core/agent_framework/_types.py": "class Message: ...\n",
        "python/core/agent_framework/openai/__init__.py": "def __getattr__(name): ...\n",
        "python/samples/old_sample.py": "from agent_framework import ChatAgent\nfrom fastapi import FastAPI\n"
                                        "agent = ChatAgent()\n",
    })
    gone = "'ChatAgent' is no longer defined in agent_framework; only code that was not updated still uses it"
    assert _stale(tmp_path, "from agent_framework import ChatAgent, AgentMiddleware") == [gone]
    block = ["## Usage", "```python", "from agent_framework import ChatAgent", ""]
    assert [c.reason for c in C.verify_entry(str(tmp_path), "agent = ChatAgent(", context=block)
            if c.verdict == C.STALE] == [gone]
    assert _stale(tmp_path, "from agent_framework import Agent, AgentMiddleware, Message") == []
    assert [c for c in C.verify_entry(str(tmp_path), "agent = Agent(", context=[*block[:2], "from agent_framework import Agent"])
            if c.verdict == C.STALE] == []
    assert _stale(tmp_path, "from agent_framework.openai import ChatAgent") == []
    assert _stale(tmp_path, "from fastapi import FastAPI") == []
    assert [c for c in C.verify_entry(str(tmp_path), "agent = ChatAgent(", context=["Old code did:", "",
                                                                                  "from agent_framework import ChatAgent"])
            if c.verdict == C.STALE] == []  # not in a code block: prose, read as before
