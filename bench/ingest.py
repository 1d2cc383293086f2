"""Ingestion benchmarks: whole histories through ``cairn import`` and ``cairn process``.

    python bench/ingest.py [--quick] [--repeat N] [--chart bench/ingest-batch.png] [--only NAME ...]

Every workload runs the real CLI in a child process (``os.wait4`` gives its
peak RSS) on generated Claude Code sessions (tests/support/generated.py):

* ``many``: 200 sessions x 10 turns: import turns/s, then seal + process
  captures/s with the embedded engine;
* ``all``: the 200 x 10 sessions in a Claude Code store of a scratch home,
  through ``cairn import --all`` (discovery included);
* ``thousand``: 1,000 sessions x 10 turns: import turns/s;
* ``long``: one 100,000-turn session (no tool output): one import run,
  time, peak RSS, ``.cairn/`` size over the source's;
* ``huge``: one ~125 MB session with large tool outputs: the same;
* ``batch``: a 20,000-turn import per batch size (``CAIRN_CAPTURE_BATCH_TURNS``),
  written as a PNG chart of throughput against batch size (needs matplotlib);
* ``compression``: zlib levels and zstandard (when installed) on segments
  built from the fixture transcripts and from generated sessions.

Throughputs are printed beside a durable-publication floor measured in the
same run (temp write + fsync + link + fsync dir of a small file, as every
cairn publication does): the ratio is turns (captures) per second over
publications per second, i.e. how many turns one publication's time buys.

Nothing is deleted before a measurement: every workload's files stay until
the run ends. On ext4 without a journal, allocating an inode skips over
inodes freed in the last 60-300 s (``recently_deleted`` in the kernel's
inode allocator), so a run that had just removed a previous workload's
thousands of files measured that removal (200 x 10 imported at ~1,500
turns/s right after an ``rm -rf`` of a workspace, ~2,350 without one). Other
processes deleting files on the same file system still move the figures.
"""

from __future__ import annotations

import argparse
import importlib
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

from cairn.state.fsdir import PinnedDir  # noqa: E402

from tests.support.generated import write_session  # noqa: E402


def floor(tmp: Path, n: int = 300) -> float:
    """Durable publications per second on this disk (the floor every capture pays)."""
    d = tmp / "floor"
    d.mkdir()
    with PinnedDir.open_root(d) as root:
        t0 = time.perf_counter()
        for i in range(n):
            root.publish(f"f{i}", b"x" * 200)
        dt = time.perf_counter() - t0
    return n / dt  # the files stay until the run ends (see "Nothing is deleted before a measurement")


def cairn(ws: Path, *argv: str, env: dict[str, str] | None = None) -> tuple[float, int, str]:
    """Run the CLI; (seconds, peak RSS in bytes, stdout)."""
    e = dict(os.environ, **(env or {}))
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "cairn.server", *argv, "-w", str(ws)], env=e, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    assert p.stdout is not None and p.stderr is not None
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"cairn {' '.join(argv)} exited {p.returncode}: {err.decode()[-400:]}")
    return dt, usage.ru_maxrss * 1024, out.decode()


def du(path: Path) -> int:
    return sum(f.stat().st_blocks * 512 for f in path.rglob("*") if f.is_file() or f.is_dir())


#: imports of the small-session workloads, each into a fresh workspace (``--repeat``): the median is shown
REPEAT = 1


def spread(runs: list[float]) -> str:
    """``; median of N, min-max`` when a workload ran more than once."""
    return f"; median of {len(runs)}, {min(runs):.2f}-{max(runs):.2f} s" if len(runs) > 1 else ""


def row(name: str, value: str, note: str = "") -> None:
    print(f"| {name} | {value} | {note} |")


def many(tmp: Path, pubs: float, sessions: int, turns: int, *, process: bool) -> dict[str, float]:
    src = tmp / f"src-{sessions}"
    src.mkdir()
    for s in range(sessions):
        write_session(src / f"s{s:04d}.jsonl", s, turns, words=40)
    files = sorted(str(p) for p in src.iterdir())
    runs = []
    for r in range(REPEAT):  # each run into a fresh workspace; the last one is processed
        ws = tmp / f"ws-{sessions}-{r}"
        ws.mkdir()
        dt, rss, _ = cairn(ws, "import", *files)
        runs.append(dt)
    dt = statistics.median(runs)
    rate = sessions * turns / dt
    out = {"import_tps": rate, "import_s": dt}
    row(f"import {sessions} x {turns}", f"{rate:,.0f} turns/s ({dt:.2f} s{spread(runs)})",
        f"{rate / pubs:.2f} x floor; peak RSS {rss / 2**20:.0f} MiB")
    if process:
        cairn(ws, "seal")
        dt, rss, _ = cairn(ws, "process", "--json")
        cps = sessions / dt
        out["process_cps"] = cps
        row(f"process {sessions} captures", f"{cps:,.0f} captures/s ({dt:.1f} s)",
            f"{cps / pubs:.2f} x floor; peak RSS {rss / 2**20:.0f} MiB")
    return out


def discovered(tmp: Path, pubs: float, sessions: int, turns: int) -> None:
    """``cairn import --all``: the same sessions found in a Claude Code store of a scratch home."""
    home = tmp / "home"
    store = home / ".claude" / "projects" / "-bench"
    store.mkdir(parents=True)
    for s in range(sessions):
        write_session(store / f"s{s:04d}.jsonl", 10_000 + s, turns, words=40)
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local")}
    runs = []
    for r in range(REPEAT):
        ws = tmp / f"ws-all-{r}"
        ws.mkdir()
        dt, rss, _ = cairn(ws, "import", "--all", "--every-workspace", env=env)
        runs.append(dt)
    dt = statistics.median(runs)
    rate = sessions * turns / dt
    row(f"import --all, {sessions} x {turns} found on disk",
        f"{rate:,.0f} turns/s ({dt:.2f} s{spread(runs)}, discovery included)",
        f"{rate / pubs:.2f} x floor; peak RSS {rss / 2**20:.0f} MiB")


def one_file(tmp: Path, pubs: float, name: str, path: Path, turns: int) -> dict[str, float]:
    ws = tmp / f"ws-{name}"
    ws.mkdir()
    dt, rss, _ = cairn(ws, "import", str(path))
    size = path.stat().st_size
    disk = du(ws / ".cairn")
    row(f"import {name}: {turns:,} turns, {size / 1e6:.0f} MB, one run", f"{dt:.1f} s, {turns / dt:,.0f} turns/s",
        f"{turns / dt / pubs:.2f} x floor; .cairn/ {disk / size:.2f} x source; peak RSS {rss / 2**20:.0f} MiB")
    return {"seconds": dt, "rss": rss, "disk_ratio": disk / size}


def batch_sizes(tmp: Path, pubs: float, turns: int, chart: Path | None) -> None:
    src = write_session(tmp / "batch.jsonl", 77, turns, words=40, tools=False)
    sizes = [1, 4, 16, 64, 256, 512, 1024]
    rates = []
    for b in sizes:
        ws = tmp / f"ws-b{b}"
        ws.mkdir()
        n = turns if b >= 16 else turns // 10  # per-turn batches are slow: a tenth of the turns is enough
        part = src if n == turns else write_session(tmp / f"batch-{b}.jsonl", 78, n, words=40, tools=False)
        dt, _, _ = cairn(ws, "import", str(part), env={"CAIRN_CAPTURE_BATCH_TURNS": str(b)})
        rates.append(n / dt)
        row(f"import, batch of {b} turns", f"{n / dt:,.0f} turns/s", f"{n / dt / pubs:.2f} x floor ({n:,} turns)")
    if chart is None:
        return
    try:  # optional: not a dependency of cairn
        matplotlib: Any = importlib.import_module("matplotlib")
        matplotlib.use("Agg")
        plt: Any = importlib.import_module("matplotlib.pyplot")
    except ImportError:
        print("(matplotlib is not installed: no chart)")
        return
    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=100)
    ax.plot(sizes, rates, marker="o", label="cairn import")
    ax.axhline(pubs, color="grey", linestyle="--", label="durable publications/s (floor)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("turns per batch (CAIRN_CAPTURE_BATCH_TURNS)")
    ax.set_ylabel("turns/s")
    ax.set_title("Import throughput against batch size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(chart)
    print(f"(chart written to {chart})")


def compression(tmp: Path) -> None:
    import zlib

    from cairn.protocol.digest import ModelPolicy
    from cairn.worker.ingest.importers import load
    from cairn.worker.journal.batches import build_segment

    fixtures = REPO / "tests" / "fixtures" / "transcripts"
    samples: list[tuple[str, bytes]] = []
    real = [p for p in fixtures.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".md", ".org")]
    raws = []
    for p in real:
        try:
            sessions = load(p)
        except Exception:
            continue
        for s in sessions:
            raws.append(build_segment(s.session_id, list(s.turns), source="bench", title=s.title,
                                      policy=ModelPolicy(provider="extractive"))[1])
    samples.append((f"fixture transcripts ({len(raws)} segments)", b"".join(raws)))
    gen = write_session(tmp / "gen.jsonl", 5, 512, words=60)
    (s,) = load(gen)
    samples.append(("generated, one 512-turn segment", build_segment(s.session_id, list(s.turns), source="bench",
                                                                      title=s.title,
                                                                      policy=ModelPolicy(provider="extractive"))[1]))
    demo = REPO / "server" / "examples" / "demo-session.jsonl"
    (d,) = load(demo)
    samples.append(("demo session", build_segment(d.session_id, list(d.turns), source="bench", title=d.title,
                                                  policy=ModelPolicy(provider="extractive"))[1]))
    zstandard: Any = None
    try:  # optional: measured beside zlib when installed
        zstandard = importlib.import_module("zstandard")
    except ImportError:
        pass
    print("| sample | raw bytes | codec | ratio | compress MB/s | decompress MB/s |")
    print("|---|---|---|---|---|---|")
    for name, raw in samples:
        codecs: list[tuple[str, Any, Any]] = [
            (f"zlib-{lv}", (lambda b, lv=lv: zlib.compress(b, lv)), zlib.decompress) for lv in (1, 6, 9)]
        if zstandard is not None:
            for lv in (3, 9):
                c = zstandard.ZstdCompressor(level=lv)
                codecs.append((f"zstd-{lv}", c.compress, zstandard.ZstdDecompressor().decompress))
        for cname, comp, decomp in codecs:
            reps = max(1, int(2e6 // max(1, len(raw))))
            t0 = time.perf_counter()
            for _ in range(reps):
                packed = comp(raw)
            tc = (time.perf_counter() - t0) / reps
            t0 = time.perf_counter()
            for _ in range(reps):
                decomp(packed)
            td = (time.perf_counter() - t0) / reps
            print(f"| {name} | {len(raw):,} | {cname} | {len(raw) / len(packed):.2f} | {len(raw) / tc / 1e6:.0f} "
                  f"| {len(raw) / td / 1e6:.0f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a tenth of each size (a smoke run)")
    ap.add_argument("--chart", type=Path, default=None, help="write the batch-size chart to this PNG")
    ap.add_argument("--only", nargs="*", default=None,
                    choices=("many", "all", "thousand", "long", "huge", "batch", "compression"))
    ap.add_argument("--repeat", type=int, default=1, help="run the 200 x 10 imports N times (the median is shown)")
    ns = ap.parse_args()
    global REPEAT
    REPEAT = max(1, ns.repeat)
    scale = 10 if ns.quick else 1
    want = set(ns.only or ("many", "all", "thousand", "long", "huge", "batch", "compression"))
    with tempfile.TemporaryDirectory(prefix="cairn-ingest-", dir=os.environ.get("CAIRN_BENCH_DIR")) as t:
        tmp = Path(t)
        pubs = floor(tmp)
        print(f"durable-publication floor: {pubs:,.0f} publications/s\n")
        print("| workload | figure | beside the floor, disk, memory |")
        print("|---|---|---|")
        if "many" in want:
            many(tmp, pubs, 200 // scale, 10, process=True)
        if "all" in want:
            discovered(tmp, pubs, 200 // scale, 10)
        if "thousand" in want:
            many(tmp, pubs, 1000 // scale, 10, process=False)
        if "long" in want:
            n = 100_000 // scale
            path = write_session(tmp / "long.jsonl", 1, n, words=12, tools=False)
            one_file(tmp, pubs, "long", path, n)
        if "huge" in want:
            n = 2_000 // scale
            path = write_session(tmp / "huge.jsonl", 2, n, words=60, tool_bytes=60_000)
            one_file(tmp, pubs, "huge", path, n)
        if "batch" in want:
            batch_sizes(tmp, pubs, 20_000 // scale, ns.chart)
        if "compression" in want:
            print()
            compression(tmp)


if __name__ == "__main__":
    main()
