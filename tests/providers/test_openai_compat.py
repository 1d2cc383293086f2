"""The OpenAI-compatible provider against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest
import trio
from cairn.protocol.digest import DigestInput, DigestOutput, ModelPolicy
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.vocab import NoteType
from cairn.worker.providers import openai_compat

from tests.providers.endpoint import Endpoint
from tests.providers.sessions import turn

API_KEY = "sk-test-Zq8Xw7Vu6Ts5Rq4Po3Nm2Lk1"
SECRET_IN_EVIDENCE = "ghp_" + "Ab1Cd2Ef3G" * 4

INP = DigestInput(
    session_id="s1",
    title="Payments",
    turns=(
        turn("turn-a", "From now on never use floats for money.", "Understood."),
        turn("turn-b", f"Deploy with token {SECRET_IN_EVIDENCE} please.", "Deployed."),
        turn("turn-c", "The tracker is https://linear.app/acme.", "Noted."),
    ),
)


def policy(ep: Endpoint, **changes: Any) -> ModelPolicy:
    base: dict[str, Any] = {
        "provider": "openai",
        "model": "qwen3:8b",
        "endpoint": ep.base_url,
        "temperature": 0.2,
        "max_output_tokens": 1500,
        "timeout_seconds": 10.0,
    }
    base.update(changes)
    return ModelPolicy(**base)


GOOD_NOTES = [
    {
        "type": "reference",
        "title": "Tracker",
        "body": "The tracker is https://linear.app/acme.",
        "turn_ids": ["turn-c"],
    },
    {
        "type": "feedback",
        "title": "Never use floats for money",
        "body": "Use integer cents; the user said never use floats for money.",
        "turn_ids": ["turn-a"],
    },
]


async def run(ep: Endpoint, **changes: Any) -> DigestOutput:
    return await openai_compat.digest(INP, policy(ep, **changes), api_key=API_KEY)


async def expect_error(ep: Endpoint, code: ErrorCode, **changes: Any) -> CairnError:
    with pytest.raises(CairnError) as info:
        await run(ep, **changes)
    assert info.value.code == code
    return info.value


@pytest.mark.trio
async def test_good_reply_becomes_ordered_notes(endpoint: Endpoint) -> None:
    endpoint.answer_notes(GOOD_NOTES)
    out = await run(endpoint)
    assert [(n.type, n.title, n.turn_ids) for n in out.notes] == [
        (NoteType.FEEDBACK, "Never use floats for money", ("turn-a",)),
        (NoteType.REFERENCE, "Tracker", ("turn-c",)),
    ]


@pytest.mark.trio
async def test_request_carries_the_frozen_policy_and_the_key_only_in_the_header(endpoint: Endpoint) -> None:
    endpoint.answer_notes([])
    pol = policy(endpoint)
    out = await openai_compat.digest(INP, pol, api_key=API_KEY)
    assert out.notes == ()
    (req,) = endpoint.requests
    assert req.path == "/v1/chat/completions"
    assert req.body == openai_compat.prepare_payload(INP, pol)
    body = json.loads(req.body)
    assert body["model"] == "qwen3:8b"
    assert body["temperature"] == 0.2
    assert body["max_tokens"] == 1500
    assert body["reasoning_effort"] == "none"
    assert body["response_format"] == {"type": "json_object"}
    assert body["stream"] is False
    assert req.headers["authorization"] == f"Bearer {API_KEY}"
    assert API_KEY.encode() not in req.body
    # Evidence secrets never leave the machine; turn ids do, for citation.
    assert SECRET_IN_EVIDENCE.encode() not in req.body
    assert b"turn-b" in req.body


@pytest.mark.trio
async def test_no_key_sends_no_authorization_header(endpoint: Endpoint) -> None:
    endpoint.answer_notes([])
    await openai_compat.digest(INP, policy(endpoint), api_key=None)
    assert "authorization" not in endpoint.requests[0].headers


def test_reasoning_default_sends_no_reasoning_field() -> None:
    pol = ModelPolicy(provider="openai", model="m", endpoint="http://127.0.0.1:9/v1", reasoning="default")
    assert "reasoning_effort" not in json.loads(openai_compat.prepare_payload(INP, pol))


def test_payload_is_deterministic() -> None:
    pol = ModelPolicy(provider="openai", model="m", endpoint="http://127.0.0.1:9/v1")
    assert openai_compat.prepare_payload(INP, pol) == openai_compat.prepare_payload(INP, pol)


@pytest.mark.trio
async def test_reply_is_redacted(endpoint: Endpoint) -> None:
    leaked = "sk-proj-Qw3Er4Ty5Ui6Op7As8Df9Gh0"
    endpoint.answer_notes(
        [{"type": "project", "title": "Deploy key", "body": f"Deploys use {leaked}.", "turn_ids": ["turn-b"]}]
    )
    (note,) = (await run(endpoint)).notes
    assert note.body == "Deploys use [REDACTED:openai_key]."


@pytest.mark.trio
async def test_control_characters_of_a_reply_never_reach_a_note(endpoint: Endpoint) -> None:
    osc52 = "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g="
    endpoint.answer_notes([
        {"type": "feedback", "title": "Never \x1b[1;31mfloats\x1b[0m for money\x07",
         "body": f"Use integer cents{osc52}\x07 always.\r\nThe user said so.\x9b2J\x00", "turn_ids": ["turn-a"]},
        {"type": "project", "title": "\x1b[0m", "body": "Nothing but an escape for a title.", "turn_ids": ["turn-c"]},
    ])
    (note,) = (await run(endpoint)).notes  # a title of nothing but controls leaves no note
    assert (note.title, note.body) == ("Never floats for money", "Use integer cents always. The user said so.")


@pytest.mark.trio
async def test_duplicate_notes_merge(endpoint: Endpoint) -> None:
    note = {"type": "user", "title": "Floats", "body": "Never floats for money.", "turn_ids": ["turn-a"]}
    endpoint.answer_notes([note, {**note, "turn_ids": ["turn-c", "turn-a"]}])
    (merged,) = (await run(endpoint)).notes
    assert merged.turn_ids == ("turn-a", "turn-c")


@pytest.mark.parametrize(
    "content",
    [
        "not json at all",
        '```json\n{"notes": []}\n```',
        "[]",
        '{"notes": [], "extra": 1}',
        '{"notes": {}}',
        '{"memories": []}',
        '{"notes": [{"type": "task", "title": "t", "body": "b", "turn_ids": ["turn-a"]}]}',
        '{"notes": [{"type": "user", "title": "t", "body": "b", "turn_ids": ["turn-a"], "why": "x"}]}',
        '{"notes": [{"type": "user", "title": "t", "body": "b"}]}',
        '{"notes": [{"type": "user", "title": "", "body": "b", "turn_ids": ["turn-a"]}]}',
        '{"notes": [{"type": "user", "title": "' + "x" * 121 + '", "body": "b", "turn_ids": ["turn-a"]}]}',
        '{"notes": [{"type": "user", "title": "t", "body": "' + "x" * 2001 + '", "turn_ids": ["turn-a"]}]}',
        '{"notes": [{"type": "user", "title": "t", "body": "b", "turn_ids": []}]}',
        '{"notes": [{"type": "user", "title": "t", "body": "b", "turn_ids": "turn-a"}]}',
        '{"notes": [{"type": "user", "title": 1, "body": "b", "turn_ids": ["turn-a"]}]}',
        '{"notes": ["just a string"]}',
    ],
)
@pytest.mark.trio
async def test_wrong_shape_is_an_invalid_reply(endpoint: Endpoint, content: str) -> None:
    endpoint.answer(content)
    await expect_error(endpoint, ErrorCode.PROVIDER_INVALID_REPLY)


@pytest.mark.trio
async def test_an_unknown_turn_id_is_dropped_not_the_note(endpoint: Endpoint) -> None:
    endpoint.answer_notes([
        {"type": "user", "title": "Floats", "body": "Never floats for money.", "turn_ids": ["turn-a", "invented-id-42"]},
        {"type": "user", "title": "Invented", "body": "Only made-up evidence.", "turn_ids": ["invented-id-43"]},
    ])
    out = await run(endpoint)
    assert [(n.title, n.turn_ids) for n in out.notes] == [("Floats", ("turn-a",))]
    assert (out.dropped_notes, out.dropped_ids) == (1, 2)


@pytest.mark.trio
async def test_invalid_notes_are_dropped_and_counted_and_the_valid_ones_kept(endpoint: Endpoint) -> None:
    notes: list[Any] = [
        {"type": "task", "title": "Fix the build", "body": "A task is no note.", "turn_ids": ["turn-a"]},
        GOOD_NOTES[0],
        {"type": "user", "title": "t", "body": "b", "turn_ids": ["turn-a"], "why": "an extra key"},
        "just a string",
        {**GOOD_NOTES[1], "title": "x" * 121},
    ]
    endpoint.answer(json.dumps({"notes": notes}))
    out = await run(endpoint)
    assert [n.title for n in out.notes] == ["Tracker"] and out.dropped_notes == 4 and out.dropped_ids == 0


@pytest.mark.trio
async def test_a_reply_with_no_valid_note_fails_without_echoing_it(endpoint: Endpoint) -> None:
    endpoint.answer_notes([
        {"type": "user", "title": "t", "body": "b", "turn_ids": ["invented-id-42"]},
        {"type": "chore", "title": "t", "body": "b", "turn_ids": ["turn-a"]},
    ])
    err = await expect_error(endpoint, ErrorCode.PROVIDER_INVALID_REPLY)
    assert "invented-id-42" not in str(err) and "chore" not in str(err) and err.detail == {"dropped": 2}


@pytest.mark.parametrize(
    "reply",
    [b"<html>oops</html>", b"", b'{"choices": []}', b'{"object": "error"}', b"\xff\xfe"],
)
@pytest.mark.trio
async def test_non_json_or_choiceless_response_is_an_invalid_reply(endpoint: Endpoint, reply: bytes) -> None:
    endpoint.reply = reply
    await expect_error(endpoint, ErrorCode.PROVIDER_INVALID_REPLY)


@pytest.mark.parametrize("finish", ["content_filter", "tool_calls", None])
@pytest.mark.trio
async def test_non_terminal_finish_is_an_invalid_reply(endpoint: Endpoint, finish: str | None) -> None:
    endpoint.answer('{"notes": []}', finish_reason=finish)
    await expect_error(endpoint, ErrorCode.PROVIDER_INVALID_REPLY)


@pytest.mark.trio
async def test_null_content_is_an_invalid_reply(endpoint: Endpoint) -> None:
    endpoint.answer(None)
    await expect_error(endpoint, ErrorCode.PROVIDER_INVALID_REPLY)


@pytest.mark.trio
async def test_length_finish_is_truncated(endpoint: Endpoint) -> None:
    endpoint.answer('{"notes": [{"type": "user", "title": "t", "bo', finish_reason="length")
    await expect_error(endpoint, ErrorCode.PROVIDER_TRUNCATED)


@pytest.mark.trio
async def test_http_500_is_provider_failed_with_the_status_only(endpoint: Endpoint) -> None:
    endpoint.status = 500
    endpoint.reply = b'{"error": "internal detail: prompt was From now on never use floats"}'
    err = await expect_error(endpoint, ErrorCode.PROVIDER_FAILED)
    assert "500" in err.message and err.detail == {"status": 500}
    assert "floats" not in str(err) and "internal detail" not in str(err)


@pytest.mark.trio
async def test_a_body_over_the_reply_bound_is_an_invalid_reply(endpoint: Endpoint) -> None:
    from cairn.worker.providers.http import MAX_REPLY_BYTES

    endpoint.reply = b"x" * (MAX_REPLY_BYTES + 1)
    err = await expect_error(endpoint, ErrorCode.PROVIDER_INVALID_REPLY)  # a CairnError itself, never a group
    assert "exceeds" in err.message


@pytest.mark.trio
async def test_unreachable_endpoint_is_provider_failed() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    pol = ModelPolicy(
        provider="openai", model="m", endpoint=f"http://127.0.0.1:{port}/v1", timeout_seconds=5.0
    )
    with pytest.raises(CairnError) as info:
        await openai_compat.digest(INP, pol, api_key=None)
    assert info.value.code == ErrorCode.PROVIDER_FAILED


@pytest.mark.trio
async def test_slow_endpoint_times_out(endpoint: Endpoint) -> None:
    endpoint.hold = True
    endpoint.answer_notes([])
    err = await expect_error(endpoint, ErrorCode.PROVIDER_TIMEOUT, timeout_seconds=0.3)
    assert len(endpoint.requests) == 1
    assert not endpoint.release.is_set()  # the answer never came: it was a real timeout
    assert "0.3" in err.message


@pytest.mark.trio
async def test_cancellation_abandons_the_request_promptly(endpoint: Endpoint) -> None:
    endpoint.hold = True
    endpoint.answer_notes([])
    outcome: list[str] = []

    async def digest_then_record() -> None:
        try:
            await run(endpoint, timeout_seconds=60.0)
            outcome.append("finished")
        except trio.Cancelled:
            outcome.append("cancelled")
            raise

    async with trio.open_nursery() as nursery:
        nursery.start_soon(digest_then_record)
        assert await trio.to_thread.run_sync(endpoint.arrived.wait, 10.0)
        nursery.cancel_scope.cancel()
    assert outcome == ["cancelled"]
    assert not endpoint.release.is_set()  # cancellation did not wait for the held reply


@pytest.mark.trio
async def test_payload_over_the_bound_is_refused_before_sending(endpoint: Endpoint) -> None:
    endpoint.answer_notes([])
    size = len(openai_compat.prepare_payload(INP, policy(endpoint)))
    err = await expect_error(endpoint, ErrorCode.PAYLOAD_TOO_LARGE, max_payload_bytes=size - 1)
    assert err.detail == {"size": size, "limit": size - 1}
    assert endpoint.requests == []
    # Exactly at the bound is allowed.
    await run(endpoint, max_payload_bytes=size)
    assert len(endpoint.requests) == 1


@pytest.mark.parametrize(
    "changes",
    [
        {"model": ""},
        {"endpoint": ""},
        {"endpoint": "ftp://host/v1"},
        {"reasoning": "high"},
        {"timeout_seconds": 0.0},
    ],
)
def test_bad_policy_is_config_invalid(changes: dict[str, Any]) -> None:
    base: dict[str, Any] = {"provider": "openai", "model": "m", "endpoint": "http://127.0.0.1:9/v1"}
    with pytest.raises(CairnError) as info:
        openai_compat.prepare_payload(INP, ModelPolicy(**{**base, **changes}))
    assert info.value.code == ErrorCode.CONFIG_INVALID


@pytest.mark.parametrize(
    ("endpoint_url", "expected"),
    [
        ("http://127.0.0.1:11434/v1", "http://127.0.0.1:11434/v1/chat/completions"),
        ("http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080/v1/chat/completions"),
        ("https://api.example.com/v1/chat/completions", "https://api.example.com/v1/chat/completions"),
    ],
)
def test_chat_url(endpoint_url: str, expected: str) -> None:
    assert openai_compat.chat_url(endpoint_url) == expected
