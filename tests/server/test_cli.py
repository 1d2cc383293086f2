"""The CLI's structure and its last line of defence: one command table, no import cycle, no traceback."""

from __future__ import annotations

import argparse
import ast
import errno
import subprocess
from pathlib import Path

import pytest
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.server.cli import app as cli
from cairn.server.cli.commands import COMMANDS
from cairn.server.cli.support import Command, no_setup

from tests.support import PYTHON, REPO, child_env

CLI_MODULES = sorted(p.stem for p in (REPO / "server" / "cli").glob("*.py") if p.stem != "__init__")


def _cli_imports(module: str) -> set[str]:
    """The :mod:`server.cli` modules ``module`` imports anywhere (top level or inside functions)."""
    tree = ast.parse((REPO / "server" / "cli" / f"{module}.py").read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        out |= {n.rsplit(".", 1)[-1] for n in names if n.startswith("cairn.server.cli.")}
    return out & set(CLI_MODULES)


def test_the_cli_import_graph_has_no_cycle() -> None:
    graph = {m: _cli_imports(m) for m in CLI_MODULES}
    done: set[str] = set()

    def visit(m: str, path: tuple[str, ...]) -> None:
        assert m not in path, f"import cycle: {' -> '.join((*path, m))}"
        if m in done:
            return
        for dep in graph[m]:
            visit(dep, (*path, m))
        done.add(m)

    for m in CLI_MODULES:
        visit(m, ())
    # ``hook`` too: `cairn hook` builds its parser from that module alone, without the table (app.main)
    assert graph["app"] == {"commands", "hook", "support"}


@pytest.mark.parametrize("module", CLI_MODULES)
def test_each_cli_module_imports_alone_in_a_fresh_interpreter(module: str) -> None:
    r = subprocess.run([PYTHON, "-c", f"import cairn.server.cli.{module}"], cwd=REPO, env=child_env(),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_every_command_is_one_row_of_the_table() -> None:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sub.choices) == list(COMMANDS)
    for name, cmd in COMMANDS.items():
        assert sub.choices[name].get_default("func") is cmd.handler


def _raising(exc: BaseException) -> Command:
    def handler(ns: argparse.Namespace) -> int:
        raise exc

    return Command("raises", no_setup, handler)


def test_an_unexpected_exception_is_one_line_with_a_code(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("CAIRN_DEBUG", raising=False)
    monkeypatch.setitem(COMMANDS, "doctor", _raising(KeyError("body of a memory topic")))
    assert cli.main(["doctor", "-w", str(tmp_path)]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("cairn: E_INTERNAL: unexpected KeyError in `cairn doctor`")
    assert "Traceback" not in err and "body of a memory topic" not in err

    monkeypatch.setenv("CAIRN_DEBUG", "1")
    assert cli.main(["doctor", "-w", str(tmp_path)]) == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and err.rstrip().endswith("(set CAIRN_DEBUG=1 for the traceback)")


@pytest.mark.parametrize(("exc", "line"), [
    (CairnError(ErrorCode.NOT_FOUND, "no capture c1"), "cairn: E_NOT_FOUND: no capture c1\n"),
    (OSError(errno.ENOSPC, "No space left on device", "/ws/.cairn"),
     "cairn: E_NO_SPACE: No space left on device (/ws/.cairn)\n"),
    (PermissionError(errno.EACCES, "Permission denied"), "cairn: E_IO_FAILED: Permission denied\n"),
])
def test_fixed_errors_exit_2_with_their_code(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str], exc: Exception, line: str) -> None:
    monkeypatch.setitem(COMMANDS, "doctor", _raising(exc))
    assert cli.main(["doctor", "-w", str(tmp_path)]) == 2
    assert capsys.readouterr().err == line


def test_version_comes_from_the_installed_metadata_and_the_elisp_headers_agree() -> None:
    import tomllib
    from importlib.metadata import version

    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    r = subprocess.run([PYTHON, "-m", "cairn.server", "--version"], env=child_env(), capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == f"cairn {declared}" == f"cairn {version('cairn-journal')}"
    for el in sorted((REPO / "editors" / "emacs").glob("*.el")):
        headers = [ln for ln in el.read_text(encoding="utf-8").splitlines() if ln.startswith(";; Version:")]
        assert headers in ([], [f";; Version: {declared}"]), el.name


@pytest.mark.parametrize("argv", [["import", "--bogus"], [], ["nosuch"], ["retry"]])
def test_bad_usage_is_one_fixed_error_line_and_exit_2(argv: list[str]) -> None:
    r = subprocess.run([PYTHON, "-m", "cairn.server", *argv], env=child_env(), capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.startswith(f"cairn: {ErrorCode.USAGE}: ") and r.stderr.count("\n") == 1, r.stderr
    assert r.stdout == ""


def test_cairn_mcp_without_the_mcp_extra_names_the_install_command(tmp_path: Path) -> None:
    """The SDK is the optional extra ``mcp``: without it, one fixed error line, exit 2, no traceback."""
    hide = ("import sys, importlib.abc\n"
            "class Hide(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'mcp' or name.startswith('mcp.'):\n"
            "            raise ModuleNotFoundError(name)\n"
            "sys.meta_path.insert(0, Hide())\n"
            "from cairn.server.cli import app as cli\n"
            f"sys.exit(cli.main(['mcp', '-w', {str(tmp_path)!r}]))\n")
    r = subprocess.run([PYTHON, "-c", hide], env=child_env(), capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert r.returncode == 2, r.stderr
    assert r.stderr == ("cairn: E_EXTRA_MISSING: `cairn mcp` needs the Model Context Protocol SDK: "
                        "pip install 'cairn-journal[mcp]'\n")


def test_doctor_reports_a_topic_with_broken_front_matter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    memory = tmp_path / ".agents" / "memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("# Memory\n\n- [Release](release.md) - how releases are cut\n")
    (memory / "release.md").write_text("---\nname: Release\ndescription: use: the script\ntype: project\n---\nTag.\n")
    (memory / "good.md").write_text("---\nname: Good\ndescription: fine\ntype: project\n---\nBody.\n")
    assert cli.main(["doctor", "-w", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "memory E_TOPIC_FRONT_MATTER .agents/memory/release.md" in out and "good.md" not in out
    assert "\nok\n" not in out and "1 problem(s)" in out


def test_a_review_that_proposed_from_remembered_texts_does_not_say_nothing_to_review() -> None:
    """A remembered text whose review was interrupted is reviewed by the next `cairn review`: it printed
    "nothing to review" while a new proposal appeared."""
    from cairn.protocol.results import ReviewJobResult
    from cairn.server.cli.memory import review_line

    assert review_line(ReviewJobResult(review=None, recovered=False), False) == "nothing to review"
    line = review_line(ReviewJobResult(review=None, recovered=False, focused=1), False)
    assert line.startswith("no digest to review; 1 remembered text(s) reviewed") and "cairn proposals" in line
    assert "interrupted review" in review_line(ReviewJobResult(review=None, recovered=True), False)
