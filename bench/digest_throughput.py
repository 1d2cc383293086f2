"""Extractive digest throughput on a ~825,000-character transcript, against a trivial baseline.

Usage: ``python bench/digest_throughput.py [--chars 825000] [--runs 5] [--seed 3]``

The transcript is built deterministically (fixed seed) from realistic turns:
tasks, questions, progress reports, pasted tracebacks and logs, fenced code,
preferences, corrections, project facts and labelled links, with assistant
replies that carry explanations and code. Two layouts are measured:

``mixed``     the turns as written: the engine reads only the user's side.
``all-user``  the same text with every assistant reply moved into the user
              field, the worst case for the engine (it reads everything).

For each layout the engine runs ``--runs`` times; the median wall time and
characters per second are printed next to a baseline measured in the same
run over the same characters: one ``str.lower()`` plus ``splitlines()``
pass, the cheapest thing that touches every character. The ratio says how
many such passes one digest costs. Benchmarks are never timed tests.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cairn.protocol.digest import DigestInput  # noqa: E402
from cairn.protocol.transcript import Turn  # noqa: E402
from cairn.worker.providers import extractive  # noqa: E402

USER_LINES = [
    "Can you add a retry to the {mod} client? It keeps timing out under load.",
    "Please fix the failing test in tests/test_{mod}.py.",
    "I've pushed the branch and now the {mod} tests pass.",
    "What does the {mod} module do when the queue is empty?",
    "Let's go with option B for the {mod} cache.",
    "From now on, never summarize what you did at the end of a reply.",
    "No, use httpx instead of requests in {mod}.",
    "I prefer small focused commits over one big commit.",
    "Stop asking for confirmation before running the tests.",
    "This project uses trio, not asyncio.",
    "Our CI runs ruff and pytest on every push.",
    "The {mod} service lives in services/{mod}.",
    "The tracker is https://tracker.example.com/acme/{mod} and dashboards are at https://grafana.example.com/d/{mod}.",
    "We need to ship the {mod} change by Friday.",
    "For now, don't touch the {mod} migrations.",
    "Also, the deploy token is token=ghp_{token} so please keep it out of logs.",
]
TRACEBACK = (
    "Here's what I get:\n"
    "Traceback (most recent call last):\n"
    '  File "/srv/app/{mod}/worker.py", line {n}, in run\n'
    "    result = await self.handle(job)\n"
    '  File "/srv/app/{mod}/handler.py", line {m}, in handle\n'
    "    raise TimeoutError('upstream did not answer')\n"
    "TimeoutError: upstream did not answer\n"
)
LOG = "2024-05-0{d} 12:{mm}:0{s} ERROR {mod}.worker job={n} failed: always retry with backoff\n"
CODE = (
    "```python\n"
    "async def fetch_{mod}(client, url):\n"
    "    # always retry, never give up\n"
    "    for attempt in range({n}):\n"
    "        resp = await client.get(url)\n"
    "        if resp.status_code == 200:\n"
    "            return resp.json()\n"
    "    raise RuntimeError('gave up')\n"
    "```\n"
)
ASSISTANT = (
    "I looked at `{mod}/worker.py`. The handler awaits the upstream call without a deadline, so a slow "
    "upstream blocks the worker until the connection drops. I added a timeout of {n} seconds and a retry "
    "with exponential backoff, and the test now covers the empty-queue case as well. "
    "You should always keep the timeout below the job deadline.\n\n" + CODE
)
MODULES = ["billing", "upload", "search", "auth", "ledger", "notify", "export", "sync"]


def build_transcript(target_chars: int, seed: int) -> tuple[Turn, ...]:
    rng = random.Random(seed)
    turns: list[Turn] = []
    total = 0
    parent: str | None = None
    while total < target_chars:
        mod = rng.choice(MODULES)
        n = rng.randint(2, 400)
        fields = {
            "mod": mod,
            "n": n,
            "m": rng.randint(2, 400),
            "d": rng.randint(1, 9),
            "mm": rng.randint(10, 59),
            "s": rng.randint(1, 9),
            "token": "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(36)),
        }
        parts = [rng.choice(USER_LINES) for _ in range(rng.randint(1, 4))]
        kind = rng.random()
        if kind < 0.25:
            parts.append(TRACEBACK)
        elif kind < 0.45:
            parts.append(
                "".join(LOG.format(**{**fields, "n": n + i}) for i in range(rng.randint(3, 30)))
            )
        elif kind < 0.6:
            parts.append(CODE)
        user = "\n".join(parts).format(**fields)
        assistant = ASSISTANT.format(**fields) * rng.randint(1, 3)
        turn_id = f"turn-{len(turns):05d}"
        turns.append(Turn(turn_id=turn_id, parent_turn_id=parent, user=user, assistant=assistant))
        parent = turn_id
        total += len(user) + len(assistant)
    return tuple(turns)


def all_user(turns: tuple[Turn, ...]) -> tuple[Turn, ...]:
    return tuple(
        Turn(
            turn_id=t.turn_id,
            parent_turn_id=t.parent_turn_id,
            user=f"{t.user}\n\n{t.assistant}",
            assistant="",
        )
        for t in turns
    )


def baseline(text: str) -> None:
    text.lower().splitlines()


def measure(name: str, turns: tuple[Turn, ...], runs: int) -> None:
    inp = DigestInput(session_id="bench", title="bench", turns=turns)
    text = "\n".join(f"{t.user}\n{t.assistant}" for t in turns)
    chars = sum(len(t.user) + len(t.assistant) for t in turns)
    user_chars = sum(len(t.user) for t in turns)
    engine: list[float] = []
    base: list[float] = []
    notes = None
    for _ in range(runs):
        start = time.perf_counter()
        out = extractive.digest(inp)
        engine.append(time.perf_counter() - start)
        start = time.perf_counter()
        baseline(text)
        base.append(time.perf_counter() - start)
        if notes is None:
            notes = out.notes
        elif out.notes != notes:
            raise SystemExit("the extractive engine is not deterministic")
    med, med_base = statistics.median(engine), statistics.median(base)
    print(
        f"{name:9s} turns={len(turns)} chars={chars} user_chars={user_chars} notes={len(notes or ())}\n"
        f"          extractive median {med * 1000:8.1f} ms  ({chars / med / 1e6:6.2f} M chars/s)"
        f"  min {min(engine) * 1000:.1f} ms  max {max(engine) * 1000:.1f} ms\n"
        f"          baseline   median {med_base * 1000:8.1f} ms  ({chars / med_base / 1e6:6.2f} M chars/s)"
        f"  lower()+splitlines()\n"
        f"          ratio extractive/baseline {med / med_base:6.1f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--chars", type=int, default=825_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    turns = build_transcript(args.chars, args.seed)
    print(f"python {sys.version.split()[0]}, runs={args.runs}, seed={args.seed}")
    measure("mixed", turns, args.runs)
    measure("all-user", all_user(turns), args.runs)


if __name__ == "__main__":
    main()
