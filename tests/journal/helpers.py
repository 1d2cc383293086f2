from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.support import REPO, child_env
from tests.support.warm import run_python

FIXTURES = REPO / "tests" / "fixtures" / "transcripts"
DEMO = REPO / "server" / "examples" / "demo-session.jsonl"
ALL_FORMATS = {
    "claude-code": FIXTURES / "claude-code" / "session.jsonl",
    "codex": next((FIXTURES / "codex").glob("rollout-*.jsonl")),
    "aider": FIXTURES / "aider" / ".aider.chat.history.md",
    "specstory": next((FIXTURES / "specstory" / ".specstory" / "history").glob("*.md")),
    "claude-export": FIXTURES / "claude-export" / "session-export.md",
    "gptel-org": FIXTURES / "gptel" / "chat.org",
    "gptel-md": FIXTURES / "gptel" / "chat.md",
    "claude-code-export": FIXTURES / "claude-code-export" / "2025-07-21-retry-upload.txt",
}


def cairn(ws: Path, *argv: str, env: dict[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``cairn ARGV -w WS`` as its own process; the output and exit status as :func:`subprocess.run` gives them.

    The process is forked from a warm interpreter (:func:`tests.support.warm.run_python`).
    """
    r = run_python(["-m", "cairn.server", *argv, "-w", str(ws)], env=child_env(**(env or {})), timeout=300)
    if check and r.returncode != 0:
        raise AssertionError(f"cairn {' '.join(argv)} exited {r.returncode}: {r.stderr}")
    return r


def cairn_json(ws: Path, *argv: str) -> Any:
    """The command's ``--json`` output, parsed (each test asserts the shape it relies on)."""
    return json.loads(cairn(ws, *argv, "--json").stdout)


J = ".cairn/state/journal"


def batches(cap: Path) -> list[Any]:
    """The ready batch entries of a capture directory, in sequence order."""
    from cairn.protocol import codec
    from cairn.protocol.journal import CaptureBatch

    return sorted((codec.decode(p.read_bytes(), CaptureBatch) for p in cap.glob("b-*")), key=lambda b: b.seq)


def segment_path(ws: Path, sha: str) -> Path:
    return ws / J / "segments" / sha[:2] / sha


def ready_evidence(ws: Path, cap: Path) -> list[tuple[int, Any]]:
    """(seq, TurnEvidence) of every ready turn of a capture, read straight from disk."""
    from cairn.protocol import codec
    from cairn.protocol.journal import EvidenceSegment
    from cairn.state.segments import decode

    out = []
    for b in batches(cap):
        seg = codec.decode(decode(segment_path(ws, b.segment).read_bytes(), b.segment), EvidenceSegment)
        evs = seg.evidence()
        assert tuple(e.turn_id for e in evs) == b.turn_ids
        out += [(b.seq + i, e) for i, e in enumerate(evs)]
    return out
