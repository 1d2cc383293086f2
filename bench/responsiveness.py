"""Is the language server responsive while maintenance runs?

A plain JSON-RPC client (asyncio subprocess, LSP ``Content-Length`` framing,
no LSP library) starts ``cairn serve`` on a prepared workspace and sends
``cairn/status`` every 10 ms, one request at a time, measuring each round
trip:

1. **idle** — the server has nothing to do;
2. **busy** — the server drains a backlog of ``--captures`` sealed captures
   (``cairn.drainBacklog``) and cleans up ``--generations`` settled claim
   generations (``cairn.cleanup``), both in worker subprocesses; the phase
   lasts until no ``process``/``drain``/``cleanup`` job is queued or running.

It prints p50/p99/max latency for both phases side by side (targets while
busy: p99 < 10 ms, max < 30 ms) and the work done. It also measures a cold
worker start (``python -m cairn.worker test-echo`` with a request on stdin)
against a bare ``python -c pass`` (target: within 2x).

With ``--import-sessions N`` the backlog is a large import instead: N
generated Claude Code sessions of ``--import-turns`` turns each are imported
through ``cairn import`` before the server starts (left open), then sealed
at once and drained like the captures above.

Run: ``python bench/responsiveness.py [--captures 200] [--generations 10000] [--import-sessions 0] [--json]``
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def env(**extra: str) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    e.update(extra)
    return e


# ---------------------------------------------------------------- cold start


def cold_start(runs: int) -> dict[str, float]:
    from cairn.protocol import codec
    from cairn.protocol.worker import WorkerRequest

    req = codec.encode(WorkerRequest(job="test-echo", workspace="/nonexistent"))
    e = env(CAIRN_TEST_JOBS="1")

    def timed(argv: list[str], data: bytes) -> float:
        t0 = time.perf_counter()
        subprocess.run(argv, input=data, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        return time.perf_counter() - t0

    bare, worker = [], []
    for _ in range(runs):  # interleaved so drift hits both alike
        bare.append(timed([sys.executable, "-c", "pass"], b""))
        worker.append(timed([sys.executable, "-m", "cairn.worker", "test-echo"], req))
    b, w = statistics.median(bare), statistics.median(worker)
    return {"python_c_pass_ms": b * 1e3, "worker_ms": w * 1e3, "ratio": w / b}


# ---------------------------------------------------------------- workspace


def import_sessions(ws: Path, sessions: int, turns: int) -> int:
    """``sessions`` generated sessions through the real ``cairn import`` (left open); turns imported."""
    from tests.support.generated import write_session

    with tempfile.TemporaryDirectory(prefix="cairn-bench-src-") as src:
        files = [str(write_session(Path(src) / f"s{i:05d}.jsonl", i, turns, words=40)) for i in range(sessions)]
        r = subprocess.run([sys.executable, "-m", "cairn.server", "import", *files, "-w", str(ws), "--json"],
                           env=env(), capture_output=True, text=True, check=True)
    return int(json.loads(r.stdout)["captured"])


def prepare(ws: Path, captures: int, generations: int) -> dict[str, int]:
    """Sealed captures through the real jobs; settled generations through the real claim store."""
    from cairn.protocol.vocab import OutcomeKind
    from cairn.protocol.worker import WorkerRequest
    from cairn.state import layout
    from cairn.state.claims import ClaimStore
    from cairn.worker.entry import run_request
    from cairn.worker.journal.store import Journal

    for i in range(captures):
        sid = f"bench-{i}"
        turn = {"turn_id": f"{sid}-t0", "parent_turn_id": None, "completed_at": "2025-06-12T10:00:00Z",
                "user": f"From now on never use bare except in module {i}: catch the specific exception.",
                "assistant": "Understood."}
        # captured but left open: the server's startup pass finds no sealed work
        resp = run_request(WorkerRequest(job="capture", workspace=str(ws),
                                         args={"session_id": sid, "source": "lsp", "turn": turn}))
        if resp.status != "ok":
            raise SystemExit(f"prepare: capture failed: {resp.error}")
    made = 0
    scopes = max(1, generations // 100)
    with Journal(str(ws)) as j:
        old = ClaimStore(j.root, layout.JOURNAL_CLAIMS, clock_offset=-7200.0)  # deadlines long past
        try:
            for s in range(scopes):
                for _ in range(generations // scopes):
                    claim = old.elect(f"bench/{s}", purpose="bench", ttl=60.0, authority=j.authority)
                    old.settle(claim, OutcomeKind.COMPLETED, payload={})
                    made += 1
        finally:
            old.close()
    return {"captures": captures, "generations": made}


def seal_all(ws: Path) -> None:
    """Seal every open session in a separate process (the server is not told)."""
    subprocess.run([sys.executable, "-c", "import sys; from cairn.worker.entry import run_request; "
                    "from cairn.protocol.worker import WorkerRequest; "
                    "r = run_request(WorkerRequest(job='seal', workspace=sys.argv[1], args={'trigger': 'session-end'}));"
                    "sys.exit(r.status != 'ok')", str(ws)], env=env(), check=True)


# ---------------------------------------------------------------- LSP client


class Client:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.ids = itertools.count(1)
        self.waiting: dict[int, asyncio.Future[Any]] = {}
        self.progress: dict[str, list[dict[str, Any]]] = {}
        self.reader = asyncio.ensure_future(self._read())

    def _send(self, msg: dict[str, Any]) -> None:
        body = json.dumps(msg).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def request(self, method: str, params: Any) -> Any:
        i = next(self.ids)
        fut = asyncio.get_running_loop().create_future()
        self.waiting[i] = fut
        self._send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        return await fut

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = 0
            while (line := await out.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not line:
                return
            msg = json.loads(await out.readexactly(length))
            if "id" in msg and "method" in msg:  # a request from the server (progress create)
                self._send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            elif "id" in msg:
                fut = self.waiting.pop(msg["id"], None)
                if fut and not fut.done():
                    if "error" in msg:
                        fut.set_exception(RuntimeError(msg["error"].get("message")))
                    else:
                        fut.set_result(msg.get("result"))
            elif msg.get("method") == "$/progress":
                p = msg["params"]
                self.progress.setdefault(str(p["token"]), []).append(p["value"])


async def poll(client: Client, ws: str, stop: asyncio.Event, period: float = 0.010) -> list[float]:
    lat = []
    nxt = time.perf_counter()
    while not stop.is_set():
        t0 = time.perf_counter()
        await client.request("cairn/status", {"workspace": ws})
        lat.append((time.perf_counter() - t0) * 1e3)
        nxt += period
        await asyncio.sleep(max(0.0, nxt - time.perf_counter()))
    return lat


def summary(lat: list[float]) -> dict[str, float]:
    s = sorted(lat)
    return {"n": len(s), "p50_ms": s[len(s) // 2], "p99_ms": s[min(len(s) - 1, int(len(s) * 0.99))], "max_ms": s[-1]}


async def measure(ws: Path, idle_seconds: float, limit: float) -> dict[str, Any]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cairn.server", "serve", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=open(os.environ.get("BENCH_SERVER_STDERR", os.devnull), "wb"), env=env(**({"CAIRN_SERVER_SLOW_MS": os.environ["BENCH_SLOW_MS"]} if os.environ.get("BENCH_SLOW_MS") else {})), cwd=str(ws))
    client = Client(proc)
    try:
        await client.request("initialize", {
            "processId": os.getpid(), "rootUri": ws.as_uri(),
            "workspaceFolders": [{"uri": ws.as_uri(), "name": ws.name}],
            "capabilities": {"window": {"workDoneProgress": True}}, "initializationOptions": {}})
        client.notify("initialized", {})
        await client.request("cairn/status", {})
        # let startup work (recovery pass) finish before the idle phase
        await settle(client, kinds=("recover", "process"), limit=60.0)
        stop = asyncio.Event()
        task = asyncio.ensure_future(poll(client, str(ws), stop))
        await asyncio.sleep(idle_seconds)
        stop.set()
        idle = await task

        before = await client.request("cairn/status", {})
        stop = asyncio.Event()
        task = asyncio.ensure_future(poll(client, str(ws), stop))
        t0 = time.perf_counter()
        seal_all(ws)  # the backlog appears: every open session sealed at once (as after a long absence)
        await client.request("workspace/executeCommand", {"command": "cairn.cleanup",
                                                         "arguments": [{"workspace": str(ws)}]})
        await client.request("workspace/executeCommand", {"command": "cairn.drainBacklog",
                                                         "arguments": [{"workspace": str(ws)}]})
        jobs_seen = await settle(client, kinds=("process", "drain", "cleanup"), limit=limit)
        busy_seconds = time.perf_counter() - t0
        stop.set()
        busy = await task
        after = await client.request("cairn/status", {})
        await client.request("shutdown", None)
        client.notify("exit", None)
        await asyncio.wait_for(proc.wait(), 30)
        return {"idle": summary(idle), "busy": summary(busy), "busy_seconds": busy_seconds,
                "before": {k: before[k] for k in ("pending", "digests")},
                "after": {k: after[k] for k in ("pending", "digests", "exhausted", "retryWaiting")},
                "worker_runs": jobs_seen}
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def settle(client: Client, kinds: tuple[str, ...], limit: float) -> int:
    """Until no job of ``kinds`` is queued or running (failed ones waiting for a retry do not count)."""
    deadline = time.monotonic() + limit
    seen: set[tuple[str, float]] = set()
    while time.monotonic() < deadline:
        snap = await client.request("cairn/jobs", {})
        live = [r for r in snap["jobs"] if r["kind"] in kinds and r["state"] in ("idle", "running")]
        seen.update((r["id"], r["updated"]) for r in snap["jobs"] if r["state"] == "running")
        if not live:
            return len(seen)
        await asyncio.sleep(0.25)
    raise SystemExit(f"jobs still live after {limit:.0f} s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--captures", type=int, default=200)
    ap.add_argument("--generations", type=int, default=10_000)
    ap.add_argument("--import-sessions", type=int, default=0, help="drain an import of this many sessions too")
    ap.add_argument("--import-turns", type=int, default=10, help="turns per imported session")
    ap.add_argument("--idle-seconds", type=float, default=5.0)
    ap.add_argument("--limit", type=float, default=900.0, help="give up on the busy phase after this many seconds")
    ap.add_argument("--cold-runs", type=int, default=15)
    ap.add_argument("--json", action="store_true")
    ns = ap.parse_args()

    report: dict[str, Any] = {"cold_start": cold_start(ns.cold_runs)}
    with tempfile.TemporaryDirectory(prefix="cairn-bench-") as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        t0 = time.perf_counter()
        report["prepared"] = prepare(ws, ns.captures, ns.generations)
        if ns.import_sessions:
            report["prepared"]["imported_sessions"] = ns.import_sessions
            report["prepared"]["imported_turns"] = import_sessions(ws, ns.import_sessions, ns.import_turns)
        report["prepare_seconds"] = time.perf_counter() - t0
        report.update(asyncio.run(measure(ws, ns.idle_seconds, ns.limit)))
    if ns.json:
        print(json.dumps(report, indent=2))
        return 0
    c = report["cold_start"]
    print(f"cold start: python -c pass {c['python_c_pass_ms']:.1f} ms, worker {c['worker_ms']:.1f} ms "
          f"({c['ratio']:.2f}x; target <= 2x)")
    print(f"prepared {report['prepared']} in {report['prepare_seconds']:.1f} s")
    print(f"{'':8}{'n':>7}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}")
    for phase in ("idle", "busy"):
        s = report[phase]
        print(f"{phase:8}{s['n']:>7}{s['p50_ms']:>9.2f}{s['p99_ms']:>9.2f}{s['max_ms']:>9.2f}")
    print(f"busy phase {report['busy_seconds']:.1f} s, {report['worker_runs']} worker runs; "
          f"status before {report['before']} after {report['after']}")
    busy = report["busy"]
    ok = busy["p99_ms"] < 10 and busy["max_ms"] < 30
    print("targets (busy p99 < 10 ms, max < 30 ms):", "met" if ok else "NOT met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
