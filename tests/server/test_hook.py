"""``cairn hook AGENT``: a coding agent's session hook imports the transcript's new turns and seals the session.

Each test runs ``cairn hook`` as its own process, fed the payload on stdin as
the agent feeds it, with a real Claude Code transcript in a Claude Code
store under a temporary home. A bad payload never fails the agent (exit 0),
says its fixed code on stderr and writes nothing.
"""

from __future__ import annotations

import hashlib
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


#: the folder the real transcript's session records as its own
RECORDED = b'"cwd":"/Users/mikemorgenstern/TIDR Dropbox/TIDR Team Folder/RG Collab Admin"'


def _store(tmp_path: Path, cwd: Path | None = None, project: str = "-home-dana-src-speakfree") -> tuple[Path, Path]:
    """A home whose Claude Code store holds the real transcript in folder ``project``, its session recorded in
    ``cwd`` (default: the ``workspace`` fixture's folder): (home, transcript)."""
    home = tmp_path / "home"
    folder = home / ".claude" / "projects" / project
    folder.mkdir(parents=True)
    path = folder / f"{SESSION}.jsonl"
    raw = REAL.read_bytes()
    assert RECORDED in raw
    path.write_bytes(raw.replace(RECORDED, b'"cwd":' + json.dumps(str(cwd or tmp_path / "ws")).encode()))
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


def _as_agent(run_in: Path, home: Path, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    """``cairn hook claude-code`` as the agent runs it: no ``-w``, in the folder ``run_in``."""
    env = child_env(HOME=str(home))
    env.pop("CLAUDE_CONFIG_DIR", None)
    return subprocess.run([PYTHON, "-m", "cairn.server", "hook", "claude-code"], input=stdin, cwd=run_in, env=env,
                          capture_output=True, timeout=120)


def _one_line(r: subprocess.CompletedProcess[bytes], code: str) -> None:
    assert r.returncode == 0 and r.stdout == b"" and b"Traceback" not in r.stderr
    assert r.stderr.decode().startswith(f"cairn: hook: {code}: ") and r.stderr.count(b"\n") == 1, r.stderr


def test_the_workspace_is_the_payloads_cwd_not_the_folder_the_hook_runs_in(workspace: Path, tmp_path: Path) -> None:
    """Run from another folder, the session was captured into that folder's .cairn, not its own project's."""
    home, transcript = _store(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    r = _as_agent(other, home, _payload(transcript, workspace))
    assert (r.returncode, r.stderr) == (0, b"")
    assert len(_turns(workspace)) == 1 and len(_seals(workspace)) == 1
    assert not (other / ".cairn").exists()


def test_a_session_is_never_imported_into_a_folder_it_does_not_belong_to(workspace: Path, tmp_path: Path) -> None:
    """A payload whose cwd is another folder than the one the session records: refused, nothing written."""
    home, transcript = _store(tmp_path)
    victim = tmp_path / "victim"
    victim.mkdir()
    for run_in, argv in ((victim, []), (workspace, ["-w", str(victim)])):
        env = child_env(HOME=str(home))
        env.pop("CLAUDE_CONFIG_DIR", None)
        r = subprocess.run([PYTHON, "-m", "cairn.server", "hook", "claude-code", *argv],
                           input=_payload(transcript, victim), cwd=run_in, env=env, capture_output=True, timeout=120)
        _one_line(r, "E_HOOK_TRANSCRIPT_OUTSIDE")
    assert not (victim / ".cairn").exists() and not (workspace / ".cairn").exists()


def test_a_payload_cwd_inside_the_sessions_folder_imports_into_the_sessions_folder(
        workspace: Path, tmp_path: Path) -> None:
    """The agent moved into a subfolder of the folder it started in: the session is its starting folder's."""
    home, transcript = _store(tmp_path)
    sub = workspace / "src"
    sub.mkdir()
    r = _as_agent(sub, home, _payload(transcript, sub))
    assert (r.returncode, r.stderr) == (0, b"")
    assert len(_turns(workspace)) == 1 and not (sub / ".cairn").exists()


def test_the_root_or_the_home_folder_is_never_a_hooks_workspace(tmp_path: Path) -> None:
    """An agent started in ~ (a user-level hook) or at /: its hook created ~/.cairn or /.cairn."""
    home = tmp_path / "home"
    root_had = os.path.lexists("/.cairn")
    for folder, project in ((home, "-home"), (Path("/"), "-")):
        _, transcript = _store(tmp_path, cwd=folder, project=project)
        r = _as_agent(folder, home, _payload(transcript, folder))
        _one_line(r, "E_WORKSPACE_INVALID")
        assert "file system root or the home folder" in r.stderr.decode()
    assert not (home / ".cairn").exists() and os.path.lexists("/.cairn") == root_had
    # a hook run there for a project's session still imports into the project
    ws = home / "proj"
    ws.mkdir()
    _, transcript = _store(tmp_path, cwd=ws, project="-home-proj")
    r = _as_agent(home, home, _payload(transcript, ws))
    assert (r.returncode, r.stderr) == (0, b"") and len(_turns(ws)) == 1 and not (home / ".cairn").exists()


@pytest.mark.parametrize("layout", ["hash", "project_root"])
def test_a_gemini_session_is_imported_only_into_its_own_project(workspace: Path, tmp_path: Path, layout: str) -> None:
    """Gemini CLI records its project by the folder it keeps the session in: the sha256 of the project's path
    (older versions) or a slug whose ``.project_root`` names it."""
    session = FIXTURES / "gemini-cli" / "session-2025-09-14T08-02-a1b2c3d4.json"
    home = tmp_path / "home"
    name = hashlib.sha256(str(workspace).encode()).hexdigest() if layout == "hash" else "ws"
    chats = home / ".gemini" / "tmp" / name / "chats"
    chats.mkdir(parents=True)
    if layout == "project_root":
        (chats.parent / ".project_root").write_text(str(workspace))
    shutil.copyfile(session, chats / session.name)
    sid = json.loads(session.read_bytes())["sessionId"]
    victim = tmp_path / "victim"
    victim.mkdir()

    def payload(cwd: Path) -> bytes:
        return json.dumps({"session_id": sid, "transcript_path": str(chats / session.name), "cwd": str(cwd),
                           "hook_event_name": "SessionEnd", "reason": "exit"}).encode()

    env = child_env(HOME=str(home))
    env.pop("GEMINI_CLI_HOME", None)
    r = subprocess.run([PYTHON, "-m", "cairn.server", "hook", "gemini-cli"], input=payload(victim), cwd=victim,
                       env=env, capture_output=True, timeout=120)
    _one_line(r, "E_HOOK_TRANSCRIPT_OUTSIDE")
    assert not (victim / ".cairn").exists()
    r = subprocess.run([PYTHON, "-m", "cairn.server", "hook", "gemini-cli"], input=payload(workspace), cwd=victim,
                       env=env, capture_output=True, timeout=120)
    assert (r.returncode, r.stderr) == (0, b"") and _turns(workspace) and not (victim / ".cairn").exists()


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
    # this cairn on PATH (an activated venv): the hook names `cairn` (tests.memory.test_agents_rules: not on PATH)
    env = {"HOME": str(tmp_path / "home"), "PATH": f"{Path(PYTHON).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
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
