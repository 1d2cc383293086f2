"""A Claude Code session imported while it is written captures every word a cold import captures, once.

An import may read a session file at any moment of its writing (``cairn watch``, a hook, ``import --all``):
it captures the completed turns it finds, by id, and a later import of the grown file (read whole, or
resumed from the cut, docs/adr/0022) skips the ids captured already. Whatever the moments, the words
captured in the end must be those of one import of the finished file (sealed), each once: a turn captured
too early (a reply whose text was still to come, an answer the assistant went on with after a background
task's notice) loses what the file adds to it, and a turn a whole read leaves out (the conversation before
a compaction) loses its prompt.

Every real session at hand (tests/corpus/files, tests/fixtures/transcripts/claude-code, and the corpus
cache when restored, tests/corpus/fetch.py) is imported at every prefix cut at a line boundary: sampled,
or all of them with ``CAIRN_SWEEP=full`` (tests/sweep.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from cairn.protocol.sources import ResumePoint
from cairn.protocol.transcript import Turn
from cairn.worker.ingest import resume

from tests.support import REPO
from tests.support.transcripts import FIXTURES

CACHE = REPO / "tests" / "corpus" / "cache"
COMMITTED = sorted([*(REPO / "tests" / "corpus" / "files").glob("claude-code-*.jsonl"),
                    *(FIXTURES / "claude-code").glob("*.jsonl")])
#: corpus sessions whose cold or incremental imports lost words (absent from a fresh clone: skipped then)
CACHED = ["a2-claude-code-swordintel-2.jsonl", "a2-claude-code-captainrandom-1.jsonl",
          "claude-code-pv-case-review.jsonl", "a2-claude-code-eduardodmb-1.jsonl", "a2-claude-code-cwtrocks-5.jsonl",
          "claude-code-posthog.jsonl"]
#: cuts tried per file unless the sweep is full: a grid, and around the records that matter most
SAMPLED_CUTS = 24
RARE_CUTS = 40
#: files whose user rewound a turn: what was captured before the rewind is kept beside the branch
REWOUND = {"session.jsonl"}


def _full() -> bool:
    return os.environ.get("CAIRN_SWEEP") == "full"


def _cuts(lines: int, rare: list[int]) -> list[int]:
    """Line counts to cut the file at: all, or a grid plus the lines around the records that matter most."""
    if _full() or lines <= SAMPLED_CUTS:
        return list(range(1, lines))
    grid = {lines * k // SAMPLED_CUTS for k in range(1, SAMPLED_CUTS)}
    return sorted(c for c in grid | {n + d for n in rare for d in (-1, 0)} if 0 < c < lines)


def _rare(text: str) -> list[int]:
    """Line counts just after the records where an early import went wrong: a message's thinking written
    before its text (its record already saying ``end_turn``), a background task's notice (the assistant goes
    on after its turn), a compaction (the conversation before it hangs from no parent)."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not any(k in line for k in ('"thinking"', "task-notification", "compact_boundary", "isCompactSummary")):
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        message = rec.get("message") if isinstance(rec.get("message"), dict) else {}
        content = message.get("content")
        content = content if isinstance(content, list) else []
        thinking = bool(content) and all(isinstance(b, dict) and b.get("type") == "thinking" for b in content)
        origin = rec.get("origin")
        if ((thinking and message.get("stop_reason") == "end_turn") or rec.get("subtype") == "compact_boundary"
                or rec.get("isCompactSummary") or (isinstance(origin, dict) and origin.get("kind") != "human")):
            out.append(n)
    return out[:: max(1, len(out) // RARE_CUTS)]


def _whole(path: Path, *, sealed: bool) -> tuple[list[Turn], ResumePoint | None]:
    reader = resume.Reader(path, os.open(path, os.O_RDONLY))
    try:
        sessions = resume.whole(reader)
        if not sessions:
            return [], None
        s = sessions[0]
        turns = list(s.turns())
        tail = s.found_tail()
        point = reader.point(session_id=s.session_id, title=s.title)
        return turns + ([tail] if sealed and tail is not None else []), point
    finally:
        reader.close()


def _resumed(path: Path, point: ResumePoint, *, sealed: bool) -> tuple[list[Turn], ResumePoint | None] | None:
    read = resume.resume(path, os.open(path, os.O_RDONLY), point)
    if read is None:
        return None
    session, reader = read
    try:
        turns = list(session.turns) + ([session.tail] if sealed and session.tail is not None else [])
        return turns, reader.point(session_id=point.session_id, title=point.title, prior=point.prior,
                                   watched=frozenset(point.watched))
    finally:
        reader.close()


def _states(data: bytes, cuts: list[int]) -> Iterator[bytes]:
    lines = data.splitlines(keepends=True)
    for c in cuts:
        yield b"".join(lines[:c])


def _imports(data: bytes, cuts: list[int], at: Path, *, resumes: bool) -> dict[str, Turn]:
    """The turns captured by an import at each cut (resumed from the last one's point when it can be,
    else read whole), then by one of the finished file, sealed: id -> the turn as first captured."""
    captured: dict[str, Turn] = {}
    point: ResumePoint | None = None
    for i, state in enumerate([*_states(data, cuts), data]):
        at.write_bytes(state)
        sealed = i == len(cuts)
        read = _resumed(at, point, sealed=sealed) if resumes and point is not None else None
        turns, point = read if read is not None else _whole(at, sealed=sealed)
        for t in turns:
            captured.setdefault(t.turn_id, t)
    return captured


def _check(path: Path, tmp_path: Path) -> None:
    data = path.read_bytes()
    at = tmp_path / path.name
    at.write_bytes(data)
    cold = _whole(at, sealed=True)[0]
    assert cold, path.name
    words = [(t.turn_id, t.user, t.assistant) for t in cold]
    assert len({w[0] for w in words}) == len(words), "a cold import gives a turn id twice"
    cuts = _cuts(len(data.splitlines()), _rare(data.decode("utf-8", "replace")))
    for resumes in (True, False):
        got = _imports(data, cuts, at, resumes=resumes)
        lost = [(tid, u[:60], a[:60]) for tid, u, a in words
                if tid not in got or (got[tid].user, got[tid].assistant) != (u, a)]
        assert not lost, f"{path.name} (resumed: {resumes}): turns captured short or never: {lost[:5]}"
        extra = sorted(set(got) - {w[0] for w in words})
        if path.name not in REWOUND:  # a turn only an early read gives: a cold import lost it
            assert not extra, f"{path.name} (resumed: {resumes}): turns a cold import leaves out: {extra[:5]}"
        # a turn captured before the user rewound past it is no turn of the finished file's branch: kept, but
        # never a second copy of a reply the branch holds
        replies = [a for _, _, a in words if a]
        twice = [tid for tid in extra if got[tid].assistant and any(got[tid].assistant in a for a in replies)]
        assert not twice, f"{path.name} (resumed: {resumes}): words captured twice, under: {twice[:5]}"


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.name)
def test_imports_while_written_capture_a_cold_imports_words_once(path: Path, tmp_path: Path) -> None:
    _check(path, tmp_path)


@pytest.mark.parametrize("name", CACHED)
def test_corpus_sessions_imported_while_written_lose_nothing(name: str, tmp_path: Path) -> None:
    path = CACHE / name
    if not path.is_file():
        pytest.skip(f"{name} is not restored (tests/corpus/fetch.py)")
    _check(path, tmp_path)


# -- the shapes, one by one (records as Claude Code writes them) ----------------------------------------------

SID = "0c182e15-59de-4856-8a94-00f26880354c"


def _user(uid: str, parent: str | None, text: str, **kw: object) -> dict[str, object]:
    return {"type": "user", "uuid": uid, "parentUuid": parent, "sessionId": SID, "isSidechain": False,
            "message": {"role": "user", "content": text}, **kw}


def _assistant(uid: str, parent: str, block: dict[str, object], *, msg: str | None = None,
               stop: str | None = "end_turn") -> dict[str, object]:
    return {"type": "assistant", "uuid": uid, "parentUuid": parent, "sessionId": SID, "isSidechain": False,
            "message": {"id": msg or f"msg_{uid}", "role": "assistant", "model": "claude-opus-4", "content": [block],
                        "stop_reason": stop}}


def _text(text: str) -> dict[str, object]:
    return {"type": "text", "text": text}


THINKING: dict[str, object] = {"type": "thinking", "thinking": "", "signature": "x"}


def _write(path: Path, recs: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def _cold(path: Path) -> list[tuple[str, str, str]]:
    return [(t.turn_id, t.user, t.assistant) for t in _whole(path, sealed=True)[0]]


@pytest.mark.parametrize("summary", [
    # Claude Code 1.0.x: the summary is a user record with no parent
    [_user("cs", None, "This session is being continued from a previous conversation that ran out of context. …",
           isCompactSummary=True)],
    # 2.x: a boundary whose logical parent the file does not hold, then the summary
    [{"type": "system", "subtype": "compact_boundary", "uuid": "cb", "parentUuid": None, "sessionId": SID,
      "logicalParentUuid": "not-in-the-file", "content": "Conversation compacted"},
     _user("cs", "cb", "This session is being continued from a previous conversation …", isCompactSummary=True)],
    # 2.1.x: a boundary whose logical parent is a record written after it
    [{"type": "system", "subtype": "compact_boundary", "uuid": "cb", "parentUuid": None, "sessionId": SID,
      "logicalParentUuid": "u3", "content": "Conversation compacted"},
     _user("cs", "cb", "This session is being continued from a previous conversation …", isCompactSummary=True)],
], ids=["null-parent-summary", "dangling-logical-parent", "logical-parent-after-it"])
def test_a_cold_import_keeps_the_turns_before_a_compaction(summary: list[dict[str, object]], tmp_path: Path) -> None:
    recs = [_user("u1", None, "always use pnpm, never npm"), _assistant("a1", "u1", _text("pnpm only.")),
            _user("u2", "a1", "the API lives in services/api"), _assistant("a2", "u2", _text("Noted.")),
            *summary, _user("u3", summary[-1]["uuid"], "run the tests"),  # type: ignore[arg-type]
            _assistant("a3", "u3", _text("Tests pass."))]
    path = _write(tmp_path / "s.jsonl", recs)
    assert _cold(path) == [("u1", "always use pnpm, never npm", "pnpm only."),
                           ("u2", "the API lives in services/api", "Noted."), ("u3", "run the tests", "Tests pass.")]
    _check(path, tmp_path)  # and imported line by line


def test_a_reply_whose_text_is_still_to_come_is_not_captured_without_it(tmp_path: Path) -> None:
    """Each block of a message is a record of its own, each with the stop reason: the thinking's record says
    ``end_turn`` seconds before the text is written (a2-claude-code-eduardodmb-1 lines 276-277)."""
    recs = [_user("u1", None, "Add a due_date field."), _assistant("a1", "u1", THINKING, msg="m1"),
            _assistant("a2", "a1", _text("Added due_date."), msg="m1"),
            _user("u2", "a2", "thanks"), _assistant("a3", "u2", _text("You're welcome."))]
    path = _write(tmp_path / "s.jsonl", recs[:2])
    turns, point = _whole(path, sealed=False)
    assert turns == []  # the reply so far is thinking only: not over
    (tail,) = _whole(path, sealed=True)[0]  # a sealed file keeps the prompt all the same
    assert (tail.turn_id, tail.user, tail.assistant) == ("u1", "Add a due_date field.", "")
    _write(path, recs[:3])
    assert _cold(path) == [("u1", "Add a due_date field.", "Added due_date.")]
    _check(_write(tmp_path / "whole.jsonl", recs), tmp_path)


def test_a_reply_after_a_task_notice_is_captured_beside_the_turn(tmp_path: Path) -> None:
    """The assistant goes on after ``end_turn`` when a background task's notice comes: a turn of its own,
    whose id is the notice's, so an import that captured the turn before the notice loses nothing."""
    recs = [_user("u1", None, "Fetch all PRs, then analyse and push."), _assistant("a1", "u1", _text("Started; waiting.")),
            _user("n1", "a1", "<task-notification><task-id>t1</task-id></task-notification>",
                  origin={"kind": "task-notification"}),
            _assistant("a2", "n1", _text("Fetched: pushed.")),
            _user("u2", "a2", "thanks"), _assistant("a3", "u2", _text("You're welcome."))]
    path = _write(tmp_path / "s.jsonl", recs)
    assert _cold(path) == [("u1", "Fetch all PRs, then analyse and push.", "Started; waiting."),
                           ("n1", "", "Fetched: pushed."), ("u2", "thanks", "You're welcome.")]
    _check(path, tmp_path)


def test_a_record_written_before_the_one_it_hangs_from_never_closes_a_turn_early(tmp_path: Path) -> None:
    """Claude Code writes a ``turn_duration`` one line before the reply's text it hangs from (posthog lines
    20-21, bhavana 10-11). Read at that cut, the record's parent is not in the file yet: it stays a root
    (only a compaction hangs from the record before it), so the turn is not captured without its text."""
    tool: dict[str, object] = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}
    result = {"type": "user", "uuid": "r1", "parentUuid": "a1", "sessionId": SID, "isSidechain": False,
              "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                       "content": "a.txt b.txt"}]}}
    duration = {"type": "system", "subtype": "turn_duration", "uuid": "td", "parentUuid": "a2", "sessionId": SID,
                "isSidechain": False, "content": ""}
    recs = [_user("u1", None, "check the files"), _assistant("a1", "u1", tool, msg="m1", stop="tool_use"),
            result, duration,
            _assistant("a2", "r1", _text("There are two files."), msg="m2"),
            _user("u2", "td", "thanks"), _assistant("a3", "u2", _text("welcome"), msg="m3")]
    path = _write(tmp_path / "s.jsonl", recs[:4])
    assert _whole(path, sealed=False)[0] == []  # before: ("u1", "") captured, its text then lost by id
    _check(_write(tmp_path / "whole.jsonl", recs), tmp_path)


def _hook(uid: str, parent: str, event: str, tool: str) -> dict[str, object]:
    return {"type": "progress", "uuid": uid, "parentUuid": parent, "sessionId": SID, "isSidechain": False,
            "data": {"type": "hook_progress", "hookEvent": event, "hookName": f"{event}:Bash", "command": "x.sh"},
            "toolUseID": tool, "parentToolUseID": tool}


def test_tool_hooks_written_at_the_end_of_a_turn_do_not_cut_its_replies_out(tmp_path: Path) -> None:
    """Claude Code 2.1.x writes a turn's tool hooks' records when the turn ends, hanging from the tool call,
    and the ``Stop`` hook, the turn's summary and the next prompt hang from them (claude-code-speakfree lines
    12-45). Followed as written, the branch skipped every reply after the tool call: a cold import gave 8 of
    the file's 10 turns an empty reply."""
    tool: dict[str, object] = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
    result = {"type": "user", "uuid": "r1", "parentUuid": "a1", "sessionId": SID, "isSidechain": False,
              "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                                       "content": "a.txt b.txt"}]}}
    recs = [_user("u1", None, "List the files, then say which is the config."),
            _assistant("a1", "u1", tool, stop="tool_use"), result,
            _assistant("a2", "r1", _text("b.txt is the config."), stop=None),
            _hook("h1", "a1", "PreToolUse", "toolu_1"), _hook("h2", "h1", "PostToolUse", "toolu_1"),
            _hook("h3", "h2", "Stop", "stop-1"),
            {"type": "system", "subtype": "stop_hook_summary", "uuid": "s1", "parentUuid": "h3", "sessionId": SID,
             "isSidechain": False},
            _user("u2", "s1", "we deploy with make ship, never by hand"),
            _assistant("a3", "u2", _text("Noted."), stop=None),
            _hook("h4", "a3", "Stop", "stop-2")]
    path = _write(tmp_path / "s.jsonl", recs)
    assert _cold(path) == [("u1", "List the files, then say which is the config.", "b.txt is the config."),
                           ("u2", "we deploy with make ship, never by hand", "Noted.")]
    _check(path, tmp_path)  # and imported line by line

