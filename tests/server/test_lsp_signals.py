"""A signal to the language server stops its workers before it leaves, as the end of input does.

Emacs sends ``SIGHUP`` to its servers when it quits; a session manager or
``kill`` sends ``SIGTERM``; a terminal's Ctrl-C, ``SIGINT``. Each must end the
session the way the end of input does (docs/lsp.md, "Scheduling"): running
workers stopped, so no ``cairn.worker``, provider supervisor or provider is
left behind holding its claim until the provider returns. Here a real
server over stdio runs a real ``process`` worker whose ``command`` provider
hangs (``tests/providers/fake_command.py hang``, which also starts a helper
of its own); the signal goes to the server, and every process it started
must be gone, with no traceback on its stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from tests.server.lsp_harness import TURNS
from tests.server.test_lsp_framing import RawClient, server
from tests.support import PYTHON, REPO

pytestmark = pytest.mark.asyncio

FAKE = REPO / "tests" / "providers" / "fake_command.py"


async def _until(pred: Callable[[], bool], bound: float = 60.0) -> None:
    """Re-check real state until ``pred()`` holds; bounded (a short pause between checks, not a wait for time)."""
    async def loop() -> None:
        while not pred():
            await asyncio.sleep(0.05)
    await asyncio.wait_for(loop(), bound)


async def _initialize(client: RawClient, ws: Path, options: dict[str, object]) -> None:
    msg_id = client.send("initialize", {"processId": None, "rootUri": ws.as_uri(), "capabilities": {},
                                        "workspaceFolders": [{"uri": ws.as_uri(), "name": ws.name}],
                                        "initializationOptions": options})
    assert (await client.reply())["id"] == msg_id
    client.notify("initialized")


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
async def test_a_signal_stops_the_running_workers_and_their_provider(workspace: Path, tmp_path: Path,
                                                                      signum: signal.Signals) -> None:
    calls = tmp_path / "provider"
    calls.mkdir()
    options: dict[str, object] = {"provider": "command", "command": [PYTHON, str(FAKE), "hang", str(calls)]}
    started: list[psutil.Process] = []
    try:
        async with server() as client:
            await _initialize(client, workspace, options)
            parent = None
            for i, (user, assistant) in enumerate(TURNS):
                client.notify("cairn/turnCompleted", {
                    "workspace": str(workspace), "sessionId": "s1", "turnId": f"t{i}", "parentTurnId": parent,
                    "user": user, "assistant": assistant, "completedAt": f"2025-06-12T10:0{i}:00Z"})
                parent = f"t{i}"
            # the sealed session is offered for processing: a `process` worker asks the provider, which hangs
            client.notify("cairn/sessionEvent", {"workspace": str(workspace), "sessionId": "s1",
                                                 "kind": "session-end"})
            await _until(lambda: (calls / "pids").is_file() and (calls / "pids").read_text().endswith("\n"))
            provider, helper = map(int, (calls / "pids").read_text().split())
            started = psutil.Process(client.proc.pid).children(recursive=True)
            assert {provider, helper} <= {p.pid for p in started}, "the provider runs under the server's worker"
            assert any("cairn.worker" in " ".join(p.cmdline()) for p in started)

            client.proc.send_signal(signum)
            assert client.proc.stderr is not None
            err = (await asyncio.wait_for(client.proc.stderr.read(), 60)).decode(errors="replace")
            await asyncio.wait_for(client.proc.wait(), 60)
            _, alive = await asyncio.to_thread(psutil.wait_procs, started, 30)
            assert not alive, f"left running after {signum.name}: {[p.pid for p in alive]}"
            assert "Traceback" not in err, err
            assert client.proc.returncode == 0, (client.proc.returncode, err)
    finally:
        for proc in started:  # a failing run leaves nothing behind
            with contextlib.suppress(psutil.Error):
                proc.kill()
