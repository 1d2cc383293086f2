"""Claude Code session JSONL: active branch, sidechains, tool loop, boilerplate, incomplete tail."""

from __future__ import annotations

import json

import pytest
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.worker.ingest.importers import claude_code, load, load_report

from tests.support.transcripts import assert_absent

FIXTURE = "claude-code/session.jsonl"
SESSION = "5f0c2a8e-3b1d-4c7e-9a42-1e6d8b0f7c31"
TURN_IDS = [
    "11111111-1111-4111-8111-111111111111",
    "22222222-2222-4222-8222-222222222222",
    "33333333-bbbb-4333-8333-333333333333",
    "44444444-4444-4444-8444-444444444444",
    "55555555-5555-4555-8555-555555555555",
]


def test_turns_texts_and_ids(fixture_copy):
    sessions = load(fixture_copy(FIXTURE))
    assert len(sessions) == 1
    s = sessions[0]
    assert (s.session_id, s.source_format) == (SESSION, "claude-code")
    assert s.title == "Parser unicode fix and house rules"  # not the previous session's summary
    assert [t.turn_id for t in s.turns] == TURN_IDS
    assert [t.parent_turn_id for t in s.turns] == [None, *TURN_IDS[:-1]]
    first, second = s.turns[0], s.turns[1]
    assert first.user == "From now on never use bare `except:` in this repo; catch the specific exception."
    assert first.assistant == "Understood: I will always catch specific exceptions and never write a bare `except:`."
    assert first.completed_at == "2025-06-02T09:00:21.021Z"
    assert second.user.startswith("The parser tests fail, here is the log:\n```\nFAILED tests/test_parse.py")
    assert second.user.endswith("```\nPlease fix it.")
    assert second.assistant == (
        "Let me look at the parser first.\n\n"
        "Fixed: `normalise` no longer strips accents; the unicode test passes."
    )
    assert s.turns[2].user == "I'd rather not have emojis in commit messages."
    assert s.turns[3].assistant == "Running the full suite now."  # interrupted, completed by the next prompt


def test_noise_and_abandoned_branch_absent(fixture_copy):
    assert_absent(load(fixture_copy(FIXTURE)), (
        "THINKING-NOISE", "REMINDER-NOISE", "TOOL-OUTPUT-NOISE", "SIDECHAIN-NOISE", "ABANDONED-NOISE",
        "INCOMPLETE-NOISE", "tabs", "<command-name>", "local-command", "Caveat:", "Request interrupted",
        "Find callers of normalise"))


def test_tool_result_lines_are_not_turns(fixture_copy):
    path = fixture_copy(FIXTURE)
    result_uuids = {
        rec["uuid"] for rec in map(json.loads, path.read_text().splitlines())
        if rec.get("type") == "user" and isinstance(rec["message"]["content"], list)
        and all(b["type"] == "tool_result" for b in rec["message"]["content"])
    }
    assert len(result_uuids) == 3
    assert not result_uuids & {t.turn_id for t in load(path)[0].turns}


def test_ids_stable_across_loads(fixture_copy):
    path = fixture_copy(FIXTURE)
    assert load(path) == load(path)


def test_grown_file_keeps_ids_and_adds_completed_turn(fixture_copy):
    path = fixture_copy(FIXTURE)
    before = load(path)[0].turns
    completion = {
        "parentUuid": "a6a6a6a6-0001-4000-8000-000000000001", "isSidechain": False, "type": "assistant",
        "sessionId": SESSION, "uuid": "a6a6a6a6-0002-4000-8000-000000000002", "timestamp": "2025-06-02T09:05:00.000Z",
        "message": {"id": "msg_01T6", "role": "assistant", "model": "claude-sonnet-4-20250514",
                    "content": [{"type": "text", "text": "the changelog entry."}], "stop_reason": "end_turn"},
    }
    with path.open("a") as f:
        f.write(json.dumps(completion) + "\n")
    after = load(path)[0].turns
    assert after[: len(before)] == before
    assert len(after) == len(before) + 1
    new = after[-1]
    assert (new.turn_id, new.parent_turn_id) == ("66666666-6666-4666-8666-666666666666", TURN_IDS[-1])
    assert new.user == "What is left to do?"
    assert new.assistant == "INCOMPLETE-NOISE Remaining work:\n\nthe changelog entry."
    assert new.completed_at == "2025-06-02T09:05:00.000Z"


def test_trailing_tool_use_is_incomplete(fixture_copy):
    path = fixture_copy(FIXTURE)
    pending = {
        "parentUuid": "a6a6a6a6-0001-4000-8000-000000000001", "isSidechain": False, "type": "assistant",
        "uuid": "a6a6a6a6-0003-4000-8000-000000000003",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "toolu_x", "name": "Bash", "input": {}}], "stop_reason": "tool_use"},
    }
    with path.open("a") as f:
        f.write(json.dumps(pending) + "\n")
    assert len(load(path)[0].turns) == len(TURN_IDS)


def test_truncated_last_line_is_ignored(fixture_copy):
    path = fixture_copy(FIXTURE)
    with path.open("a") as f:
        f.write('{"parentUuid":"a6a6a6a6-0001-4000-8000-000000000001","type":"assistant","message":{"con')
    assert [t.turn_id for t in load(path)[0].turns] == TURN_IDS


def test_malformed_line_names_line_number_and_the_rest_is_read(fixture_copy):
    """A line that is no JSON (a record torn by a writer that died, then appended to): reported with its number,
    never its content, and the rest of the file read (it refused the whole file, every turn with it)."""
    path = fixture_copy(FIXTURE)
    whole = load(path)
    lines = path.read_text().splitlines(keepends=True)
    lines.insert(6, "this is { not json\n")
    path.write_text("".join(lines))
    report = load_report(path)
    [err] = report.skipped
    assert err.code == ErrorCode.IMPORT_MALFORMED and err.detail["line"] == 7 and "line 7" in err.message
    assert "not json" not in str(err)
    assert report.sessions == whole


@pytest.mark.parametrize(
    "record, line",
    [
        ('["a", "list"]', 2),
        ('{"type": "user", "uuid": "u2", "message": "hello"}', 2),
        ('{"type": "assistant", "uuid": "u2", "message": {"content": [{"text": "no type"}]}}', 2),
        ('{"type": "user", "message": {"content": "no uuid"}}', 2),
    ],
)
def test_wrong_shape_is_malformed(record, line):
    good = '{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"hi"}}'
    with pytest.raises(CairnError) as err:
        claude_code.parse(good + "\n" + record + "\n", source_name="x.jsonl")
    assert err.value.code == ErrorCode.IMPORT_MALFORMED
    assert err.value.detail["line"] == line
    assert "hello" not in str(err.value) and "no uuid" not in str(err.value)


def test_custom_slash_command_answered_is_a_turn():
    recs = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s1",
         "message": {"role": "user", "content": "<command-message>review is running…</command-message>\n"
                     "<command-name>/review</command-name>\n<command-args>src/app.py</command-args>"}},
        {"type": "user", "uuid": "u2", "parentUuid": "u1", "isMeta": True,
         "message": {"role": "user", "content": [{"type": "text", "text": "Review the file carefully ..."}]}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u2",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "Looks fine."}], "stop_reason": "end_turn"}},
    ]
    (session,) = claude_code.parse("".join(json.dumps(r) + "\n" for r in recs), source_name="s1.jsonl")
    assert [(t.turn_id, t.user, t.assistant) for t in session.turns] == [("u1", "/review src/app.py", "Looks fine.")]


def test_sidechain_only_file_has_no_sessions():
    recs = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "isSidechain": True, "message": {"content": "sub task"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "isSidechain": True,
         "message": {"content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"}},
    ]
    assert claude_code.parse("".join(json.dumps(r) + "\n" for r in recs), source_name="agent-1.jsonl") == []


# ---- a plan approved with a fresh context (shape: tests/fixtures/transcripts/claude-code/SOURCES.md)

PLAN = (
    "# Fix: gutter line numbers wrap per digit\n\n"
    "## Context\nLine numbers wider than one digit wrap character by character.\n\n"
    "## Changes\n1. Give the gutter `min-width: 4ch` in `diff.css`.\n2. Add a snapshot test for a 3-digit line.\n\n"
    "## Verification\n`npm test` passes."
)
NOTES = (
    "\n\n\nIf you need specific details from before exiting plan mode (like exact code snippets, error messages, "
    "or content you generated), read the full transcript at: /home/dana/.claude/projects/-home-dana-src-viewer/"
    "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9.jsonl\n\n"
    "If this plan can be broken down into multiple independent tasks, consider using the TeamCreate tool to "
    "create a team and parallelize the work."
)


def _approval_session(*, keep_plan_content: bool) -> str:
    sid = "7e8f9a0b-1c2d-4e3f-8a4b-5c6d7e8f9a0b"
    common = {"isSidechain": False, "userType": "external", "entrypoint": "cli", "cwd": "/home/dana/src/viewer",
              "sessionId": sid, "version": "2.1.113", "gitBranch": "main"}
    approval = {"parentUuid": None, **common, "type": "user",
                "message": {"role": "user", "content": "Implement the following plan:\n\n" + PLAN + NOTES},
                "uuid": "a0000000-0000-4000-8000-000000000001", "timestamp": "2026-04-30T16:00:00.000Z",
                "permissionMode": "acceptEdits"}
    if keep_plan_content:
        approval["planContent"] = PLAN
    reply = {"parentUuid": approval["uuid"], **common, "type": "assistant",
             "message": {"role": "assistant", "model": "claude-sonnet-4-6", "stop_reason": "end_turn",
                         "content": [{"type": "text", "text": "Done: the gutter keeps its digits together."}]},
             "uuid": "a0000000-0000-4000-8000-000000000002", "timestamp": "2026-04-30T16:03:00.000Z"}
    return "".join(json.dumps(r) + "\n" for r in (approval, reply))


@pytest.mark.parametrize("keep_plan_content", [True, False])
def test_an_approved_plan_is_the_assistants_and_the_approval_the_users(keep_plan_content):
    """Claude Code writes "Implement the following plan:", the plan and its own notes as the user's message."""
    (session,) = claude_code.parse(_approval_session(keep_plan_content=keep_plan_content), source_name="s.jsonl")
    (turn,) = session.turns
    assert turn.user == "> Plan: Fix: gutter line numbers wrap per digit\nApproved"
    assert turn.assistant == PLAN + "\n\nDone: the gutter keeps its digits together."
    assert "transcript at" not in turn.assistant and "TeamCreate" not in turn.assistant
    assert turn.completed_at == "2026-04-30T16:03:00.000Z"


def _without_last_stop_signal(path):
    """The file as Claude Code 2.1.x leaves it when a session ends (or is killed) before the Stop hook of its
    last turn ran: every assistant record has ``stop_reason: null``, and no signal follows the last one."""
    lines = path.read_text().splitlines()
    last = max(i for i, line in enumerate(lines) if json.loads(line).get("type") == "assistant")
    kept = lines[:last + 1] + [ln for ln in lines[last + 1:] if not claude_code._stop_signal(json.loads(ln))]
    path.write_text("\n".join(kept) + "\n")


def test_a_2_1_session_ended_before_its_last_stop_signal_keeps_its_last_turn_as_the_tail(fixture_copy):
    """The last prompt of such a session, answered with text, was never captured, even sealed (by the
    SessionEnd hook, `import --ended`, the idle seal): it is the tail now, a turn once the file is sealed."""
    path = fixture_copy("claude-code/entire-plan-clear-context.jsonl")
    (whole,) = load(path)
    _without_last_stop_signal(path)
    (cut,) = load(path)
    assert cut.tail is not None and cut.turns == whole.turns[:-1]
    assert cut.sealed().turns == whole.turns  # the same turn, with the id the signal would have given it


def test_an_older_session_still_streaming_its_last_reply_has_no_tail(fixture_copy):
    """Versions that give a stop_reason: a null one on the last record is a reply still being written."""
    (s,) = load(fixture_copy(FIXTURE))
    assert s.tail is None


@pytest.mark.parametrize("name", ["claude-code-bollywood-story.jsonl", "a2-claude-code-captainrandom-1.jsonl"])
def test_real_sessions_that_ended_before_their_last_signal(name):
    from tests.support import REPO

    path = REPO / "tests" / "corpus" / "cache" / name
    if not path.exists():
        pytest.skip("corpus file not restored (tests/corpus/fetch.py)")
    (s,) = load(path)
    assert s.tail is not None and s.tail.user and s.tail.assistant
