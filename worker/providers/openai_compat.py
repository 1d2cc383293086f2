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
  JSON object ``{"notes": [...]}`` with no other key; each note is an
  object of exactly ``type``, ``title``, ``body``, ``turn_ids`` with a
  known type, a one-line title of at most 120 characters, a body of at
  most 2000 and turn ids of the evidence (what follows when one is not:
  below). Accepted notes are cleaned, redacted, merged and ordered by
  :func:`worker.providers.notes.finalize`.
* HTTP statuses other than 2xx and transport errors → ``E_PROVIDER_FAILED``
  (the message carries the status code or error class only, never the
  body); the policy timeout, applied to the whole exchange →
  ``E_PROVIDER_TIMEOUT``. Cancelling the surrounding trio cancel scope
  abandons the request at once.

* Evidence longer than the model's context window (``context_tokens``)
  is split at turn boundaries into windows that fit next to the system
  prompt, the request's context and the reply budget
  (:mod:`worker.providers.window`). A turn larger than a window keeps the
  user's words whole and has the assistant's reply cut in the middle
  (head and tail around a marker saying how much was cut); only a user
  message larger than a window is split, in order, into parts marked
  ``"part": "k of n"``. No user word is left out for want of room.
* Each request says where it stands: ``"window": "k of n"``, the
  ``session`` (title, tool, date of its earliest turn) and, from the second
  window on, ``earlier_notes``: the type and title of every note the first
  window produced, so the model refines or corrects them instead of
  repeating them. The first window goes alone; the others then go
  concurrently, at most ``route.concurrency`` at a time, all with the first
  window's titles: every request is a function of the evidence and of the
  first window's reply, so a window re-sent later is the same bytes
  (docs/adr/0018-durable-windows.md).
* **Windows are durable steps.** With a :class:`~protocol.digest.WindowMemo`
  (the journal's, under the capture's claim), each window's validated reply
  is kept as soon as it arrives, and a window already kept is not sent
  again: a later attempt sends only the windows still unanswered. When a
  window fails, the others still run to their end (and are kept); the
  digest then fails with the first failed window's error.
* **Replies are taken in good part.** A note citing a turn id that is not
  in its window loses that id (a note left with none is dropped); a note
  that breaks the schema is dropped; both are counted
  (:attr:`~protocol.digest.DigestOutput.dropped_notes`, ``dropped_ids``),
  never logged with their text. A window fails
  (``E_PROVIDER_INVALID_REPLY``) only when its reply is not the
  ``{"notes": [...]}`` object or none of its notes is valid.
* Notes of all windows are merged by :func:`finalize`: the same type and
  title found in two windows is one note citing the union of their turn ids
  and keeping the latest statement (a later window's correction wins).
* The same requests go through the ``command`` provider (a local program,
  prompt on stdin, :mod:`worker.providers.command`) when the policy names it.

The exchange itself (payload bound, headers, statuses, timeout, terminal
reply) is :mod:`worker.providers.http`, shared with the remote review;
:mod:`worker.providers.route` picks the transport.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import attrs
import trio
from cairn.protocol.digest import DigestInput, DigestOutput, ModelPolicy, Note, WindowMemo, WindowReply
from cairn.protocol.errors import CairnError
from cairn.protocol.settings import WINDOW_CONCURRENCY, context_window
from cairn.protocol.text import clean_text
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
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
#: a session title is sent clipped to this many characters, a tool name to this many
SESSION_TITLE_MAX = 200
TOOL_MAX = 40
#: tokens at most of a request spent on the earlier windows' note titles (and an eighth of the room)
EARLIER_NOTES_TOKENS = 512
_WINDOW_WIDTH = "9999 of 9999"

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
A long session comes in several windows: "window" says which one this is ("2 of 5"), "session" gives its title, \
the tool it was held in and the date it started. "earlier_notes" lists notes already taken from the earlier \
windows as "type: title": do not repeat them; when this window restates, refines or corrects one of them \
(a "yes" or "go ahead" that settles it, a later rule that replaces it), write the note again with exactly the \
same type and title and the statement as it now stands. A user message too long for one window comes in parts \
("part": "2 of 3"), in order; an assistant reply cut to fit says how much was cut where it was cut.
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


def session_info(inp: DigestInput, title: str | None) -> dict[str, str | None]:
    """What every request says of the session: its title (as sent), tool and the date of its earliest turn."""
    dates = sorted(t.completed_at for t in inp.turns if t.completed_at and _DATE.match(t.completed_at))
    return {"title": one_line(clean_text(title))[:SESSION_TITLE_MAX] or None if title else None,
            "tool": one_line(clean_text(inp.source))[:TOOL_MAX] or None,
            "date": dates[0][:10] if dates else None}


@attrs.frozen
class Window:
    """One request's evidence: the ``index``-th of ``count`` windows, its turns as sent, and its key."""

    index: int
    count: int
    docs: tuple[dict[str, str], ...]
    turn_ids: tuple[str, ...]  # distinct, in order
    key: str  # names the kept reply: a hash of the model and the exact evidence

    @property
    def label(self) -> str:
        return f"{self.index + 1} of {self.count}"


def _room(route: Route, session: dict[str, str | None]) -> tuple[int, int]:
    """(tokens for the turns of one window, tokens for the earlier windows' note titles)."""
    room = window.budget(route.context_tokens, SYSTEM_PROMPT, route.policy.max_output_tokens)
    notes = min(room // 8, EARLIER_NOTES_TOKENS)
    head = window.json_tokens({"session": session, "window": _WINDOW_WIDTH, "earlier_notes": [], "turns": []})
    return room - head - notes, notes


def _plan(route: Route, session: dict[str, str | None],
          docs: list[dict[str, str]]) -> tuple[list[list[dict[str, str]]], list[str]]:
    """The turns, each made to fit (:func:`window.fit_turn`), packed into windows; and the ids of turns that cannot."""
    room, _ = _room(route, session)
    fitted: list[dict[str, str]] = []
    too_large: list[str] = []
    for doc in docs:
        parts = window.fit_turn(doc, room)
        if not parts:
            too_large.append(doc["turn_id"])
        fitted += parts
    groups, unfit = window.pack([window.json_tokens(d) for d in fitted], room)
    assert not unfit  # every fitted turn fits alone
    return [[fitted[i] for i in group] for group in groups], too_large


def _key(route: Route, docs: list[dict[str, str]]) -> str:
    ident = {"provider": route.policy.provider, "model": route.policy.model, "turns": docs}
    return hashlib.sha256(json.dumps(ident, ensure_ascii=False, sort_keys=True).encode("utf-8")).hexdigest()[:40]


def windows(inp: DigestInput, route: Route, done: Sent | None = None) -> tuple[list[Window], list[str]]:
    """The evidence split into the windows that fit ``route.context_tokens``, in transcript order.

    Returns the windows and the ids of turns not sent at all: only a turn of
    which not one character fits next to the request's context (a window
    far too small). ``done`` is the session already redacted
    (:func:`sent`), else it is redacted here.
    """
    done = sent(inp) if done is None else done
    groups, too_large = _plan(route, session_info(inp, done.title), [done.turns[t] for t in inp.turns])
    return [Window(index=i, count=len(groups), docs=tuple(g), turn_ids=tuple(dict.fromkeys(d["turn_id"] for d in g)),
                   key=_key(route, g)) for i, g in enumerate(groups)], too_large


def request_count(inp: DigestInput, route: Route) -> int:
    """About how many requests :func:`digest_route` will send: the windows sized on the text before redaction.

    For the worker's lease (a time budget), not for what is sent: redaction
    changes a turn's size by a few characters per secret, and sizing the
    windows on redacted text would cost a redaction of the whole session.
    """
    docs = [{"turn_id": t.turn_id, "user": t.user, "assistant": t.assistant} for t in inp.turns]
    return len(_plan(route, session_info(inp, inp.title), docs)[0])


def request_text(session: dict[str, str | None], w: Window, earlier: list[str]) -> str:
    """The user message of window ``w``: the session, where the window stands, earlier note titles, its turns."""
    doc = {"session": session, "window": w.label, "earlier_notes": earlier, "turns": list(w.docs)}
    return json.dumps(doc, ensure_ascii=False, sort_keys=True, indent=None)


def _earlier(reply: WindowReply | None, room: int) -> list[str]:
    """``type: title`` of the first window's notes, as many as fit ``room`` tokens, in the model's order."""
    out: list[str] = []
    used = window.json_tokens([])
    for note in reply.notes if reply is not None else ():
        line = f"{note.type.value}: {note.title}"
        cost = window.json_tokens(line)
        if used + cost > room:
            break
        out.append(line)
        used += cost
    return out


def _one(inp: DigestInput, policy: ModelPolicy) -> tuple[dict[str, str | None], Window]:
    """All of ``inp`` as one window (what a session that fits one request sends)."""
    done = sent(inp)
    docs = [done.turns[t] for t in inp.turns]
    route = Route(policy=policy)
    return session_info(inp, done.title), Window(index=0, count=1, docs=tuple(docs),
                                                 turn_ids=tuple(t.turn_id for t in inp.turns), key=_key(route, docs))


def build_request(inp: DigestInput, policy: ModelPolicy) -> dict[str, Any]:
    """The request of ``inp`` sent whole as one window; :func:`prepare_payload` gives its exact bytes."""
    session, w = _one(inp, policy)
    return http.base_request(policy, SYSTEM_PROMPT, request_text(session, w, []))


def prepare_payload(inp: DigestInput, policy: ModelPolicy) -> bytes:
    """The exact request body: canonical JSON (sorted keys, no spaces, UTF-8)."""
    return http.encode(build_request(inp, policy))


_invalid = http.invalid


def _note(item: object, index: int, known: dict[str, int]) -> tuple[Note | None, int]:
    """The note ``item`` with only the turn ids of ``known`` (None when it keeps none), and how many it lost.

    A note that breaks the schema raises ``E_PROVIDER_INVALID_REPLY`` (the caller counts and drops it).
    """
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
    title, body = one_line(clean_text(title)), one_line(clean_text(body))
    if not title or not body:
        raise _invalid(f"note {index} has a title or body of control characters only", note=index)
    cited = tuple(dict.fromkeys(t for t in ids if t in known))
    lost = sum(1 for t in ids if t not in known)
    if not cited:
        return None, lost
    return Note(type=_TYPES[note_type], title=title, body=body, turn_ids=cited), lost


def validate(items: list[Any], turn_ids: tuple[str, ...], key: str = "") -> WindowReply:
    """A window's reply (the list under ``notes``), taken in good part (module docstring).

    ``E_PROVIDER_INVALID_REPLY`` only when the reply had notes and none of them is valid.
    """
    known = {t: i for i, t in enumerate(turn_ids)}
    notes: list[Note] = []
    dropped = lost = 0
    for index, item in enumerate(items):
        try:
            note, gone = _note(item, index, known)
        except CairnError:
            dropped += 1
            continue
        lost += gone
        if note is None:
            dropped += 1
        else:
            notes.append(note)
    if items and not notes:
        raise _invalid(f"none of the {len(items)} note(s) of the reply is valid", dropped=dropped)
    return WindowReply(key=key, notes=tuple(notes), dropped_notes=dropped, dropped_ids=lost)


def parse_reply(raw: bytes, inp: DigestInput) -> DigestOutput:
    """Validate a chat-completions response body to ``inp`` sent as one window and turn it into a digest."""
    items = http.json_object(http.reply_content(raw), key="notes")
    reply = validate(list(items), tuple(t.turn_id for t in inp.turns))
    return _output([reply], {t.turn_id: i for i, t in enumerate(inp.turns)}, None)


def _title_key(draft: Draft) -> tuple[str, str]:
    return str(draft.type), one_line(draft.title).casefold().rstrip(" .!")


def _across(per_window: list[list[Draft]]) -> list[Draft]:
    """Drafts of all windows; the same note found in several windows (same type and title) is one note.

    Within one window the model already chose what is one note; across
    windows it could not see the other evidence (only the first window's
    titles), so a repeated title is judged a repeat, or a correction, and
    :func:`finalize` merges it (union of turn ids, the latest statement).
    """
    windows_of: dict[tuple[str, str], set[int]] = {}
    for w, drafts in enumerate(per_window):
        for d in drafts:
            windows_of.setdefault(_title_key(d), set()).add(w)
    return [attrs.evolve(d, statement=d.title) if len(windows_of[_title_key(d)]) > 1 else d
            for drafts in per_window for d in drafts]


def _output(replies: list[WindowReply], order: dict[str, int], known: KnownSecrets | None) -> DigestOutput:
    """The digest of the windows' replies, in window order: positions continue across windows."""
    per_window: list[list[Draft]] = []
    position = 0
    for reply in replies:
        notes = [n for n in reply.notes if all(t in order for t in n.turn_ids)]
        per_window.append([Draft(type=n.type, title=n.title, body=n.body, turn_ids=n.turn_ids, position=position + i)
                           for i, n in enumerate(notes)])
        position += len(notes)
    return DigestOutput(notes=finalize(_across(per_window), order, known, prefer="latest"),
                        dropped_notes=sum(r.dropped_notes for r in replies),
                        dropped_ids=sum(r.dropped_ids for r in replies))


async def digest_route(inp: DigestInput, route: Route, memo: WindowMemo | None = None) -> DigestOutput:
    """Digest ``inp`` in as many requests as its context window needs; notes merged across them.

    With ``memo``, windows already answered are taken from it and each new
    answer is kept there before anything else happens (module docstring).
    """
    check_route(route)
    done = sent(inp)
    plan, _ = windows(inp, route, done)
    session = session_info(inp, done.title)
    _, notes_room = _room(route, session)
    replies: dict[int, WindowReply] = {}
    for w in plan:
        kept = memo.kept(w.key) if memo is not None else None
        if kept is not None:
            replies[w.index] = kept
    failed: dict[int, CairnError] = {}

    async def one(w: Window, earlier: list[str]) -> None:
        try:
            items = await ask(route, SYSTEM_PROMPT, request_text(session, w, earlier), key="notes")
            reply = validate(items, w.turn_ids, w.key)
        except CairnError as exc:  # this window failed; the others still run and are kept
            failed[w.index] = exc
            return
        if memo is not None:
            memo.keep(reply)  # durable before it counts; a lost claim ends the whole digest
        replies[w.index] = reply

    if plan and 0 not in replies:
        await one(plan[0], [])
        if 0 in failed:
            raise failed[0]  # the other windows are asked with the first one's titles: they wait for it
    earlier = _earlier(replies.get(0), notes_room)
    todo = iter([w for w in plan[1:] if w.index not in replies])

    async def sender() -> None:
        for w in todo:  # shared by the senders: windows leave in transcript order
            await one(w, earlier)

    async with trio.open_nursery() as nursery:
        for _ in range(max(1, route.concurrency)):
            nursery.start_soon(sender)
    if failed:
        raise failed[min(failed)]
    order = {turn.turn_id: index for index, turn in enumerate(inp.turns)}
    return _output([replies[w.index] for w in plan], order, done.known)


async def digest(
    inp: DigestInput,
    policy: ModelPolicy,
    *,
    api_key: str | None,
    command: tuple[str, ...] = (),
    context_tokens: int | None = None,
    concurrency: int = WINDOW_CONCURRENCY,
    memo: WindowMemo | None = None,
) -> DigestOutput:
    """Run the digest requests of ``inp``; see the module docstring for every outcome.

    ``context_tokens`` None: the default window of the policy's provider.
    ``memo``: where answered windows are found and kept (None: nowhere, every window is asked).
    """
    route = Route(policy=policy, api_key=api_key, command=command,
                  context_tokens=context_window(policy.provider, context_tokens), concurrency=concurrency)
    return await digest_route(inp, route, memo)
