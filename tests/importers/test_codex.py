"""Codex CLI rollout JSONL: injected context, tool noise, task_complete, no double counting."""

from __future__ import annotations

import json

import pytest
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.worker.ingest.importers import codex, load

from tests.support.transcripts import assert_absent, grow

FIXTURE = "codex/rollout-2025-07-14T16-00-00-0197a3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b.jsonl"
SESSION = "0197a3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b"


def test_turns_and_texts(fixture_copy):
    (s,) = load(fixture_copy(FIXTURE))
    assert (s.session_id, s.source_format, s.title) == (SESSION, "codex", None)
    assert [t.user.split("\n")[0] for t in s.turns] == [
        "This repo's CI runs on Forgejo Actions with Python 3.11 only; don't suggest GitHub workflow files.",
        "Replace the bare except in src/app.py.",
        "The tracker is https://tracker.example.org/CAIRN, reference issue ids like CAIRN-123 in commits.",
    ]
    assert s.turns[1].user.endswith("KeyError: 'user'\n```")
    assert s.turns[1].assistant == "I replaced the bare `except:` with `except KeyError:` in `src/app.py` and added a test."
    assert [t.parent_turn_id for t in s.turns] == [None, s.turns[0].turn_id, s.turns[1].turn_id]
    assert all(len(t.turn_id) == 24 and int(t.turn_id, 16) >= 0 for t in s.turns)
    assert len({t.turn_id for t in s.turns}) == 3
    assert s.turns[0].completed_at == "2025-07-14T16:00:36.332Z"


def test_noise_absent_and_no_double_counting(fixture_copy):
    text = assert_absent(load(fixture_copy(FIXTURE)), ("INJECTED-NOISE", "environment_context", "REASONING-NOISE",
                                                       "TOOL-OUTPUT-NOISE", "bump the version"))
    # each reply is recorded as a response_item and as an agent_message event: it must appear once
    assert text.count("Will do: commit messages will reference tracker ids") == 1


def test_response_items_alone_give_the_same_turns(fixture_copy):
    """Older rollouts have no user_message events: prompts come from response items minus injections."""
    path = fixture_copy(FIXTURE)
    with_events = load(path)
    kept = [ln for ln in path.read_text().splitlines() if '"type":"user_message"' not in ln and '"type":"agent_message"' not in ln]
    path.write_text("\n".join(kept) + "\n")
    assert load(path) == with_events


def test_ids_stable_and_growth_adds_one_turn(fixture_copy):
    reply = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Tagged v0.4.0."}]}
    before, (after,) = grow(fixture_copy(FIXTURE), "".join(json.dumps(line) + "\n" for line in (
        {"timestamp": "2025-07-14T16:09:00.000Z", "type": "response_item", "payload": reply},
        {"timestamp": "2025-07-14T16:09:01.000Z", "type": "event_msg",
         "payload": {"type": "task_complete", "last_agent_message": "Tagged v0.4.0."}})))
    assert after.turns[:3] == before[0].turns
    assert len(after.turns) == 4
    assert after.turns[3].user == "Now bump the version and tag a release."
    assert after.turns[3].assistant == "Tagged v0.4.0."
    assert after.turns[3].parent_turn_id == before[0].turns[2].turn_id
    assert after.turns[3].completed_at == "2025-07-14T16:09:01.000Z"


def test_next_prompt_completes_an_unfinished_turn():
    def line(kind, payload):
        return json.dumps({"timestamp": "2025-07-14T16:00:00Z", "type": kind, "payload": payload}) + "\n"

    text = (
        line("session_meta", {"id": "s-1"})
        + line("event_msg", {"type": "user_message", "message": "first"})
        + line("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "partial"}]})
        + line("event_msg", {"type": "turn_aborted", "reason": "interrupted"})
        + line("event_msg", {"type": "user_message", "message": "second"})
    )
    (s,) = codex.parse(text, source_name="r.jsonl")
    assert [(t.user, t.assistant) for t in s.turns] == [("first", "partial")]


def test_malformed_record_names_line(fixture_copy):
    path = fixture_copy(FIXTURE)
    lines = path.read_text().splitlines(keepends=True)
    lines[4] = '{"timestamp":"x","type":"response_item"}\n'
    path.write_text("".join(lines))
    with pytest.raises(CairnError) as err:
        load(path)
    assert (err.value.code, err.value.detail["line"]) == (ErrorCode.IMPORT_MALFORMED, 5)
