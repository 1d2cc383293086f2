"""The CLI's arguments and its output stream: `-w` before the command, a file named twice, a closed pipe,
a workspace that cannot be written."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cairn.protocol.errors import ErrorCode
from cairn.server.cli import app as cli

from tests.journal.helpers import ALL_FORMATS, DEMO, cairn
from tests.support import PYTHON, REPO, child_env

CAIRN = [PYTHON, "-m", "cairn.server"]


# -- -w before the command ------------------------------------------------------------------------

def test_the_workspace_may_come_before_the_command(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cairn(workspace, "run", str(DEMO))
    capsys.readouterr()
    assert cli.main(["journal", "--json", "-w", str(workspace)]) == 0
    after = capsys.readouterr().out
    assert json.loads(after)
    for before in (["-w", str(workspace)], ["--workspace", str(workspace)], [f"--workspace={workspace}"],
                   [f"-w{workspace}"]):
        assert cli.main([*before, "journal", "--json"]) == 0, before
        assert capsys.readouterr().out == after, before
    # given both before and after the command's name, the one after counts (as two -w after it would)
    assert cli.main(["-w", "/nonexistent-b1", "jobs", "--json", "-w", str(workspace)]) == 0
    assert json.loads(capsys.readouterr().out)


def test_a_workspace_before_the_command_with_no_command_is_one_usage_line() -> None:
    r = subprocess.run([*CAIRN, "-w", "/tmp"], cwd=REPO, env=child_env(), capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith(f"cairn: {ErrorCode.USAGE}: ") and r.stderr.count("\n") == 1
    assert "invalid choice" not in r.stderr, r.stderr


def test_the_top_level_help_says_where_the_workspace_goes() -> None:
    r = subprocess.run([*CAIRN, "--help"], cwd=REPO, env=child_env(COLUMNS="200"), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "-w DIR, --workspace DIR" in r.stdout and "before or after the command" in r.stdout


# -- one file named several ways ------------------------------------------------------------------

def test_one_file_named_three_ways_is_imported_and_counted_once(workspace: Path, tmp_path: Path) -> None:
    chat = tmp_path / "chat.md"
    shutil.copyfile(ALL_FORMATS["aider"], chat)
    (tmp_path / "link.md").symlink_to(chat)
    (tmp_path / "other").mkdir()
    single = json.loads(cairn(tmp_path / "other", "import", str(chat), "--json").stdout)  # the file named once
    r = subprocess.run([*CAIRN, "import", "chat.md", str(chat), "./chat.md", "link.md", "-w", str(workspace)],
                       cwd=tmp_path, env=child_env(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"imported 1 file(s) (aider), {single['sessions']} session(s): "
                               f"{single['captured']} new turn(s), 0 already captured"), r.stdout


def test_run_says_its_format_breakdown_counts_files(workspace: Path) -> None:
    r = cairn(workspace, "run", str(ALL_FORMATS["aider"]), str(ALL_FORMATS["codex"]), str(ALL_FORMATS["aider"]))
    line = r.stdout.splitlines()[0]
    assert " in 2 file(s) (1 aider, 1 codex), " in line, line


# -- a closed stdout pipe -------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [["journal"], ["jobs"], ["proposals"], ["memory"], ["discover"], ["journal", "--json"]])
def test_a_reader_gone_stops_the_output_quietly_with_141(workspace: Path, tmp_path: Path, argv: list[str]) -> None:
    cairn(workspace, "run", str(DEMO))
    read, write = os.pipe()
    os.close(read)  # `cairn journal | head -0`: the reader is gone before the first line
    try:
        r = subprocess.run([*CAIRN, *argv, "-w", str(workspace)], cwd=REPO, stdout=write, stderr=subprocess.PIPE,
                           env=child_env(CAIRN_DEBUG="1", HOME=str(tmp_path)), text=True, timeout=120)
    finally:
        os.close(write)
    assert (r.returncode, r.stderr) == (141, ""), (r.returncode, r.stderr)


def test_a_broken_pipe_that_is_not_stdout_is_an_error_of_the_command(tmp_path: Path) -> None:
    script = ("import sys\n"
              "from cairn.server.cli import app\n"
              "from cairn.server.cli.commands import COMMANDS\n"
              "from cairn.server.cli.support import Command, no_setup\n"
              "def handler(ns):\n"
              "    raise BrokenPipeError(32, 'Broken pipe')  # a provider program's stdin, say\n"
              "COMMANDS['doctor'] = Command('raises', no_setup, handler)\n"
              f"sys.exit(app.main(['doctor', '-w', {str(tmp_path)!r}]))\n")
    r = subprocess.run([PYTHON, "-c", script], cwd=REPO, env=child_env(), capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stderr) == (2, f"cairn: {ErrorCode.IO_FAILED}: Broken pipe\n")


# -- a workspace that cannot be written -----------------------------------------------------------

_COMMANDS = [
    ["run", str(DEMO)], ["import", str(DEMO)], ["verify"], ["review"], ["process"], ["cleanup"], ["remember", "use pnpm"],
]


def _read_only(tmp_path: Path, commands: list[list[str]], *, before: tuple[list[str], ...] = ()) -> list[tuple[int, str]]:
    """Each of ``commands`` run in a workspace that cannot be written (after ``before`` ran in it while it
    could): a read-only file system (root: a tmpfs mounted read-only in a mount namespace of its own), else a
    folder without write permission. (exit status, stderr) each."""
    mount, ws, log = tmp_path / "mnt", tmp_path / "mnt" / "ws", tmp_path / "log"
    mount.mkdir()
    log.mkdir()
    env = child_env(HOME=str(tmp_path))

    def line(i: int, argv: list[str]) -> str:
        cmd = " ".join(shlex.quote(a) for a in [*CAIRN, *argv, "-w", str(ws)])
        return f"{cmd} >/dev/null 2>{log}/{i}.err; echo $? >{log}/{i}.rc"

    prep = "; ".join(f"{' '.join(shlex.quote(a) for a in [*CAIRN, *argv, '-w', str(ws)])} >/dev/null" for argv in before)
    runs = "; ".join(line(i, argv) for i, argv in enumerate(commands))
    if os.geteuid() == 0:
        if not shutil.which("unshare"):
            pytest.skip("root without unshare: no read-only file system to make")
        script = (f"mount -t tmpfs tmpfs {mount} && mkdir {ws} && {{ {prep or 'true'}; }} && "
                  f"mount -o remount,ro {mount} && {{ {runs}; }}")
        r = subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=REPO, env=env, capture_output=True, text=True,
                           timeout=600)
        if r.returncode != 0 and not list(log.glob("*.rc")):
            pytest.skip(f"no mount namespace here: {r.stderr[-200:]}")
    else:
        ws.mkdir()
        subprocess.run(["sh", "-c", prep or "true"], cwd=REPO, env=env, check=True, timeout=600)
        ws.chmod(0o555)
        for sub in ws.rglob("*"):
            if sub.is_dir():
                sub.chmod(0o555)
        try:
            subprocess.run(["sh", "-c", runs], cwd=REPO, env=env, timeout=600)
        finally:
            for sub in [ws, *ws.rglob("*")]:
                if sub.is_dir():
                    sub.chmod(0o755)
    return [(int((log / f"{i}.rc").read_text()), (log / f"{i}.err").read_text()) for i in range(len(commands))]


def test_a_read_only_workspace_names_the_folder_that_cannot_be_written(tmp_path: Path) -> None:
    ws = tmp_path / "mnt" / "ws"
    for (code, err), argv in zip(_read_only(tmp_path, _COMMANDS), _COMMANDS, strict=True):
        assert code == 2 and err.startswith(f"cairn: {ErrorCode.IO_FAILED}: "), (argv, code, err)
        assert err.count("\n") == 1 and f"cannot write in {ws}, where cairn keeps its private state" in err, (argv, err)


def test_a_read_only_workspace_with_state_names_the_state_folder(tmp_path: Path) -> None:
    state = tmp_path / "mnt" / "ws" / ".cairn" / "state"
    commands = [["run", str(DEMO)], ["cleanup"], ["process"], ["review"]]
    for (code, err), argv in zip(_read_only(tmp_path, commands, before=(["run", str(ALL_FORMATS["codex"])],)),
                                 commands, strict=True):
        assert code == 2 and err.startswith(f"cairn: {ErrorCode.IO_FAILED}: "), (argv, code, err)
        assert f"cannot write in {state}, where cairn keeps its private state (.cairn/state)" in err, (argv, err)


if sys.platform != "linux":  # a pipe without reader is POLLERR, a read-only tmpfs in a namespace: Linux
    pytestmark = pytest.mark.skip("Linux only")


def test_a_file_and_its_hard_link_are_read_once(tmp_path: Path) -> None:
    """Same file by device and inode: a hard link was read as a second file (its turns counted again)."""
    from cairn.server.cli import app

    (tmp_path / "s.jsonl").write_text("{}\n")
    os.link(tmp_path / "s.jsonl", tmp_path / "hard.jsonl")
    ns = argparse.Namespace(command="import", paths=[str(tmp_path / "s.jsonl"), str(tmp_path / "hard.jsonl")])
    app._same_file_once(ns)
    assert ns.paths == [str(tmp_path / "s.jsonl")]
