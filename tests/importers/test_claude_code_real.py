"""Claude Code JSONL as recent versions write it: what reaches the user's side of a turn.

Every message the user typed is the user side of exactly one turn, and
nothing else is: not the IDE's context blocks, not background-task notices,
and a message typed while the assistant worked (a ``queued_command``
attachment) is not lost. Fixtures and their sources: tests/fixtures/transcripts/
claude-code/SOURCES.md. The last test reads the committed real sessions and the dev-split corpus
files of the format when they are restored (tests/corpus/fetch.py).
"""

from __future__ import annotations

import hashlib
import json

import pytest
from cairn.worker.importers import claude_code, load

from tests.support import REPO

CORPUS = REPO / "tests" / "corpus"


def test_ide_context_block_is_not_the_users_words(fixture_copy):
    (session,) = load(fixture_copy("claude-code/speakfree-ide-context.jsonl"))
    assert [(t.turn_id, t.user) for t in session.turns] == [("aea3ed5a-0e88-492f-a09c-d76d9bdabfce", "Restart openwhisper")]
    assert session.turns[0].assistant.endswith("Whisper server restarted successfully — running as PID 84168.")


def test_task_notices_are_not_turns_and_a_queued_message_is(fixture_copy):
    (session,) = load(fixture_copy("claude-code/queued-and-notices.jsonl"))
    ids = [f"00000000-0000-4000-8000-{n:012d}" for n in (1, 10, 14)]
    assert [(t.turn_id, t.user) for t in session.turns] == [
        (ids[0], "Fetch the merged pull requests of the last 90 days into data/prs.json."),
        (ids[1], "Contributors with fewer than 3 pull requests are one-off contributors; keep that threshold in one constant."),
        (ids[2], "From now on use British spelling in the dashboard labels."),
    ]
    assert [t.parent_turn_id for t in session.turns] == [None, *ids[:2]]
    # the reply to a notice stays with the turn whose task it reports on
    assert session.turns[0].assistant.endswith("Page 2 is in: 100 of 619 fetched so far.")
    assert session.turns[2].assistant == "Done: the threshold is one constant, and the labels will use British spelling."


@pytest.mark.parametrize("attachment", [
    {"type": "queued_command", "prompt": "check the logs", "commandMode": "bash"},
    {"type": "queued_command", "prompt": "check the logs", "commandMode": "prompt", "origin": {"kind": "peer"}},
    {"type": "queued_command", "prompt": "<task-notification>\n<status>completed</status>\n</task-notification>"},
    {"type": "queued_command", "prompt": 42},
    {"type": "hook_additional_context", "content": ["check the logs"]},
])
def test_other_attachments_are_not_prompts(attachment):
    recs = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "message": {"role": "user", "content": "Start."}},
        {"type": "attachment", "uuid": "q1", "parentUuid": "u1", "attachment": attachment},
        {"type": "assistant", "uuid": "a1", "parentUuid": "q1",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "Started."}], "stop_reason": "end_turn"}},
    ]
    (session,) = claude_code.parse("".join(json.dumps(r) + "\n" for r in recs), source_name="s.jsonl")
    assert [(t.turn_id, t.user, t.assistant) for t in session.turns] == [("u1", "Start.", "Started.")]


def test_queued_message_as_blocks_with_an_image():
    recs = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "message": {"role": "user", "content": "Start."}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1",
         "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {}}],
                     "stop_reason": "tool_use"}},
        {"type": "attachment", "uuid": "q1", "parentUuid": "a1", "attachment": {
            "type": "queued_command", "commandMode": "prompt", "origin": {"kind": "human"},
            "prompt": [{"type": "text", "text": "and this one"}, {"type": "image", "source": {"type": "base64", "data": ""}}]}},
        {"type": "assistant", "uuid": "a2", "parentUuid": "q1",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "Both done."}], "stop_reason": "end_turn"}},
    ]
    (session,) = claude_code.parse("".join(json.dumps(r) + "\n" for r in recs), source_name="s.jsonl")
    assert [(t.turn_id, t.user, t.assistant) for t in session.turns] == [("u1", "Start.", ""), ("q1", "and this one", "Both done.")]


def _real_files() -> list:
    """Real Claude Code sessions at hand: the committed ones always, the other dev corpus files once restored."""
    manifest = json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8"))
    out = [REPO / "tests" / "fixtures" / "transcripts" / "claude-code" / "speakfree-ide-context.jsonl"]
    for e in manifest["files"]:
        if e["format"] != "claude-code" or e["split"] != "dev":
            continue
        path = next((p for p in (CORPUS / "files" / e["file"], CORPUS / "cache" / e["file"]) if p.is_file()), None)
        if path is not None and hashlib.sha256(path.read_bytes()).hexdigest() == e["sha256"]:
            out.append(path)
    return out


def test_real_sessions_user_sides_are_the_users_messages():
    """Each turn's user side is one user record's words (or a slash command), never injected context.

    Runs on the committed real sessions (always present) and on every restored dev corpus file."""
    files = _real_files()
    assert len(files) >= 2, files  # the cut-down real fixture and the committed dev session at least
    for path in files:
        recs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        by_uuid = {r["uuid"]: r for r in recs if isinstance(r.get("uuid"), str)}
        turns = load(path, "claude-code")[0].turns
        assert turns, path.name
        for turn in turns:
            rec = by_uuid[turn.turn_id]
            if rec["type"] == "attachment":  # a prompt typed while the assistant worked
                queued = rec["attachment"]
                assert queued["type"] == "queued_command" and queued.get("commandMode", "prompt") == "prompt", (
                    path.name, turn.turn_id)
                assert queued.get("origin") in (None, {"kind": "human"}), (path.name, turn.turn_id)
            else:
                assert rec["type"] == "user" and not rec.get("isMeta"), (path.name, turn.turn_id)
                assert rec.get("origin") in (None, {"kind": "human"}), (path.name, turn.turn_id)
            for tag in ("<task-notification>", "<ide_", "<system-reminder>", "<local-command", "Caveat:"):
                assert tag not in turn.user, (path.name, turn.turn_id, tag)
