"""Digest through any OpenAI-compatible chat-completions endpoint (Ollama, llama.cpp, vLLM, OpenAI).

Contract:

* The request is a pure function of the evidence and the frozen
  :class:`~protocol.digest.ModelPolicy`: :func:`prepare_payload` returns the
  exact bytes that are sent (canonical JSON), and :func:`digest` measures
  them against ``policy.max_payload_bytes`` *before* any connection is
  opened (``E_PAYLOAD_TOO_LARGE``).
* Frozen policy fields on the wire: ``model``, ``temperature``,
  ``max_tokens`` (= ``max_output_tokens``), ``response_format`` JSON object,
  ``stream: false``. When ``policy.reasoning == "disabled"`` the request
  carries ``"reasoning_effort": "none"``: the standard chat-completions
  field, which Ollama's ``/v1`` endpoint, llama.cpp's server, vLLM and
  OpenAI's newer models (gpt-5.1 onwards) all read as "no reasoning". The
  server-specific switches (``think``, ``chat_template_kwargs``) are not
  sent because strict servers reject unknown fields. A model that refuses
  ``"none"`` answers with an HTTP error (``E_PROVIDER_FAILED``); capture it
  with ``reasoning = "default"`` to send nothing and keep the server default.
* The API key travels only in the ``Authorization`` header, never in the
  body, and is never stored: the caller reads it from the environment.
* Evidence is redacted before it is sent: a model cannot leak a secret it
  never saw, and no digest needs one. The session is redacted in one pass
  (:func:`worker.redaction.redact.redact_session`): a value recognised by its shape or
  label in one turn is hidden wherever else it stands, bare ("Done: I
  exported … for this shell"), and the notes are hidden the same way.
* Only a terminal reply is accepted: ``finish_reason`` must be ``stop``
  (``length`` → ``E_PROVIDER_TRUNCATED``). The message content must be a
  JSON object ``{"notes": [{"type", "title", "body", "turn_ids"}]}`` with no
  other keys, a known type, a one-line title of at most 120 characters, a
  body of at most 2000, and only turn ids of the evidence; anything else is
  ``E_PROVIDER_INVALID_REPLY``. Accepted notes are cleaned, redacted,
  merged and ordered by :func:`worker.providers.notes.finalize`.
* HTTP statuses other than 2xx and transport errors → ``E_PROVIDER_FAILED``
  (the message carries the status code or error class only, never the
  body); the policy timeout, applied to the whole exchange →
  ``E_PROVIDER_TIMEOUT``. Cancelling the surrounding trio cancel scope
  abandons the request at once.

* Evidence longer than the model's context window (``context_tokens``)
  is split at turn boundaries into windows that fit next to the system
  prompt and the reply budget (:mod:`worker.providers.window`); each window
  is one request whose notes may cite only its own turns, and the notes of
  all windows are merged and de-duplicated by :func:`finalize` (the same
  type and title found in two windows is one note citing the union of
  their turn ids). A turn too large for any window is not sent: it is
  evidence of unknown content, as an oversized turn is.
* The same requests go through the ``command`` provider (a local program,
  prompt on stdin, :mod:`worker.providers.command`) when the policy names it.

The exchange itself (payload bound, headers, statuses, timeout, terminal
reply) is :mod:`worker.providers.http`, shared with the remote review;
:mod:`worker.providers.route` picks the transport.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
from cairn.protocol.digest import DigestInput, DigestOutput, ModelPolicy
from cairn.protocol.settings import context_window
from cairn.protocol.transcript import Turn
from cairn.protocol.vocab import NoteType
from cairn.worker.providers import http, window
from cairn.worker.providers.http import MAX_REPLY_BYTES as MAX_REPLY_BYTES
from cairn.worker.providers.notes import BODY_MAX, TITLE_MAX, Draft, finalize, one_line
from cairn.worker.providers.route import Route, ask
from cairn.worker.providers.route import check as check_route
from cairn.worker.redaction.redact import KnownSecrets, redact_session

_NOTE_KEYS = frozenset({"type", "title", "body", "turn_ids"})
_TYPES = {t.value: t for t in NoteType}

SYSTEM_PROMPT = """\
You write the journal digest of one coding session between a user and an AI coding assistant.
Keep only knowledge that will still be useful in future sessions, of exactly four types:
- "user": the user's own preferences, habits or background, stated by the user ("I prefer ...", "I'd rather ...").
- "feedback": how the assistant should work: rules and corrections the user gave the assistant \
("from now on never ...", "always ...", "don't ...", "stop ...ing", "no, use X instead of Y").
- "project": enduring facts and conventions of the project or team ("this repo uses ...", "our CI runs ...", \
"the X service lives in ...", "we deploy with ...", "the convention here is ...").
- "reference": a labelled pointer to an external resource such as an issue tracker, dashboard, docs or runbook; \
keep the URL exactly.
Only the user's words are evidence; the assistant's text may only confirm what the user said.
Never keep: tasks and requests ("please fix ...", "can you add ..."), progress or status ("I've done ...", \
"tests pass now"), decisions of the moment, blockers, deadlines, questions, pasted logs, tracebacks and code, \
debugging recipes, facts that are easy to look up again, or one-off instructions.
Each note: "title" is one short line (at most 120 characters); "body" states the knowledge in at most 2000 \
characters, with the reason when the user gave one; "turn_ids" lists the ids of the turns it comes from, copied \
exactly from the evidence. Never copy secrets, tokens or passwords.
Reply with one JSON object and nothing else: {"notes": [{"type": "user|feedback|project|reference", \
"title": "...", "body": "...", "turn_ids": ["..."]}]}. If nothing qualifies, reply {"notes": []}.
"""


def chat_url(endpoint: str) -> str:
    """The chat-completions URL of a base endpoint such as ``http://127.0.0.1:11434/v1``."""
    return http.chat_url(endpoint)


@attrs.frozen
class Sent:
    """The session as it is sent, kept for one digest: its title and each turn (redacted), and the values hidden.

    Redaction is the costly part of sizing and sending: :func:`sent` does it
    once per text, for every window.
    """

    title: str | None
    turns: dict[Turn, dict[str, str]]
    known: KnownSecrets


def sent(inp: DigestInput) -> Sent:
    """``inp`` redacted in one pass: a value recognised in any text is hidden in all (and in the notes)."""
    known = KnownSecrets()
    texts = redact_session([inp.title or "", *(x for t in inp.turns for x in (t.user, t.assistant))], known)
    turns = {t: {"turn_id": t.turn_id, "user": texts[1 + 2 * i], "assistant": texts[2 + 2 * i]}
             for i, t in enumerate(inp.turns)}
    return Sent(title=texts[0] if inp.title else None, turns=turns, known=known)


def _evidence(inp: DigestInput, done: Sent | None = None) -> str:
    """The request text of ``inp`` (a window of the session ``done`` redacted, else all of ``inp``)."""
    done = sent(inp) if done is None else done
    doc = {"session_title": done.title, "turns": [done.turns[t] for t in inp.turns]}
    return json.dumps(doc, ensure_ascii=False, sort_keys=True, indent=None)


def build_request(inp: DigestInput, policy: ModelPolicy) -> dict[str, Any]:
    """The request object; :func:`prepare_payload` gives its exact bytes."""
    return http.base_request(policy, SYSTEM_PROMPT, _evidence(inp))


def prepare_payload(inp: DigestInput, policy: ModelPolicy) -> bytes:
    """The exact request body: canonical JSON (sorted keys, no spaces, UTF-8)."""
    return http.encode(build_request(inp, policy))


_invalid = http.invalid


def _note(item: object, index: int, known: dict[str, int]) -> Draft:
    if not isinstance(item, dict):
        raise _invalid(f"note {index} is not an object", note=index)
    if set(item) != _NOTE_KEYS:
        extra = len(set(item) - _NOTE_KEYS)
        raise _invalid(
            f"note {index} must have exactly type, title, body, turn_ids ({extra} unknown key(s))", note=index
        )
    note_type = item["type"]
    title = item["title"]
    body = item["body"]
    ids = item["turn_ids"]
    if not isinstance(note_type, str) or note_type not in _TYPES:
        raise _invalid(f"note {index} has an unknown type", note=index)
    if not isinstance(title, str) or not 0 < len(one_line(title)) <= TITLE_MAX:
        raise _invalid(f"note {index} needs a title of 1 to {TITLE_MAX} characters", note=index)
    if not isinstance(body, str) or not 0 < len(one_line(body)) <= BODY_MAX:
        raise _invalid(f"note {index} needs a body of 1 to {BODY_MAX} characters", note=index)
    if not isinstance(ids, list) or not ids or not all(isinstance(t, str) for t in ids):
        raise _invalid(f"note {index} needs a non-empty list of turn ids", note=index)
    unknown = sum(1 for t in ids if t not in known)
    if unknown:
        raise _invalid(f"note {index} cites {unknown} turn id(s) that are not in the evidence", note=index)
    return Draft(type=_TYPES[note_type], title=title, body=body, turn_ids=tuple(ids), position=index)


def parse_reply(raw: bytes, inp: DigestInput) -> DigestOutput:
    """Validate a chat-completions response body strictly and turn it into a digest."""
    items = http.json_object(http.reply_content(raw), key="notes")
    known = {turn.turn_id: index for index, turn in enumerate(inp.turns)}
    drafts = [_note(item, index, known) for index, item in enumerate(items)]
    return DigestOutput(notes=finalize(drafts, known))


def windows(inp: DigestInput, route: Route, done: Sent | None = None) -> tuple[list[DigestInput], list[str]]:
    """The evidence split at turn boundaries into requests that fit ``route.context_tokens``.

    Returns the inputs of the windows, in transcript order, and the ids of
    turns too large for any window: those are not sent, like any oversized turn.
    ``done`` is the session already redacted (:func:`sent`), else it is redacted here.
    """
    done = sent(inp) if done is None else done
    groups, too_large = _pack(route, done.title, [done.turns[t] for t in inp.turns])
    parts = [attrs.evolve(inp, turns=tuple(inp.turns[i] for i in group)) for group in groups]
    return parts, [inp.turns[i].turn_id for i in too_large]


def request_count(inp: DigestInput, route: Route) -> int:
    """About how many requests :func:`digest_route` will send: the windows sized on the text before redaction.

    For the worker's lease (a time budget), not for what is sent: redaction
    changes a turn's size by a few characters per secret, and sizing the
    windows on redacted text would cost a redaction of the whole session.
    """
    docs = [{"turn_id": t.turn_id, "user": t.user, "assistant": t.assistant} for t in inp.turns]
    return len(_pack(route, inp.title, docs)[0])


def _pack(route: Route, title: str | None, docs: list[dict[str, str]]) -> tuple[list[list[int]], list[int]]:
    """:func:`window.pack` of the turns as ``docs`` give them, next to the system prompt and the title."""
    room = window.budget(route.context_tokens, SYSTEM_PROMPT, route.policy.max_output_tokens)
    head = window.json_tokens({"session_title": title, "turns": []})
    return window.pack([window.json_tokens(d) for d in docs], room - head)


def _title_key(draft: Draft) -> tuple[str, str]:
    return str(draft.type), one_line(draft.title).casefold().rstrip(" .!")


def _across(per_window: list[list[Draft]]) -> list[Draft]:
    """Drafts of all windows; the same note found in several windows (same type and title) is one note.

    Within one window the model already chose what is one note; across
    windows it could not see the other evidence, so a repeated title is
    judged a repeat and :func:`finalize` merges it (union of turn ids,
    longest body).
    """
    windows_of: dict[tuple[str, str], set[int]] = {}
    for w, drafts in enumerate(per_window):
        for d in drafts:
            windows_of.setdefault(_title_key(d), set()).add(w)
    return [attrs.evolve(d, statement=d.title) if len(windows_of[_title_key(d)]) > 1 else d
            for drafts in per_window for d in drafts]


async def digest_route(inp: DigestInput, route: Route) -> DigestOutput:
    """Digest ``inp`` in as many requests as its context window needs; notes merged across them."""
    check_route(route)
    done = sent(inp)
    parts, _ = windows(inp, route, done)
    known = {turn.turn_id: index for index, turn in enumerate(inp.turns)}
    per_window: list[list[Draft]] = []
    position = 0
    for part in parts:
        items = await ask(route, SYSTEM_PROMPT, _evidence(part, done), key="notes")
        in_window = {turn.turn_id: index for index, turn in enumerate(part.turns)}
        # positions continue across windows: notes are told apart, and ordered, as in one reply
        per_window.append([_note(item, position + index, in_window) for index, item in enumerate(items)])
        position += len(items)
    return DigestOutput(notes=finalize(_across(per_window), known, done.known))


async def digest(
    inp: DigestInput,
    policy: ModelPolicy,
    *,
    api_key: str | None,
    command: tuple[str, ...] = (),
    context_tokens: int | None = None,
) -> DigestOutput:
    """Run the digest requests of ``inp``; see the module docstring for every outcome.

    ``context_tokens`` None: the default window of the policy's provider.
    """
    route = Route(policy=policy, api_key=api_key, command=command,
                  context_tokens=context_window(policy.provider, context_tokens))
    return await digest_route(inp, route)
