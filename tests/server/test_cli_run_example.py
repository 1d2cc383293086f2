"""`cairn run` with no PATH: the shipped example session only in an empty folder, or asked for with `--example`.

A bare `cairn run` in a project put a made-up ledger service's session into that project's private
journal and proposed six memories about it; the README's first command (`cairn run -w "$(mktemp -d)"`)
must keep running the example on the embedded defaults.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from cairn.protocol.errors import ErrorCode

from tests.journal.helpers import DEMO, cairn
from tests.support import PYTHON, REPO, child_env


def test_a_bare_run_in_an_empty_folder_runs_the_example_and_says_so(workspace: Path) -> None:
    r = cairn(workspace, "run")
    first, *rest = r.stdout.splitlines()
    assert first.startswith("running the shipped example session (") and str(DEMO.name) in first
    assert "`cairn run --all`" in first
    assert rest[0].startswith("imported 10 new turn(s) from 1 session(s) in 1 file(s) (claude-code)")
    assert r.stdout.count("shipped example session") == 1
    # cairn's own folders do not make it a project: the same again runs the example again (nothing new)
    assert (workspace / ".cairn").is_dir()
    again = cairn(workspace, "run")
    assert again.stdout.startswith("running the shipped example session (")


def test_a_bare_run_in_a_project_folder_is_refused_and_names_what_to_run(workspace: Path) -> None:
    (workspace / "main.py").write_text("print('hi')\n")
    r = cairn(workspace, "run", check=False)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"cairn: {ErrorCode.USAGE}: "), r.stderr
    for said in ("`cairn run --all`", "`cairn run PATH...`", "cairn run --example", "main.py", str(workspace)):
        assert said in r.stderr, said
    assert not (workspace / ".cairn").exists(), "nothing written"


def test_a_bare_run_in_a_git_repository_is_refused(workspace: Path) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True, env=child_env())
    r = cairn(workspace, "run", "--json", check=False)
    assert r.returncode == 2 and r.stdout == "" and ".git" in r.stderr, r.stderr


def test_example_runs_the_example_anywhere_on_purpose(workspace: Path) -> None:
    (workspace / "README.md").write_text("a project\n")
    r = cairn(workspace, "run", "--example", "--json")
    out = json.loads(r.stdout)  # stdout stays one JSON document: the line saying so is on stderr
    assert out["import"]["captured"] == 10 and "running the shipped example session" in r.stderr
    refused = cairn(workspace, "run", "--example", str(DEMO), check=False)
    assert refused.returncode == 2 and "--example" in refused.stderr


def test_a_named_file_or_all_is_never_the_example(workspace: Path) -> None:
    (workspace / "main.py").write_text("print('hi')\n")
    r = cairn(workspace, "run", str(DEMO))
    assert "shipped example" not in r.stdout + r.stderr and r.stdout.startswith("imported 10 new turn(s)")


def test_run_help_names_example() -> None:
    r = subprocess.run([PYTHON, "-m", "cairn.server", "run", "--help"], cwd=REPO, env=child_env(COLUMNS="200"),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "--example" in r.stdout and "only in an empty folder" in r.stdout
