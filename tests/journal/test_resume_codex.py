"""A Codex rollout read again from the manifest's cut gives exactly the turns a whole read gives (docs/adr/0022).

On real Codex rollouts (the committed ``tests/fixtures/transcripts/codex/2026-05`` rollout, the corpus
rollouts when ``tests/corpus/fetch.py`` has restored them) and the Codex fixtures of every layout, cut at
bytes across the file (a grid and random bytes; every record boundary and the middle of every record
with ``CAIRN_EXHAUSTIVE_CUTS=1``): the turns before the cut, then the turns a read resumed from the cut
gives, are the whole file's turns, ids, parents, texts and times, its tail too, and the session keeps
its id. A rollout whose growth changes how its earlier records read (its first prompt as an event, replies now
from items, a session id named where it was derived) is not resumed. Through the import (in process, then
``cairn import`` and ``cairn hook codex`` as processes): a grown rollout is read from its cut and captures
what a whole read captures; a rewritten, truncated or replaced rollout, or an entry written before the
reader's state was kept, is read whole.
"""

from __future__ import annotations

import functools
import json
import math
import os
import random
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from cairn.protocol import codec
from cairn.protocol.digest import ModelPolicy
from cairn.protocol.sources import ResumePoint, RolloutState, SourceEntry
from cairn.protocol.transcript import Session, Turn
from cairn.worker.ingest import resume
from cairn.worker.ingest.importers import load
from cairn.worker.journal import imports as I
from cairn.worker.journal.store import Journal
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.journal.helpers import J, cairn_json, ready_evidence
from tests.support import PYTHON, REPO, child_env
from tests.support.rollouts import append_turns, rollout_lines, write_rollout
from tests.support.transcripts import FIXTURES

#: real rollouts: committed (Apache-2.0, see SOURCES.md), and the corpus's when restored (not committed)
REAL = sorted([*(FIXTURES / "codex" / "2026-05").glob("*.jsonl"),
               *(REPO / "tests" / "corpus" / "cache").glob("codex-*.jsonl")])
CODEX = sorted([*REAL, *(p for p in (FIXTURES / "codex").rglob("rollout-*.jsonl") if p not in REAL)])
EXHAUSTIVE = os.environ.get("CAIRN_EXHAUSTIVE_CUTS") == "1"
POLICY = ModelPolicy(provider="extractive")


def _whole(path: Path) -> tuple[Session | None, ResumePoint | None, RolloutState | None]:
    reader = resume.RolloutReader(path, os.open(path, os.O_RDONLY))
    try:
        sessions = resume.whole_rollout(reader)
        if not sessions:
            return None, None, None
        (s,) = sessions
        point = reader.point(session_id=s.session_id, title=s.title)
        return s, point, reader.rollout if point else None
    finally:
        reader.close()


def _resume(path: Path, point: ResumePoint, state: RolloutState) -> tuple[Session, ResumePoint | None, Any] | None:
    read = resume.resume(path, os.open(path, os.O_RDONLY), point, state)
    if read is None:
        return None
    session, reader = read
    try:
        nxt = reader.point(session_id=point.session_id, title=point.title, prior=point.prior)
        return session, nxt, reader.rollout if nxt else None
    finally:
        reader.close()


def _turns(s: Session | None) -> list[Turn]:
    return list(s.turns) if s else []


@functools.lru_cache(maxsize=4)
def _load(path: Path) -> Session:
    (s,) = load(path, "codex")
    return s


def _check_cut(path: Path, at: int, tmp: Path) -> bool:
    """The property at one cut; whether the cut could be resumed."""
    whole = _load(path)
    cut = tmp / f"cut-{at}.jsonl"
    cut.write_bytes(path.read_bytes()[:at])
    before, point, state = _whole(cut)
    plain = load(cut, "codex")
    assert _turns(before) == (list(plain[0].turns) if plain else []), at  # the reader reads as the importer
    cut.unlink()
    if point is None or state is None:
        return False
    read = _resume(path, point, state)
    if read is None:
        return False
    resumed, _, _ = read
    assert whole is not None
    assert (resumed.session_id, point.session_id) == (whole.session_id, whole.session_id), at
    assert _turns(before)[:-1] + list(resumed.turns) == list(whole.turns), at
    assert resumed.tail == whole.tail, at
    assert point.prior == len(_turns(before)) - 1
    return True


def _cuts(path: Path) -> list[int]:
    data = path.read_bytes()
    size = len(data)
    if EXHAUSTIVE:
        ends = [i + 1 for i, b in enumerate(data) if b == 0x0A]
        starts = [0, *ends[:-1]]
        return sorted({*ends, *((s + e) // 2 for s, e in zip(starts, ends, strict=True))} - {0})
    rng = random.Random(path.name)
    return sorted({size * k // 23 for k in range(1, 24)} | {rng.randrange(1, size + 1) for _ in range(8)})


@pytest.mark.parametrize("path", CODEX, ids=lambda p: p.name)
def test_a_whole_read_through_the_reader_is_the_importers_read(path: Path) -> None:
    s, _, _ = _whole(path)
    assert [s] == load(path) if s else load(path) == []


@pytest.mark.timeout(3600 if EXHAUSTIVE else 300)
@pytest.mark.parametrize("path", CODEX, ids=lambda p: p.name)
def test_turns_before_the_cut_then_the_resumed_read_are_the_whole_files_turns(path: Path, tmp_path: Path) -> None:
    resumed = sum(_check_cut(path, at, tmp_path) for at in _cuts(path))
    if len(load(path)[0].turns) >= 2:
        assert resumed, "no cut of this file could be resumed: the property was never tried"


def test_the_committed_real_rollout_is_among_them() -> None:
    assert (FIXTURES / "codex" / "2026-05").is_dir() and [p for p in REAL if "2026-05" in str(p)]


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(CODEX), st.floats(min_value=0.0, max_value=1.0))
def test_any_cut_point_of_a_rollout(path: Path, where: float) -> None:
    size = path.stat().st_size
    with tempfile.TemporaryDirectory() as d:
        _check_cut(path, max(1, min(size, int(size * where))), Path(d))


def test_resumes_chain_across_several_appends(tmp_path: Path) -> None:
    full = write_rollout(tmp_path / "full.jsonl", 3, 40)
    data = full.read_bytes()
    live = tmp_path / "live.jsonl"
    cuts = [len(data) // 5, len(data) // 2, len(data) * 4 // 5 + 7, len(data)]
    live.write_bytes(data[:cuts[0]])
    s, point, state = _whole(live)
    got = _turns(s)
    for c in cuts[1:]:
        live.write_bytes(data[:c])
        assert point is not None and state is not None
        read = _resume(live, point, state)
        assert read is not None
        session, point, state = read
        got = got[:-1] + list(session.turns)
    assert got == list(load(full)[0].turns) and len(got) == 40


# -- what is never resumed --------------------------------------------------------------------------------------

def _rec(kind: str, **payload: Any) -> str:
    return json.dumps({"timestamp": "2026-05-11T10:00:00.000Z", "type": kind, "payload": payload}) + "\n"


def _user_item(text: str) -> str:
    return _rec("response_item", type="message", role="user", content=[{"type": "input_text", "text": text}])


def _assistant_item(text: str) -> str:
    return _rec("response_item", type="message", role="assistant", content=[{"type": "output_text", "text": text}])


def _state_after(path: Path) -> tuple[ResumePoint, RolloutState]:
    _, point, state = _whole(path)
    assert point is not None and state is not None
    return point, state


def test_growth_that_changes_how_earlier_records_read_is_read_whole(tmp_path: Path) -> None:
    """Prompts from items until a user_message event appears, then from events; a rollout an older Codex began
    and a newer one resumed keeps every prompt (its earlier turns read as before), and is read whole once."""
    path = tmp_path / "items.jsonl"
    head = _rec("session_meta", id="s-1") + "".join(
        _user_item(f"ask {i}") + _assistant_item(f"answer {i}") + _rec("event_msg", type="task_complete") for i in range(4))
    path.write_text(head)
    point, state = _state_after(path)
    assert (state.event_prompts, len(load(path)[0].turns)) == (False, 4)
    with path.open("a") as fh:  # a newer CLI resumed the session: its prompts come as events as well
        fh.write(_user_item("ask 4") + _rec("event_msg", type="user_message", message="ask 4") + _assistant_item("answer 4")
                 + _rec("event_msg", type="task_complete"))
    assert _resume(path, point, state) is None
    assert [t.user for t in load(path)[0].turns] == [f"ask {i}" for i in range(5)]  # the older prompts kept
    with path.open("a") as fh:  # and the next turn, typed differently from its item, is the event's text
        fh.write(_user_item("<environment_context>x</environment_context>\n\nask 5")
                 + _rec("event_msg", type="user_message", message="ask 5") + _assistant_item("answer 5"))
    assert [t.user for t in load(path)[0].turns] == [f"ask {i}" for i in range(5)]
    tail = load(path)[0].tail
    assert tail is not None and tail.user == "ask 5"


def test_replies_that_move_from_events_to_items_are_read_whole(tmp_path: Path) -> None:
    """Replies from agent_message events until an assistant message item appears (then from items: the
    earlier turns lose their text, though each still closes where it did)."""
    path = tmp_path / "events.jsonl"
    body = _rec("session_meta", id="s-2") + "".join(
        _rec("event_msg", type="user_message", message=f"ask {i}") + _rec("response_item", type="function_call")
        + _rec("event_msg", type="agent_message", message=f"said {i}") + _rec("event_msg", type="task_complete")
        for i in range(3))
    path.write_text(body)
    point, state = _state_after(path)
    assert [t.assistant for t in load(path)[0].turns] == ["said 0", "said 1", "said 2"]
    with path.open("a") as fh:
        fh.write(_rec("event_msg", type="user_message", message="ask 3") + _assistant_item("item reply")
                 + _rec("event_msg", type="task_complete"))
    assert _resume(path, point, state) is None
    assert [t.assistant for t in load(path)[0].turns] == ["", "", "", "item reply"]


def test_a_session_id_named_after_the_cut_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "unnamed.jsonl"
    path.write_text("".join(_user_item(f"ask {i}") + _assistant_item(f"answer {i}") + _rec("event_msg", type="task_complete")
                            for i in range(3)))
    point, state = _state_after(path)
    assert not state.named
    with path.open("a") as fh:
        fh.write(_rec("session_meta", id="late-id") + _user_item("ask 3") + _assistant_item("answer 3")
                 + _rec("event_msg", type="task_complete"))
    assert _resume(path, point, state) is None
    assert load(path)[0].session_id == "late-id"


def test_a_tail_is_given_as_a_whole_read_gives_it(tmp_path: Path) -> None:
    """Codex CLI up to 0.60 wrote no task_complete: the last prompt is a tail until the next one closes it."""
    src = FIXTURES / "codex" / "0.60" / "rollout-2025-11-23T11-12-40-019ab3e1-4c2d-7a80-b6f1-2d9e5c7a8b31.jsonl"
    lines = src.read_bytes().splitlines(keepends=True)
    prompts = [i for i, line in enumerate(lines) if b'"user_message"' in line]
    path = tmp_path / "r.jsonl"
    path.write_bytes(b"".join(lines[:prompts[-1]]))
    point, state = _state_after(path)
    path.write_bytes(src.read_bytes())
    read = _resume(path, point, state)
    assert read is not None
    whole = load(path)[0]
    assert read[0].tail is not None and read[0].tail == whole.tail


# -- through the import --------------------------------------------------------------------------------------------

def run(ws: Path, *paths: Path) -> Any:
    with Journal(str(ws)) as j:
        return I.import_paths(j, [str(p) for p in paths], "auto", POLICY)


def turns_of(ws: Path) -> list[tuple[str, str | None, str, str]]:
    out = []
    for cap in sorted((ws / J / "captures").iterdir()):
        out += [(e.turn_id, e.parent_turn_id, e.user, e.assistant) for _, e in ready_evidence(ws, cap)]
    return out


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    resumed: list[bool] = []
    real = resume.resume

    def spy(*args: Any, **kw: Any) -> Any:
        out = real(*args, **kw)
        resumed.append(out is not None)
        return out

    monkeypatch.setattr(resume, "resume", spy)
    return resumed


def test_appended_turns_are_read_from_the_cut_and_captured_as_a_whole_read_would(
        workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = write_rollout(tmp_path / "rollout.jsonl", 5, 30)
    assert run(workspace, src).captured == 30
    resumed = _spy(monkeypatch)
    for have, n in ((30, 35), (35, 36), (36, 50)):
        append_turns(src, 5, have, n)
        r = run(workspace, src)
        assert (r.captured, r.skipped) == (n - have, have)
    assert resumed == [True, True, True]
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    run(fresh, src)
    assert turns_of(workspace) == turns_of(fresh)


def test_a_real_rollout_grown_to_its_end_is_resumed(workspace: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    (real,) = (FIXTURES / "codex" / "2026-05").glob("*.jsonl")
    data = real.read_bytes()
    lines = data.splitlines(keepends=True)
    second = [i for i, line in enumerate(lines) if b'"user_message"' in line][1]
    src = tmp_path / real.name
    src.write_bytes(b"".join(lines[:second + 1]))  # the first turn closed by the second prompt
    assert run(workspace, src).captured == 1
    resumed = _spy(monkeypatch)
    src.write_bytes(data)
    r = run(workspace, src)
    assert resumed == [True] and (r.captured, r.skipped, r.pending) == (1, 1, 1)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    run(fresh, src)
    assert turns_of(workspace) == turns_of(fresh)


#: rollouts that write each prompt twice, as a user message item and as its event (the 0.60 layout; the corpus's)
TWICE = [p for p in CODEX if "2026-05" not in str(p) and "2025-08" not in str(p)
         and b'"role":"user"' in p.read_bytes().replace(b'": "', b'":"') and b'"user_message"' in p.read_bytes()]


def test_rollouts_with_prompts_as_items_and_events_are_among_them() -> None:
    assert any("0.60" in str(p) for p in TWICE)


@pytest.mark.parametrize("real", TWICE, ids=lambda p: p.name)
def test_a_rollout_an_older_codex_began_keeps_its_first_prompt(workspace: Path, tmp_path: Path, real: Path) -> None:
    """A rollout with its first prompt written as an older Codex wrote it (the user message item, no
    ``user_message`` event), then resumed by a newer one: every prompt is kept, the first from its item, and
    imported once as the file grew (before, a whole read dropped the first prompt)."""
    lines = real.read_bytes().splitlines(keepends=True)
    events = [i for i, line in enumerate(lines) if b'"user_message"' in line]
    first_said = json.loads(lines[events[0]])["payload"]["message"].strip()
    older = [line for i, line in enumerate(lines) if i != events[0]]
    whole = load(real)[0]
    src = tmp_path / real.name
    src.write_bytes(b"".join(older))
    mixed = load(src)[0]
    said, whole_said = ([t.user for t in (*s.turns, *([s.tail] if s.tail else []))] for s in (mixed, whole))
    assert len(said) == len(whole_said) and len(mixed.turns) == len(whole.turns)
    assert first_said in said[0]  # from the item: before, a whole read dropped it
    assert said[1:] == whole_said[1:]
    later = [i for i, line in enumerate(older) if b'"user_message"' in line]
    if later:  # imported as it grew: the first turn, closed by the second prompt, then the rest
        src.write_bytes(b"".join(older[:later[0] + 1]))
        assert run(workspace, src).captured == 1
        src.write_bytes(b"".join(older))
        r = run(workspace, src)
        assert (r.captured, r.skipped) == (len(mixed.turns) - 1, 1)
    else:
        assert run(workspace, src).captured == len(mixed.turns)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    run(fresh, src)
    assert turns_of(workspace) == turns_of(fresh)
    assert any(first_said in user for _, _, user, _ in turns_of(workspace))


def test_a_tail_that_comes_with_no_new_turn_is_counted_and_admitted_once_sealed(
        workspace: Path, tmp_path: Path) -> None:
    """A resumed read that captured nothing but left a tail pending writes its entry: the next run counts
    the tail, and a sealed one admits it (the old entry said none was pending)."""
    src = write_rollout(tmp_path / "rollout.jsonl", 12, 10)
    assert run(workspace, src).pending == 0
    with src.open("a") as fh:  # the next turn answered, its task_complete not written yet
        fh.write("".join(line + "\n" for line in list(rollout_lines(12, 11, start=10))[:-1]))
    r = run(workspace, src)
    assert (r.captured, r.pending) == (0, 1)
    assert run(workspace, src).pending == 1  # unchanged since: counted from the entry
    with Journal(str(workspace)) as j:
        sealed = I.import_paths(j, [str(src)], "auto", POLICY, sealed_before=math.inf)
    assert (sealed.captured, sealed.pending) == (1, 0)


def _entry(ws: Path) -> tuple[Path, SourceEntry]:
    (path,) = (ws / J / "sources").iterdir()
    return path, codec.decode(path.read_bytes(), SourceEntry)


def test_an_entry_written_before_the_readers_state_was_kept_is_read_whole(
        workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = write_rollout(tmp_path / "rollout.jsonl", 6, 10)
    run(workspace, src)
    path, entry = _entry(workspace)
    assert entry.resume is not None and entry.rollout is not None
    raw = json.loads(path.read_bytes())
    del raw["rollout"]
    path.write_bytes(json.dumps({**raw, "v": 1}).encode())  # as the previous version wrote it
    assert codec.decode(path.read_bytes(), SourceEntry).rollout is None
    append_turns(src, 6, 10, 12)
    resumed = _spy(monkeypatch)
    r = run(workspace, src)
    assert resumed == [] and (r.captured, r.skipped) == (2, 10)
    assert _entry(workspace)[1].rollout is not None  # the whole read keeps the state for the next one


def test_a_truncated_then_regrown_rollout_is_read_whole(workspace: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    src = write_rollout(tmp_path / "rollout.jsonl", 7, 10)
    run(workspace, src)
    size = src.stat().st_size
    lines = src.read_bytes().splitlines(keepends=True)
    with src.open("r+b") as fh:  # back to 6 turns, then other words grow it past its old size
        fh.truncate(len(b"".join(lines[:2 + 13 * 6])))
    with src.open("a") as fh:
        for line in rollout_lines(7, 12, words=30, start=6):
            fh.write(line + "\n")
    assert src.stat().st_size > size
    resumed = _spy(monkeypatch)
    r = run(workspace, src)
    assert resumed == [] and (r.captured, r.skipped) == (6, 6)


def test_a_same_size_rewrite_of_the_last_turn_is_read_again(workspace: Path, tmp_path: Path) -> None:
    src = write_rollout(tmp_path / "rollout.jsonl", 8, 10)
    run(workspace, src)
    st = src.stat()
    text = src.read_text()
    assert text.count("Done with turn 9.") == 3  # the event, the item, task_complete's last message
    with src.open("r+") as fh:
        fh.write(text.replace("Done with turn 9.", "Dane with turn 9."))
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert run(workspace, src).captured == 1


def test_a_replaced_rollout_is_read_as_new(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = write_rollout(tmp_path / "rollout.jsonl", 9, 10)
    run(workspace, src)
    new = write_rollout(tmp_path / "new.jsonl", 9, 12)
    text = new.read_text().replace("Done with turn 3.", "Dune with turn 3.")
    new.write_text(text)
    os.replace(new, src)  # another inode, longer
    resumed = _spy(monkeypatch)
    r = run(workspace, src)
    assert resumed == [] and r.captured == 9  # turn 3 changed: it and every turn after it has a new id


def test_the_cli_imports_only_the_new_turns_of_a_grown_rollout(workspace: Path, tmp_path: Path) -> None:
    """``cairn import`` (a process of its own, as a user runs it) on a rollout that grew by 10 turns."""
    src = write_rollout(tmp_path / "rollout-2026-05-11T10-00-00-0000.jsonl", 11, 200)
    first = cairn_json(workspace, "import", str(src))
    assert (first["captured"], first["formats"]) == (200, ["codex"])
    append_turns(src, 11, 200, 210)
    again = cairn_json(workspace, "import", str(src))
    assert (again["captured"], again["skipped"], again["sessions"]) == (10, 200, 1)
    _, entry = _entry(workspace)
    assert entry.resume is not None and entry.turns == 210 and entry.resume.prior == 209
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert cairn_json(fresh, "import", str(src))["captured"] == 210
    assert turns_of(workspace) == turns_of(fresh)


def test_codex_notify_after_a_turn_captures_the_new_turns_as_a_whole_read_would(workspace: Path, tmp_path: Path) -> None:
    """``cairn hook codex PAYLOAD`` as Codex's notify runs it after each turn, on a long rollout that grows."""
    thread = "0000000c-0000-7000-0000-000000000001"
    day = tmp_path / "home" / ".codex" / "sessions" / "2026" / "05" / "11"
    day.mkdir(parents=True)
    src = write_rollout(day / f"rollout-2026-05-11T10-00-00-{thread}.jsonl", 13, 150)
    # the session recorded in the workspace: a hook imports a session only into the workspace it belongs to
    src.write_bytes(src.read_bytes().replace(b'"cwd":"/work/project"', b'"cwd":' + json.dumps(str(workspace)).encode(), 1))
    env = child_env(HOME=str(tmp_path / "home"))
    env.pop("CODEX_HOME", None)
    payload = json.dumps({"type": "agent-turn-complete", "thread-id": thread, "turn-id": "1", "cwd": str(workspace)})

    def notify() -> None:
        r = subprocess.run([PYTHON, "-m", "cairn.server", "hook", "codex", payload], stdin=subprocess.DEVNULL,
                           cwd=workspace, env=env, capture_output=True, timeout=120)
        assert (r.returncode, r.stderr) == (0, b"")

    notify()
    for have in (150, 151, 155):
        append_turns(src, 13, have, have + {150: 1, 151: 4, 155: 10}[have])
        notify()
    _, entry = _entry(workspace)
    assert entry.resume is not None and entry.rollout is not None and entry.turns == 165
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert cairn_json(fresh, "import", str(src))["captured"] == 165
    assert turns_of(workspace) == turns_of(fresh) and len(turns_of(workspace)) == 165
