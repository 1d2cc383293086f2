"""``cairn hook`` latency on a session-end payload, against a bare interpreter start in the same run.

    python bench/hook.py [--runs 15] [--png bench/hook.png]

Each run starts from a fresh workspace and a home whose Claude Code store
holds a real transcript (tests/fixtures), and feeds ``cairn hook claude-code``
a ``SessionEnd`` payload on stdin, as Claude Code does: the transcript is
imported and the session sealed (``session-end``). Three commands alternate:
``python -c pass`` (the floor), ``cairn hook`` as installed (its parser built
from the hook module alone) and the same hook after importing the whole
command table first (how ``cairn hook`` started before). Prints medians and
their ratio to the floor; the target (issue 29) is 0.3 s for the hook.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REAL = REPO / "tests" / "fixtures" / "transcripts" / "claude-code" / "speakfree-ide-context.jsonl"
SESSION = "7d48b15d-e2d0-4b94-a40b-621ba5e8485f"
TABLE_FIRST = ("import sys\nimport cairn.server.cli.commands\nfrom cairn.server.cli.app import main\n"
               "sys.exit(main())")


def once(argv: list[str], stdin: bytes | None, env: dict[str, str], cwd: str) -> float:
    t = time.perf_counter()
    subprocess.run(argv, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env,
                   cwd=cwd)
    return time.perf_counter() - t


def hook_run(root: Path, n: int, argv: list[str]) -> float:
    """One ``cairn hook`` on a fresh workspace: import the real transcript and seal it."""
    run = root / f"run{n}"
    home, ws = run / "home", run / "ws"
    folder = home / ".claude" / "projects" / "-bench"
    folder.mkdir(parents=True)
    ws.mkdir()
    path = folder / f"{SESSION}.jsonl"
    shutil.copyfile(REAL, path)
    payload = json.dumps({"session_id": SESSION, "transcript_path": str(path), "cwd": str(ws),
                          "hook_event_name": "SessionEnd", "reason": "exit"}).encode()
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CAIRN_DEBUG")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(run / "xdg"))
    return once([*argv, "hook", "claude-code"], payload, env, str(ws))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--png", type=Path)
    a = ap.parse_args()
    bare: list[float] = []
    hook: list[float] = []
    table: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for i in range(a.runs):
            bare.append(once([sys.executable, "-c", "pass"], None, dict(os.environ), tmp))
            hook.append(hook_run(root, 2 * i, [sys.executable, "-m", "cairn.server"]))
            table.append(hook_run(root, 2 * i + 1, [sys.executable, "-c", TABLE_FIRST]))
    rows = [("python -c pass", bare), ("cairn hook", hook), ("cairn hook, command table first", table)]
    b = statistics.median(bare)
    for name, xs in rows:
        m = statistics.median(xs)
        print(f"{name:<32} median {m * 1e3:7.1f} ms  ({m / b:4.2f}x python -c pass)")
    h = statistics.median(hook)
    print(f"target: cairn hook <= 300 ms: {'met' if h <= 0.3 else 'missed'} ({h * 1e3:.0f} ms)")
    if a.png:
        import matplotlib  # only for the chart (the bench extra)

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(8, 3.2))
        ax.barh([n for n, _ in rows], [statistics.median(xs) * 1e3 for _, xs in rows], color="#4c78a8")
        ax.axvline(300, color="#e45756", linestyle="--", label="target 300 ms")
        ax.set_xlabel("median wall time (ms), session-end payload, fresh workspace")
        ax.invert_yaxis()
        ax.legend(loc="lower right")
        fig.tight_layout()
        fig.savefig(a.png, dpi=110)
        print(f"chart written to {a.png}")


if __name__ == "__main__":
    main()
