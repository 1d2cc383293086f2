"""``cairn serve`` beside a dead watcher's claim: the watched session is captured whole, then sealed once.

The same case as tests/server/test_watch_busy.py (``cairn watch``), in the language server: a watcher
killed mid-capture leaves its session's claim held until its deadline (60 s), so the server's first import
of that session is refused with ``E_CLAIM_BUSY``. The server reported that import to the watch core as
done: the core asked for its idle seal at once (the scheduler held it back only while its own copy of the
import waited for its 30 s retry), that retry ran outside the core (its turns never counted in
``cairn/status``), and the core's back-off (2 s, doubling to 16 s) never applied. Now the refusal goes to
the core as such: it seals nothing before the import went through and imports again on its own, and the
scheduler's copy of the refused job is dropped so it never runs the same import a second time.

The dead holder is real (a process elects the session's claim and exits, as in test_watch_busy.py).
First test: the service with a fake clock, so every step is a clock move; the claim's deadline passes for
the workers through ``CAIRN_TEST_CLOCK_OFFSET`` (the journal's test clock), no sleep. Second test: the real
server over stdio (pytest-lsp), driven by real time and a claim held a few seconds; each step waits,
bounded, for the log line it causes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cairn.server import cli
from cairn.server.lsp.service import CairnService
from cairn.server.testing import FakeClock
from pytest_lsp import LanguageClient

from tests.journal.helpers import cairn_json
from tests.server.lsp_harness import plain, request
from tests.server.test_service import FakeEditor, adapter_of, kinds_started
from tests.server.test_watch_busy import leave_dead_claim
from tests.server.test_watch_live import status_until
from tests.support.generated import write_session

pytestmark = pytest.mark.asyncio

TURNS, BEFORE = 6, 3  # the session's turns; those the dead watcher had captured
IDLE_MINUTES = 0.01  # sealed 0.6 s after the last change
HELD = 10.0  # seconds the dead claim holds in the stdio test: past the server's start and its first import


def killed_mid_capture(workspace: Path, session: Path, part: Path, ttl: float) -> None:
    """The first ``BEFORE`` turns of ``session`` captured by a watcher that then died holding its claim."""
    write_session(session, 76, TURNS, words=8)
    assert cli.main(["import", "-w", str(workspace), str(write_session(part, 76, BEFORE, words=8))]) == 0
    leave_dead_claim(workspace, session, ttl)


def lines(editor: FakeEditor, text: str) -> list[str]:
    return [m for m in editor.logs if text in m]


WATCH_KINDS = ("import", "seal-idle", "seal")


def rows(service: CairnService) -> list[dict[str, Any]]:
    """The watcher's jobs queued or running (a digest pass follows a seal)."""
    return [r for r in service.status.jobs()["jobs"] if r["kind"] in WATCH_KINDS]


def watch_started(editor: FakeEditor) -> list[str]:
    return [k for k in kinds_started(editor) if k in WATCH_KINDS]


async def test_the_server_seals_nothing_and_retries_on_its_own_while_a_dead_claim_refuses_the_import(
        workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store"
    store.mkdir()
    session = store / "session.jsonl"
    killed_mid_capture(workspace, session, tmp_path / "part.jsonl", ttl=60.0)  # as a killed watcher leaves it
    capsys.readouterr()
    monkeypatch.setenv("CAIRN_WATCH_NO_STORES", "1")
    editor, clock = FakeEditor(), FakeClock()
    service = CairnService(editor, clock=clock)
    service.configure([str(workspace)], {"watchPaths": [str(store)], "sealIdleMinutes": IDLE_MINUTES})
    await service.start()
    try:
        await editor.until(lambda: lines(editor, " import busy E_CLAIM_BUSY"))
        await adapter_of(service).flush()
        clock.advance(1.0)  # past the quiet period: the refused import holds the seal back
        assert [r["kind"] for r in rows(service)] == []  # no seal asked for; no copy of the import waiting
        clock.advance(1.0)  # the core's first retry (2 s): still refused, said once
        await editor.until(lambda: len(lines(editor, " import busy E_CLAIM_BUSY")) == 2)
        assert len(lines(editor, "tried again on its own")) == 1
        assert watch_started(editor) == ["import", "import"]
        monkeypatch.setenv("CAIRN_TEST_CLOCK_OFFSET", "120")  # the dead claim's deadline has passed
        clock.advance(4.0)  # the second retry (4 s): the rest of the session, then its idle seal
        await editor.until(lambda: lines(editor, " seal-idle ok"))
        assert watch_started(editor) == ["import", "import", "import", "seal-idle"]
        assert len(lines(editor, " import ok captured=3")) == 1
        clock.advance(120.0)  # the scheduler's own retry (30 s) of a refused import would come now: none
        await adapter_of(service).flush()
        assert watch_started(editor) == ["import", "import", "import", "seal-idle"] and rows(service) == []
        started = [m.split()[1] for m in editor.logs if " import started (pid " in m]
        assert len(set(started)) == 3  # three jobs: the refused ones never ran again
        assert service.watching.summary(str(workspace))["captured"] == TURNS - BEFORE
    finally:
        await service.shutdown(0.0)
    [capture] = cairn_json(workspace, "jobs")  # one capture, whole and sealed: no second one for the rest
    assert capture["turns"] == TURNS and capture["state"] != "open"


@pytest.fixture
def held(workspace: Path, tmp_path: Path) -> Path:
    """The watched session, held by a dead watcher's claim for ``HELD`` seconds (written before the server)."""
    session = workspace / "sessions" / "session.jsonl"
    session.parent.mkdir()
    killed_mid_capture(workspace, session, tmp_path / "part.jsonl", ttl=HELD)
    return session


@pytest.mark.lsp_env(CAIRN_WATCH_NO_STORES="1")
@pytest.mark.lsp_options({"watchPaths": ["sessions"], "sealIdleMinutes": IDLE_MINUTES})
async def test_cairn_serve_captures_a_session_held_by_a_dead_watcher_whole_before_sealing_it(
        held: Path, client: LanguageClient, workspace: Path) -> None:
    stamp = held.stat()
    done = await status_until(client, workspace, lambda s: s["watch"]["captured"] >= TURNS - BEFORE)
    assert done["watch"]["captured"] == TURNS - BEFORE
    await status_until(client, workspace, lambda s: any(" seal-idle ok" in m.message for m in client.log_messages))
    log = [m.message for m in client.log_messages]
    imports = [m for m in log if " import " in m and " started " not in m and m.startswith("cairn: job-")]
    assert imports[0].split()[3:5] == ["busy", "E_CLAIM_BUSY"]  # refused: the dead claim holds
    assert imports[-1].split()[3:5] == ["ok", "captured=3"]
    started = [m.split()[1] for m in log if " import started (pid " in m]
    assert len(started) == len(imports) == len(set(started))  # every refused job ran once: no double run
    seal = next(i for i, m in enumerate(log) if " seal-idle started " in m)
    # the seal came after the import that captured the rest had started (its "ok" line may be logged after the
    # seal's start: the core hears the result first); the end state below shows the capture whole
    last = imports[-1].split()[1]
    assert seal > next(i for i, m in enumerate(log) if m.startswith(f"cairn: {last} import started"))
    assert (held.stat().st_size, held.stat().st_mtime_ns) == (stamp.st_size, stamp.st_mtime_ns)  # untouched
    jobs = plain(await request(client, "cairn/jobs", {}))
    assert not [j for j in jobs["jobs"] if j["kind"] in ("import", "seal-idle")]
    [capture] = cairn_json(workspace, "jobs")
    assert capture["turns"] == TURNS and capture["state"] != "open"
