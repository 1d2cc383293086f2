"""``cairn agents hooks AGENT --user``: the hooks proposed in the user's own settings, under a temporary home.

The proposal carries the file's exact before-state; accepting writes the
hooks, undo restores the file byte for byte (a CRLF file stays CRLF). A link,
a FIFO or a file over 1 MiB where the user's settings belong is refused with
its fixed code and nothing is proposed or written.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.journal.helpers import cairn

SETTINGS = b'{\r\n  "model": "opus",\r\n  "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}\r\n}\r\n'


def _env(tmp_path: Path) -> dict[str, str]:
    # relocation variables emptied: the user files are the temporary home's
    return {"HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": "", "GEMINI_CLI_HOME": ""}


def _json(ws: Path, env: dict[str, str], *argv: str) -> Any:
    return json.loads(cairn(ws, *argv, "--json", env=env).stdout)


@pytest.mark.parametrize("agent,rel,events", [("claude-code", ".claude/settings.json", ("SessionEnd", "PreCompact")),
                                              ("gemini-cli", ".gemini/settings.json", ("SessionEnd", "PreCompress"))])
def test_user_hooks_are_a_proposal_and_undo_restores_the_file_byte_for_byte(
        workspace: Path, tmp_path: Path, agent: str, rel: str, events: tuple[str, ...]) -> None:
    env = _env(tmp_path)
    settings = tmp_path / "home" / rel
    settings.parent.mkdir(parents=True)
    settings.write_bytes(SETTINGS)
    made = _json(workspace, env, "agents", "hooks", agent, "--user")
    assert made["target"] == str(settings)
    assert settings.read_bytes() == SETTINGS, "a proposal only"
    pid = made["proposal"]["id"]
    cairn(workspace, "accept", pid, env=env)
    after = settings.read_bytes()
    data = json.loads(after)
    assert data["model"] == "opus" and data["hooks"]["Stop"]
    assert all(json.dumps(data["hooks"][e]).count(f"cairn hook {agent}") == 1 for e in events)
    assert b"\r\n" in after and b"\n" not in after.replace(b"\r\n", b"")
    assert not (workspace / rel).exists(), "the workspace's settings are untouched"
    assert _json(workspace, env, "agents", "hooks", agent, "--user")["proposal"] is None  # recognised
    cairn(workspace, "undo", pid, env=env)
    assert settings.read_bytes() == SETTINGS


def test_user_settings_that_do_not_exist_are_created_and_undo_removes_them(workspace: Path, tmp_path: Path) -> None:
    env = _env(tmp_path)
    settings = tmp_path / "home" / ".claude" / "settings.json"
    pid = _json(workspace, env, "agents", "hooks", "claude-code", "--user")["proposal"]["id"]
    assert not settings.exists()
    cairn(workspace, "accept", pid, env=env)
    assert set(json.loads(settings.read_text())["hooks"]) == {"SessionEnd", "PreCompact"}
    cairn(workspace, "undo", pid, env=env)
    assert not settings.exists()


@pytest.mark.parametrize("kind,code", [("symlink", "E_PATH_SYMLINK"), ("fifo", "E_PATH_NOT_REGULAR"),
                                       ("large", "E_RECORD_TOO_LARGE")])
def test_a_link_fifo_or_too_large_user_file_is_refused_and_nothing_is_written(
        workspace: Path, tmp_path: Path, kind: str, code: str) -> None:
    env = _env(tmp_path)
    settings = tmp_path / "home" / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    real = tmp_path / "dotfiles.json"
    real.write_bytes(SETTINGS)
    if kind == "symlink":
        settings.symlink_to(real)
    elif kind == "fifo":
        os.mkfifo(settings)
    else:
        settings.write_bytes(b'{"a": "' + b"x" * (1 << 20) + b'"}')
    before = settings.lstat()
    r = cairn(workspace, "agents", "hooks", "gemini-cli", "--user", env=env, check=False)
    assert r.returncode != 0 and code in r.stderr and "Traceback" not in r.stderr, r.stderr
    after = settings.lstat()
    assert (after.st_mode, after.st_size, after.st_mtime_ns) == (before.st_mode, before.st_size, before.st_mtime_ns)
    assert real.read_bytes() == SETTINGS
    listed = cairn(workspace, "proposals", "--json", env=env).stdout
    assert "gemini" not in listed, "nothing was proposed"


def test_user_and_file_together_are_a_usage_error(workspace: Path, tmp_path: Path) -> None:
    r = cairn(workspace, "agents", "hooks", "claude-code", "--user", "--file", ".claude/settings.json",
              env=_env(tmp_path), check=False)
    assert r.returncode != 0 and "E_USAGE" in r.stderr


def test_the_users_own_tokens_and_file_mode_survive_accept_and_undo(workspace: Path, tmp_path: Path) -> None:
    """A tester's: accepting the hooks replaced the user's real tokens in their settings with [REDACTED:…]
    (cairn show did not show it), and accept and undo left a 0600 settings file world-readable (0644)."""
    env = _env(tmp_path)
    settings = tmp_path / "home" / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    token = "ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5"
    own = json.dumps({"env": {"GITHUB_PERSONAL_ACCESS_TOKEN": token}, "model": "opus"}, indent=2).encode() + b"\n"
    settings.write_bytes(own)
    settings.chmod(0o600)
    pid = _json(workspace, env, "agents", "hooks", "claude-code", "--user")["proposal"]["id"]
    cairn(workspace, "accept", pid, env=env)
    data = json.loads(settings.read_bytes())
    assert data["env"]["GITHUB_PERSONAL_ACCESS_TOKEN"] == token and "SessionEnd" in data["hooks"]
    assert oct(settings.stat().st_mode & 0o777) == "0o600"
    cairn(workspace, "undo", pid, env=env)
    assert settings.read_bytes() == own and oct(settings.stat().st_mode & 0o777) == "0o600"
