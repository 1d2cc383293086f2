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


# ---- a real session (tests/fixtures/transcripts/copilot-cli/SOURCES.md)

REAL_SESSION = "copilot-cli/session-state/030f200c-c26f-4ef0-9099-6d1156c83631/events.jsonl"


def _records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_real_session_keeps_the_prompt_as_typed_and_the_main_agents_reply(fixture_copy):
    """Copilot CLI 1.0.55: ``transformedContent`` adds a date and a ``<system_reminder>``; a sub-agent launched by
    the ``task`` tool writes its own messages (``agentId``, ``parentToolCallId``) into the same log."""
    path = fixture_copy(REAL_SESSION)
    records = _records(path)
    typed = [r["data"]["content"] for r in records if r["type"] == "user.message"]
    (final,) = [r["data"]["content"] for r in records if r["type"] == "assistant.message"
                and r["data"]["content"] and "parentToolCallId" not in r["data"]]
    (sub_report,) = [r["data"]["content"] for r in records if r["type"] == "assistant.message"
                     and r["data"]["content"] and "parentToolCallId" in r["data"]]

    (session,) = copilot_cli.parse(path.read_text(encoding="utf-8"), source_name=path.name)
    assert session.session_id == "030f200c-c26f-4ef0-9099-6d1156c83631"
    assert [(t.turn_id, t.user) for t in session.turns] == [("1280bab1-823f-4064-ae2c-9829561738a1", typed[0])]
    (turn,) = session.turns
    assert "<current_datetime>" not in turn.user and "<system_reminder>" not in turn.user
    assert turn.assistant == final  # before: the sub-agent's report to the tool call came first
    assert sub_report not in turn.assistant
    assert turn.completed_at == "2026-05-26T16:14:48.519Z"


def test_a_real_session_through_cairn_import(workspace, fixture_copy):
    """The real `cairn import` names the format it read and captures the typed prompt, nothing else, as the user's."""
    from tests.journal.helpers import J, cairn, ready_evidence

    path = fixture_copy(REAL_SESSION)
    (typed,) = [r["data"]["content"] for r in _records(path) if r["type"] == "user.message"]
    out = cairn(workspace, "import", str(path)).stdout
    assert out.splitlines()[0] == "imported 1 file(s) (copilot-cli), 1 session(s): 1 new turn(s), 0 already captured"
    (cap,) = (workspace / J / "captures").iterdir()
    ((_, evidence),) = ready_evidence(workspace, cap)
    assert evidence.user == typed
    assert evidence.assistant.startswith("Subagent findings:") and "This is a demo project" not in evidence.assistant
