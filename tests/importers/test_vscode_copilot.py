"""VS Code Copilot Chat's "Export Chat" JSON: every request of a real export is a turn's user side, the reply is
the Markdown of the response (never tool calls, thinking or edits), ids and times come from the requests."""

from __future__ import annotations

import gzip
import hashlib
import json

import pytest
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.worker.ingest.importers import FORMATS, PARSERS, detect, load, vscode_copilot

from tests.support.transcripts import FIXTURES, assert_absent

REAL = FIXTURES / "vscode-copilot" / "smart-snippets-chat_export.json.gz"
REAL_SHA256 = "f068fdc39473ddcaf67727262f09d3778ddc8f9902f6492ebf432601fe52bdb9"
SYNTHETIC = "vscode-copilot/chat.json"


@pytest.fixture
def real_export(tmp_path):
    data = gzip.decompress(REAL.read_bytes())
    assert hashlib.sha256(data).hexdigest() == REAL_SHA256  # the original bytes (see SOURCES.md)
    path = tmp_path / "chat_export.json"
    path.write_bytes(data)
    return path


def test_every_request_of_the_real_export_is_a_turn(real_export):
    doc = json.loads(real_export.read_text(encoding="utf-8"))
    assert detect(real_export, real_export.read_bytes()[:65536]) == "vscode-copilot"
    (s,) = load(real_export)
    assert s.source_format == "vscode-copilot" and len(s.turns) == len(doc["requests"]) == 22
    assert [t.user for t in s.turns] == [r["message"]["text"].strip() for r in doc["requests"]]
    assert [t.turn_id for t in s.turns] == [r["requestId"] for r in doc["requests"]]
    first = doc["requests"][0]
    assert s.turns[0].completed_at == "2025-05-24T20:20:47.926Z"  # timestamp + result.timings.totalElapsed
    assert first["timestamp"] + first["result"]["timings"]["totalElapsed"] == 1748118047926


def test_the_real_replies_are_the_markdown_only(real_export):
    (s,) = load(real_export)
    # an inline reference inside a sentence is written as its file's name
    assert s.turns[1].assistant.startswith("Your pyproject.toml has been converted from Poetry-specific to a generic")
    assert s.turns[0].assistant.startswith("To convert your pyproject.toml from Poetry-specific to a generic format")
    # tool invocations, edits and the empty code block written around each edit never reach a reply
    replies = "\n".join(t.assistant for t in s.turns)
    for marker in ('Using "Edit File"', "\n````\n\n````", "toolCallId", "vscode_editFile", "file:///"):
        assert marker not in replies, marker
    assert all(t.assistant.strip() and not t.assistant.startswith("```") for t in s.turns)


def test_the_synthetic_export(fixture_copy):
    path = fixture_copy(SYNTHETIC)
    (s,) = load(path)
    assert [(t.user, t.turn_id, t.completed_at) for t in s.turns] == [
        ("Our API handlers live in src/api; add input validation to the create_user handler with pydantic.",
         "request_3f2a9c1e-5b7d-4e21-9a0c-6d8e1f2b3c4d", "2026-09-13T11:46:49.815Z"),
        # the cancelled request wrote no reply: its prompt joins the next one, which the reply answers
        ("Also return the created user's id\n\nand from now on always use snake_case in JSON responses",
         "request_9e8d7c6b-5a49-4837-a261-5f4e3d2c1b0a", "2026-09-13T11:48:06.050Z"),
    ]  # the last request is still pending
    assert s.turns[0].assistant == ("I'll add a `CreateUser` model to users.py and validate the request body with it."
                                    "\n\nThe handler now rejects a body without `email` with a 422.")
    assert_absent([s], ["THINKING-NOISE", "TOOL-OUTPUT-NOISE", "Reading", "```"])


def test_the_pending_request_completes_when_the_file_grows(fixture_copy):
    path = fixture_copy(SYNTHETIC)
    (before,) = load(path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    last = doc["requests"][-1]
    last["response"].append({"value": " and then the 201 case."})
    last["modelState"] = {"value": 1, "completedAt": 1789300130000}
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    (after,) = load(path)
    assert after.session_id == before.session_id and after.turns[:2] == before.turns
    assert [(t.user, t.assistant) for t in after.turns[2:]] == [
        ("Now write the tests", "I'll start with the 422 case and then the 201 case.")]


def test_an_older_export_without_model_state():
    """Without ``modelState``: a request with a ``result`` (or cancelled) is finished, the last one without is not."""
    def req(i, text, reply, **extra):
        return {"requestId": f"request_{i}", "message": {"text": text, "parts": []}, "timestamp": 1700000000000 + i,
                "response": [{"value": reply}], **extra}
    doc = {"requesterUsername": "dev", "responderUsername": "GitHub Copilot", "requests": [
        req(1, "explain this", "It parses the header.", result={"timings": {"totalElapsed": 500}}),
        req(2, "and this?", "It reads the"),
    ]}
    (s,) = vscode_copilot.parse(json.dumps(doc), source_name="chat.json")
    assert [(t.user, t.assistant, t.completed_at) for t in s.turns] == [
        ("explain this", "It parses the header.", "2023-11-14T22:13:20.501Z")]
    doc["requests"][1]["isCanceled"] = True
    (s,) = vscode_copilot.parse(json.dumps(doc), source_name="chat.json")
    assert [t.assistant for t in s.turns] == ["It parses the header.", "It reads the"]


def test_a_chat_session_file_is_read_with_its_id_and_title(tmp_path):
    """VS Code's own session files have the same shape, with a ``sessionId`` (which Claude Code's test looks for)."""
    doc = json.loads((FIXTURES / SYNTHETIC).read_text(encoding="utf-8"))
    doc.update(version=3, sessionId="0b7d3c1e-aaaa-4bbb-8ccc-1234567890ab", creationDate=1789300000000,
               customTitle="Validate create_user")
    for name, text in (("session.json", json.dumps(doc, indent=2)), ("one-line.json", json.dumps(doc))):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        assert detect(path, path.read_bytes()[:65536]) == "vscode-copilot"
        (s,) = load(path)
        assert (s.session_id, s.title, len(s.turns)) == ("0b7d3c1e-aaaa-4bbb-8ccc-1234567890ab", "Validate create_user", 2)


def test_a_document_of_another_shape_is_malformed_not_a_traceback(tmp_path):
    with pytest.raises(CairnError) as err:
        vscode_copilot.parse('{"responderUsername": "GitHub Copilot", "requests": {"0": 1}}', source_name="chat.json")
    assert err.value.code == ErrorCode.IMPORT_MALFORMED and "line 1" in str(err.value)
    path = tmp_path / "chat.json"
    path.write_text('{"responderUsername": "GitHub Copilot", "requests": [')  # cut short
    with pytest.raises(CairnError) as err:
        load(path, "vscode-copilot")
    assert err.value.code == ErrorCode.IMPORT_MALFORMED


def test_registered():
    assert "vscode-copilot" in FORMATS and PARSERS["vscode-copilot"] is vscode_copilot.parse
