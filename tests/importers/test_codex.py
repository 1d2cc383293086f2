"""Codex CLI rollout JSONL: injected context, tool noise, task_complete, no double counting; the last turn
no task_complete closes (a tail), and the older layout."""

from __future__ import annotations

import json

import pytest
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.worker.ingest.importers import codex, detect, load

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


# -- a last turn no task_complete closes (Codex CLI up to about 0.60), and the older layout ------------------

ROLLOUT_060 = "codex/0.60/rollout-2025-11-23T11-12-40-019ab3e1-4c2d-7a80-b6f1-2d9e5c7a8b31.jsonl"
ROLLOUT_2025_08 = "codex/2025-08/rollout-2025-08-12T11-30-05-5b1f7c2e-8d4a-4e6b-9c3f-1a2b3c4d5e6f.jsonl"
LAST_PROMPT = "Use 3 seconds as the default cooldown and make it a constant in src/config.ts."
LAST_REPLY = "Added `COOLDOWN_MS = 3000` to `src/config.ts`; the state and the ring now read it from there."


def _line(kind, payload, ts="2025-11-23T11:02:00.000Z"):
    return json.dumps({"timestamp": ts, "type": kind, "payload": payload}) + "\n"


def test_a_rollout_without_task_complete_keeps_its_last_prompt_as_the_tail(fixture_copy):
    """Codex 0.60 writes no task_complete: the next prompt closes a turn, and the last prompt, answered in
    full, is the session's tail (admitted when the file is sealed), not lost."""
    (s,) = load(fixture_copy(ROLLOUT_060))
    assert [t.user.split(";")[0] for t in s.turns] == [
        "The clock runs in the browser only: keep all game state in src/state.ts and never add a server.",
        "Pieces get a cooldown after they move",
    ]
    assert s.tail is not None and (s.tail.user, s.tail.assistant) == (LAST_PROMPT, LAST_REPLY)
    assert s.tail.parent_turn_id == s.turns[-1].turn_id and s.tail.completed_at == "2025-11-23T10:34:30.117Z"
    assert [t.completed_at for t in s.turns] == ["2025-11-23T10:13:16.033Z", "2025-11-23T10:21:51.042Z"]
    assert s.sealed().turns == (*s.turns, s.tail) and s.sealed().tail is None
    assert_absent([s.sealed()], ("INJECTED-NOISE", "REASONING-NOISE", "TOOL-OUTPUT-NOISE", "environment_context"))


def test_a_resumed_session_closes_its_tail_with_the_same_id(fixture_copy):
    """The tail admitted at a seal and the same turn closed later by the next prompt are one turn."""
    before, (after,) = grow(fixture_copy(ROLLOUT_060), "".join((
        _line("response_item", {"type": "message", "role": "user",
                                "content": [{"type": "input_text", "text": "Now add a pause button."}]}),
        _line("event_msg", {"type": "user_message", "message": "Now add a pause button.", "images": []}),
        _line("event_msg", {"type": "agent_message", "message": "Added a pause button."}),
        _line("response_item", {"type": "message", "role": "assistant",
                                "content": [{"type": "output_text", "text": "Added a pause button."}]}))))
    (s,) = before
    assert after.turns == (*s.turns, s.tail)  # closed by the next prompt: the same turn, the same id
    assert after.tail is not None and after.tail.user == "Now add a pause button."
    assert after.tail.parent_turn_id == s.tail.turn_id


def test_a_pending_tool_call_or_an_unanswered_prompt_is_still_the_tail(fixture_copy):
    """The last prompt of a finished session is never lost: ending on a pending tool call, or with no
    reply at all, it is the tail, with whatever reply text it has, and keeps its id once a prompt closes it."""
    path = fixture_copy(ROLLOUT_060)
    (before,) = load(path)
    with path.open("a") as f:  # the model went on after its reply: a tool call, no output yet
        f.write(_line("response_item", {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c"}))
    (s,) = load(path)
    assert s.tail == before.tail and len(s.turns) == 2
    with path.open("a") as f:
        f.write(_line("event_msg", {"type": "user_message", "message": "And a reset button.", "images": []}))
    (s,) = load(path)
    assert s.turns[-1] == before.tail  # the new prompt closed it: the same turn, the same id
    assert s.tail is not None and (s.tail.user, s.tail.assistant) == ("And a reset button.", "")
    with path.open("a") as f:
        f.write(_line("event_msg", {"type": "user_message", "message": "Also a pause key.", "images": []}))
    (s,) = load(path)
    assert s.turns[-1] == s.sealed().turns[-2] and (s.turns[-1].user, s.turns[-1].assistant) == ("And a reset button.", "")


def test_a_session_whose_only_prompt_has_no_task_complete_is_kept(fixture_copy):
    path = fixture_copy(ROLLOUT_060)
    lines = path.read_text().splitlines(keepends=True)
    first_reply_end = next(i for i, ln in enumerate(lines) if '"role":"assistant"' in ln)
    path.write_text("".join(lines[: first_reply_end + 1]))
    (s,) = load(path)
    assert s.turns == () and s.tail is not None and s.tail.parent_turn_id is None
    assert s.session_id == "019ab3e1-4c2d-7a80-b6f1-2d9e5c7a8b31"


def test_the_older_layout_is_read_with_its_session_and_time(fixture_copy):
    """Codex CLI until August 2025: a header line {id, timestamp, instructions, git}, state lines, bare
    model items with no time of their own."""
    path = fixture_copy(ROLLOUT_2025_08)
    assert detect(path, path.read_bytes()[:65536]) == "codex"
    (s,) = load(path)
    assert load(path, "codex") == [s]
    assert (s.session_id, s.source_format) == ("5b1f7c2e-8d4a-4e6b-9c3f-1a2b3c4d5e6f", "codex")
    assert [(t.user, t.assistant) for t in s.turns] == [(
        "Amounts in this ledger are integer cents everywhere; never use floats for money.",
        "Understood: money stays in integer cents. `parse` in `src/money.py` returned a float; it now returns cents "
        "as an int.")]
    assert s.tail is not None and s.tail.user.startswith("Release notes go in CHANGELOG.md")
    # no record of this layout has a time: each turn carries the session's start, from the header
    assert {t.completed_at for t in (*s.turns, s.tail)} == {"2025-08-12T09:30:05.412Z"}
    assert_absent([s.sealed()], ("INJECTED-NOISE", "REASONING-NOISE", "TOOL-OUTPUT-NOISE", "Current working"))


def test_the_older_layout_cut_inside_a_line_yields_only_whole_turns(fixture_copy):
    path = fixture_copy(ROLLOUT_2025_08)
    data = path.read_bytes()
    cut = data.rindex(b'{"type":"message","id":"msg_')
    path.write_bytes(data[: cut + 40])  # the last reply half-written
    (s,) = load(path)
    assert len(s.turns) == 1 and s.tail is not None and s.tail.assistant == ""  # the prompt is the tail; its
    # half-written reply is not read


def test_state_lines_in_the_current_layout_are_skipped(fixture_copy):
    path = fixture_copy(FIXTURE)
    text = path.read_text()
    path.write_text(text.replace("\n", '\n{"record_type":"state"}\n', 3))
    assert load(path) == load(fixture_copy(FIXTURE))


def test_the_real_0_60_rollout_of_the_corpus_keeps_its_last_prompt():
    """tests/corpus codex-rtchess (Codex CLI 0.60.1, no task_complete), when restored by tests/corpus/fetch.py."""
    import hashlib

    from tests.support import REPO

    entry = next(e for e in json.loads((REPO / "tests/corpus/manifest.json").read_text())["files"]
                 if e["id"] == "codex-rtchess")
    path = REPO / "tests/corpus/cache" / entry["file"]
    if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != entry["sha256"]:
        pytest.skip("codex-rtchess is not restored (tests/corpus/fetch.py)")
    (s,) = load(path)
    prompts = [json.loads(ln)["payload"]["message"] for ln in path.read_text().splitlines()
               if '"type":"user_message"' in ln]
    assert s.tail is not None and s.tail.user == prompts[-1].strip()  # before: lost, with its whole reply
    assert s.tail.assistant.startswith("Simplified `export_development") and s.turns[-1].user == prompts[-2].strip()
    assert s.tail.parent_turn_id == s.turns[-1].turn_id and s.tail.completed_at == "2025-11-23T12:06:14.735Z"
