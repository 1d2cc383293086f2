"""Redaction throughput: the whole redactor against its line-by-line pass, on layouts that stress the split-word join.

Usage::

    python bench/redaction.py [--repeat N] [--png FILE]

``redact_text`` reads a word cut over lines joined (ADR 0014) before the
line-by-line pass; the baseline, measured in the same run on the same text,
is that line-by-line pass alone (``worker.redaction.redact._redact_lines``, what
redaction cost before the join). Workloads: about 1 MB each of a base64
blob wrapped at 76 columns, hex digests one per line, a path listing, one
long URL cut at 80 columns, prose with credentials wrapped at 72 columns,
and one character per line; then the corpus's multi-line texts
(``tests/corpus``, every string with a line break), when present. The
figure is the median of ``--repeat`` runs; the ratio is what the join adds.
"""

from __future__ import annotations

import argparse
import base64
import json
import pathlib
import random
import statistics
import sys
import textwrap
import time
from collections.abc import Callable, Iterator

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cairn.worker.redaction.redact import _redact_lines, redact_text  # noqa: E402

from tests.security.samples import SAMPLES  # noqa: E402

SIZE = 1_000_000


def _wrap(text: str, width: int) -> str:
    return "\n".join(text[i : i + width] for i in range(0, len(text), width))


def workloads(rng: random.Random) -> dict[str, list[str]]:
    blob = base64.b64encode(rng.randbytes(SIZE * 3 // 4)).decode()
    url = "https://files.example.com/" + "".join(f"d{i}/" for i in range(SIZE // 6)) + "f.zip?access_token=Zq8Xw7Vu6Ts5"
    prose: list[str] = []
    while sum(map(len, prose)) < SIZE:
        prose.append(textwrap.fill(rng.choice(SAMPLES).sentence + " Then run the tests again and report back.", 72))
    return {
        "base64 blob, 76 columns": [_wrap(blob, 76)],
        "hex digests, one per line": ["\n".join(rng.randbytes(16).hex() for _ in range(SIZE // 33))],
        "path listing": ["\n".join(f"/srv/app/build-{i:06d}/static/assets/chunk.js" for i in range(SIZE // 42))],
        "one URL cut at 80 columns": [_wrap(url, 80)],
        "prose with credentials, 72 columns": ["\n\n".join(prose)],
        "one character per line": ["a\n" * (SIZE // 2)],
    }


def corpus_texts() -> list[str]:
    texts: list[str] = []

    def walk(o: object) -> None:
        if isinstance(o, str):
            if "\n" in o:
                texts.append(o)
        elif isinstance(o, dict):
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    for folder in ("files", "cache"):
        for path in sorted((ROOT / "tests" / "corpus" / folder).glob("*")):
            raw = path.read_text(encoding="utf-8", errors="replace")
            if path.suffix != ".jsonl":
                texts.append(raw)
                continue
            for line in raw.splitlines():
                try:
                    walk(json.loads(line))
                except ValueError:
                    continue
    return texts


def _median(fn: Callable[[str], str], texts: list[str], repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        for t in texts:
            fn(t)
        runs.append(time.perf_counter() - started)
    return statistics.median(runs)


def measure(repeat: int) -> Iterator[tuple[str, float, float, float]]:
    """(workload, megabytes, seconds of redact_text, seconds of the line-by-line pass)."""
    loads = workloads(random.Random(7))
    corpus = corpus_texts()
    if corpus:
        loads[f"corpus, {len(corpus):,} multi-line texts"] = corpus
    for name, texts in loads.items():
        mb = sum(len(t.encode()) for t in texts) / 1e6
        yield name, mb, _median(redact_text, texts, repeat), _median(_redact_lines, texts, repeat)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--png", type=pathlib.Path)
    args = parser.parse_args(argv)
    rows = list(measure(args.repeat))
    print("| workload | MB | redact_text | line-by-line pass (baseline) | ratio |")
    print("|---|---|---|---|---|")
    for name, mb, full, lines in rows:
        print(f"| {name} | {mb:.2f} | {full:.2f} s ({mb / full:.1f} MB/s) | {lines:.2f} s | {full / lines:.2f}x |")
    if args.png:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(8, 3.6))
        names = [r[0] for r in rows]
        ax.barh(names, [r[2] / r[3] for r in rows], color="tab:blue")
        ax.axvline(1.0, color="grey", linewidth=0.8)
        ax.set_xlabel("redact_text time / line-by-line pass time (same text, same run)")
        ax.invert_yaxis()
        fig.tight_layout()
        fig.savefig(args.png, dpi=110)
        print(f"chart written to {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
