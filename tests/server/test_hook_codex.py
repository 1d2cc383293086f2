"""Codex's ``notify``: ``cairn hook codex PAYLOAD`` after each turn, and ``cairn agents hooks codex --user``.

Codex runs its ``notify`` program after every turn with the turn's JSON as
the last argument (no stdin). Each test runs ``cairn`` as its own process,
the payload passed as Codex passes it, with a Codex rollout (the fixture
``rollout-2025-07-14T16-00-00-…jsonl``, current layout, three turns closed
by ``task_complete`` and a fourth still open) in a Codex store under a
temporary home. A bad payload never fails Codex (exit 0), says its fixed
code on stderr and writes nothing; the turn's capture comes with no seal.
"""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
from cairn.protocol import codec
from cairn.protocol.journal import Seal

from tests.journal.helpers import J, batches, cairn
from tests.support import PYTHON, child_env
from tests.support.transcripts import FIXTURES

THREAD = "0197a3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b"
ROLLOUT = FIXTURES / "codex" / f"rollout-2025-07-14T16-00-00-{THREAD}.jsonl"
FIRST_TURN_LINES = 12  # the file up to its first `task_complete`


def _home(tmp_path: Path, lines: int | None = None) -> tuple[Path, Path]:
    """A home whose Codex store holds the rollout (its first ``lines`` lines): (home, rollout)."""
    home = tmp_path / "home"
    day = home / ".codex" / "sessions" / "2025" / "07" / "14"
    day.mkdir(parents=True)
    path = day / ROLLOUT.name
    path.write_bytes(b"".join(_rollout(tmp_path / "ws").splitlines(keepends=True)[:lines]))
    return home, path


def _rollout(cwd: Path) -> bytes:
    """The fixture rollout, its session recorded in ``cwd`` (the hook imports a session only into the workspace
    it belongs to; ``_home`` records the ``workspace`` fixture's folder)."""
    return ROLLOUT.read_bytes().replace(b"/home/dana/src/cairn-demo", str(cwd).encode())


def _payload(cwd: Path, thread: str = THREAD, **extra: Any) -> str:
    return json.dumps({"type": "agent-turn-complete", "thread-id": thread, "turn-id": "7", "cwd": str(cwd),
                       "input-messages": ["Replace the bare except in src/app.py."],
                       "last-assistant-message": "Done.", **extra})


def _notify(home: Path, *argv: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """``cairn hook codex ARGV`` as Codex runs its notify program: stdin closed, the payload last."""
    env = child_env(HOME=str(home))
    env.pop("CODEX_HOME", None)
    return subprocess.run([PYTHON, "-m", "cairn.server", "hook", "codex", *argv], stdin=subprocess.DEVNULL,
                          cwd=cwd, env=env, capture_output=True, timeout=120)


def _turns(ws: Path) -> list[str]:
    caps = ws / J / "captures"
    return [t for c in sorted(caps.iterdir()) for b in batches(c) for t in b.turn_ids] if caps.exists() else []


def _seals(ws: Path) -> list[Seal]:
    caps = ws / J / "captures"
    return [codec.decode((c / "seal").read_bytes(), Seal) for c in caps.iterdir() if (c / "seal").exists()] \
        if caps.exists() else []


def test_each_completed_turn_is_captured_as_it_completes_and_nothing_is_sealed(
        workspace: Path, tmp_path: Path) -> None:
    home, rollout = _home(tmp_path, FIRST_TURN_LINES)
    elsewhere = tmp_path / "launched-here"  # Codex's own folder: the workspace is the payload's cwd
    elsewhere.mkdir()
    r = _notify(home, _payload(workspace), cwd=elsewhere)
    assert (r.returncode, r.stderr) == (0, b"")
    assert len(_turns(workspace)) == 1 and _seals(workspace) == []
    assert not (elsewhere / ".cairn").exists()
    # the session goes on: three more turns written, two closed by `task_complete`, the last one still open
    with rollout.open("ab") as f:
        f.write(b"".join(_rollout(workspace).splitlines(keepends=True)[FIRST_TURN_LINES:]))
    r = _notify(home, "--json", _payload(workspace), cwd=elsewhere)  # an option before the payload, as a
    assert (r.returncode, r.stderr) == (0, b"")                        # notify line with options gives it
    done = json.loads(r.stdout)
    assert (done["captured"], done["sessions"], done["sealed"], done["trigger"]) == (2, [THREAD], [], None)
    assert len(_turns(workspace)) == 3 and _seals(workspace) == []  # the open turn waits; no seal
    again = _notify(home, _payload(workspace), cwd=elsewhere)
    assert again.returncode == 0 and len(_turns(workspace)) == 3  # idempotent


def _refused(ws: Path, home: Path, argv: list[str], code: str) -> None:
    r = _notify(home, *argv, cwd=ws)
    assert r.returncode == 0
    assert r.stderr.decode().startswith(f"cairn: hook: {code}: ") and b"Traceback" not in r.stderr, r.stderr
    assert r.stdout == b""
    assert not (ws / ".cairn").exists()  # nothing written


@pytest.mark.parametrize("argv", [[], ["not json"], ["[1, 2]"], ['{"thread-id": "x"}'],
                                  [json.dumps({"type": "approval-requested", "thread-id": THREAD})],
                                  ['{"type": "agent-turn-complete"}'],
                                  ['{"type": "agent-turn-complete", "thread-id": "../../etc/passwd"}'],
                                  ['{"type": "agent-turn-complete", "thread-id": "*"}'],
                                  [json.dumps({"type": "agent-turn-complete", "thread-id": THREAD, "cwd": "rel"})],
                                  [json.dumps({"type": "agent-turn-complete", "thread-id": THREAD, "cwd": "/no/such"})],
                                  [os.fsdecode(b"\xff\xfe")]],
                         ids=["none", "text", "array", "no-type", "other-type", "no-thread", "path-thread",
                              "glob-thread", "relative-cwd", "missing-cwd", "not-utf8"])
def test_a_malformed_payload_exits_0_with_its_code_and_writes_nothing(
        workspace: Path, tmp_path: Path, argv: list[str]) -> None:
    home, _ = _home(tmp_path)
    _refused(workspace, home, argv, "E_HOOK_PAYLOAD_INVALID")


def test_a_rollout_is_never_imported_into_a_folder_its_session_does_not_belong_to(
        workspace: Path, tmp_path: Path) -> None:
    """A payload ``cwd`` naming another folder than the rollout's own ``cwd``: it was imported there."""
    home, _ = _home(tmp_path, FIRST_TURN_LINES)
    victim = tmp_path / "victim"
    victim.mkdir()
    for argv in ([_payload(victim)], ["-w", str(victim), _payload(workspace)]):
        r = _notify(home, *argv, cwd=workspace)
        assert (r.returncode, r.stdout) == (0, b"") and b"Traceback" not in r.stderr
        assert r.stderr.decode().startswith("cairn: hook: E_HOOK_TRANSCRIPT_OUTSIDE: "), r.stderr
    assert not (victim / ".cairn").exists() and not (workspace / ".cairn").exists()


def test_the_home_folder_is_never_the_notify_workspace(tmp_path: Path) -> None:
    """Codex started in ~: its notify made ~/.cairn."""
    home = tmp_path / "home"
    day = home / ".codex" / "sessions" / "2025" / "07" / "14"
    day.mkdir(parents=True)
    (day / ROLLOUT.name).write_bytes(_rollout(home))
    r = _notify(home, _payload(home), cwd=home)
    assert (r.returncode, r.stdout) == (0, b"") and b"Traceback" not in r.stderr
    assert r.stderr.decode().startswith("cairn: hook: E_WORKSPACE_INVALID: "), r.stderr
    assert not (home / ".cairn").exists()


def test_a_thread_with_no_rollout_is_not_found(workspace: Path, tmp_path: Path) -> None:
    home, _ = _home(tmp_path)
    _refused(workspace, home, [_payload(workspace, thread="0197a3c4-0000-7000-8000-000000000000")], "E_NOT_FOUND")


def test_a_rollout_that_is_a_link_or_a_fifo_is_never_read(workspace: Path, tmp_path: Path) -> None:
    home, rollout = _home(tmp_path)
    elsewhere = tmp_path / "elsewhere.jsonl"
    rollout.rename(elsewhere)
    rollout.symlink_to(elsewhere)  # the store's file is a link to a file outside it
    _refused(workspace, home, [_payload(workspace)], "E_PATH_SYMLINK")
    rollout.unlink()
    os.mkfifo(rollout)  # a FIFO: refused from its type, never opened (no writer: opening would block)
    _refused(workspace, home, [_payload(workspace)], "E_PATH_NOT_REGULAR")


def test_a_day_folder_that_links_outside_the_store_is_never_followed_out(workspace: Path, tmp_path: Path) -> None:
    home, rollout = _home(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    rollout.rename(outside / rollout.name)
    day = rollout.parent
    day.rmdir()
    day.symlink_to(outside)  # not walked: a link
    _refused(workspace, home, [_payload(workspace)], "E_NOT_FOUND")
    # the day the thread id's time names (UUIDv7: 2025-06-24 UTC, looked up directly): reached, then refused
    for name in ("23", "24", "25"):
        hinted = day.parent.parent / "06" / name
        hinted.parent.mkdir(exist_ok=True)
        hinted.symlink_to(outside)
    _refused(workspace, home, [_payload(workspace)], "E_HOOK_TRANSCRIPT_OUTSIDE")


def test_a_payload_argument_for_a_stdin_agent_is_refused(workspace: Path, tmp_path: Path) -> None:
    env = child_env(HOME=str(tmp_path))
    r = subprocess.run([PYTHON, "-m", "cairn.server", "hook", "claude-code", _payload(workspace)],
                       stdin=subprocess.DEVNULL, cwd=workspace, env=env, capture_output=True, timeout=120)
    assert r.returncode == 0 and r.stderr.decode().startswith("cairn: hook: E_USAGE: ")
    assert not (workspace / ".cairn").exists()


# ---- cairn agents hooks codex --user

CONFIG = b'model = "gpt-5-codex"\r\n\r\n[mcp_servers.cairn]\r\ncommand = "cairn"\r\nargs = ["mcp"]\r\n'


def _env(tmp_path: Path) -> dict[str, str]:
    # this cairn on PATH (an activated venv): the notify line names `cairn` (docs/agents.md, *Hooks*)
    return {"HOME": str(tmp_path / "home"), "CODEX_HOME": "", "CLAUDE_CONFIG_DIR": "", "GEMINI_CLI_HOME": "",
            "PATH": f"{Path(PYTHON).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def _json(ws: Path, env: dict[str, str], *argv: str) -> Any:
    return json.loads(cairn(ws, *argv, "--json", env=env).stdout)


def _codex_row(ws: Path, env: dict[str, str]) -> dict[str, Any]:
    return next(r for r in _json(ws, env, "agents") if r["agent"] == "codex")


def test_notify_is_a_proposal_in_the_users_config_and_undo_restores_it_byte_for_byte(
        workspace: Path, tmp_path: Path) -> None:
    env = _env(tmp_path)
    (workspace / "AGENTS.md").write_text("# Rules\n")  # Codex in use
    config = tmp_path / "home" / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_bytes(CONFIG)
    assert _codex_row(workspace, env)["hooks"] is False
    made = _json(workspace, env, "agents", "hooks", "codex", "--user")
    assert (made["target"], made["command"]) == (str(config), "cairn hook codex")
    assert config.read_bytes() == CONFIG, "a proposal only"
    pid = made["proposal"]["id"]
    cairn(workspace, "accept", pid, env=env)
    after = config.read_bytes()
    data = tomllib.loads(after.decode())
    assert data["notify"] == ["cairn", "hook", "codex"], "a top-level key: before the first table"
    assert data["mcp_servers"] == {"cairn": {"command": "cairn", "args": ["mcp"]}} and data["model"] == "gpt-5-codex"
    assert b"\n" not in after.replace(b"\r\n", b""), "CRLF kept"
    assert _codex_row(workspace, env)["hooks"] is True
    assert _json(workspace, env, "agents", "hooks", "codex", "--user")["proposal"] is None  # recognised
    cairn(workspace, "undo", pid, env=env)
    assert config.read_bytes() == CONFIG
    assert _codex_row(workspace, env)["hooks"] is False


def test_a_missing_config_is_created_and_undo_removes_it(workspace: Path, tmp_path: Path) -> None:
    env = _env(tmp_path)
    config = tmp_path / "home" / ".codex" / "config.toml"
    pid = _json(workspace, env, "agents", "hooks", "codex", "--user")["proposal"]["id"]
    assert not config.exists()
    cairn(workspace, "accept", pid, env=env)
    assert config.read_bytes() == b'notify = ["cairn", "hook", "codex"]\n'
    cairn(workspace, "undo", pid, env=env)
    assert not config.exists()


def test_another_notify_program_is_never_replaced_and_the_refusal_says_how_to_chain(
        workspace: Path, tmp_path: Path) -> None:
    env = _env(tmp_path)
    config = tmp_path / "home" / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    before = b'notify = ["notify-send", "Codex"]\n'
    config.write_bytes(before)
    r = cairn(workspace, "agents", "hooks", "codex", "--user", env=env, check=False)
    assert r.returncode != 0 and r.stderr.startswith("cairn: E_HOOK_NOTIFY_TAKEN: "), r.stderr
    assert "notify-send Codex" in r.stderr
    chain = r.stderr.split("replace that line with: ", 1)[1].strip()
    assert tomllib.loads(chain)["notify"] == ["sh", "-c", 'cairn hook codex "$1" & exec notify-send Codex "$1"', "sh"]
    assert config.read_bytes() == before
    assert not (workspace / ".cairn" / "state" / "memory" / "proposals").exists()
    config.write_text(chain + "\n")  # chained by hand: recognised as running cairn
    assert _json(workspace, env, "agents", "hooks", "codex", "--user")["proposal"] is None


def test_the_projects_config_is_refused_as_codex_ignores_notify_there(workspace: Path, tmp_path: Path) -> None:
    env = _env(tmp_path)
    r = cairn(workspace, "agents", "hooks", "codex", env=env, check=False)
    assert r.returncode != 0 and r.stderr.startswith("cairn: E_USAGE: ") and "--user" in r.stderr
    assert not (workspace / ".codex").exists()
    (workspace / "AGENTS.md").write_text("# Rules\n")
    (workspace / ".codex").mkdir()
    (workspace / ".codex" / "config.toml").write_text('notify = ["cairn", "hook", "codex"]\n')
    assert _codex_row(workspace, env)["hooks"] is False  # Codex would not run it
