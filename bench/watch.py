"""Following live sessions: append→captured latency, idle CPU, and catch-up bursts.

Starts the real ``cairn serve`` (plain JSON-RPC client of
:mod:`bench.responsiveness`) on a fresh workspace whose ``watchPaths`` names a
folder holding one live Claude Code session (the test fixture), then:

1. **latency** — ``--appends`` times: append one completed turn, then poll
   ``cairn/status`` every 10 ms until its ``watch.captured`` count has grown
   (the import job has finished: the turn is durable). Appends are spaced
   ``--gap`` seconds, so each is a lone change (the first import after a quiet
   moment is immediate; within the 1 s window after an import it waits).
2. **idle CPU** — no request, no change, for ``--idle-seconds``: CPU seconds
   used by the server process (``psutil``; children are workers, none runs),
   beside a second ``cairn serve`` without watch paths over the same window
   (the baseline: what an idle server costs anyway).
3. **burst, notifications** — ``--burst`` ``cairn/turnCompleted``
   notifications written at once, while ``cairn/status`` is polled every
   10 ms until every turn is captured: status p50/p99/max.
4. **burst, appended** — ``--burst`` turns appended to the watched file at
   once, status polled the same way until all are captured.

Run: ``python bench/watch.py [--appends 30] [--idle-seconds 60] [--burst 1000] [--json]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import psutil  # noqa: E402

from bench.responsiveness import Client, env, summary  # noqa: E402
from tests.support.live import FIXTURE_TURNS, append, start_session, turn_lines  # noqa: E402


async def status(client: Client, ws: Path) -> dict[str, Any]:
    result: dict[str, Any] = await client.request("cairn/status", {"workspace": str(ws)})
    return result


async def captured_at_least(client: Client, ws: Path, n: int, limit: float, lat: list[float] | None = None) -> float:
    """Poll status every 10 ms until ``watch.captured >= n``; the seconds it took."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < limit:
        s0 = time.perf_counter()
        st = await status(client, ws)
        if lat is not None:
            lat.append((time.perf_counter() - s0) * 1e3)
        if st["watch"]["captured"] >= n:
            return time.perf_counter() - t0
        await asyncio.sleep(0.010)
    raise SystemExit(f"not captured within {limit:.0f} s (have {st['watch']})")


async def until_quiet(client: Client, ws: Path, lat: list[float], limit: float) -> float:
    """Poll status every 10 ms until no job is pending or running and no turn waits."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < limit:
        s0 = time.perf_counter()
        st = await status(client, ws)
        lat.append((time.perf_counter() - s0) * 1e3)
        if st["turnsWaiting"] == 0 and st["jobs"]["pending"] == 0 and st["jobs"]["running"] == 0:
            return time.perf_counter() - t0
        await asyncio.sleep(0.010)
    raise SystemExit(f"still busy after {limit:.0f} s")


async def start(ws: Path, options: dict[str, Any]) -> tuple[asyncio.subprocess.Process, Client]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cairn.server", "serve", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=open(os.environ.get("BENCH_SERVER_STDERR", os.devnull), "wb"), env=env(), cwd=str(ws))
    client = Client(proc)
    await client.request("initialize", {
        "processId": os.getpid(), "rootUri": ws.as_uri(),
        "workspaceFolders": [{"uri": ws.as_uri(), "name": ws.name}], "capabilities": {},
        "initializationOptions": options})
    client.notify("initialized", {})
    return proc, client


async def stop(proc: asyncio.subprocess.Process, client: Client) -> None:
    await client.request("shutdown", None)
    client.notify("exit", None)
    await asyncio.wait_for(proc.wait(), 30)


async def measure(ws: Path, live: Path, ns: argparse.Namespace) -> dict[str, Any]:
    proc, client = await start(ws, {"watchPaths": [str(live.parent)], "sealIdleMinutes": 60})
    report: dict[str, Any] = {}
    try:
        await captured_at_least(client, ws, FIXTURE_TURNS, 60.0)
        await until_quiet(client, ws, [], 60.0)
        report["mode"] = (await status(client, ws))["watch"]["mode"]

        # 1. latency of lone appends
        have = FIXTURE_TURNS
        lat: list[float] = []
        for i in range(1, ns.appends + 1):
            await asyncio.sleep(ns.gap)
            t0 = time.perf_counter()
            append(live, turn_lines(i))
            have += 2 if i == 1 else 1  # the first prompt also completes the fixture's last turn
            await captured_at_least(client, ws, have, 30.0)
            lat.append((time.perf_counter() - t0) * 1e3)
        report["latency"] = summary(lat)

        # 2. idle CPU with the watchers armed, beside a server without any
        plain_ws = ws.parent / "plain"
        plain_ws.mkdir()
        plain_proc, plain_client = await start(plain_ws, {})
        await until_quiet(plain_client, plain_ws, [], 60.0)
        await until_quiet(client, ws, [], 60.0)
        servers = [psutil.Process(proc.pid), psutil.Process(plain_proc.pid)]
        c0, w0 = [s.cpu_times() for s in servers], time.perf_counter()
        await asyncio.sleep(ns.idle_seconds)
        c1, w1 = [s.cpu_times() for s in servers], time.perf_counter()
        cpu = [(b.user - a.user) + (b.system - a.system) for a, b in zip(c0, c1, strict=True)]
        report["idle"] = {"seconds": w1 - w0, "cpu_seconds": cpu[0], "cpu_percent": 100.0 * cpu[0] / (w1 - w0),
                          "baseline_cpu_seconds": cpu[1]}
        await stop(plain_proc, plain_client)

        # 3. a burst of turn notifications
        poll: list[float] = []
        t0 = time.perf_counter()
        for i in range(ns.burst):
            client.notify("cairn/turnCompleted", {
                "workspace": str(ws), "sessionId": "burst", "turnId": f"b-{i}", "user": f"Burst question {i}?",
                "assistant": f"Burst answer {i}.", "completedAt": "2025-06-12T10:00:00Z",
                "parentTurnId": f"b-{i - 1}" if i else None})
        await until_quiet(client, ws, poll, 600.0)
        report["burst_notifications"] = {**summary(poll), "seconds": time.perf_counter() - t0}

        # 4. a burst of appended turns
        poll = []
        base = ns.appends + 1
        t0 = time.perf_counter()
        append(live, "".join(turn_lines(i) for i in range(base, base + ns.burst)))
        await captured_at_least(client, ws, have + ns.burst, 600.0, poll)
        await until_quiet(client, ws, poll, 600.0)
        report["burst_appended"] = {**summary(poll), "seconds": time.perf_counter() - t0}

        await stop(proc, client)
        return report
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--appends", type=int, default=30)
    ap.add_argument("--gap", type=float, default=1.5, help="seconds between two lone appends")
    ap.add_argument("--idle-seconds", type=float, default=60.0)
    ap.add_argument("--burst", type=int, default=1000)
    ap.add_argument("--json", action="store_true")
    ns = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="cairn-bench-") as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        live = start_session(Path(tmp) / "store" / "session.jsonl")
        report = asyncio.run(measure(ws, live, ns))
    if ns.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"watcher: {report['mode']}")
    print(f"{'':22}{'n':>6}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}")
    for key, label in (("latency", "append -> captured"), ("burst_notifications", "status, notif. burst"),
                       ("burst_appended", "status, append burst")):
        s = report[key]
        print(f"{label:22}{s['n']:>6}{s['p50_ms']:>9.1f}{s['p99_ms']:>9.1f}{s['max_ms']:>9.1f}")
    i = report["idle"]
    print(f"idle: {i['cpu_seconds']:.3f} CPU s over {i['seconds']:.0f} s ({i['cpu_percent']:.3f} %); "
          f"a server without watch paths: {i['baseline_cpu_seconds']:.3f} CPU s")
    print(f"bursts drained in {report['burst_notifications']['seconds']:.1f} s (notifications), "
          f"{report['burst_appended']['seconds']:.1f} s (appended)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
