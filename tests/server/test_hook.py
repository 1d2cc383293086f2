"""``cairn hook AGENT``: a coding agent's session hook imports the transcript's new turns and seals the session.

Each test runs ``cairn hook`` as its own process, fed the payload on stdin as
the agent feeds it, with a real Claude Code transcript in a Claude Code
store under a temporary home. A bad payload never fails the agent (exit 0),
says its fixed code on stderr and writes nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cairn.protocol import codec
from cairn.protocol.journal import Seal

from tests.journal.helpers import J, batches, cairn
from tests.support import PYTHON, child_env
from tests.support.transcripts import FIXTURES

REAL = FIXTURES / "claude-code" / "speakfree-ide-context.jsonl"  # one real turn, its reply the file's last line
SESSION = "7d48b15d-e2d0-4b94-a40b-621ba5e8485f"


def _store(tmp_path: Path) -> tuple[Path, Path]:
    """A home whose Claude Code store holds the real transcript: (home, transcript)."""
    home = tmp_path / "home"
    folder = home / ".claude" / "projects" / "-home-dana-src-speakfree"
    folder.mkdir(parents=True)
    path = folder / f"{SESSION}.jsonl"
    shutil.copyfile(REAL, path)
    return home, path


def _hook(ws: Path, home: Path, stdin: bytes, agent: str = "claude-code") -> subprocess.CompletedProcess[bytes]:
    env = child_env(HOME=str(home))
    env.pop("CLAUDE_CONFIG_DIR", None)
    return subprocess.run([PYTHON, "-m", "cairn.server", "hook", agent, "-w", str(ws)], input=stdin, cwd=ws,
                          env=env, capture_output=True, timeout=120)


def _payload(transcript: Path, ws: Path, event: str = "SessionEnd", **extra: Any) -> bytes:
    return json.dumps({"session_id": SESSION, "transcript_path": str(transcript), "cwd": str(ws),
                       "hook_event_name": event, **extra}).encode()


def _seals(ws: Path) -> list[Seal]:
    caps = ws / J / "captures"
    return [codec.decode((c / "seal").read_bytes(), Seal) for c in sorted(caps.iterdir()) if (c / "seal").exists()] \
        if caps.exists() else []


def _turns(ws: Path) -> list[str]:
    caps = ws / J / "captures"
    return [t for c in sorted(caps.iterdir()) for b in batches(c) for t in b.turn_ids] if caps.exists() else []


@pytest.mark.parametrize(("reason", "trigger"), [("prompt_input_exit", "session-end"), ("logout", "session-end"),
                                                 ("other", "session-end"), ("clear", "clear")])
def test_session_end_captures_every_turn_the_last_one_too_and_seals_with_the_reason(
        workspace: Path, tmp_path: Path, reason: str, trigger: str) -> None:
    home, transcript = _store(tmp_path)
    r = _hook(workspace, home, _payload(transcript, workspace, reason=reason))
    assert (r.returncode, r.stderr) == (0, b"")
    assert len(_turns(workspace)) == 1  # the session's only turn is its last, closed by nothing but the end
    (seal,) = _seals(workspace)
    assert (seal.session_id, str(seal.trigger), seal.turns) == (SESSION, trigger, 1)
    before = _tree(workspace)
    again = _hook(workspace, home, _payload(transcript, workspace, reason=reason))  # idempotent
    assert again.returncode == 0 and len(_turns(workspace)) == 1
    # and it writes nothing: no claim elected to find the capture sealed (a claim pair per repeated hook before)
    assert _tree(workspace) == before


def _tree(ws: Path) -> dict[str, tuple[int, bytes]]:
    """Every file and folder under ``.cairn/`` with its modification time and bytes."""
    return {str(p.relative_to(ws)): (p.stat().st_mtime_ns, p.read_bytes() if p.is_file() else b"")
            for p in sorted((ws / ".cairn").rglob("*"))}


@pytest.mark.parametrize("when", ["manual", "auto"])
def test_pre_compact_seals_as_compaction(workspace: Path, tmp_path: Path, when: str) -> None:
    home, transcript = _store(tmp_path)
    r = _hook(workspace, home, _payload(transcript, workspace, "PreCompact", trigger=when, custom_instructions=""))
    assert (r.returncode, r.stderr) == (0, b"")
    (seal,) = _seals(workspace)
    assert (seal.session_id, str(seal.trigger), seal.turns) == (SESSION, "compaction", 1)


def _refused(ws: Path, home: Path, stdin: bytes, code: str) -> None:
    r = _hook(ws, home, stdin)
    assert r.returncode == 0
    assert r.stderr.decode().startswith(f"cairn: hook: {code}: ") and b"Traceback" not in r.stderr
    assert r.stdout == b""
    assert not (ws / ".cairn").exists()  # nothing written


@pytest.mark.parametrize("stdin", [b"", b"not json", b"[1, 2]", b"{\"session_id\": 5}", b"\xff\xfe",
                                   b"{" + b" " * 70000 + b"}"])
def test_a_malformed_payload_exits_0_with_its_code_and_writes_nothing(workspace: Path, tmp_path: Path,
                                                                        stdin: bytes) -> None:
    home, _ = _store(tmp_path)
    _refused(workspace, home, stdin, "E_HOOK_PAYLOAD_INVALID")


def test_an_event_cairn_does_not_act_on_or_a_relative_path_is_refused(workspace: Path, tmp_path: Path) -> None:
    home, transcript = _store(tmp_path)
    _refused(workspace, home, _payload(transcript, workspace, "Stop"), "E_HOOK_PAYLOAD_INVALID")
    _refused(workspace, home, _payload(Path("projects") / transcript.name, workspace), "E_HOOK_PAYLOAD_INVALID")


def test_a_path_no_file_can_have_is_refused_with_its_code(workspace: Path, tmp_path: Path) -> None:
    """A lone surrogate in the path, a name over 255 bytes: they were E_INTERNAL ("report a bug")."""
    home, transcript = _store(tmp_path)
    odd = json.dumps({"session_id": SESSION, "transcript_path": str(transcript.parent) + "/x\ud800.jsonl",
                      "cwd": str(workspace), "hook_event_name": "SessionEnd"}).encode()
    _refused(workspace, home, odd, "E_HOOK_PAYLOAD_INVALID")
    _refused(workspace, home, _payload(transcript.parent / ("x" * 300 + ".jsonl"), workspace), "E_HOOK_PAYLOAD_INVALID")


def test_a_transcript_outside_the_store_and_the_workspace_is_not_read(workspace: Path, tmp_path: Path) -> None:
    home, transcript = _store(tmp_path)
    elsewhere = tmp_path / "elsewhere.jsonl"
    shutil.copyfile(transcript, elsewhere)
    _refused(workspace, home, _payload(elsewhere, workspace), "E_HOOK_TRANSCRIPT_OUTSIDE")
    # a link in the store to a file elsewhere is refused as a link, never followed
    link = transcript.parent / "link.jsonl"
    link.symlink_to(elsewhere)
    _refused(workspace, home, _payload(link, workspace), "E_PATH_SYMLINK")


def test_a_fifo_is_refused_without_blocking(workspace: Path, tmp_path: Path) -> None:
    home, transcript = _store(tmp_path)
    fifo = transcript.parent / "fifo.jsonl"
    os.mkfifo(fifo)
    _refused(workspace, home, _payload(fifo, workspace), "E_PATH_NOT_REGULAR")


def _json(ws: Path, env: dict[str, str], *argv: str) -> Any:
    return json.loads(cairn(ws, *argv, "--json", env=env).stdout)


SETTINGS = ('{\n  "permissions": {"allow": ["Bash(npm test)"]},\n  "hooks": {\n    "Stop": [{"hooks": [{"type": "command", '
            '"command": "notify-send done"}]}]\n  }\n}\n')


def test_agents_hooks_installs_the_hooks_keeping_the_file_and_undo_restores_it(workspace: Path, tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home")}
    (workspace / "CLAUDE.md").write_text("# Project\n")
    settings = workspace / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text(SETTINGS)
    before = settings.read_bytes()
    assert [r["hooks"] for r in _json(workspace, env, "agents")] == [False]
    made = _json(workspace, env, "agents", "hooks", "claude-code")
    pid = made["proposal"]["id"]
    assert settings.read_bytes() == before  # a proposal only
    cairn(workspace, "accept", pid, env=env)
    data = json.loads(settings.read_text())
    assert data["permissions"] == {"allow": ["Bash(npm test)"]}
    assert data["hooks"]["Stop"] == [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
    for event in ("SessionEnd", "PreCompact"):
        assert data["hooks"][event] == [{"hooks": [{"type": "command", "command": "cairn hook claude-code"}]}]
    assert [r["hooks"] for r in _json(workspace, env, "agents")] == [True]
    again = _json(workspace, env, "agents", "hooks", "claude-code")  # recognised: nothing more
    assert again["proposal"] is None
    cairn(workspace, "undo", pid, env=env)
    assert settings.read_bytes() == before


def test_agents_hooks_creates_the_local_settings_and_refuses_a_file_that_is_not_json(
        workspace: Path, tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home")}
    pid = _json(workspace, env, "agents", "hooks", "claude-code")["proposal"]["id"]
    cairn(workspace, "accept", pid, env=env)
    settings = workspace / ".claude" / "settings.local.json"
    assert set(json.loads(settings.read_text())["hooks"]) == {"SessionEnd", "PreCompact"}
    cairn(workspace, "undo", pid, env=env)
    assert not settings.exists()
    shared = workspace / ".claude" / "settings.json"
    shared.parent.mkdir(exist_ok=True)
    shared.write_text("{ not json")
    r = cairn(workspace, "agents", "hooks", "claude-code", "--file", ".claude/settings.json", env=env, check=False)
    assert r.returncode != 0 and "E_CONFIG_INVALID" in r.stderr and "Traceback" not in r.stderr
    assert shared.read_text() == "{ not json"
