"""Usage accounting end to end: each outcome of a provider request, a killed worker, roll-up, prices, the CLI, LSP."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio
from cairn.protocol.digest import ModelPolicy
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.worker.providers import http
from cairn.worker.providers import usage_report as R
from cairn.worker.providers.route import Route, ask
from cairn.worker.providers.usage import USAGE, bound, day_of, record_usage
from pytest_lsp import LanguageClient

from tests.journal.helpers import DEMO, cairn
from tests.providers.endpoint import Endpoint
from tests.support import PYTHON, REPO, child_env
from tests.support.shipped import own_state

SECRET_PROMPT = "the-prompt-text-must-never-be-stored"


def _policy(ep: Endpoint, timeout: float = 10.0) -> ModelPolicy:
    return ModelPolicy(provider="openai", model="m1", endpoint=ep.base_url, timeout_seconds=timeout)


def _payload() -> bytes:
    return http.encode({"messages": [{"role": "user", "content": SECRET_PROMPT}], "model": "m1"})


def _post(ws: Path, ep: Endpoint, *, timeout: float = 10.0, cancel_after_arrival: bool = False) -> None:
    async def send() -> None:
        await http.post_chat(_payload(), _policy(ep, timeout), api_key=None)

    async def go() -> None:
        if not cancel_after_arrival:
            return await send()
        async with trio.open_nursery() as nursery:
            async def cancel() -> None:
                await trio.to_thread.run_sync(ep.arrived.wait, 30)
                nursery.cancel_scope.cancel()
            nursery.start_soon(cancel)
            await send()

    with bound(str(ws)):
        trio.run(go)


def _files(ws: Path) -> list[Path]:
    return sorted(p for p in (ws / USAGE).rglob("*") if p.is_file())


def test_a_reply_with_usage_counts_the_providers_tokens_and_stores_no_text(workspace: Path,
                                                                            endpoint: Endpoint) -> None:
    endpoint.answer("{}", usage={"prompt_tokens": 120, "completion_tokens": 7, "total_tokens": 127})
    _post(workspace, endpoint)
    (row,) = R.report(str(workspace))["rows"]
    assert (row["provider"], row["model"], row["requests"], row["ok"]) == ("openai", "m1", 1, 1)
    assert (row["tokensIn"], row["tokensOut"], row["estimated"]) == (120, 7, 0)
    assert row["day"] == day_of(__import__("time").time()) and row["cost"] is None
    files = _files(workspace)
    assert [p.suffix for p in files] == [".end", ".start"]
    for p in files:
        assert stat.S_IMODE(p.stat().st_mode) == 0o600
        assert SECRET_PROMPT not in p.read_text()
    assert stat.S_IMODE((workspace / USAGE).stat().st_mode) == 0o700


def test_a_reply_without_usage_is_estimated_and_marked(workspace: Path, endpoint: Endpoint) -> None:
    endpoint.answer("x" * 40)
    _post(workspace, endpoint)
    (row,) = R.report(str(workspace))["rows"]
    assert row["estimated"] == 1 and row["tokensOut"] == 10
    assert row["tokensIn"] == 23  # the 92-character request body, about four characters a token


def test_a_reply_nested_past_the_bound_is_counted_and_refused_with_its_code(workspace: Path,
                                                                             endpoint: Endpoint) -> None:
    endpoint.reply = b"[" * 100_000 + b"]" * 100_000

    async def go() -> None:
        http.reply_content(await http.post_chat(_payload(), _policy(endpoint), api_key=None))

    with bound(str(workspace)), pytest.raises(CairnError) as info:
        trio.run(go)
    assert info.value.code is ErrorCode.PROVIDER_INVALID_REPLY
    (row,) = R.report(str(workspace))["rows"]
    assert (row["ok"], row["estimated"], row["tokensOut"]) == (1, 1, 50_000)


def test_failures_timeouts_and_cancellations_are_counted(workspace: Path, endpoint: Endpoint) -> None:
    endpoint.status = 503
    with pytest.raises(CairnError) as failed:
        _post(workspace, endpoint)
    assert failed.value.code is ErrorCode.PROVIDER_FAILED
    endpoint.status, endpoint.hold = 200, True
    with pytest.raises(CairnError) as slow:
        _post(workspace, endpoint, timeout=0.3)
    assert slow.value.code is ErrorCode.PROVIDER_TIMEOUT
    endpoint.arrived.clear()
    _post(workspace, endpoint, cancel_after_arrival=True)
    (row,) = R.report(str(workspace))["rows"]
    assert (row["requests"], row["failed"], row["timeout"], row["cancelled"], row["ok"]) == (3, 1, 1, 1, 0)
    ends = [json.loads(p.read_text()) for p in _files(workspace) if p.suffix == ".end"]
    assert sorted(e["code"] for e in ends) == ["E_CANCELLED", "E_PROVIDER_FAILED", "E_PROVIDER_TIMEOUT"]


def test_a_command_provider_run_is_counted_with_estimated_tokens(workspace: Path) -> None:
    python = PYTHON
    answer = "import sys; sys.stdin.read(); print('{\"notes\": []}')"
    route = Route(policy=ModelPolicy(provider="command", timeout_seconds=30.0), command=(python, "-c", answer))
    with bound(str(workspace)):
        assert trio.run(lambda: ask(route, "system", SECRET_PROMPT, key="notes")) == []
    (row,) = R.report(str(workspace))["rows"]
    assert (row["provider"], row["ok"], row["estimated"], row["tokensOut"]) == ("command", 1, 1, 4)
    assert row["model"] == os.path.basename(python)
    assert all(SECRET_PROMPT not in p.read_text() for p in _files(workspace))


def test_nothing_is_recorded_without_a_bound_workspace(workspace: Path) -> None:
    with record_usage(provider="command", model="", purpose="digest", request="abc") as meter:
        meter.reply_text("reply")
    assert not (workspace / USAGE).exists()


def test_a_worker_killed_mid_request_is_counted_interrupted(workspace: Path, endpoint: Endpoint,
                                                            tmp_path: Path) -> None:
    endpoint.hold = True
    (workspace / ".cairn").mkdir()
    (workspace / ".cairn/config.toml").write_text(
        f'provider = "openai"\nmodel = "m1"\nendpoint = "{endpoint.base_url}"\n')
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    cairn(workspace, "trust", env=env)
    worker = subprocess.Popen([PYTHON, "-m", "cairn.server", "run", str(DEMO), "-w", str(workspace)], cwd=REPO,
                              env=child_env(**env), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert endpoint.arrived.wait(120), "the request never reached the endpoint"
        running = json.loads(cairn(workspace, "usage", "--json", env=env).stdout)["total"]
        assert (running["requests"], running["running"], running["interrupted"]) == (1, 1, 0)
    finally:
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(30)
    report = json.loads(cairn(workspace, "usage", "--json", env=env).stdout)
    (row,) = report["rows"]
    assert (row["requests"], row["interrupted"], row["running"], row["estimated"]) == (1, 1, 0, 1)
    assert row["tokensIn"] > 0 and row["tokensOut"] == 0 and row["model"] == "m1"
    text = cairn(workspace, "usage", env=env).stdout
    assert "1 request(s) (1 interrupted)" in text and "~ estimated" in text


def _old_records(ws: Path, day: str, n: int) -> None:
    d = ws / USAGE / day
    own_state(ws)
    d.mkdir(parents=True)
    for i in range(n):
        (d / f"r{i}.start").write_text(json.dumps({"id": f"r{i}", "pid": 0, "provider": "openai", "model": "m1",
                                                   "purpose": "review", "started": 0, "requestChars": 40}))
        (d / f"r{i}.end").write_text(json.dumps({"outcome": "ok", "tokensIn": 100, "tokensOut": 10,
                                                 "estimated": False, "seconds": 1.5}))


def test_old_days_roll_up_into_one_summary_and_a_crash_between_never_counts_twice(workspace: Path) -> None:
    _old_records(workspace, "2026-01-01", 3)
    _old_records(workspace, "2026-11-30", 1)  # recent: kept as records
    before = R.report(str(workspace))
    now = 1_767_225_600.0 + 20 * 86400  # 2026-01-21: the first day is past KEEP_DAYS, the last is not
    # a crash after the summary was published, before the records were removed: counted once
    rows, _ = R._day_rows(__import__("cairn.state.fsdir", fromlist=["PinnedDir"]).PinnedDir.open_root(
        workspace / USAGE / "2026-01-01"), "2026-01-01")
    (workspace / USAGE / "2026-01-01.sum").write_text(json.dumps({"v": 1, "day": "2026-01-01", "rows": rows}))
    assert R.report(str(workspace)) == before
    assert R.roll_up(str(workspace), now=now) == "2026-01-01"
    assert R.roll_up(str(workspace), now=now) is None
    assert not (workspace / USAGE / "2026-01-01").exists() and (workspace / USAGE / "2026-11-30").is_dir()
    assert R.report(str(workspace)) == before
    assert before["total"]["requests"] == 4 and before["total"]["seconds"] == 6.0


def test_prices_turn_tokens_into_cost(workspace: Path) -> None:
    _old_records(workspace, "2026-11-30", 2)
    rep = R.report(str(workspace), prices=(("m1", 1.0, 10.0),))
    assert rep["total"]["cost"] == pytest.approx((200 * 1.0 + 20 * 10.0) / 1e6)
    rep = R.report(str(workspace), prices=(("openai/m1", 2.0, 0.0), ("m1", 1.0, 10.0)))
    assert rep["rows"][0]["cost"] == pytest.approx(400 / 1e6)


def test_the_cli_filters_by_day_prices_from_the_config_and_refuses_bad_input(workspace: Path) -> None:
    _old_records(workspace, "2026-11-01", 1)
    _old_records(workspace, "2026-11-30", 2)
    (workspace / ".cairn/config.toml").write_text('[prices]\nm1 = { input = 1.0, output = 10.0 }\n')
    rep = json.loads(cairn(workspace, "usage", "--json", "--since", "2026-11-15").stdout)
    assert [r["day"] for r in rep["rows"]] == ["2026-11-30"] and rep["total"]["cost"] == pytest.approx(400 / 1e6)
    bad = cairn(workspace, "usage", "--since", "last tuesday", check=False)
    assert bad.returncode == 2 and bad.stderr.startswith("cairn: E_USAGE: --since") and "Traceback" not in bad.stderr


def test_a_symlinked_usage_folder_is_refused_not_followed(workspace: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    _old_records(tmp_path / "other", "2026-11-30", 1)
    own_state(workspace)
    (workspace / USAGE).symlink_to(tmp_path / "other" / USAGE)
    r = cairn(workspace, "usage", "--json", check=False)
    assert r.returncode == 2 and r.stderr.startswith("cairn: E_PATH_SYMLINK") and "Traceback" not in r.stderr
    assert not elsewhere.exists()


@pytest.fixture
def usage_records(workspace: Path) -> str:
    """Two of today's requests and five of another day's, on disk before the server starts."""
    today = day_of(__import__("time").time())
    _old_records(workspace, today, 2)
    _old_records(workspace, "2026-01-01", 5)  # another day: not today's
    return today


@pytest.mark.asyncio
@pytest.mark.lsp_options({"prices": {"m1": {"input": 1.0, "output": 10.0}}})
async def test_cairn_status_carries_todays_usage_priced_by_the_editor_settings(
        workspace: Path, usage_records: str, client: LanguageClient) -> None:
    from tests.server.lsp_harness import plain, request, until

    today = usage_records
    async def snapshot() -> Any:
        status = plain(await request(client, "cairn/status"))
        return status if status["refreshed"] is not None else None

    usage: dict[str, Any] = (await until(client, snapshot))["usage"]
    assert (usage["day"], usage["requests"], usage["ok"], usage["tokensIn"], usage["tokensOut"]) == (
        today, 2, 2, 200, 20)
    assert usage["interrupted"] == 0 and usage["cost"] == pytest.approx(400 / 1e6)


def test_a_cached_day_with_a_running_request_is_read_again(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its writer may die without a file changing: running becomes interrupted at the next read."""
    now = __import__("time").time()
    d = workspace / USAGE / day_of(now)
    own_state(workspace)
    d.mkdir(parents=True)
    (d / "r0.start").write_text(json.dumps({"id": "r0", "pid": 4242, "pidStarted": 1.0, "provider": "openai",
                                            "model": "m1", "started": now, "requestChars": 40}))
    cache: dict[str, Any] = {}
    monkeypatch.setattr(R, "alive", lambda pid, started: True)
    assert (R.today(str(workspace), cache=cache)["running"], R.today(str(workspace), cache=cache)["running"]) == (1, 1)
    monkeypatch.setattr(R, "alive", lambda pid, started: False)
    usage = R.today(str(workspace), cache=cache)
    assert (usage["running"], usage["interrupted"], usage["tokensIn"]) == (0, 1, 10)
