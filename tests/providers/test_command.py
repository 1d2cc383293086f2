"""The ``command`` provider: digests and reviews through a local program (a fake assistant CLI here)."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import trio
from cairn.protocol.digest import DigestInput, ModelPolicy
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.worker.providers import command, openai_compat

from tests.journal.helpers import ALL_FORMATS, DEMO, cairn, cairn_json
from tests.providers.fake_command import GRANDCHILD_MARK, STDERR_SECRET
from tests.providers.sessions import turn

FAKE = Path(__file__).with_name("fake_command.py")
EVIDENCE_SECRET = "ghp_" + "Ab1Cd2Ef3G" * 4
INP = DigestInput(session_id="s", title="Commits", turns=(
    turn("t1", f"I prefer small commits. The token is {EVIDENCE_SECRET}."),
    turn("t2", "Please run the tests."),
))


def argv(mode: str, where: Path) -> tuple[str, ...]:
    return (sys.executable, str(FAKE), mode, str(where))


def policy(**changes: object) -> ModelPolicy:
    return ModelPolicy(**{"provider": "command", "timeout_seconds": 30.0, **changes})  # type: ignore[arg-type]


def user_config(home: Path, mode: str, where: Path, extra: str = "") -> None:
    (home / "cairn").mkdir(exist_ok=True)
    (home / "cairn/config.toml").write_text(
        f'provider = "command"\ncommand = {json.dumps(list(argv(mode, where)))}\n{extra}')


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs once a SIGKILL sent to it has had time to land (zombies have exited)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return False
    try:
        readable, _, _ = select.select([fd], [], [], 10.0)  # readable once the process has exited
        return not readable
    finally:
        os.close(fd)


async def digest(mode: str, where: Path, **changes: object) -> object:
    return await openai_compat.digest(INP, policy(**changes), api_key="never-sent", command=argv(mode, where))


def grandchild(where: Path) -> int:
    return int((where / "grandchild").read_text())


def until(condition: object, seconds: float = 30.0) -> bool:
    """Whether ``condition()`` became true within ``seconds`` (polled; never a fixed wait as synchronisation)."""
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.fixture
def leftovers(tmp_path: Path) -> Iterator[Path]:
    """``tmp_path`` for a ``detach`` run; a grandchild still running afterwards (a failed test) is killed."""
    yield tmp_path
    try:
        leftover = psutil.Process(grandchild(tmp_path))
        if GRANDCHILD_MARK in leftover.cmdline():
            leftover.kill()
    except (OSError, ValueError, psutil.Error):
        pass  # never started, or gone as it should be


@pytest.mark.trio
async def test_prompt_on_stdin_reply_in_a_fence_on_stdout(tmp_path: Path) -> None:
    out = await digest("answer", tmp_path)
    (note,) = out.notes  # type: ignore[attr-defined]
    assert note.title == "Prefers small commits" and note.turn_ids == ("t1",)
    prompt = (tmp_path / "prompt-0.txt").read_text()
    assert prompt.startswith(openai_compat.SYSTEM_PROMPT.rstrip()) and '"turn_id": "t1"' in prompt
    assert EVIDENCE_SECRET not in prompt and "never-sent" not in prompt  # redacted; no key for a command


@pytest.mark.trio
async def test_prose_around_the_json_is_an_invalid_reply(tmp_path: Path) -> None:
    with pytest.raises(CairnError) as err:
        await digest("prose", tmp_path)
    assert err.value.code is ErrorCode.PROVIDER_INVALID_REPLY and "Sure" not in err.value.message


def test_unfence_accepts_one_enclosing_fence_only() -> None:
    assert command.unfence('  {"notes": []}\n') == '{"notes": []}'
    assert command.unfence('```json\n{"notes": []}\n```') == '{"notes": []}'
    assert command.unfence('```\n{"notes": []}\n```\n') == '{"notes": []}'
    assert command.unfence('text\n```json\n{"notes": []}\n```') == 'text\n```json\n{"notes": []}\n```'


@pytest.mark.trio
async def test_non_zero_exit_is_provider_failed_without_stderr(tmp_path: Path) -> None:
    with pytest.raises(CairnError) as err:
        await digest("fail", tmp_path)
    assert err.value.code is ErrorCode.PROVIDER_FAILED
    assert "exited with status 3" in err.value.message and err.value.detail["status"] == 3
    assert STDERR_SECRET not in str(err.value) and STDERR_SECRET not in repr(err.value.detail)


@pytest.mark.trio
async def test_a_missing_program_is_named(tmp_path: Path) -> None:
    with pytest.raises(CairnError) as err:
        await openai_compat.digest(INP, policy(), api_key=None, command=("no-such-assistant-cli", "-p"))
    assert err.value.code is ErrorCode.PROVIDER_FAILED and "'no-such-assistant-cli' was not found" in err.value.message
    with pytest.raises(CairnError) as err:
        await openai_compat.digest(INP, policy(), api_key=None, command=())
    assert err.value.code is ErrorCode.CONFIG_INVALID


@pytest.mark.trio
async def test_payload_over_the_bound_never_starts_the_program(tmp_path: Path) -> None:
    with pytest.raises(CairnError) as err:
        await digest("answer", tmp_path, max_payload_bytes=100)
    assert err.value.code is ErrorCode.PAYLOAD_TOO_LARGE
    assert not list(tmp_path.glob("prompt-*"))


@pytest.mark.trio
async def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    with pytest.raises(CairnError) as err:
        await digest("hang", tmp_path, timeout_seconds=1.0)
    assert err.value.code is ErrorCode.PROVIDER_TIMEOUT
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    assert len(pids) == 2 and not any(alive(p) for p in pids)


@pytest.mark.trio
async def test_cancellation_kills_the_whole_process_group(tmp_path: Path) -> None:
    with trio.move_on_after(1.0) as scope:
        await digest("hang", tmp_path)  # its own timeout is 30 s: the surrounding scope cancels it
    assert scope.cancelled_caught
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    assert not any(alive(p) for p in pids)


def test_digest_and_review_end_to_end(workspace: Path, user_config_home: Path, tmp_path: Path) -> None:
    user_config(user_config_home, "answer", tmp_path)
    r = cairn(workspace, "run", str(DEMO))
    assert "E_" not in r.stderr, r.stderr
    (digest_json,) = cairn_json(workspace, "journal")
    assert digest_json["provider"] == "command"
    assert len(list(tmp_path.glob("prompt-*"))) == 2  # the digest, then the review
    rows = cairn_json(workspace, "proposals")
    assert [(row["kind"], row["target"]) for row in rows] == [("create", ".agents/memory/commit-style.md")]
    (record,) = (workspace / ".cairn/journal/reviews").glob("*.json")
    assert json.loads(record.read_text())["provider"] == "command"


def test_failures_keep_stderr_out_of_every_record(workspace: Path, user_config_home: Path, tmp_path: Path) -> None:
    user_config(user_config_home, "fail", tmp_path)
    r = cairn(workspace, "run", str(DEMO), check=False)
    assert r.returncode == 1 and "failed 1" in r.stdout, (r.stdout, r.stderr)
    assert STDERR_SECRET not in r.stdout + r.stderr
    for root, _, files in os.walk(workspace / ".cairn"):
        for name in files:
            assert STDERR_SECRET.encode() not in Path(root, name).read_bytes(), name


def test_a_hanging_command_times_out_by_the_setting(workspace: Path, user_config_home: Path, tmp_path: Path) -> None:
    user_config(user_config_home, "hang", tmp_path, extra="timeout_seconds = 1\n")
    r = cairn(workspace, "run", str(DEMO), check=False)
    assert "failed 1" in r.stdout, (r.stdout, r.stderr)
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    assert not any(alive(p) for p in pids)


def test_an_untrusted_workspace_cannot_run_a_command(workspace: Path, tmp_path: Path) -> None:
    (workspace / ".cairn").mkdir()
    (workspace / ".cairn/config.toml").write_text(
        f'provider = "command"\ncommand = {json.dumps(list(argv("answer", tmp_path)))}\n')
    r = cairn(workspace, "run", str(DEMO))
    assert not list(tmp_path.glob("prompt-*"))  # never started
    assert r.stderr.count("E_WORKSPACE_UNTRUSTED") == 1 and "provider, command" in r.stderr, r.stderr
    (digest_json,) = cairn_json(workspace, "journal")
    assert digest_json["provider"] == "extractive"
    cairn(workspace, "trust")  # trusted: a new capture is digested through the workspace's command
    r = cairn(workspace, "run", str(ALL_FORMATS["codex"]))
    assert "E_WORKSPACE_UNTRUSTED" not in r.stderr
    assert list(tmp_path.glob("prompt-*"))


@pytest.mark.trio
async def test_output_over_the_bound_is_an_invalid_reply_not_an_exception_group(tmp_path: Path) -> None:
    with pytest.raises(CairnError) as err:  # a CairnError itself: trio's nursery must not wrap it
        await digest("flood", tmp_path)
    assert err.value.code is ErrorCode.PROVIDER_INVALID_REPLY and "exceeds 4194304 bytes" in err.value.message


@pytest.mark.trio
async def test_a_detached_grandchild_is_gone_once_the_program_has_answered(leftovers: Path) -> None:
    out = await digest("detach", leftovers)
    assert [note.turn_ids for note in out.notes] == [("t1",)]  # type: ignore[attr-defined]
    assert not psutil.pid_exists(grandchild(leftovers))  # killed and reaped: not even a zombie


@pytest.mark.trio
async def test_a_detached_grandchild_is_gone_after_a_timeout(leftovers: Path) -> None:
    with pytest.raises(CairnError) as err:
        await digest("detach-hang", leftovers, timeout_seconds=2.0)
    assert err.value.code is ErrorCode.PROVIDER_TIMEOUT
    assert not psutil.pid_exists(grandchild(leftovers))


@pytest.mark.trio
async def test_a_detached_grandchild_is_gone_after_cancellation(leftovers: Path) -> None:
    with trio.move_on_after(2.0) as scope:
        await digest("detach-hang", leftovers)
    assert scope.cancelled_caught
    assert not psutil.pid_exists(grandchild(leftovers))


def test_a_detached_grandchild_is_gone_when_cairn_dies(leftovers: Path) -> None:
    run = ("import sys, trio; from cairn.worker.providers import command; "
           "from cairn.protocol.digest import ModelPolicy; "
           "trio.run(command.run, sys.argv[1:], b'prompt', ModelPolicy(provider='command', timeout_seconds=600.0))")
    worker = subprocess.Popen([sys.executable, "-c", run, *argv("detach-hang", leftovers)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert until(lambda: (leftovers / "grandchild").exists())
        os.kill(worker.pid, signal.SIGKILL)  # no cleanup of its own: the supervisor's parent is gone
        assert worker.wait(timeout=30) == -signal.SIGKILL
        assert until(lambda: not psutil.pid_exists(grandchild(leftovers)))
    finally:
        worker.kill()
        worker.wait(timeout=30)


def test_output_over_the_bound_is_a_counted_failed_attempt(workspace: Path, user_config_home: Path,
                                                           tmp_path: Path) -> None:
    user_config(user_config_home, "flood", tmp_path)
    cairn(workspace, "import", str(DEMO))
    cairn(workspace, "seal")
    for attempt in (1, 2):
        r = cairn(workspace, "process", check=False)
        assert r.returncode == 1 and "E_INTERNAL" not in r.stdout + r.stderr, (r.stdout, r.stderr)
        (line,) = [ln for ln in r.stdout.splitlines() if "E_PROVIDER_INVALID_REPLY" in ln]
        assert f"attempt {attempt}/3 failed" in line, r.stdout
