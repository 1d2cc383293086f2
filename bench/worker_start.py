"""Cold worker start against a bare interpreter start, measured in the same run.

    python bench/worker_start.py [--runs 30]

Times ``python -m cairn.worker test-echo`` (a request decoded, the job resolved and
run, a response written) and ``python -c pass`` alternately, and prints the
medians and their ratio (target: within 2x).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REQ = b'{"record":"worker-request","v":1,"job":"test-echo","workspace":"/tmp","args":{}}'


def once(argv: list[str], stdin: bytes | None, env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run(argv, input=stdin, stdout=subprocess.DEVNULL, check=True, env=env, cwd=REPO)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    a = ap.parse_args()
    env = dict(os.environ, CAIRN_TEST_JOBS="1", )
    bare, worker = [], []
    for _ in range(a.runs):
        bare.append(once([sys.executable, "-c", "pass"], None, env))
        worker.append(once([sys.executable, "-m", "cairn.worker", "test-echo"], REQ, env))
    b, w = statistics.median(bare), statistics.median(worker)
    print(f"python -c pass          median {b * 1e3:6.1f} ms")
    print(f"python -m worker (echo) median {w * 1e3:6.1f} ms")
    print(f"ratio {w / b:.2f}x (target <= 2x)")


if __name__ == "__main__":
    main()
