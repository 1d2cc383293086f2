"""A value known only by its label, repeated bare elsewhere in the session, reaches no model and no note.

The user states ``AWS_SECRET_ACCESS_KEY=…`` (redacted by its label); the
assistant's reply and a later turn repeat the bare value. Neither the
request body of the OpenAI-compatible endpoint, nor the prompt of the
``command`` program, nor a note of any digest engine may hold it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from cairn.protocol.digest import DigestInput, ModelPolicy
from cairn.worker.providers import extractive, openai_compat, remember

from tests.providers.endpoint import Endpoint
from tests.providers.sessions import turn
from tests.security.samples import ALNUM, B64, r

AWS = r(B64, 40)
API = r(ALNUM, 16)
MARK = "[REDACTED:aws_secret_access_key]"
INP = DigestInput(session_id="s", title="Deploys", turns=(
    turn("t1", f"Always export AWS_SECRET_ACCESS_KEY={AWS} before deploying.",
         f"Done: I exported {AWS} for this shell."),
    turn("t2", "Please run the tests.", "All 12 pass."),
    turn("t3", f"From now on, never print {AWS} in the logs.", "Understood."),
))


def _pieces(value: str) -> list[str]:
    return [value[k:k + 16] for k in range(0, len(value) - 15)]


def _leaks(text: str | bytes) -> bool:
    raw = text.decode() if isinstance(text, bytes) else text
    return any(p in raw for p in _pieces(AWS))


@pytest.mark.trio
async def test_a_bare_repeat_never_reaches_the_endpoint_nor_the_notes(endpoint: Endpoint) -> None:
    # a model that quotes the value anyway (it saw it elsewhere): the notes hide it too
    endpoint.answer_notes([{"type": "feedback", "title": "Never print the key in logs",
                            "body": f"Never print {AWS} in the logs.", "turn_ids": ["t3"]}])
    pol = ModelPolicy(provider="openai", model="m", endpoint=endpoint.base_url)
    out = await openai_compat.digest(INP, pol, api_key=None)
    (request,) = endpoint.requests
    assert not _leaks(request.body)
    assert f"Done: I exported {MARK} for this shell." in request.body.decode()
    assert f"never print {MARK} in the logs" in request.body.decode()
    assert [n.body for n in out.notes] == [f"Never print {MARK} in the logs."]
    assert not _leaks(openai_compat.prepare_payload(INP, pol))


@pytest.mark.trio
async def test_a_bare_repeat_never_reaches_the_command_program(tmp_path: Path) -> None:
    fake = Path(__file__).with_name("fake_command.py")
    pol = ModelPolicy(provider="command", timeout_seconds=30.0)
    await openai_compat.digest(INP, pol, api_key=None, command=(sys.executable, str(fake), "answer", str(tmp_path)))
    prompt = (tmp_path / "prompt-0.txt").read_text()
    assert not _leaks(prompt) and f"Done: I exported {MARK} for this shell." in prompt


def test_an_extractive_note_hides_a_value_stated_in_another_turn() -> None:
    inp = DigestInput(session_id="s", title=None, turns=(
        turn("t1", f"Our convention: STAGING_API_KEY={API} for smoke tests."),
        turn("t2", "Please run the smoke tests.", f"I set STAGING_API_KEY={API} and ran them."),
        turn("t3", f"From now on always pass {API} to the smoke tests."),
    ))
    notes = extractive.digest(inp).notes
    assert any("always pass [REDACTED:api_key] to the smoke tests" in n.body for n in notes)
    assert not any(API in n.title or API in n.body for n in notes)
    # stated only in the assistant's reply: found there all the same
    inp = DigestInput(session_id="s", title=None, turns=(
        turn("t1", "Please set up the deploy shell.", f"Done: export AWS_SECRET_ACCESS_KEY={AWS}"),
        turn("t2", f"From now on always deploy with {AWS} loaded."),
    ))
    notes = extractive.digest(inp).notes
    assert notes and not any(_leaks(n.title) or _leaks(n.body) for n in notes)
    assert any(MARK in n.body for n in notes)


def test_a_remembered_text_hides_its_bare_repeat() -> None:
    text = (f"Deploys use DB_PASSWORD={API} in every environment of the project; when the admin console "
            f"asks for it, always log in with {API} too.")
    (note,) = remember.digest(DigestInput(session_id="s", title="remember", turns=(turn("t1", text, ""),)), "").notes
    assert API not in note.title + note.body
    assert "always log in with [REDACTED:password] too" in note.body
