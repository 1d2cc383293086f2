"""What the listing commands print for a person: `cairn jobs` as one aligned table."""

from __future__ import annotations

from pathlib import Path

from tests.journal.helpers import DEMO, cairn


def test_jobs_columns_line_up_whatever_the_capture_ids(workspace: Path) -> None:
    cairn(workspace, "run", str(DEMO))
    cairn(workspace, "remember", "Always sign release tags with the team key")  # a capture id of another length
    lines = cairn(workspace, "jobs").stdout.splitlines()
    assert lines[0].split() == ["CAPTURE", "STATE", "TURNS", "ATTEMPTS"]
    assert len(lines) == 3 and len({len(line.split()[0]) for line in lines[1:]}) == 2
    state_at = lines[0].index("STATE")
    turns_end = lines[0].index("TURNS") + len("TURNS")
    for line in lines[1:]:
        assert line[state_at - 2:state_at] == "  " and line[state_at] != " "
        assert line[turns_end - 1].isdigit() and line[turns_end] == " "
