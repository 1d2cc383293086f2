"""Journal benchmarks: public-entry discovery (cold and warm) and cleanup batches.

    python bench/journal.py [--entries 10000] [--generations 10000]

Discovery: 10,000 public digest entries; a cold listing reads and validates
every record; a warm listing in the same process must not re-read unchanged
records (target: under 5 ms). Printed beside a baseline measured in the same
run: a bare ``os.listdir`` of the directory.

Cleanup: 10,000 settled generations of one scope; prints the number of
batches (at most 200 pairs each) and the time per batch, beside the time of
unlinking the same number of files with no checks (the floor).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cairn.protocol import codec  # noqa: E402
from cairn.protocol.claims import Authority  # noqa: E402
from cairn.protocol.digest import Note  # noqa: E402
from cairn.protocol.journal import PublicDigest  # noqa: E402
from cairn.protocol.vocab import NoteType, OutcomeKind, Trigger  # noqa: E402
from cairn.state.claims import ClaimStore  # noqa: E402
from cairn.state.fsdir import PinnedDir  # noqa: E402
from cairn.state.prune import prune  # noqa: E402


def make_entries(ws: Path, n: int) -> None:
    d = ws / ".cairn" / "journal"
    d.mkdir(parents=True)
    for i in range(n):
        rec = PublicDigest(id=f"{i:020x}", capture=f"c{i}", session_id=f"s{i % 97}", title=f"session {i}",
                           trigger=Trigger.SESSION_END, created=1.7e9 + i, provider="extractive",
                           turn_ids=(f"t{i}a", f"t{i}b"),
                           notes=(Note(type=NoteType.FEEDBACK, title=f"never do thing {i}", body=f"Never do thing {i}.",
                                       turn_ids=(f"t{i}a",)),))
        (d / f"{i:020x}.json").write_bytes(codec.encode(rec))


def bench_discovery(n: int) -> None:
    from cairn.worker.journal import views

    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        ws = Path(tmp)
        make_entries(ws, n)
        d = ws / ".cairn" / "journal"
        base = []
        for _ in range(5):
            t = time.perf_counter()
            os.listdir(d)
            base.append(time.perf_counter() - t)
        t = time.perf_counter()
        got, bad = views.public_digests(str(ws))
        cold = time.perf_counter() - t
        assert len(got) == n and not bad
        warm = []
        for _ in range(20):
            t = time.perf_counter()
            got2, _ = views.public_digests(str(ws))
            warm.append(time.perf_counter() - t)
            assert got2 is got
        # a new entry is seen (the directory changed)
        make_one = d / "ffffffffffffffffffff.json"
        make_one.write_bytes((d / f"{0:020x}.json").read_bytes().replace(b'"id":"' + b"0" * 20,
                                                                             b'"id":"' + b"f" * 20))
        assert len(views.public_digests(str(ws))[0]) == n + 1
        b, w = statistics.median(base), statistics.median(warm)
        print(f"discovery of {n} public entries:")
        print(f"  baseline os.listdir   {b * 1e3:8.2f} ms")
        print(f"  cold (read+validate)  {cold * 1e3:8.2f} ms   ({cold / b:.0f}x the listing)")
        print(f"  warm (unchanged)      {w * 1e3:8.3f} ms   target < 5 ms: {'met' if w < 0.005 else 'MISSED'}")


def bench_cleanup(n: int) -> None:
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        root = PinnedDir.open_root(tmp)
        store = ClaimStore(root, ".cairn/state/journal/claims")
        t = time.perf_counter()
        for _ in range(n):
            c = store.elect("cleanup", purpose="bench", ttl=1.0, authority=Authority(workspace=tmp))
            store.settle(c, OutcomeKind.COMPLETED)
        fill = time.perf_counter() - t
        store.clock_offset = 100.0
        times, pairs = [], 0
        while True:
            t = time.perf_counter()
            r = prune(store)
            times.append(time.perf_counter() - t)
            pairs += r.pairs
            if not r.more:
                break
        # floor: unlink the same files with no reads, checks or locks
        with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp2:
            for i in range(2 * n):
                Path(tmp2, str(i)).write_bytes(b"x")
            t = time.perf_counter()
            for i in range(2 * n):
                os.unlink(os.path.join(tmp2, str(i)))
            floor = time.perf_counter() - t
        per = statistics.median(times)
        print(f"cleanup of {n} settled generations (filled in {fill:.1f} s):")
        print(f"  batches {len(times)} (<= 200 pairs each), pairs removed {pairs}")
        print(f"  time per batch  median {per * 1e3:.1f} ms, max {max(times) * 1e3:.1f} ms")
        print(f"  floor: bare unlink of {2 * n} files {floor * 1e3:.0f} ms total; "
              f"cairn total {sum(times) * 1e3:.0f} ms ({sum(times) / floor:.1f}x)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=10_000)
    ap.add_argument("--generations", type=int, default=10_000)
    a = ap.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus")
    bench_discovery(a.entries)
    bench_cleanup(a.generations)


if __name__ == "__main__":
    main()
