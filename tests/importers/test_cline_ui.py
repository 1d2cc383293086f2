"""Cline and Roo Code task folders that keep only ``ui_messages.json``: the user's words and the assistant's
text become turns, with their times; tool traffic, reasoning and bookkeeping do not."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.worker.ingest.importers import detect, load
from cairn.worker.ingest.sources import discover

from tests.support.transcripts import FIXTURES, assert_absent

CLINE_UI = "cline/tasks/1767312000000/ui_messages.json"
ROO_UI = "roo-code/tasks/4d1e2f30-5a6b-4c7d-8e9f-a0b1c2d3e4f5/ui_messages.json"
NOISE = ("NOISE", "Current Working Directory", "pytest -q", "<feedback>", "Parentheses, the way")


def test_a_cline_task_folder_with_only_ui_messages_gives_its_turns(fixture_copy):
    path = fixture_copy(CLINE_UI)
    assert detect(path, path.read_bytes()[:65536]) == "cline"
    (session,) = load(path)
    assert session.source_format == "cline"
    assert [(t.user, t.assistant, t.completed_at) for t in session.turns] == [
        ("Money amounts are integers in cents everywhere, never floats. Update the Invoice model to match.",
         "I'll look at the Invoice model first.\n\n"  # said twice in a row by the extension: kept once
         "The model stores `amount` as a float; I'll switch it to an integer number of cents.\n\n"
         "Invoice.amount is now `amount_cents`, an integer number of cents; the invoice tests pass.",
         "2026-01-02T00:00:19.700Z"),
        ("Also format amounts with two decimals for display, but only in the templates.",
         "Added a `cents` template filter that renders 1234 as 12.34; the models keep integers.\n\n"
         "Should negative amounts show a minus sign or parentheses?",  # the question it waits on
         "2026-01-02T00:05:51.000Z"),
    ]  # the answer to the last prompt is still streaming a tool call: no turn yet, the session's tail
    assert session.tail is not None and session.tail.user == "Parentheses, the way the accountants write them."
    assert session.tail.assistant == "Switching the filter to parentheses for negative amounts."
    assert_absent([session], NOISE)
    assert [t.parent_turn_id for t in session.turns] == [None, session.turns[0].turn_id]
    assert load(path) == [session]  # stable ids


def test_roo_codes_task_is_its_first_text(tmp_path):
    path = tmp_path / "globalStorage" / "rooveterinaryinc.roo-cline" / "tasks" / "4d1e" / "ui_messages.json"
    path.parent.mkdir(parents=True)
    shutil.copyfile(FIXTURES / ROO_UI, path)
    (session,) = load(path)
    assert session.source_format == "roo-code"
    assert [(t.user, t.assistant) for t in session.turns] == [
        ("Feature branches are named feature/<ticket>-<slug>. Check that our pre-push hook enforces it.",
         "The hook only checks the `feature/` prefix, not the ticket or the slug.\n\n"
         "Should the hook also reject uppercase letters in the slug?"),
        ("Yes, lowercase only.",
         "The pre-push hook now rejects branches not named feature/<ticket>-<lowercase-slug>."),
    ]
    assert [t.completed_at for t in session.turns] == ["2026-01-03T00:00:07.600Z", "2026-01-03T00:01:07.500Z"]
    assert_absent([session], NOISE)
    neutral = tmp_path / "task.json"  # no extension folder in its path: its asks' keys say Roo Code
    shutil.copyfile(FIXTURES / ROO_UI, neutral)
    assert detect(neutral, neutral.read_bytes()) == "roo-code"


def test_a_growing_ui_messages_file_keeps_the_ids_it_had(tmp_path):
    """Cut after each message, the file gives the turns of the cut before it plus, at most, new ones."""
    messages = json.loads((FIXTURES / CLINE_UI).read_text())
    path = tmp_path / "ui_messages.json"
    previous: list[tuple[str, str, str]] = []
    for n in range(1, len(messages) + 1):
        path.write_text(json.dumps(messages[:n]))
        sessions = load(path)
        turns = [(t.turn_id, t.user, t.assistant) for s in sessions for t in s.turns]
        assert turns[: len(previous)] == previous, n
        previous = turns
    assert len(previous) == 2


def test_a_streaming_text_is_not_an_answer_yet(tmp_path):
    messages = [{"ts": 1767312000000, "type": "say", "say": "task", "text": "Rename the module."},
                {"ts": 1767312001000, "type": "say", "say": "api_req_started", "text": "{}"},
                {"ts": 1767312003000, "type": "say", "say": "completion_result", "text": "Renamed it to",
                 "partial": True}]
    path = tmp_path / "ui_messages.json"
    path.write_text(json.dumps(messages))
    assert load(path) == []
    messages[-1] = {"ts": 1767312004000, "type": "say", "say": "completion_result", "text": "Renamed it to core.py."}
    path.write_text(json.dumps(messages))
    (session,) = load(path)
    assert [(t.user, t.assistant, t.completed_at) for t in session.turns] == [
        ("Rename the module.", "Renamed it to core.py.", "2026-01-02T00:00:04.000Z")]


def test_an_array_of_neither_messages_nor_ui_messages_is_malformed(tmp_path):
    path = tmp_path / "api_conversation_history.json"
    path.write_text(json.dumps([{"ts": 1, "note": "not a message"}]))
    with pytest.raises(CairnError) as err:
        load(path, "cline")
    assert err.value.code == ErrorCode.IMPORT_MALFORMED


def test_discovery_reads_ui_messages_only_where_the_history_is_missing(tmp_path):
    home = tmp_path / "home"
    tasks = home / ".config" / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev" / "tasks"
    only_ui = tasks / "1767312000000" / "ui_messages.json"
    both = tasks / "1767225600000"
    only_ui.parent.mkdir(parents=True)
    both.mkdir(parents=True)
    shutil.copyfile(FIXTURES / CLINE_UI, only_ui)
    shutil.copyfile(FIXTURES / CLINE_UI, both / "ui_messages.json")
    shutil.copyfile(FIXTURES / "cline/tasks/1767225600000/api_conversation_history.json",
                    both / "api_conversation_history.json")
    stores = discover(str(home), {"HOME": str(home)})
    found = sorted(str(Path(r.path).relative_to(tasks)) for st in stores if st.format == "cline" for r in st.sessions)
    assert found == ["1767225600000/api_conversation_history.json", "1767312000000/ui_messages.json"]
