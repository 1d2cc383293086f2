"""Cursor agent transcripts: the user's words inside ``<user_query>``, the assistant's text without tool calls
or the ``[REDACTED]`` stand-in, turns completed by the next prompt or a ``turn_ended`` marker, each dated by
its prompt's ``<timestamp>``."""

from __future__ import annotations

import json
import shutil

import pytest
from cairn.worker.ingest.importers import detect, load
from cairn.worker.ingest.importers.cursor_transcript import stamp

from tests.support.transcripts import FIXTURES, assert_absent, grow

ID = "6a1f0c3e-8b2d-4e5f-9a7c-1d2e3f4a5b6c"
FIXTURE = FIXTURES / "cursor-transcript" / "agent-transcripts" / ID / f"{ID}.jsonl"
NOISE = ("NOISE", "[REDACTED]", "<user_query>", "<timestamp>", "attached_files", "Adding an audit entry")


@pytest.fixture
def transcript(tmp_path):
    path = tmp_path / ".cursor" / "projects" / "Users-dev-shop" / "agent-transcripts" / ID / f"{ID}.jsonl"
    path.parent.mkdir(parents=True)
    shutil.copyfile(FIXTURE, path)
    return path


def test_the_users_query_and_the_assistants_text_make_the_turns(transcript):
    assert detect(transcript, transcript.read_bytes()[:65536]) == "cursor-transcript"
    (session,) = load(transcript)
    assert (session.session_id, session.source_format) == (f"cursor-transcript:{ID}", "cursor-transcript")
    assert [(t.user, t.assistant, t.completed_at) for t in session.turns] == [
        ("Orders over 500 EUR need a second approval. Add that check to the checkout service.",
         "Reading the checkout service first.\n\nCheckout now asks for a second approval when an order is over "
         "500 EUR; the limit is `APPROVAL_LIMIT_CENTS`.",
         "2026-06-01T10:04:00.000Z"),  # 12:04 PM at UTC+2
        ("The limit is set per shop, not globally.",
         "Moved the limit to `Shop.approval_limit_cents`, 50000 by default, and the checkout reads it from the "
         "order's shop.",
         "2026-06-01T10:31:00.000Z"),
    ]  # the third prompt's answer is still calling tools: not complete, the session's tail
    assert_absent([session], NOISE)
    assert session.tail is not None
    assert (session.tail.user, session.tail.assistant) == ("Also write each approval to the audit log.",
                                                           "Adding an audit entry for each approval.")
    assert load(transcript) == [session]
    with transcript.open("a") as f:  # a marker at the end does not close it (Cursor may replace it)
        f.write(json.dumps({"type": "turn_ended", "status": "success"}) + "\n")
    (marked,) = load(transcript)
    assert marked.turns == session.turns and marked.tail == session.tail
    with transcript.open("a") as f:  # something after the marker does: the same turn, under the tail's id
        f.write(json.dumps({"role": "user", "message": {"content": [{"type": "text", "text": "Thanks."}]}}) + "\n")
    (closed,) = load(transcript)
    assert closed.turns == (*session.turns, session.tail) and closed.tail is None


def test_a_turn_ended_marker_at_the_end_leaves_the_tail_which_the_next_prompt_closes(transcript):
    before, after = grow(transcript, json.dumps({"role": "assistant", "message": {"content": [
        {"type": "text", "text": "Each approval now writes an audit entry with the approver and the amount."}]}})
        + "\n" + json.dumps({"type": "turn_ended", "status": "success"}) + "\n")
    (old,), (new,) = before, after
    assert new.turns == old.turns  # the turns it had keep their ids
    assert new.tail is not None and new.sealed().turns[:2] == old.turns
    assert [(t.user, t.assistant, t.completed_at) for t in new.sealed().turns[2:]] == [
        ("Also write each approval to the audit log.",
         "Adding an audit entry for each approval.\n\nEach approval now writes an audit entry with the approver "
         "and the amount.", None)]  # that prompt carried no timestamp
    # Cursor goes on by writing the next prompt where the marker was: the same turns, ids unchanged
    lines = transcript.read_text().splitlines()
    lines[-1] = json.dumps({"role": "user", "message": {"content": [{"type": "text", "text": "Thanks."}]}})
    transcript.write_text("\n".join(lines) + "\n")
    assert load(transcript)[0].turns == new.sealed().turns


def test_a_subagent_result_after_the_last_marker_grows_the_tail_not_a_second_turn(transcript):
    """Cursor replaces the file's last marker with its notice that a subagent finished and the agent's next
    words, all of the same turn: read before and after, the turn is never two turns (it was captured twice,
    under two ids, when the marker closed it)."""
    with transcript.open("a") as f:
        f.write(json.dumps({"type": "turn_ended", "status": "success"}) + "\n")
    (first,) = load(transcript)
    lines = transcript.read_text().splitlines()
    notice = ("<user_query>The above subagent result is already visible to the user. DO NOT reiterate or "
              "summarize its contents unless asked.</user_query>")
    lines[-1:] = [json.dumps({"role": "user", "message": {"content": [{"type": "text", "text": notice}]}}),
                  json.dumps({"role": "assistant", "message": {"content": [
                      {"type": "text", "text": "The audit log now has a row per approval."}]}}),
                  json.dumps({"type": "turn_ended", "status": "success"})]
    transcript.write_text("\n".join(lines) + "\n")
    (second,) = load(transcript)
    assert second.turns == first.turns and first.tail is not None and second.tail is not None
    assert second.tail.user == first.tail.user
    assert second.tail.assistant.endswith("The audit log now has a row per approval.")
    assert [t.user for t in second.sealed().turns].count(first.tail.user) == 1


def test_an_aborted_turn_with_text_is_complete_and_one_without_text_is_not_a_turn(tmp_path):
    path = tmp_path / "t.jsonl"
    user = {"role": "user", "message": {"content": [{"type": "text", "text": "<user_query>\nrun it\n</user_query>"}]}}
    tool = {"role": "assistant", "message": {"content": [{"type": "tool_use", "name": "Shell", "input": {}}]}}
    path.write_text("\n".join(json.dumps(r) for r in (user, tool, {"type": "turn_ended", "status": "aborted"})) + "\n")
    assert load(path) == []
    said = {"role": "assistant", "message": {"content": [{"type": "text", "text": "Stopped before the build."}]}}
    path.write_text("\n".join(json.dumps(r) for r in (user, said, {"type": "turn_ended", "status": "error",
                                                                      "error": "limit"})) + "\n")
    (session,) = load(path)
    assert [(t.user, t.assistant) for t in session.sealed().turns] == [("run it", "Stopped before the build.")]
    assert session.session_id != "cursor-transcript:t"  # a name that is not a Cursor id: content-derived


@pytest.mark.parametrize("written, utc", [
    ("Tuesday, Sep 29, 2026, 2:29 AM (UTC-4)", "2026-09-29T06:29:00.000Z"),
    ("Thursday, Sep 24, 2026, 11:08 AM (UTC+8)", "2026-09-24T03:08:00.000Z"),
    ("Friday, Jul 31, 2026, 5:10 PM (UTC-5)", "2026-07-31T22:10:00.000Z"),
    ("Monday, Jan 5, 2026, 12:15 AM (UTC+5:30)", "2026-01-04T18:45:00.000Z"),
    ("2026-07-17T07:08:09.123456-06:00", "2026-07-17T13:08:09.123Z"),
    ("Sat", None),  # no date
    ("2026-07-17T07:08:09", None),  # no zone: the time is not known
])
def test_prompt_timestamps_become_utc(written, utc):
    assert stamp(f"<timestamp>{written}</timestamp>\n<user_query>\nx\n</user_query>") == utc


def test_a_first_line_longer_than_the_head_is_still_recognised(tmp_path):
    path = tmp_path / "chat.jsonl"
    query = "Summarise this log:\n" + "line of log text\n" * 6000  # about 100 KiB, past the 64 KiB head
    records = [{"role": "user", "message": {"content": [{"type": "text", "text": f"<user_query>\n{query}</user_query>"}]}},
               {"role": "assistant", "message": {"content": [{"type": "text", "text": "It repeats one line."}]}},
               {"type": "turn_ended", "status": "success"}]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    assert detect(path, path.read_bytes()[:65536]) == "cursor-transcript"
    (session,) = load(path)
    assert session.sealed().turns[0].assistant == "It repeats one line."


def test_prompts_without_an_answer_join_the_next_and_cursors_own_notices_are_not_prompts(tmp_path):
    """As real transcripts have them (tests/corpus/importers.json): a plan's "Implement the plan…" and a
    subagent's forking prompts in a row, a nested ``<user_query>`` with its own ``<timestamp>``, and the notice
    Cursor writes when a subagent finishes."""
    def user(text):
        return {"role": "user", "message": {"content": [{"type": "text", "text": text}]}}

    def said(text):
        return {"role": "assistant", "message": {"content": [{"type": "text", "text": text}]}}

    notice = ("The above subagent result is already visible to the user. DO NOT reiterate or summarize its "
              "contents unless asked.")
    records = [
        user("<user_query>\nImplement the plan as specified.\n</user_query>"),
        {"role": "assistant", "message": {"content": [{"type": "tool_use", "name": "Task", "input": {}}]}},
        {"type": "turn_ended", "status": "aborted"},
        user("<user_query>\nStart multitasking\n</user_query>"),
        said("A background agent is running the checks."),
        user("<timestamp>Tuesday, May 12, 2026, 2:20 PM (UTC+5:30)</timestamp>\n<user_query>\n"
             "<timestamp>Tuesday, May 12, 2026, 2:15 PM (UTC+5:30)</timestamp>\n\n"
             f"<user_query>{notice}</user_query>\n</user_query>"),
        said("The subagent has completed."),
        user(f"<user_query>{notice}</user_query>"),
        user("<user_query>\nAudit actions are always past tense.\n</user_query>"),
        said("Noted: past tense."),
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    (session,) = load(path)
    assert session.tail is not None
    assert [(t.user, t.assistant) for t in (*session.turns, session.tail)] == [
        ("Implement the plan as specified.\n\nStart multitasking",
         "A background agent is running the checks.\n\nThe subagent has completed."),
        ("Audit actions are always past tense.", "Noted: past tense."),
    ]
