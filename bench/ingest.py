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
  built from the fixture transcripts and from generated sessions;
* ``incremental``: ``cairn import --all`` over histories in a scratch home
  (the real Claude Code and Codex sessions committed in tests/, 200 x 10,
  one 100,000-turn session, all of them together, an empty home), cold, then
  re-run with nothing new (and the files it wrote counted), then with 10
  turns appended to the long session; beside a peer (``--peer 'CMD ARGS'``,
  default ``deja index --quiet`` when deja-vu's program ``deja`` is on ``PATH``;
  run with the same ``HOME``, its state under ``HOME`` (``--peer-state``)
  removed before each cold run; cairn and the peer alternate, each round
  starting with the other) and two floors measured in the same run: ``cat`` of
  every file, and a
  parse-and-write script (:data:`FLOOR`: every JSON line decoded, the
  messages' text appended to one file, fsynced; incremental by inode, size,
  mtime and offset like the manifest), written as a chart with ``--chart-incremental``;
* ``codex-append``: one 20,000-turn Codex rollout (the record shapes of a real
  Codex CLI rollout, tests/support/rollouts.py) imported once, then 10 turns
  appended before each round of ``cairn import --all`` and of ``cairn hook
  codex PAYLOAD`` (Codex's ``notify`` after a turn), beside the previous
  package (``--baseline``) and the parse-and-write floor.

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
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from cairn.state.fsdir import PinnedDir  # noqa: E402

from tests.support.generated import session_lines, write_session  # noqa: E402
from tests.support.rollouts import append_turns, write_rollout  # noqa: E402


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


#: the parse-and-write floor: what a minimal incremental reader costs in the same interpreter (no claims,
#: no evidence, no ids): ``python FLOOR STATE OUT FILE...`` (STATE absent: a cold run)
FLOOR = r"""
import json, os, sys
state_path, out_path, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
try:
    state = json.load(open(state_path))
except OSError:
    state = {}
new = {}
with open(out_path, "ab") as out:
    for p in paths:
        st = os.stat(p)
        mark = [st.st_ino, st.st_size, st.st_mtime_ns]
        old = state.get(p)
        if old and old[0] == mark:
            new[p] = old
            continue
        start = old[1] if old and old[0][0] == mark[0] and mark[1] >= old[0][1] else 0
        off = start
        with open(p, "rb") as f:
            f.seek(start)
            for line in f:
                if not line.endswith(b"\n"):
                    break
                off += len(line)
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                msg = rec.get("message") or rec.get("payload") or {}
                content = msg.get("content") if isinstance(msg, dict) else None
                if isinstance(content, str):
                    out.write(content.encode() + b"\n")
                elif isinstance(content, list):
                    for b in content:
                        if isinstance(b, dict) and isinstance(b.get("text"), str):
                            out.write(b["text"].encode() + b"\n")
        new[p] = [mark, off]
    out.flush()
    os.fsync(out.fileno())
tmp = state_path + ".tmp"
with open(tmp, "w") as f:
    json.dump(new, f)
    f.flush()
    os.fsync(f.fileno())
os.replace(tmp, state_path)
"""


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one command."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert p.stderr is not None
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv[:3])} failed: {err.decode()[-400:]}")
    return dt, usage.ru_utime + usage.ru_stime


def _child_env(home: Path) -> dict[str, str]:
    env = dict(os.environ, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local"),
               XDG_CACHE_HOME=str(home / ".cache"), XDG_STATE_HOME=str(home / ".local" / "state"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed cairn has its bytecode cached; so does the bench's
    return env


class History:
    """A scratch home holding session files where discovery finds them, and what to run over it."""

    def __init__(self, root: Path, name: str) -> None:
        self.home = root / f"home-{name}"
        self.store = self.home / ".claude" / "projects" / "-bench"
        self.store.mkdir(parents=True)
        self.files: list[Path] = []
        self.name = name

    def add(self, path: Path) -> Path:
        self.files.append(path)
        return path

    def codex(self, src: Path) -> None:
        d = self.home / ".codex" / "sessions" / "2025" / "01" / "01"
        d.mkdir(parents=True, exist_ok=True)
        self.add(d / f"rollout-2025-01-01T00-00-00-{len(self.files):04d}.jsonl").write_bytes(src.read_bytes())

    def size(self) -> int:
        return sum(p.stat().st_size for p in self.files)

    def cairn(self, ws: Path, view: str | None = None) -> tuple[float, float]:
        env = _child_env(self.home)
        if view:
            env["PYTHONPATH"] = view + os.pathsep + env.get("PYTHONPATH", "")
        return timed([sys.executable, "-m", "cairn.server", "import", "--all", "--every-workspace", "-w", str(ws)], env)

    def floor(self, state: Path) -> tuple[float, float]:
        script = state.parent / "floor.py"
        if not script.exists():
            script.write_text(FLOOR)
        return timed([sys.executable, str(script), str(state), str(state) + ".out", *map(str, self.files)],
                     _child_env(self.home))

    def cat(self) -> tuple[float, float]:
        return timed(["cat", *map(str, self.files)], _child_env(self.home)) if self.files else timed(["true"], {})

    def peer(self, command: list[str] | None, *, cold: bool = False) -> tuple[float, float] | None:
        """One run of the peer over this home; ``cold``: its state (:data:`PEER_STATE`) removed first."""
        if not command:
            return None
        if cold:
            for rel in PEER_STATE:
                shutil.rmtree(self.home / rel, ignore_errors=True)
        return timed(command, _child_env(self.home))


#: the peer's state under its HOME, removed before a cold run (``--peer-state``; deja-vu keeps its index there)
PEER_STATE: list[str] = [".cache/deja"]


def _files_under(ws: Path) -> dict[str, int]:
    return {str(p): p.stat().st_size for p in (ws / ".cairn").rglob("*") if p.is_file()}


def _med(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


@attrs.define
class Row:
    label: str
    cairn: tuple[float, float]
    floor: tuple[float, float]
    cat: float | None = None
    peer: tuple[float, float] | None = None
    baseline: tuple[float, float] | None = None
    note: str = ""


def incremental(tmp: Path, repeat: int, peer: list[str] | None, chart: Path | None, scale: int,
                baseline: Path | None = None) -> None:
    """Cold, warm and append imports of whole histories beside the peer and the floors (module docstring).

    ``baseline``: a folder holding a ``cairn/`` view of another tree (its four layer folders), put first on
    ``PYTHONPATH`` for a second run of every cairn command (the same bench, the other commit's package)."""
    root = tmp / "incremental"
    root.mkdir()
    real_files = sorted([*(REPO / "tests" / "corpus" / "files").glob("claude-code-*.jsonl"),
                         *(REPO / "tests" / "fixtures" / "transcripts" / "claude-code").glob("*.jsonl")])
    codex_files = sorted((REPO / "tests" / "fixtures" / "transcripts" / "codex").rglob("rollout-*.jsonl"))
    long_turns = 100_000 // scale
    histories: dict[str, History] = {}

    def real(h: History) -> None:
        for p in real_files:
            h.add(h.store / f"real-{p.name}").write_bytes(p.read_bytes())
        for p in codex_files:
            h.codex(p)

    def many(h: History) -> None:
        for s in range(200 // scale):
            write_session(h.add(h.store / f"s{s:04d}.jsonl"), 20_000 + s, 10, words=40)

    def long(h: History) -> None:
        write_session(h.add(h.store / "long.jsonl"), 1, long_turns, words=12, tools=False)

    for name, builders in (("real", [real]), ("200x10", [many]), ("long", [long]), ("all", [real, many, long]),
                           ("append", [long]), ("empty", [])):
        h = histories[name] = History(root, name)
        for b in builders:
            b(h)
    rows: list[Row] = []
    base = str(baseline) if baseline else None
    print(f"peer: {' '.join(peer)}" if peer else "peer: none on PATH")

    def both(h: History, ws: Path, runs: list[tuple[float, float]], old: list[tuple[float, float]]) -> None:
        runs.append(h.cairn(ws))
        if base:
            old.append(h.cairn(Path(f"{ws}-baseline"), base))

    def cold(name: str) -> Path:
        h = histories[name]
        runs: list[tuple[float, float]] = []
        old: list[tuple[float, float]] = []
        floors, cats, peers = [], [], []
        ws = root / f"ws-{name}-0"
        for r in range(repeat):
            ws = root / f"ws-{name}-{r}"
            ws.mkdir()
            Path(f"{ws}-baseline").mkdir()
            got = h.peer(peer, cold=True) if r % 2 else None  # alternating: odd rounds start with the peer
            both(h, ws, runs, old)
            floors.append(h.floor(root / f"floor-{name}-{r}.json"))
            cats.append(h.cat())
            if not r % 2:
                got = h.peer(peer, cold=True)
            if got is not None:
                peers.append(got)
        label = f"{name}, cold ({len(h.files)} files, {h.size() / 1e6:.1f} MB)" if h.files else "empty home (fixed cost)"
        rows.append(Row(label, _med(runs), _med(floors), _med(cats)[0], _med(peers) if peers else None,
                        _med(old) if old else None))
        return ws

    # a first run of each kind outside the measurements: bytecode written, page cache warm
    for where in (None, base) if base else (None,):
        warm_up = root / f"ws-warm-up-{bool(where)}"
        warm_up.mkdir()
        histories["real"].cairn(warm_up, where)
    for name in ("empty", "real", "200x10", "long", "all"):
        ws = cold(name)
    # nothing new: the last "all" workspace again
    h = histories["all"]
    state = root / f"floor-all-{repeat - 1}.json"
    def written(before: dict[str, int], after: dict[str, int]) -> int:
        return len(set(after) - set(before)) + sum(1 for k in before if k in after and after[k] != before[k])

    before, before_old = _files_under(ws), _files_under(Path(f"{ws}-baseline"))
    runs: list[tuple[float, float]] = []
    old: list[tuple[float, float]] = []
    peers = []
    for i in range(repeat):  # alternating, as above
        got = h.peer(peer) if i % 2 else None
        both(h, ws, runs, old)
        if not i % 2:
            got = h.peer(peer)
        if got is not None:
            peers.append(got)
    n_written = written(before, _files_under(ws))
    note = f"baseline: {written(before_old, _files_under(Path(f'{ws}-baseline')))} files written" if base else ""
    rows.append(Row(f"all, re-run with nothing new ({n_written} files written in {repeat} runs)", _med(runs),
                    _med([h.floor(state) for _ in range(repeat)]), None, _med(peers) if peers else None,
                    _med(old) if old else None, "; ".join(x for x in ("floor: a stat per file", note) if x)))
    # ten turns appended to the long session, each round
    h = histories["append"]
    ws = root / "ws-append"
    ws.mkdir()
    Path(f"{ws}-baseline").mkdir()
    h.cairn(ws)
    if base:
        h.cairn(Path(f"{ws}-baseline"), base)
    state = root / "floor-append.json"
    h.floor(state)
    h.peer(peer, cold=True)  # every reader has read the long session once before the first append
    lines = list(session_lines(1, long_turns + 10 * repeat, words=12, tools=False))
    runs, old, floors, peers = [], [], [], []
    have = long_turns
    for i in range(repeat):
        with h.files[0].open("a") as fh:
            fh.write("".join(line + "\n" for line in lines[1 + 2 * have:1 + 2 * (have + 10)]))
        have += 10
        got = h.peer(peer) if i % 2 else None  # alternating, as above
        both(h, ws, runs, old)
        floors.append(h.floor(state))
        if not i % 2:
            got = h.peer(peer)
        if got is not None:
            peers.append(got)
    rows.append(Row("long session, 10 turns appended", _med(runs), _med(floors), None, _med(peers) if peers else None,
                    _med(old) if old else None, "floor: reads from its offset"))

    print(f"| workload | cairn wall (CPU) |{' baseline wall (CPU) |' if base else ''} "
          f"peer{'' if peer else ' (not on PATH)'} | ratio | parse-and-write floor | ratio | cat |")
    print(f"|---|---|{'---|' if base else ''}---|---|---|---|---|")
    for r in rows:
        ps = f"{r.peer[0]:.3f} s" if r.peer else "-"
        pr = f"{r.cairn[0] / r.peer[0]:.2f}" if r.peer and r.peer[0] else "-"
        bs = f" {r.baseline[0]:.3f} s ({r.baseline[1]:.2f}) |" if r.baseline else (" - |" if base else "")
        print(f"| {r.label} | {r.cairn[0]:.3f} s ({r.cairn[1]:.2f}) |{bs} {ps} | {pr} | {r.floor[0]:.3f} s"
              f"{'; ' + r.note if r.note else ''} | {r.cairn[0] / r.floor[0]:.1f} | "
              f"{f'{r.cat:.3f} s' if r.cat is not None else '-'} |")
    if chart is None:
        return
    try:  # optional: not a dependency of cairn
        matplotlib: Any = importlib.import_module("matplotlib")
        matplotlib.use("Agg")
        plt: Any = importlib.import_module("matplotlib.pyplot")
    except ImportError:
        print("(matplotlib is not installed: no chart)")
        return
    series = [("cairn import --all", [r.cairn[0] for r in rows])]
    if base:
        series.append(("the same, before (baseline)", [r.baseline[0] if r.baseline else 0.0 for r in rows]))
    if any(r.peer for r in rows):
        series.append(("peer", [r.peer[0] if r.peer else 0.0 for r in rows]))
    series.append(("parse-and-write floor", [r.floor[0] for r in rows]))
    fig, ax = plt.subplots(figsize=(9, 4.2), dpi=100)
    width = 0.8 / len(series)
    for i, (name, values) in enumerate(series):
        ax.bar([x - 0.4 + width * (i + 0.5) for x in range(len(rows))], values, width, label=name)
    ax.set_yscale("log")
    ax.set_ylabel("seconds (wall, median)")
    ax.set_xticks(list(range(len(rows))))
    names = ["empty home", "real, cold", "200 x 10, cold", "100k turns, cold", "all, cold", "all, nothing new",
             "100k + 10 turns"]
    ax.set_xticklabels(names[:len(rows)], fontsize=8)
    ax.set_title("cairn import --all over whole histories")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(chart)
    print(f"(chart written to {chart})")


def codex_append(tmp: Path, repeat: int, scale: int, baseline: Path | None = None) -> None:
    """10 turns appended to a long Codex rollout, then ``cairn import --all`` and ``cairn hook codex`` (module
    docstring), each beside the same command of the ``baseline`` package when given."""
    root = tmp / "codex-append"
    root.mkdir()
    turns = 20_000 // scale
    h = History(root, "codex")
    day = h.home / ".codex" / "sessions" / "2026" / "05" / "11"
    day.mkdir(parents=True)
    thread = "0000000a-0000-7000-0000-000000000001"
    rollout = write_rollout(h.add(day / f"rollout-2026-05-11T10-00-00-{thread}.jsonl"), 10, turns)
    # the session recorded in the hook's workspace: a hook imports a session only into the workspace it belongs to
    rollout.write_bytes(rollout.read_bytes().replace(b'"cwd":"/work/project"',
                                                     b'"cwd":' + json.dumps(str(root / "ws-hook")).encode(), 1))
    base = str(baseline) if baseline else None
    views = [("", None), ("-baseline", base)] if base else [("", None)]

    def hook(ws: Path, view: str | None) -> tuple[float, float]:
        env = _child_env(h.home)
        env.pop("CODEX_HOME", None)
        if view:
            env["PYTHONPATH"] = view + os.pathsep + env.get("PYTHONPATH", "")
        payload = json.dumps({"type": "agent-turn-complete", "thread-id": thread, "turn-id": "1", "cwd": str(ws),
                              "input-messages": ["go on"], "last-assistant-message": "Done."})
        return timed([sys.executable, "-m", "cairn.server", "hook", "codex", payload], env)

    cold: dict[str, list[tuple[float, float]]] = {}
    for kind in ("import", "hook"):
        for suffix, view in views:
            ws = root / f"ws-{kind}{suffix}"
            ws.mkdir()
            cold.setdefault(suffix, []).append(h.cairn(ws, view) if kind == "import" else hook(ws, view))
    state = root / "floor.json"
    h.floor(state)
    have = turns
    runs: dict[str, list[tuple[float, float]]] = {}
    floors = []
    for i in range(repeat):
        append_turns(rollout, 10, have, have + 10)  # each workspace then finds these 10 turns new
        have += 10
        for kind in ("import", "hook"):
            order = views if i % 2 == 0 else views[::-1]  # alternating: every other round starts with the baseline
            for suffix, view in order:
                ws = root / f"ws-{kind}{suffix}"
                runs.setdefault(kind + suffix, []).append(h.cairn(ws, view) if kind == "import" else hook(ws, view))
        floors.append(h.floor(state))
    print(f"one Codex rollout, {turns:,} turns ({rollout.stat().st_size / 1e6:.0f} MB), cold: "
          + ", ".join(f"{'before' if k else 'now'} {_med(v)[0]:.2f} s" for k, v in cold.items()))
    print(f"| 10 turns appended, then | cairn wall (CPU) |{' before (baseline) | before / now |' if base else ''}")
    print(f"|---|---|{'---|---|' if base else ''}")
    for kind, label in (("import", "`cairn import --all`"), ("hook", "`cairn hook codex` (notify)")):
        now = _med(runs[kind])
        row = f"| {label} | {now[0]:.3f} s ({now[1]:.2f}) |"
        if base:
            old = _med(runs[kind + "-baseline"])
            row += f" {old[0]:.3f} s ({old[1]:.2f}) | {old[0] / now[0]:.1f} |"
        print(row)
    print(f"parse-and-write floor (reads from its offset): {_med(floors)[0]:.3f} s; medians of {repeat}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a tenth of each size (a smoke run)")
    ap.add_argument("--chart", type=Path, default=None, help="write the batch-size chart to this PNG")
    ap.add_argument("--only", nargs="*", default=None,
                    choices=("many", "all", "thousand", "long", "huge", "batch", "compression", "incremental",
                             "codex-append"))
    ap.add_argument("--peer", default=None,
                    help="the peer's command, run with the workload's HOME (default: 'deja index --quiet' when deja-vu's "
                         "program deja is on PATH)")
    ap.add_argument("--peer-state", nargs="*", default=None,
                    help="the peer's state folders relative to HOME, removed before each cold run (default: .cache/deja)")
    ap.add_argument("--chart-incremental", type=Path, default=None, help="write the incremental chart to this PNG")
    ap.add_argument("--baseline", type=Path, default=None,
                    help="incremental, codex-append: a folder holding a cairn/ view of another tree, measured "
                         "beside this one")
    ap.add_argument("--repeat", type=int, default=1, help="run the 200 x 10 imports N times (the median is shown)")
    ns = ap.parse_args()
    global REPEAT
    REPEAT = max(1, ns.repeat)
    scale = 10 if ns.quick else 1
    want = set(ns.only or ("many", "all", "thousand", "long", "huge", "batch", "compression", "incremental"))
    peer = shlex.split(ns.peer) if ns.peer else (["deja", "index", "--quiet"] if shutil.which("deja") else None)
    if ns.peer_state is not None:
        PEER_STATE[:] = ns.peer_state
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
        if "incremental" in want:
            print()
            incremental(tmp, max(REPEAT, 3), peer, ns.chart_incremental, scale, ns.baseline)
        if "codex-append" in want:
            print()
            codex_append(tmp, max(REPEAT, 3), scale, ns.baseline)


if __name__ == "__main__":
    main()
