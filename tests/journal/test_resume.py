"""A read resumed from the manifest's cut gives exactly the turns a whole read gives (docs/adr/0022).

On real Claude Code sessions (tests/corpus/files, tests/fixtures/transcripts/claude-code, the demo
session) cut at any byte: the turns before the cut, then the turns a read resumed from the cut gives, are
the whole file's turns, ids, parents and texts, and the session keeps its id and title. A file whose
branch no longer goes through the cut (a rewind), or that gained a summary or a watched id, is not
resumed: the caller reads it whole.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from cairn.protocol.errors import CairnError
from cairn.protocol.sources import ResumePoint
from cairn.protocol.transcript import Turn
from cairn.worker.ingest import resume
from cairn.worker.ingest.importers import claude_code
from cairn.worker.ingest.importers._jsonl import JsonlFile
from hypothesis import given
from hypothesis import strategies as st

from tests.support import REPO
from tests.support.generated import session_lines
from tests.support.transcripts import FIXTURES

REAL = sorted([*(REPO / "tests" / "corpus" / "files").glob("claude-code-*.jsonl"),
               *(FIXTURES / "claude-code").glob("*.jsonl"), REPO / "server" / "examples" / "demo-session.jsonl"])
JSONL = sorted(p for p in [*FIXTURES.rglob("*.jsonl"), *(REPO / "tests" / "corpus" / "files").glob("*.jsonl")])


def _stream(path: Path) -> tuple[str | None, str | None, list[Turn]]:
    src = JsonlFile(path)
    try:
        sessions = claude_code.stream(src)
        return (sessions[0].session_id, sessions[0].title, list(sessions[0].turns())) if sessions else (None, None, [])
    finally:
        src.close()


def _whole(path: Path) -> tuple[str | None, str | None, list[Turn], ResumePoint | None]:
    reader = resume.Reader(path, os.open(path, os.O_RDONLY))
    try:
        sessions = resume.whole(reader)
        if not sessions:
            return None, None, [], None
        s = sessions[0]
        turns = list(s.turns())
        return s.session_id, s.title, turns, reader.point(session_id=s.session_id, title=s.title)
    finally:
        reader.close()


def _resume(path: Path, point: ResumePoint) -> tuple[list[Turn], ResumePoint | None] | None:
    read = resume.resume(path, os.open(path, os.O_RDONLY), point)
    if read is None:
        return None
    session, reader = read
    try:
        assert (session.session_id, session.title) == (point.session_id, point.title)
        return list(session.turns), reader.point(session_id=point.session_id, title=point.title, prior=point.prior,
                                                 watched=frozenset(point.watched))
    finally:
        reader.close()


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gen") / "gen.jsonl"
    path.write_text("".join(line + "\n" for line in session_lines(3, 40, words=20)))
    return path


def _cut(src: Path, at: int, dest: Path) -> Path:
    dest.write_bytes(src.read_bytes()[:at])
    return dest


# -- the reader reads as the importer does ------------------------------------------------------------------

def _scan(src: Any) -> tuple[list[Any], list[str], str | None]:
    try:
        records = list(src.scan())
        error = None
    except CairnError as exc:
        records, error = [], f"{exc.code}: {exc.message}"
    finally:
        skipped = [f"{e.code}: {e.message}" for e in src.skipped]
        src.close()
    return records, skipped, error


@pytest.mark.parametrize("path", JSONL, ids=lambda p: str(p.relative_to(REPO)))
def test_the_reader_scans_every_jsonl_file_as_the_importers_do(path: Path) -> None:
    assert _scan(resume.Reader(path, os.open(path, os.O_RDONLY))) == _scan(JsonlFile(path))


@pytest.mark.parametrize("tail", [b'{"type": "user"', b"\n\n", b'{"a": 1}', b"[1]\n", b"not json\n{}\n",
                                  b"[" * 2000 + b"]" * 2000 + b"\n{}\n", b"\xff\xfe\n",
                                  b'{"type": "progress", "text": "cut \xe2\x94"}\n{}\n'])
def test_the_reader_keeps_the_importers_rules_for_odd_lines(tail: bytes, tmp_path: Path) -> None:
    path = tmp_path / "odd.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + (FIXTURES / "claude-code" / "session.jsonl").read_bytes() + tail)
    assert _scan(resume.Reader(path, os.open(path, os.O_RDONLY))) == _scan(JsonlFile(path))


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_a_whole_read_through_the_reader_is_the_importers_read(path: Path) -> None:
    sid, title, turns, _ = _whole(path)
    assert (sid, title, turns) == _stream(path)


# -- whole == prefix + resumed ---------------------------------------------------------------------------------

def _check_cut(path: Path, at: int, tmp_path: Path) -> bool:
    """Check the property at one cut; whether the cut could be resumed."""
    sid, title, whole, _ = _whole(path)
    p_sid, _, before, point = _whole(_cut(path, at, tmp_path / f"cut-{at}.jsonl"))
    if point is None:
        return False
    resumed = _resume(path, point)
    if resumed is None:
        return False
    assert (point.session_id, point.title) == (sid, title), at
    assert before[:-1] + resumed[0] == whole, at
    assert point.prior == len(before) - 1
    return True


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_turns_before_the_cut_then_the_resumed_read_are_the_whole_files_turns(path: Path, tmp_path: Path) -> None:
    size = path.stat().st_size
    resumed = sum(_check_cut(path, size * k // 23, tmp_path) for k in range(1, 23))
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    uuids = {r.get("uuid") for r in records}
    # a summary naming a message of the file lets the branch decide the title: such files are read whole
    titled = any(r.get("type") == "summary" and r.get("leafUuid") in uuids for r in records)
    if len(_stream(path)[2]) >= 3 and not titled:
        assert resumed, "no cut of this file could be resumed: the property was never tried"


@given(st.sampled_from([*REAL, None]), st.floats(min_value=0.0, max_value=1.0))
def test_any_cut_point_of_a_real_session(path: Path | None, where: float) -> None:
    import tempfile

    path = path or REPO / "server" / "examples" / "demo-session.jsonl"
    size = path.stat().st_size
    with tempfile.TemporaryDirectory() as d:
        _check_cut(path, max(1, min(size - 1, int(size * where))), Path(d))


def test_resumes_chain_across_several_appends(generated: Path, tmp_path: Path) -> None:
    data = generated.read_bytes()
    cuts = [len(data) // 5, len(data) // 2, len(data) * 4 // 5, len(data)]
    path = tmp_path / "live.jsonl"
    path.write_bytes(data[:cuts[0]])
    _, _, got, point = _whole(path)
    got = list(got)
    for c in cuts[1:]:
        path.write_bytes(data[:c])
        assert point is not None
        read = _resume(path, point)
        assert read is not None
        turns, point = read
        got = got[:-1] + turns
    assert got == _whole(generated)[2] and len(got) == 40


# -- what is never resumed --------------------------------------------------------------------------------------

def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _append(path: Path, *records: dict[str, Any]) -> None:
    with path.open("a") as fh:
        for r in records:
            fh.write(json.dumps(r) + "\n")


def _point(generated: Path, tmp_path: Path, turns: int) -> tuple[Path, ResumePoint]:
    lines = generated.read_text().splitlines(keepends=True)
    path = tmp_path / "s.jsonl"
    path.write_text("".join(lines[:1 + 4 * turns]))  # the summary line, then four records a turn
    point = _whole(path)[3]
    assert point is not None
    return path, point


def test_a_rewind_to_before_the_cut_is_read_whole(generated: Path, tmp_path: Path) -> None:
    path, point = _point(generated, tmp_path, 10)
    recs = _records(path)
    fork = recs[4 * 5]  # the last record of turn 5: the user went back there and asked again
    sid = fork["sessionId"]
    _append(path, {"type": "user", "uuid": "rewind-u", "parentUuid": fork["uuid"], "sessionId": sid, "isSidechain": False,
                   "message": {"role": "user", "content": "Start over from here"}},
            {"type": "assistant", "uuid": "rewind-a", "parentUuid": "rewind-u", "sessionId": sid, "isSidechain": False,
             "message": {"role": "assistant", "stop_reason": "end_turn", "content": [{"type": "text", "text": "Sure."}]}})
    assert _resume(path, point) is None
    whole = _whole(path)[2]
    assert [t.turn_id for t in whole][-1] == "rewind-u" and len(whole) == 6


def test_a_new_summary_or_a_watched_id_is_read_whole(generated: Path, tmp_path: Path) -> None:
    path, point = _point(generated, tmp_path, 10)
    _append(path, {"type": "summary", "summary": "A new title", "leafUuid": _records(path)[-1]["uuid"]})
    assert _resume(path, point) is None
    path, point = _point(generated, tmp_path, 10)
    assert point.watched == ("none",)  # the generated file's summary names a leaf it does not hold
    recs = _records(path)
    _append(path, {**recs[-2], "uuid": "none", "parentUuid": recs[-1]["uuid"]})
    assert _resume(path, point) is None
