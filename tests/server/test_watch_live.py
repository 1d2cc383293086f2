"""Live sessions followed end to end: the real ``cairn serve`` (pytest-lsp) and ``cairn watch``."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pytest_lsp import LanguageClient

from tests.server.lsp_harness import plain, request, until
from tests.support import PYTHON, REPO, child_env
from tests.support.live import FIXTURE_TURNS, append, start_session, turn_lines


async def status_until(client: Any, ws: Path, done: Any) -> dict[str, Any]:
    """``cairn/status`` once ``done(status)``: re-checked after each server log line (bounded, no sleeps)."""

    async def check() -> dict[str, Any] | None:
        status = plain(await request(client, "cairn/status", {"workspace": str(ws)}))
        return status if done(status) else None

    return await until(client, check)


@pytest.fixture
def live(workspace: Path) -> Path:
    """A live session in the folder ``sessions`` of the workspace (before the server starts)."""
    return start_session(workspace / "sessions" / "session.jsonl")


@pytest.mark.asyncio
@pytest.mark.lsp_options({"watchPaths": ["sessions"]})  # relative: to the workspace
async def test_the_server_captures_turns_appended_to_a_watched_path(live: Path, client: LanguageClient,
                                                                     workspace: Path) -> None:
    first = await status_until(client, workspace, lambda s: s["watch"]["captured"] >= FIXTURE_TURNS)
    assert first["watch"]["files"] == 1 and first["watch"]["mode"] == "native"
    append(live, turn_lines(1))
    grown = await status_until(client, workspace, lambda s: s["watch"]["captured"] >= FIXTURE_TURNS + 2)
    assert grown["watch"]["captured"] == FIXTURE_TURNS + 2
    jobs = plain(await request(client, "cairn/jobs", {}))
    assert not [j for j in jobs["jobs"] if j["kind"] == "import" and j["state"] != "running"]


def test_cairn_watch_captures_an_append_and_exits_130_on_sigint(workspace: Path, tmp_path: Path) -> None:
    live = start_session(tmp_path / "store" / "session.jsonl")
    proc = subprocess.Popen([PYTHON, "-m", "cairn.server", "watch", "-w", str(workspace), str(tmp_path / "store")],
                            cwd=REPO, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        # it says at once what it follows (fails before: nothing until the first capture)
        assert proc.stderr.readline().startswith("cairn watch: following 1 path(s) for ")
        first = proc.stdout.readline()  # blocks until the first batch is captured (bounded by the timeout below)
        assert first.split(" ", 1)[1].strip() == f"captured {FIXTURE_TURNS} turn(s) from 1 file(s)"
        append(live, turn_lines(1))
        assert proc.stdout.readline().split(" ", 1)[1].strip() == "captured 2 turn(s) from 1 file(s)"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130
        assert out.strip() == f"cairn watch: {FIXTURE_TURNS + 2} turn(s) captured in 2 batch(es), 0 capture(s) sealed"
        assert "Traceback" not in err and "KeyboardInterrupt" not in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_cairn_watch_with_nothing_to_watch_is_a_usage_error(workspace: Path) -> None:
    r = subprocess.run([PYTHON, "-m", "cairn.server", "watch", "-w", str(workspace)], cwd=REPO, env=child_env(),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("cairn: E_USAGE: nothing to watch")


def test_cairn_watch_digests_what_another_process_sealed(workspace: Path, tmp_path: Path) -> None:
    """A session sealed by an agent's session-end hook (here `cairn seal`) before or while the watch runs was
    never digested by it: only its own seals led to a digest pass."""
    from tests.journal.helpers import DEMO, cairn, cairn_json

    cairn(workspace, "import", str(DEMO))
    cairn(workspace, "seal")
    assert cairn_json(workspace, "journal") == []
    start_session(tmp_path / "store" / "session.jsonl")
    proc = subprocess.Popen([PYTHON, "-m", "cairn.server", "watch", "-w", str(workspace), str(tmp_path / "store")],
                            cwd=REPO, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(2)]  # the first capture and the digest pass, either order
        assert any(" digests: published 1" in line for line in lines), lines
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert len(cairn_json(workspace, "journal")) == 1
