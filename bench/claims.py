"""Claim cycles per second: cairn claims against the durable-create floor and SQLite.

A *cycle* is one election of a claim and, as a separate later step, the
election of its ``completed`` outcome. Three implementations are measured
side by side in one run, on the same disk, with 1 and with ``--procs``
processes, each process working in its own scope:

``floor``   the bare cost of the two durable publications a cycle needs and
            nothing else: per record, write a temp file, fsync it, ``link()``
            it to its final name, unlink the temp, fsync the directory. The
            records have the byte sizes of real encoded claim/outcome records.
``sqlite``  an equally durable queue in one shared database file (WAL,
            ``synchronous=FULL``, ``busy_timeout``): the claim row is elected
            in one ``BEGIN IMMEDIATE`` transaction (newest generation must be
            settled), the outcome in a second (the claim must still be the
            newest, ours and unsettled).
``cairn``   :meth:`state.claims.ClaimStore.elect` then
            :meth:`state.claims.ClaimStore.settle` with ``completed``: the
            real programs, locks, ownership proofs and records.

Processes start together at a barrier and each runs for ``--seconds``;
aggregate throughput is total cycles over the wall time from the earliest
start to the latest finish. Every measurement gets a fresh directory and is
checked afterwards (one claim and one outcome per reported cycle), so no
implementation can report work it did not make durable. Measurement order
alternates across ``--rounds`` and the median is reported, because a shared
machine is noisy.

``--profile N`` additionally runs N single-process cairn cycles under
cProfile and prints where the time goes and how many system calls each
cycle makes.

Run: ``python bench/claims.py [--seconds 3] [--rounds 3] [--procs 8] [--json]``
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import multiprocessing as mp
import os
import platform
import pstats
import resource
import secrets
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from cairn.protocol import codec  # noqa: E402
from cairn.protocol.claims import Authority, ClaimRecord, OutcomeRecord  # noqa: E402
from cairn.protocol.vocab import OutcomeKind  # noqa: E402
from cairn.state.claims import ClaimStore  # noqa: E402
from cairn.state.fsdir import PinnedDir  # noqa: E402

KINDS = ("floor", "sqlite", "cairn")
CLAIMS_REL = ".cairn/state/journal/claims"
WARMUP_CYCLES = 3
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def scope_of(idx: int) -> str:
    return f"bench-{idx}"


def sample_sizes(workspace: str) -> tuple[int, int]:
    claim, outcome = sample_records(workspace)
    return len(claim), len(outcome)


def sample_records(workspace: str) -> tuple[bytes, bytes]:
    """Encoded claim and outcome records as cairn would write them for one cycle."""
    now = time.time()
    claim = ClaimRecord(
        scope=scope_of(0), generation=1234, nonce=secrets.token_hex(16), pid=os.getpid(), host=platform.node(),
        purpose="bench", created=now, deadline=now + 60.0, authority=Authority(workspace=workspace), inputs={},
    )
    outcome = OutcomeRecord(
        scope=claim.scope, generation=claim.generation, kind=OutcomeKind.COMPLETED, nonce=claim.nonce,
        decided=now, claim_nonce=claim.nonce, payload={"cycle": 1234, "notes": 3},
    )
    return codec.encode(claim), codec.encode(outcome)


# -- the three implementations ------------------------------------------------
# Each factory runs in the worker process and returns a function doing one
# cycle (argument: the cycle's ordinal). Setup (imports, opening, mkdir) is
# outside the timed region.

def _floor_publish(dfd: int, name: str, data: bytes) -> None:
    tmp = f".tmp-{os.getpid()}-{secrets.token_hex(6)}"
    fd = os.open(tmp, TEMP_FLAGS, 0o600, dir_fd=dfd)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.link(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
    os.unlink(tmp, dir_fd=dfd)
    os.fsync(dfd)


def make_floor(root: str, idx: int, sizes: tuple[int, int]) -> Callable[[int], None]:
    path = os.path.join(root, scope_of(idx))
    os.makedirs(path, exist_ok=True)
    dfd = os.open(path, DIR_FLAGS)
    claim_bytes = b"c" * sizes[0]
    outcome_bytes = b"o" * sizes[1]

    def cycle(i: int) -> None:
        _floor_publish(dfd, f"{i}.claim", claim_bytes)
        _floor_publish(dfd, f"{i}.outcome", outcome_bytes)

    return cycle


SQL_SCHEMA = """
CREATE TABLE IF NOT EXISTS claims (
  scope TEXT NOT NULL, generation INTEGER NOT NULL, nonce TEXT NOT NULL, deadline REAL NOT NULL,
  record BLOB NOT NULL, PRIMARY KEY (scope, generation));
CREATE TABLE IF NOT EXISTS outcomes (
  scope TEXT NOT NULL, generation INTEGER NOT NULL, kind TEXT NOT NULL,
  record BLOB NOT NULL, PRIMARY KEY (scope, generation));
"""


def sqlite_connect(path: str) -> sqlite3.Connection:
    con = sqlite3.connect(path, timeout=60.0, isolation_level=None)
    con.execute("PRAGMA busy_timeout=60000")
    mode = con.execute("PRAGMA journal_mode=WAL").fetchone()[0]
    if mode != "wal":
        raise RuntimeError(f"sqlite refused WAL mode ({mode})")
    con.execute("PRAGMA synchronous=FULL")
    return con


def make_sqlite(root: str, idx: int, sizes: tuple[int, int]) -> Callable[[int], None]:
    con = sqlite_connect(os.path.join(root, "queue.db"))
    scope = scope_of(idx)
    claim_bytes = b"c" * sizes[0]
    outcome_bytes = b"o" * sizes[1]

    def cycle(i: int) -> None:
        # transaction 1: elect generation n+1 (n must be settled)
        nonce = secrets.token_hex(16)
        con.execute("BEGIN IMMEDIATE")
        try:
            row = con.execute("SELECT MAX(generation) FROM claims WHERE scope=?", (scope,)).fetchone()
            n = row[0] or 0
            if n and con.execute("SELECT 1 FROM outcomes WHERE scope=? AND generation=?", (scope, n)).fetchone() is None:
                raise RuntimeError(f"{scope}: generation {n} unsettled")
            deadline = time.time() + 60.0
            con.execute("INSERT INTO claims VALUES (?,?,?,?,?)", (scope, n + 1, nonce, deadline, claim_bytes))
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        # transaction 2: elect its completed outcome (still newest, ours, unsettled, in time)
        gen = n + 1
        con.execute("BEGIN IMMEDIATE")
        try:
            newest = con.execute("SELECT MAX(generation) FROM claims WHERE scope=?", (scope,)).fetchone()[0]
            own = con.execute("SELECT nonce, deadline FROM claims WHERE scope=? AND generation=?", (scope, gen)).fetchone()
            if newest != gen or own is None or own[0] != nonce or time.time() >= own[1]:
                raise RuntimeError(f"{scope}: generation {gen} lost")
            con.execute("INSERT INTO outcomes VALUES (?,?,?,?)", (scope, gen, "completed", outcome_bytes))
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise

    return cycle


def make_cairn(root: str, idx: int, sizes: tuple[int, int]) -> Callable[[int], None]:
    store = ClaimStore(PinnedDir.open_root(root, create=True), CLAIMS_REL)
    scope = scope_of(idx)
    authority = Authority(workspace=root)

    def cycle(i: int) -> None:
        claim = store.elect(scope, purpose="bench", ttl=60.0, authority=authority)
        store.settle(claim, OutcomeKind.COMPLETED, payload={"cycle": i, "notes": 3})

    return cycle


FACTORIES: dict[str, Callable[[str, int, tuple[int, int]], Callable[[int], None]]] = {
    "floor": make_floor, "sqlite": make_sqlite, "cairn": make_cairn,
}


def prepare(kind: str, root: str) -> None:
    """Shared setup done once by the parent before workers start."""
    os.makedirs(root, exist_ok=True)
    if kind == "sqlite":
        con = sqlite_connect(os.path.join(root, "queue.db"))
        con.executescript(SQL_SCHEMA)
        con.close()


def count_durable(kind: str, root: str, procs: int) -> int:
    """Cycles actually on disk: complete claim/outcome pairs over all scopes."""
    total = 0
    if kind == "sqlite":
        con = sqlite3.connect(os.path.join(root, "queue.db"))
        claims = con.execute("SELECT COUNT(*) FROM claims").fetchone()[0]
        outcomes = con.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0]
        con.close()
        if claims != outcomes:
            raise RuntimeError(f"sqlite: {claims} claims but {outcomes} outcomes")
        return int(claims)
    for idx in range(procs):
        d = os.path.join(root, CLAIMS_REL if kind == "cairn" else "", scope_of(idx))
        names = os.listdir(d)
        claims = sum(n.endswith(".claim") for n in names)
        outcomes = sum(n.endswith(".outcome") for n in names)
        if claims != outcomes:
            raise RuntimeError(f"{kind}: {d} holds {claims} claims but {outcomes} outcomes")
        total += claims
    return total


# -- measurement ---------------------------------------------------------------

def worker(kind: str, root: str, idx: int, sizes: tuple[int, int], seconds: float,
           barrier: Any, out: Any) -> None:
    try:
        cycle = FACTORIES[kind](root, idx, sizes)
        for i in range(WARMUP_CYCLES):
            cycle(i)
        barrier.wait()
        start = time.monotonic()
        stop = start + seconds
        done = 0
        i = WARMUP_CYCLES
        while True:
            cycle(i)
            i += 1
            done += 1
            now = time.monotonic()
            if now >= stop:
                break
        out.put((idx, done, start, now, None))
    except BaseException as exc:  # report, never hang the parent
        try:
            barrier.abort()
        except Exception:
            pass
        out.put((idx, 0, 0.0, 0.0, f"{type(exc).__name__}: {exc}"))


def measure(kind: str, procs: int, base: str, seconds: float, sizes: tuple[int, int]) -> dict[str, Any]:
    root = tempfile.mkdtemp(prefix=f"{kind}-{procs}p-", dir=base)
    try:
        prepare(kind, root)
        ctx = mp.get_context("fork")
        barrier = ctx.Barrier(procs)
        out = ctx.Queue()
        ps = [ctx.Process(target=worker, args=(kind, root, i, sizes, seconds, barrier, out)) for i in range(procs)]
        for p in ps:
            p.start()
        rows = [out.get(timeout=seconds * 10 + 120) for _ in ps]
        for p in ps:
            p.join()
        errors = [r[4] for r in rows if r[4]]
        if errors:
            raise RuntimeError(f"{kind} x{procs}: {errors[0]}")
        cycles = sum(r[1] for r in rows)
        wall = max(r[3] for r in rows) - min(r[2] for r in rows)
        on_disk = count_durable(kind, root, procs)
        expected = cycles + WARMUP_CYCLES * procs
        if on_disk != expected:
            raise RuntimeError(f"{kind} x{procs}: reported {expected} cycles but {on_disk} are durable")
        return {"kind": kind, "procs": procs, "cycles": cycles, "wall": wall, "throughput": cycles / wall}
    finally:
        shutil.rmtree(root, ignore_errors=True)
        os.sync()  # let the removal's writeback finish before the next measurement


def schedule(rounds: int, procs: int) -> list[list[tuple[str, int]]]:
    """Per round, the order of measurements.

    cairn always runs between its two comparators, which swap sides every
    round, and the process counts alternate which goes first, so slow drift
    of a shared machine biases no implementation and each round yields
    paired ratios of neighbouring measurements.
    """
    plan = []
    for r in range(rounds):
        kinds = ("floor", "cairn", "sqlite") if r % 2 == 0 else ("sqlite", "cairn", "floor")
        counts = (1, procs) if (r // 2) % 2 == 0 else (procs, 1)
        plan.append([(k, p) for p in counts for k in kinds])
    return plan


# -- machine facts ---------------------------------------------------------------

def fs_type(path: str) -> tuple[str, str]:
    """(filesystem type, device) of the mount holding ``path``, from /proc/mounts."""
    real = os.path.realpath(path)
    best = ("", "?", "?")
    try:
        with open("/proc/mounts", encoding="utf-8") as fh:
            for line in fh:
                dev, mnt, typ = line.split()[:3]
                mnt = mnt.replace("\\040", " ")
                if (real == mnt or real.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best[0]):
                    best = (mnt, typ, dev)
    except OSError:
        pass
    return best[1], best[2]


def machine_facts(base: str) -> dict[str, Any]:
    typ, dev = fs_type(base)
    return {
        "nproc": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)),
        "temp_dir": base,
        "filesystem": typ,
        "device": dev,
        "same_device_as_repo": os.stat(base).st_dev == os.stat(REPO).st_dev,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "kernel": platform.release(),
        "loadavg": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "io_pressure": _io_pressure(),
    }


def _io_pressure() -> str:
    """The 'some' line of /proc/pressure/io (share of time tasks waited on I/O), if the kernel has it."""
    try:
        with open("/proc/pressure/io", encoding="utf-8") as fh:
            first = fh.readline().split()
    except OSError:
        return "n/a"
    return " ".join(x for x in first[1:3])


def choose_base(explicit: str | None) -> str:
    """A temp dir on the repository's disk (the system temp dir if it is on it)."""
    if explicit:
        os.makedirs(explicit, exist_ok=True)
        return tempfile.mkdtemp(prefix="cairn-bench-", dir=explicit)
    tmp = tempfile.gettempdir()
    parent = tmp if os.stat(tmp).st_dev == os.stat(REPO).st_dev else str(REPO / "bench")
    return tempfile.mkdtemp(prefix="cairn-bench-", dir=parent)


# -- profile ---------------------------------------------------------------------

def cpu_per_cycle(kind: str, base: str, cycles: int) -> dict[str, float]:
    """Unprofiled wall, user and system time per cycle of one process (microseconds)."""
    root = tempfile.mkdtemp(prefix=f"cpu-{kind}-", dir=base)
    try:
        cycle = FACTORIES[kind](root, 0, sample_sizes(base))
        for i in range(WARMUP_CYCLES):
            cycle(i)
        r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        for i in range(WARMUP_CYCLES, WARMUP_CYCLES + cycles):
            cycle(i)
        t1, r1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
        return {"wall_us": (t1 - t0) / cycles * 1e6, "user_us": (r1.ru_utime - r0.ru_utime) / cycles * 1e6,
                "sys_us": (r1.ru_stime - r0.ru_stime) / cycles * 1e6}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def profile_cairn(base: str, cycles: int, top: int = 25) -> dict[str, Any]:
    """Where a single-process cairn cycle spends its time beyond the floor.

    Unprofiled wall/user/system time per cycle of floor and cairn (alternated
    twice, best of two), then ``cycles`` cairn cycles under cProfile: calls per
    cycle of every ``os``/``fcntl`` primitive (each is one system call) and
    time grouped by area.
    """
    cpu: dict[str, dict[str, float]] = {}
    for kind in ("floor", "cairn", "floor", "cairn"):
        m = cpu_per_cycle(kind, base, cycles)
        if kind not in cpu or m["wall_us"] < cpu[kind]["wall_us"]:
            cpu[kind] = m
    root = tempfile.mkdtemp(prefix="profile-", dir=base)
    try:
        cycle = make_cairn(root, 0, (0, 0))
        for i in range(WARMUP_CYCLES):
            cycle(i)
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()
        for i in range(WARMUP_CYCLES, WARMUP_CYCLES + cycles):
            cycle(i)
        prof.disable()
        elapsed = time.perf_counter() - t0
    finally:
        shutil.rmtree(root, ignore_errors=True)
    stats = pstats.Stats(prof)
    raw = stats.stats  # type: ignore[attr-defined]
    syscalls: dict[str, dict[str, float]] = {}
    groups = {"fsync": 0.0, "other syscalls": 0.0, "codec encode": 0.0, "codec decode": 0.0}
    total = 0.0
    for (filename, _line, func), (_cc, nc, tt, ct, _callers) in raw.items():
        total += tt
        if filename == "~" and ("posix." in func or "fcntl." in func):
            name = func.strip("<>").replace("built-in method ", "")
            syscalls[name] = {"per_cycle": nc / cycles, "us_per_cycle": tt / cycles * 1e6}
            groups["fsync" if name == "posix.fsync" else "other syscalls"] += tt
        elif filename.endswith(os.path.join("protocol", "codec.py")) and func in ("encode", "decode"):
            groups[f"codec {func}"] += ct
    groups["python rest (programs, claims, attrs)"] = total - sum(groups.values())
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(top)
    return {
        "cycles": cycles,
        "unprofiled": cpu,
        "ms_per_cycle_profiled": elapsed / cycles * 1e3,
        "groups_us_per_cycle": {k: v / cycles * 1e6 for k, v in groups.items()},
        "syscalls_per_cycle": sum(s["per_cycle"] for s in syscalls.values()),
        "syscalls": dict(sorted(syscalls.items(), key=lambda kv: -kv[1]["per_cycle"])),
        "top": buf.getvalue(),
    }


# -- report ----------------------------------------------------------------------

def summarise(results: list[dict[str, Any]], procs: int) -> dict[str, Any]:
    med: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        for p in (1, procs):
            tps = [r["throughput"] for r in results if r["kind"] == kind and r["procs"] == p]
            m = statistics.median(tps)
            med[f"{kind}@{p}"] = {
                "kind": kind, "procs": p, "throughput": m, "runs": tps,
                "ms_per_cycle": 1e3 / m,  # aggregate: wall time per completed cycle
                "ms_per_cycle_per_proc": 1e3 * p / m,  # what one process waits per cycle
            }

    def tpc(kind: str, p: int) -> float:
        return med[f"{kind}@{p}"]["ms_per_cycle"]

    def thr(kind: str, p: int) -> float:
        return med[f"{kind}@{p}"]["throughput"]

    def paired(num: str, den: str, p: int, invert: bool) -> float:
        """Median over rounds of the ratio of two measurements of the same round."""
        by_round: dict[int, dict[str, float]] = {}
        for r in results:
            if r["procs"] == p:
                by_round.setdefault(r["round"], {})[r["kind"]] = r["throughput"]
        vals = [(x[den] / x[num]) if invert else (x[num] / x[den]) for x in by_round.values()]
        return statistics.median(vals)

    # (name, value from medians, paired median, target); *tpc* ratios are time per cycle
    ratios = [
        ("cairn_tpc/floor_tpc@1", tpc("cairn", 1) / tpc("floor", 1), paired("cairn", "floor", 1, True), "<= 1.3"),
        (f"cairn_thr/sqlite_thr@{procs}", thr("cairn", procs) / thr("sqlite", procs),
         paired("cairn", "sqlite", procs, False), ">= 1.5"),
        (f"cairn_tpc/floor_tpc@{procs}", tpc("cairn", procs) / tpc("floor", procs),
         paired("cairn", "floor", procs, True), ""),
        ("cairn_thr/sqlite_thr@1", thr("cairn", 1) / thr("sqlite", 1), paired("cairn", "sqlite", 1, False), ""),
        ("sqlite_tpc/floor_tpc@1", tpc("sqlite", 1) / tpc("floor", 1), paired("sqlite", "floor", 1, True), ""),
        (f"floor_thr/sqlite_thr@{procs}", thr("floor", procs) / thr("sqlite", procs),
         paired("floor", "sqlite", procs, False), ""),
        (f"floor_scaling@{procs}/1", thr("floor", procs) / thr("floor", 1), None, ""),
        (f"sqlite_scaling@{procs}/1", thr("sqlite", procs) / thr("sqlite", 1), None, ""),
        (f"cairn_scaling@{procs}/1", thr("cairn", procs) / thr("cairn", 1), None, ""),
    ]
    noisy = {k: max(v["runs"]) / min(v["runs"]) for k, v in med.items() if min(v["runs"]) > 0}
    return {
        "medians": med,
        "ratios": {n: {"value": v, "paired": pv, "target": t} for n, v, pv, t in ratios},
        "spread": noisy,  # max/min of a configuration's rounds: how noisy the machine was
    }


def _target_met(value: float, paired: float | None, target: str) -> str:
    if not target:
        return ""
    op, bound = target.split()

    def ok(v: float) -> bool:
        return v <= float(bound) if op == "<=" else v >= float(bound)

    both = [value] + ([paired] if paired is not None else [])
    verdict = "met" if all(ok(v) for v in both) else "MISSED" if not any(ok(v) for v in both) else "borderline"
    return f"target {target}: {verdict}"


def print_report(facts: dict[str, Any], args: argparse.Namespace, sizes: tuple[int, int],
                 summary: dict[str, Any], profile: dict[str, Any] | None) -> None:
    print("machine: nproc={nproc} usable={usable_cpus} fs={filesystem} dev={device} python={python} "
          "sqlite={sqlite} kernel={kernel}".format(**facts))
    print(f"temp dir: {facts['temp_dir']} (same device as repo: {facts['same_device_as_repo']})")
    print(f"run: seconds={args.seconds} rounds={args.rounds} procs=1,{args.procs}; "
          f"record bytes claim={sizes[0]} outcome={sizes[1]}; median of rounds")
    print(f"load avg start/end: {facts['loadavg']} / {facts['loadavg_end']}; "
          f"io pressure start/end: {facts['io_pressure']} / {facts['io_pressure_end']}")
    print()
    print(f"{'impl':<8}{'procs':>6}{'cycles/s':>12}{'ms/cycle':>11}{'ms/cycle/proc':>15}   runs (cycles/s)")
    for row in summary["medians"].values():
        runs = " ".join(f"{x:.0f}" for x in row["runs"])
        print(f"{row['kind']:<8}{row['procs']:>6}{row['throughput']:>12.1f}{row['ms_per_cycle']:>11.3f}"
              f"{row['ms_per_cycle_per_proc']:>15.3f}   {runs}")
    print()
    print(f"{'ratio':<28}{'medians':>8}{'paired':>8}")
    for name, r in summary["ratios"].items():
        pv = "" if r["paired"] is None else f"{r['paired']:.2f}"
        verdict = _target_met(r["value"], r["paired"], r["target"])
        print(f"{name:<28}{r['value']:>8.2f}{pv:>8}   {verdict}")
    worst = max(summary["spread"].items(), key=lambda kv: kv[1], default=None)
    if worst is not None and worst[1] > 1.5:
        print(f"warning: noisy machine: {worst[0]} varied {worst[1]:.1f}x between rounds "
              f"(io pressure at end {facts['io_pressure_end']}); prefer more, shorter rounds")
    if profile is not None:
        print_profile(profile)


def print_profile(profile: dict[str, Any]) -> None:
    print()
    print("unprofiled, 1 process, us per cycle (best of 2):")
    for kind, m in profile["unprofiled"].items():
        print(f"  {kind:<6} wall {m['wall_us']:8.0f}  user {m['user_us']:6.0f}  sys {m['sys_us']:6.0f}")
    f, c = profile["unprofiled"]["floor"], profile["unprofiled"]["cairn"]
    print(f"  cairn - floor: wall {c['wall_us'] - f['wall_us']:+.0f}  user {c['user_us'] - f['user_us']:+.0f}"
          f"  sys {c['sys_us'] - f['sys_us']:+.0f}  (ratio {c['wall_us'] / f['wall_us']:.2f})")
    print()
    print(f"cairn under cProfile: {profile['cycles']} cycles, {profile['ms_per_cycle_profiled']:.3f} ms/cycle "
          f"(profiler overhead inflates Python parts)")
    for name, us in profile["groups_us_per_cycle"].items():
        print(f"  {name:<40}{us:8.0f} us/cycle")
    print(f"system calls per cycle: {profile['syscalls_per_cycle']:.1f} (the floor makes 18: "
          f"per record getpid, getrandom, open, write, fsync, close, link, unlink, fsync dir)")
    print(f"  {'call':<26}{'per cycle':>10}{'us/cycle':>10}")
    for name, s in profile["syscalls"].items():
        print(f"  {name:<26}{s['per_cycle']:>10.1f}{s['us_per_cycle']:>10.1f}")
    print(profile["top"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--seconds", type=float, default=3.0, help="duration of each measurement")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of all measurements, median reported (0: profile only)")
    ap.add_argument("--procs", type=int, default=8, help="process count of the parallel measurement")
    ap.add_argument("--dir", default=None, help="parent of the temp dir (default: system temp on the repo's disk)")
    ap.add_argument("--profile", type=int, default=0, metavar="N", help="also cProfile N single-process cairn cycles")
    ap.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    args = ap.parse_args(argv)

    base = choose_base(args.dir)
    try:
        facts = machine_facts(base)
        sizes = sample_sizes(base)
        results: list[dict[str, Any]] = []
        for r, order in enumerate(schedule(args.rounds, args.procs)):
            for kind, procs in order:
                res = measure(kind, procs, base, args.seconds, sizes)
                res["round"] = r
                results.append(res)
                if not args.json:
                    print(f"  round {r} {kind:<6} x{procs}: {res['throughput']:.1f} cycles/s", file=sys.stderr)
        summary = summarise(results, args.procs) if results else {"medians": {}, "ratios": {}, "spread": {}}
        facts["loadavg_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
        facts["io_pressure_end"] = _io_pressure()
        profile = profile_cairn(base, args.profile) if args.profile > 0 else None
    finally:
        shutil.rmtree(base, ignore_errors=True)

    if args.json:
        doc = {"machine": facts, "args": vars(args), "record_bytes": {"claim": sizes[0], "outcome": sizes[1]},
               "results": results, **summary}
        if profile is not None:
            doc["profile"] = profile
        print(json.dumps(doc, indent=2))
    else:
        print_report(facts, args, sizes, summary, profile)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
