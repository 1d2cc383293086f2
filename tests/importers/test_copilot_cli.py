"""Copilot CLI event logs: the user's words in a ``user.message``, without the context the tool injects."""

from __future__ import annotations

import json

from cairn.worker.ingest.importers import copilot_cli

PROMPT = "Keep the ledger in integer cents; never use floats for money."


def _log(content: str) -> str:
    events = [
        {"type": "session.start", "data": {"sessionId": "s-1", "context": {"cwd": "/home/dev/ledger"}},
         "id": "e-1", "timestamp": "2026-04-01T12:00:00.000Z", "parentId": None},
        {"type": "user.message", "data": {"content": content, "transformedContent": content, "attachments": []},
         "id": "e-2", "timestamp": "2026-04-01T12:00:02.000Z", "parentId": "e-1"},
        {"type": "assistant.message", "data": {"messageId": "m1", "content": "Understood: amounts stay integers.",
                                                "toolRequests": []},
         "id": "e-3", "timestamp": "2026-04-01T12:00:05.000Z", "parentId": "e-2"},
        {"type": "assistant.turn_end", "data": {"turnId": "0"}, "id": "e-4",
         "timestamp": "2026-04-01T12:00:06.000Z", "parentId": "e-3"},
    ]
    return "".join(json.dumps(e) + "\n" for e in events)


def test_the_prompt_once_without_the_injected_blocks():
    """The tool wrote its context into ``content``: a reminder, the attachments and the prompt again."""
    content = (
        f"{PROMPT}\n\n<reminder>\nINJECTED-NOISE Use the edit tool; do not print whole files.\n</reminder>\n"
        "<attachments>\n<attachment path=\"src/ledger.py\">INJECTED-NOISE def post(entry): ...</attachment>\n"
        f"</attachments>\n<userRequest>\n{PROMPT}\n</userRequest>"
    )
    (session,) = copilot_cli.parse(_log(content), source_name="events.jsonl")
    (turn,) = session.turns
    assert turn.user == PROMPT
    assert turn.completed_at == "2026-04-01T12:00:05.000Z"


def test_injected_blocks_without_a_request_block_are_left_out():
    content = f"<context>\nINJECTED-NOISE The current date is 2026-04-01.\n</context>\n{PROMPT}"
    (session,) = copilot_cli.parse(_log(content), source_name="events.jsonl")
    assert session.turns[0].user == PROMPT


def test_a_plain_prompt_is_kept_as_typed():
    (session,) = copilot_cli.parse(_log(f"  {PROMPT}\n"), source_name="events.jsonl")
    assert session.turns[0].user == PROMPT
