"""Live Claude Code session files for the watching tests: the fixture, then turns appended to it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.support import REPO

FIXTURE = REPO / "tests" / "fixtures" / "transcripts" / "claude-code" / "session.jsonl"
SESSION = "5f0c2a8e-3b1d-4c7e-9a42-1e6d8b0f7c31"
FIXTURE_TURNS = 5  # completed turns of the fixture as it is
LAST_UUID = "a6a6a6a6-0001-4000-8000-000000000001"  # its last record


def start_session(path: Path) -> Path:
    """A copy of the fixture at ``path`` (the session so far)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(FIXTURE, path)
    return path


def turn_lines(i: int, parent: str | None = None) -> str:
    """The JSONL records of completed turn ``i`` (a prompt and its final answer), chained after ``parent``
    (default: turn ``i - 1``, the fixture's last record for ``i == 1``)."""
    if parent is None:
        parent = LAST_UUID if i == 1 else f"a-{i - 1}"
    user = {"parentUuid": parent, "isSidechain": False, "type": "user", "sessionId": SESSION, "uuid": f"u-{i}",
            "timestamp": "2025-06-02T10:00:00.000Z",
            "message": {"role": "user", "content": f"Step {i}: also document the build target number {i}."}}
    answer = {"parentUuid": f"u-{i}", "isSidechain": False, "type": "assistant", "sessionId": SESSION,
              "uuid": f"a-{i}", "timestamp": "2025-06-02T10:00:01.000Z",
              "message": {"id": f"m-{i}", "type": "message", "role": "assistant", "stop_reason": "end_turn",
                          "content": [{"type": "text", "text": f"Documented build target {i} in the README."}]}}
    return json.dumps(user) + "\n" + json.dumps(answer) + "\n"


def append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
