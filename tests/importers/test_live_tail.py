"""Every JSONL format the live watcher follows: a file caught mid-write never yields a half-written turn.

The watcher imports a session file whenever it grows, so it may read one in
the middle of a line. For each format of :data:`server.watch.files.JSONL_FORMATS`,
the fixture is cut at points inside each of its last lines: the turns then
found (ids and both texts) must be exactly those of the file cut at the
start of that line. The half-written line adds nothing, changes nothing.
(A file cut between lines is a state the session really had; a turn it
shows may still be rewound by a later record, as in a live editor.)
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cairn.server.watch.files import JSONL_FORMATS
from cairn.worker.ingest.importers import load

from tests.support.transcripts import FIXTURES

FILES = {
    "claude-code": FIXTURES / "claude-code" / "session.jsonl",
    "codex": next((FIXTURES / "codex").glob("rollout-*.jsonl")),
    "gemini-cli": next((FIXTURES / "gemini-cli").glob("*.jsonl")),
    "qwen-code": next((FIXTURES / "qwen-code").glob("*.jsonl")),
    "goose": next((FIXTURES / "goose").glob("*.jsonl")),
    "copilot-cli": next((FIXTURES / "copilot-cli").rglob("*.jsonl")),
    "cursor-transcript": next((FIXTURES / "cursor-transcript").rglob("*.jsonl")),
}


def _turns(path: Path, fmt: str) -> dict[str, tuple[str, str]]:
    return {t.turn_id: (t.user, t.assistant) for s in load(path, fmt) for t in s.turns}


def test_every_watched_format_has_a_fixture_here() -> None:
    assert set(FILES) == set(JSONL_FORMATS)


@pytest.mark.parametrize("fmt", sorted(FILES))
def test_a_file_cut_inside_a_line_yields_only_whole_turns(fmt: str, tmp_path: Path) -> None:
    data = FILES[fmt].read_bytes()
    assert _turns(FILES[fmt], fmt), "the fixture has completed turns"
    starts = [i + 1 for i, b in enumerate(data[:-1]) if b == ord("\n")][-6:]  # the last few lines
    cut = tmp_path / FILES[fmt].name
    for start in starts:
        cut.write_bytes(data[:start])
        before = _turns(cut, fmt)
        end = data.index(b"\n", start) if b"\n" in data[start:] else len(data)
        for at in sorted({start + 1, (start + end) // 2, end - 1}):
            if not start < at < end:
                continue
            cut.write_bytes(data[:at])
            assert _turns(cut, fmt) == before, (fmt, at)
