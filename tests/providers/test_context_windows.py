"""Context windows: evidence longer than the model's context is split at turn boundaries, never cut.

The loopback endpoint plays a server with a small context window: a request
over it is refused with HTTP 400 ``context_length_exceeded``, as OpenAI,
vLLM and llama.cpp refuse it (others silently drop the start of the prompt,
which is worse: the early turns' knowledge is lost without a word).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import attrs
import pytest
from cairn.protocol.digest import DigestInput, ModelPolicy, Note
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.journal import PublicDigest
from cairn.protocol.settings import Settings
from cairn.protocol.vocab import NoteType, Trigger
from cairn.worker.memory import remote
from cairn.worker.memory.model import empty_snapshot
from cairn.worker.providers import access, openai_compat, window
from cairn.worker.providers.route import Route
from cairn.worker.redaction import redact as gate
from cairn.worker.settings import config

from tests.journal.helpers import cairn, cairn_json
from tests.providers.endpoint import Endpoint
from tests.providers.sessions import long_transcript, turn

CONTEXT = 4096
TURNS = 30
_OPTION = re.compile(r"I prefer option-(\d+)")


def notes_per_window(request: dict[str, Any]) -> str:
    """A model that notes each stated preference, and in every window the same project fact."""
    evidence = json.loads(request["messages"][1]["content"])
    if "turns" not in evidence:  # the review that follows: nothing to propose
        return json.dumps({"proposals": []})
    notes = []
    for t in evidence["turns"]:
        found = _OPTION.search(t["user"])
        if found:
            k = found.group(1)
            notes.append({"type": "user", "title": f"Prefers option-{k}",
                          "body": f"The user prefers option-{k} for module {k}.", "turn_ids": [t["turn_id"]]})
    ids = [t["turn_id"] for t in evidence["turns"]]
    notes.append({"type": "project", "title": "Modules are numbered",
                  "body": f"Modules are numbered ({len(ids)} seen here).", "turn_ids": ids})
    return json.dumps({"notes": notes})


def test_estimate_budget_and_packing() -> None:
    assert window.estimate_tokens("") == 0
    assert window.estimate_tokens("abc") == 1 and window.estimate_tokens("abcd") == 2
    assert window.estimate_tokens("日本") == 2  # 3 bytes a character: one token each
    room = window.budget(8192, "x" * 300, 2000)
    assert room == int(8192 * 0.9) - 64 - 100 - 2000
    with pytest.raises(CairnError) as err:
        window.budget(2048, "x" * 300, 2000)
    assert err.value.code is ErrorCode.CONFIG_INVALID and "context_tokens = 2048" in err.value.message
    assert window.pack([3, 3, 3, 9, 4], 6) == ([[0, 1], [2], [4]], [3])
    assert window.pack([], 6) == ([], [])


def test_a_long_capture_is_digested_in_windows_that_fit(endpoint: Endpoint, workspace: Path,
                                                        user_config_home: Path, tmp_path: Path) -> None:
    endpoint.context_tokens = CONTEXT
    endpoint.respond = notes_per_window
    (user_config_home / "cairn").mkdir()
    (user_config_home / "cairn/config.toml").write_text(
        f'provider = "openai"\nmodel = "m"\nendpoint = "{endpoint.base_url}"\ncontext_tokens = {CONTEXT}\n'
        'mode = "manual"\n')
    r = cairn(workspace, "run", str(long_transcript(tmp_path / "long.md")))
    assert "E_CONFIG_INVALID" not in r.stderr, r.stderr
    assert endpoint.refused == 0 and len(endpoint.requests) > 1  # every window fit
    (digest,) = cairn_json(workspace, "journal")
    titles = [n["title"] for n in digest["notes"]]
    # the earliest turns' knowledge survives: nothing was cut from the start
    assert titles[:TURNS] == [f"Prefers option-{k}" for k in range(TURNS)]
    # the fact every window noted is one note citing the union of the windows' turns
    (fact,) = [n for n in digest["notes"] if n["title"] == "Modules are numbered"]
    assert fact["turn_ids"] == digest["turn_ids"]


def _context_of(request: Any) -> dict[str, Any]:
    content: dict[str, Any] = json.loads(json.loads(request.body)["messages"][1]["content"])
    return content


def _window_number(request: Any) -> int:
    return int(_context_of(request)["window"].split(" of ")[0])


def _turn_docs(requests: list[Any]) -> list[dict[str, Any]]:
    """Every turn as the requests carried it, in window order (windows after the first go out concurrently)."""
    return [t for r in sorted(requests, key=_window_number) for t in _context_of(r)["turns"]]


@pytest.mark.trio
async def test_a_turn_larger_than_a_window_keeps_the_users_words_and_cuts_the_reply(endpoint: Endpoint) -> None:
    endpoint.context_tokens = CONTEXT
    endpoint.respond = notes_per_window
    reply = "".join(f"Step {i}: the long answer goes on. " for i in range(2000))  # ~70 kB: no window holds it
    big = turn("t-big", "I prefer option-99 for module 99, and keep it that way.", reply)
    small = [turn(f"t{i}", f"I prefer option-{i} here.") for i in range(3)]
    inp = DigestInput(session_id="s", title="t", turns=(small[0], big, *small[1:]))
    pol = ModelPolicy(provider="openai", model="m", endpoint=endpoint.base_url)
    out = await openai_compat.digest(inp, pol, api_key=None, context_tokens=CONTEXT)
    assert endpoint.refused == 0  # every request fit the server's window
    (sent,) = [t for t in _turn_docs(endpoint.requests) if t["turn_id"] == "t-big"]
    assert sent["user"] == big.user and "part" not in sent  # the user's words whole, in one piece
    head, marker, tail = sent["assistant"].split("\n")
    assert reply.startswith(head) and reply.endswith(tail) and head and tail  # head and tail of the reply
    assert marker == window.CUT_MARKER.format(n=len(reply) - len(head) - len(tail))  # says how much was cut
    assert [n.title for n in out.notes if n.type is NoteType.USER] == [
        "Prefers option-0", "Prefers option-99", "Prefers option-1", "Prefers option-2"]


@pytest.mark.trio
async def test_a_user_message_larger_than_a_window_is_split_in_order_and_marked(endpoint: Endpoint) -> None:
    endpoint.context_tokens = CONTEXT
    endpoint.respond = notes_per_window
    spec = "".join(f"Requirement {i}: the service answers within a second. " for i in range(600))  # ~33 kB
    words = f"I prefer option-7 for module 7. {spec}\nAnd last: I prefer option-8 for module 8."
    big = turn("t-spec", words, "I read the whole specification.")
    inp = DigestInput(session_id="s", title="t", turns=(turn("t0", "I prefer option-0 here."), big))
    pol = ModelPolicy(provider="openai", model="m", endpoint=endpoint.base_url)
    out = await openai_compat.digest(inp, pol, api_key=None, context_tokens=CONTEXT)
    assert endpoint.refused == 0
    parts = [t for t in _turn_docs(endpoint.requests) if t["turn_id"] == "t-spec"]
    assert len(parts) > 2 and [p["part"] for p in parts] == [f"{k} of {len(parts)}" for k in range(1, len(parts) + 1)]
    assert "".join(p["user"] for p in parts) == words  # every word, in order, nothing repeated
    assert [p["assistant"] for p in parts] == [""] * (len(parts) - 1) + [big.assistant]  # the reply with the last part
    noted = {n.title: n.turn_ids for n in out.notes if n.type is NoteType.USER}
    assert noted == {"Prefers option-0": ("t0",), "Prefers option-7": ("t-spec",), "Prefers option-8": ("t-spec",)}


@pytest.mark.trio
async def test_each_window_says_where_it_stands_and_what_the_first_one_found(endpoint: Endpoint) -> None:
    endpoint.context_tokens = CONTEXT
    endpoint.respond = notes_per_window
    turns = tuple(attrs.evolve(turn(f"t{i}", f"I prefer option-{i} for module {i}. " + "Context. " * 120),
                               completed_at=f"2025-05-{20 + i % 3:02d}T10:00:00Z") for i in range(1, 13))
    inp = DigestInput(session_id="s", title="Payments \x1b[1mrework", turns=turns, source="codex")
    pol = ModelPolicy(provider="openai", model="m", endpoint=endpoint.base_url)
    await openai_compat.digest(inp, pol, api_key=None, context_tokens=CONTEXT)
    contexts = [_context_of(r) for r in endpoint.requests]
    n = len(contexts)
    assert n > 2
    first, rest = contexts[0], contexts[1:]
    assert first["window"] == f"1 of {n}" and first["earlier_notes"] == []  # the first window goes alone, first
    assert sorted(c["window"] for c in rest) == sorted(f"{k} of {n}" for k in range(2, n + 1))
    assert all(c["session"] == {"title": "Payments rework", "tool": "codex", "date": "2025-05-20"} for c in contexts)
    found = [f"user: Prefers option-{t['turn_id'][1:]}" for t in first["turns"]] + ["project: Modules are numbered"]
    assert all(c["earlier_notes"] == found for c in rest)  # what the first window produced, to refine, not repeat


def correcting_model(request: dict[str, Any]) -> str:
    """Notes the test runner in the first and the last window; the last one corrects the first."""
    evidence = json.loads(request["messages"][1]["content"])
    k, n = (int(x) for x in evidence["window"].split(" of "))
    ids = [evidence["turns"][0]["turn_id"]]
    if k == 1:
        body = "Tests run with unittest through the custom runner in scripts/run_tests.py, with coverage on."
    elif k == n:
        body = "Tests run with pytest now."
    else:
        return json.dumps({"notes": []})
    return json.dumps({"notes": [{"type": "project", "title": "Test runner", "body": body, "turn_ids": ids}]})


@pytest.mark.trio
async def test_a_later_window_correcting_an_earlier_note_wins_and_cites_both(endpoint: Endpoint) -> None:
    endpoint.context_tokens = CONTEXT
    endpoint.respond = correcting_model
    turns = tuple(turn(f"t{i}", f"Turn {i}. " + "Context. " * 120) for i in range(12))
    inp = DigestInput(session_id="s", title="t", turns=turns)
    pol = ModelPolicy(provider="openai", model="m", endpoint=endpoint.base_url)
    out = await openai_compat.digest(inp, pol, api_key=None, context_tokens=CONTEXT)
    last = _context_of(max(endpoint.requests, key=_window_number))
    (note,) = out.notes
    assert note.body == "Tests run with pytest now."  # the latest statement, not the longest
    assert note.turn_ids == ("t0", last["turns"][0]["turn_id"])


@pytest.mark.trio
async def test_each_turn_is_redacted_once_however_many_windows(endpoint: Endpoint,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint.context_tokens = CONTEXT
    endpoint.respond = notes_per_window
    secret = "ghp_" + "Zq8Xw7Vu6Ts5" * 3
    turns = tuple(turn(f"t{i}", f"I prefer option-{i}. My token is {secret}. " + "Some context. " * 120)
                  for i in range(12))
    inp = DigestInput(session_id="s", title="t", turns=turns)
    seen: list[str] = []
    real = gate.redact_collect  # the one redaction of each text of the session

    def counted(text: str, known: gate.KnownSecrets) -> str:
        seen.append(text)
        return real(text, known)

    monkeypatch.setattr(gate, "redact_collect", counted)
    pol = ModelPolicy(provider="openai", model="m", endpoint=endpoint.base_url)
    out = await openai_compat.digest(inp, pol, api_key=None, context_tokens=CONTEXT)
    assert len(endpoint.requests) > 1 and endpoint.refused == 0
    assert all(secret.encode() not in r.body for r in endpoint.requests)
    assert sorted(x for x in seen if x not in ("t", "")) == sorted(x for t in turns for x in (t.user, t.assistant))
    assert {n.title for n in out.notes if n.type is NoteType.USER} == {f"Prefers option-{i}" for i in range(12)}
    # the worker's lease counts the same requests without redacting anything
    seen.clear()
    route = Route(policy=pol, context_tokens=CONTEXT)
    assert openai_compat.request_count(inp, route) == len(endpoint.requests) and seen == []


@pytest.mark.trio
async def test_a_context_too_small_for_the_instructions_is_a_config_error(endpoint: Endpoint) -> None:
    pol = ModelPolicy(provider="openai", model="m", endpoint=endpoint.base_url)
    inp = DigestInput(session_id="s", title=None, turns=(turn("t1", "hello"),))
    with pytest.raises(CairnError) as err:
        await openai_compat.digest(inp, pol, api_key=None, context_tokens=1024)
    assert err.value.code is ErrorCode.CONFIG_INVALID and endpoint.requests == []


def _digest(i: int) -> PublicDigest:
    notes = tuple(Note(type=NoteType.PROJECT, title=f"Fact {i}.{k}", body=f"Fact {i}.{k}: " + "detail " * 120,
                       turn_ids=("t1",)) for k in range(3))
    return PublicDigest(id=f"d{i:019d}", capture=f"c{i}", session_id="s", title=None, trigger=Trigger.IDLE,
                        created=1735819200.0 + i, provider="openai", turn_ids=("t1",), notes=notes)


def proposals_per_window(request: dict[str, Any]) -> str:
    scope = json.loads(request["messages"][1]["content"])
    ids = [d["id"] for d in scope["digests"]]
    bullets = [n["title"] for d in scope["digests"] for n in d["notes"]]
    return json.dumps({"proposals": [{"action": "create", "type": "project", "title": "Project facts",
                                      "description": "Facts of the project", "bullets": bullets,
                                      "evidence": ids}]})


def test_review_notes_are_split_over_windows_and_one_topic_results(endpoint: Endpoint) -> None:
    endpoint.context_tokens = CONTEXT
    endpoint.respond = proposals_per_window
    digests = [_digest(i) for i in range(6)]
    pol = remote.review_policy(Settings(provider="openai", model="m", endpoint=endpoint.base_url, contextTokens=CONTEXT),
                               timeout_seconds=30.0)
    assert len(remote.windows(digests, empty_snapshot(), {}, Route(policy=pol, context_tokens=CONTEXT))) > 1
    drafts = remote.review_remote(digests, empty_snapshot(), root_rel="m", index_rel="m/MEMORY.md",
                                  instruction_files={}, now=1736000000.0, review_id="r1", rejected=frozenset(),
                                  policy=pol, api_key=None, context_tokens=CONTEXT)
    assert endpoint.refused == 0 and len(endpoint.requests) > 1
    topics = [d for d in drafts if d.target.endswith("project-facts.md")]
    assert len(topics) == 1  # the same create from every window is one topic
    (topic,) = topics
    assert set(topic.evidence) == {d.id for d in digests}
    text = (topic.files[topic.target][1] or b"").decode()
    assert all(f"Fact {i}.{k}" in text for i in range(6) for k in range(3))


# The window follows the provider unless set: an endpoint's model is unknown (8192), a command is an assistant's
# CLI (32768); a value the user set, 8192 included, is used as is.
_COMMAND = ModelPolicy(provider="command")
_OPENAI = ModelPolicy(provider="openai", model="m", endpoint="http://127.0.0.1:9/v1")
_WINDOWS = [
    ("command, unset", Settings(provider="command", command=("llm",)), _COMMAND, 32768),
    ("command, set to 8192", Settings(provider="command", command=("llm",), contextTokens=8192), _COMMAND, 8192),
    ("openai, unset", Settings(provider="openai", model="m", endpoint=_OPENAI.endpoint), _OPENAI, 8192),
    ("openai, set", Settings(provider="openai", model="m", endpoint=_OPENAI.endpoint, contextTokens=32768),
     _OPENAI, 32768),
]


@pytest.mark.parametrize(("settings", "policy", "tokens"), [w[1:] for w in _WINDOWS], ids=[w[0] for w in _WINDOWS])
def test_the_context_window_is_the_providers_unless_set(settings: Settings, policy: ModelPolicy, tokens: int) -> None:
    route = access.route(policy, settings)
    assert route.context_tokens == tokens
    inp = DigestInput(session_id="s", title=None,
                      turns=tuple(turn(f"t{i}", f"I prefer option-{i}. " + "Context. " * 400) for i in range(60)))
    packed = len(openai_compat.windows(inp, route)[0])
    assert packed == len(openai_compat.windows(inp, Route(policy=policy, context_tokens=tokens))[0])
    other = 8192 if tokens == 32768 else 32768
    assert packed != len(openai_compat.windows(inp, Route(policy=policy, context_tokens=other))[0])
    # a Route built without a window takes its provider's, and so does a digest called without one
    assert Route(policy=policy).context_tokens == (32768 if policy.provider == "command" else 8192)


def test_the_review_reply_budget_follows_the_providers_window() -> None:
    def budget(settings: Settings) -> int:
        return remote.review_policy(settings, timeout_seconds=30.0).max_output_tokens

    assert budget(Settings(provider="openai", model="m", endpoint=_OPENAI.endpoint)) == 8192 // 4
    assert budget(Settings(provider="command", command=("llm",))) == remote.MAX_OUTPUT_TOKENS  # 32768 // 4 is more
    assert budget(Settings(provider="command", command=("llm",), contextTokens=8192)) == 8192 // 4


def test_window_concurrency_is_a_setting_of_one_to_sixteen() -> None:
    assert Settings().windowConcurrency == 4
    assert access.route(_OPENAI, Settings(provider="openai", model="m", endpoint=_OPENAI.endpoint,
                                          windowConcurrency=2)).concurrency == 2
    for bad in (0, 17):
        merged, warnings = config.merge(Settings(), {"window_concurrency": bad}, source="t", snake=True)
        assert merged.windowConcurrency == 4 and [w.code for w in warnings] == ["E_CONFIG_INVALID"]
