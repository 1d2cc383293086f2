"""The remote review: an OpenAI-compatible model proposes, cairn builds the proposals.

The model only *chooses*: which notes make a new topic, which extend an
existing one, which become working agreements of an instruction file. Every
byte that would be written is built by the same constructors as the
embedded engine's (:mod:`worker.memory.drafts`), so a remote proposal looks,
fingerprints and applies exactly like an embedded one.

Request (a chat-completions call with the exchange rules of
:mod:`worker.providers.http`, or a run of the ``command`` provider; no
tools): the digests in the order their sessions were held, each with the
session's date and its notes (type, title, body), the existing topics of the
root (file, title, type, description, the dates their bullets were noted,
body clipped to :data:`~worker.memory.review_request.TOPIC_BODY_MAX`
characters) and the names of the instruction files present, all redacted
(:func:`worker.memory.review_request.scope`). The instructions
(:func:`system_prompt`) fit the workspace: the ``instruction`` action is
offered only when an instruction file is present, and they ask for one
proposal per topic. Past rejections are not sent: they filter the result
afterwards. The prepared bytes are measured against
``policy.max_payload_bytes`` before anything is sent. Notes that do not fit
the model's context window (``context_tokens``) with the topics go in
several requests (:func:`windows`); their proposals are validated per
request and built together, creates of one title from different requests
becoming one topic.

Reply: exactly ``{"proposals": [...]}`` (empty: No action), each item one of

* ``{"action": "create", "type", "title", "description", "bullets", "evidence"}``
* ``{"action": "update", "file", "bullets", "evidence"}`` — ``file`` an existing topic
* ``{"action": "instruction", "file", "bullets", "evidence"}`` — ``file`` a present instruction file

with a known type, a one-line title of 1..120 characters, a description of
1..200, 1..20 bullets of 1..500 characters (a leading list marker is
dropped; control characters are removed first, as
:func:`protocol.text.clean_text` says, so an ANSI sequence never reaches a
memory file) and a list of digest ids of the request. A reply is taken in
good part: an evidence id the request did not hold is left out of its
proposal (a proposal left with none is invalid); an invalid proposal
(unknown keys or actions, an unknown file, no evidence, bad types,
over-long text) is left out. Both are counted (:class:`Dropped`: counts
only, never the reply's text, in the review's result and the log). The
review fails with ``E_PROVIDER_INVALID_REPLY`` only when the replies
proposed something and none of it was valid, or when a reply is not
``{"proposals": [...]}`` at all; the message names positions, never the
reply's text.

Construction (engine rules): text is redacted and collapsed to one line; a
bullet whose text memory already holds verbatim (any topic body or
instruction file) is dropped, as are repeats; topic bullets read
``- text (noted YYYY-MM-DD)`` with the date (UTC) of the session of the
earliest cited digest (:attr:`~protocol.journal.PublicDigest.session_day`),
instruction bullets ``- text``. One proposal per topic: updates of one file,
instruction edits of one file, and creates of one title are each one proposal. A create's name is its title, its description
and index hook the description clipped to the engine's 150 characters (no
hook when it repeats the name), its file
:func:`~worker.memory.model.topic_filename` made unique in the root; a
create the index cannot take is not proposed. Fingerprints are the
engine's (:mod:`worker.memory.fingerprints`); a draft whose fingerprint is
in ``rejected`` is dropped. Index maintenance (rules 7 and 8: dangling
entries, orphan topics) is housekeeping of the snapshot, never asked of the
model: :func:`~worker.memory.housekeeping.index_maintenance` adds it to the
model's drafts exactly as an embedded review would. Drafts are ordered as
the engine orders them.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping
from typing import Any

import attrs
import trio
from cairn.protocol.digest import ModelPolicy
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.journal import PublicDigest
from cairn.protocol.settings import Settings, context_window
from cairn.protocol.text import clean_text
from cairn.protocol.vocab import NoteType
from cairn.worker.memory import review_request
from cairn.worker.memory.drafts import (
    DESCRIPTION_MAX,
    MAX_DIGESTS,
    Additions,
    NewTopics,
    ProposalDraft,
    ReviewScope,
    clip,
    instruction_draft,
    ordered,
    present_instructions,
    replace_superseded,
    unrejected,
    update_draft,
)
from cairn.worker.memory.housekeeping import index_maintenance
from cairn.worker.memory.model import MemorySnapshot, one_line
from cairn.worker.memory.similarity import normalise
from cairn.worker.providers import http
from cairn.worker.providers.route import REMOTE, Route, ask, provider_error
from cairn.worker.providers.route import check as check_route
from cairn.worker.redaction.redact import redact

TITLE_MAX = 120
REPLY_DESCRIPTION_MAX = 200
BULLET_MAX = 500
BULLETS_MAX = 20
#: output budget of a review reply (20 digests can yield many proposals)
MAX_OUTPUT_TOKENS = 4000

_KEYS = {
    "create": frozenset({"action", "type", "title", "description", "bullets", "evidence"}),
    "update": frozenset({"action", "file", "bullets", "evidence"}),
    "instruction": frozenset({"action", "file", "bullets", "evidence"}),
}
_TYPES = {t.value: t for t in NoteType}
#: a list marker the model put in front of a bullet (a marker alone is an empty bullet)
_MARKER = re.compile(r"^(?:[-*+]|\d+[.)])(?:\s+|$)")

log = logging.getLogger("cairn.worker.memory.review")

_PROMPT_HEAD = """\
You maintain the long-term memory of an AI coding assistant for one project.
You receive new journal notes grouped by digest: each digest is one coding session, with the "date" it was \
held; digests come in the order their sessions were held, so a later note may correct an earlier one. You \
also receive the existing memory topics, each with its "file", "title", "type", "description", the dates \
its bullets were noted ("first_noted", "last_noted") and the start of its "body"{files}. \
Decide where each note that is worth keeping belongs:
- "update": it adds to an existing topic of the same subject; name the topic's "file" exactly. Prefer this \
to "create" whenever a topic already covers the subject. When a note changes what a topic says (another tool, \
command, path, setting or preference for the same purpose: "use pnpm, not npm"), update that topic with the new \
statement: the old one is replaced; never create a second topic that disagrees with the first.
- "create": it starts a new topic; give its "type" (user|feedback|project|reference), a short "title" \
(at most 120 characters) and a one-line "description" (at most 200 characters) saying what the topic covers.
"""
_PROMPT_INSTRUCTION = """\
- "instruction": it is a standing rule for the assistant ("always ...", "never ...", "don't ..."); \
name one of the instruction files exactly as "file".
"""
_PROMPT_TAIL = """\
Make one proposal per topic: all notes about one subject go into a single proposal ({one}), never \
several proposals for the same topic. Never propose what a topic already says; skip notes that are not \
lasting knowledge. Each proposal has "bullets" (1 to 20 items, each one self-contained sentence of at most \
500 characters, without a leading dash) and "evidence" (the digest ids its bullets come from, copied exactly).
Reply with one JSON object and nothing else: {{"proposals": [{{"action": "create", "type": "...", \
"title": "...", "description": "...", "bullets": ["..."], "evidence": ["..."]}}, {{"action": "update", \
"file": "...", "bullets": ["..."], "evidence": ["..."]}}{example}]}}. If nothing should change, reply \
{{"proposals": []}}.
"""


def system_prompt(instructions: bool) -> str:
    """The review's instructions; ``instructions``: an instruction file is present (only then is the
    ``instruction`` action offered: a model that followed an offer the workspace cannot take would lose
    its proposals)."""
    if instructions:
        return (_PROMPT_HEAD.format(files=", and the names of the instruction files") + _PROMPT_INSTRUCTION
                + _PROMPT_TAIL.format(
                    one='one "update" per topic file, one "create" per new topic, one "instruction" per '
                        "instruction file",
                    example=', {"action": "instruction", "file": "...", "bullets": ["..."], "evidence": ["..."]}'))
    return _PROMPT_HEAD.format(files="") + _PROMPT_TAIL.format(
        one='one "update" per topic file, one "create" per new topic', example="")


def _system(instruction_files: Mapping[str, bytes | None]) -> str:
    return system_prompt(bool(present_instructions(instruction_files)))


@attrs.define
class Dropped:
    """What the review took in good part from the model's replies: counts only, never text."""

    proposals: int = 0  # invalid proposals left out
    references: int = 0  # evidence ids the request did not hold, left out of their proposals
    offered: int = 0  # proposals the replies held in all

    def report(self) -> dict[str, int] | None:
        """``{"proposals": n, "references": m}`` without the zero counts; None when nothing was dropped."""
        out = {k: v for k, v in (("proposals", self.proposals), ("references", self.references)) if v}
        return out or None


@attrs.frozen(kw_only=True)
class Proposed:
    """One validated item of the model's reply (text not yet redacted)."""

    action: str  # create | update | instruction
    type: NoteType | None  # create only
    title: str  # create only ("" otherwise)
    description: str  # create only ("" otherwise)
    file: str  # update / instruction only ("" otherwise)
    bullets: tuple[str, ...]
    evidence: tuple[str, ...]
    window: int = 0  # which request (context window) proposed it


def review_policy(settings: Settings, *, timeout_seconds: float) -> ModelPolicy:
    """The policy of a remote review from the current settings (reviews are not frozen at capture).

    ``timeout_seconds`` bounds the whole review; one request gets at most
    the settings' ``timeoutSeconds`` of it. The reply budget is a quarter of
    the context window (``contextTokens``, else the provider's default), at
    most :data:`MAX_OUTPUT_TOKENS`.
    """
    provider = settings.provider if settings.provider in REMOTE else "openai"
    return ModelPolicy(
        provider=provider,
        model=settings.model,
        endpoint=settings.endpoint,
        # the reply budget shares the context window: a quarter of it, up to the review maximum
        max_output_tokens=min(MAX_OUTPUT_TOKENS, max(256, context_window(provider, settings.contextTokens) // 4)),
        timeout_seconds=min(timeout_seconds, settings.timeoutSeconds) if settings.timeoutSeconds > 0
        else timeout_seconds,
    )


# -- the request ---------------------------------------------------------------------


def windows(
    digests: list[PublicDigest], snapshot: MemorySnapshot, instruction_files: Mapping[str, bytes | None],
    route: Route,
) -> list[review_request.Window]:
    """The review's requests: :func:`worker.memory.review_request.windows` with this module's instructions."""
    return review_request.windows(digests, snapshot, instruction_files, route, system=_system(instruction_files))


def build_request(
    digests: list[PublicDigest],
    snapshot: MemorySnapshot,
    *,
    instruction_files: Mapping[str, bytes | None],
    policy: ModelPolicy,
) -> dict[str, Any]:
    """The request object; :func:`prepare_payload` gives its exact bytes."""
    return http.base_request(policy, _system(instruction_files), review_request.scope(digests, snapshot, instruction_files),
                             what="review")


def prepare_payload(
    digests: list[PublicDigest],
    snapshot: MemorySnapshot,
    *,
    instruction_files: Mapping[str, bytes | None],
    policy: ModelPolicy,
) -> bytes:
    """The exact request body (canonical JSON): a pure function of the scope and the policy."""
    return http.encode(build_request(digests, snapshot, instruction_files=instruction_files, policy=policy))


# -- the reply -----------------------------------------------------------------------


def _text(value: object, limit: int, what: str, index: int) -> str:
    if not isinstance(value, str):
        raise http.invalid(f"proposal {index}: {what} is not text", proposal=index)
    text = one_line(clean_text(value))
    if not 0 < len(text) <= limit:
        raise http.invalid(f"proposal {index}: {what} must be 1 to {limit} characters", proposal=index)
    return text


def _proposed(item: object, index: int, *, digest_ids: set[str], topics: set[str], instructions: set[str],
              dropped: Dropped) -> Proposed:
    if not isinstance(item, dict):
        raise http.invalid(f"proposal {index} is not an object", proposal=index)
    action = item.get("action")
    if not isinstance(action, str) or action not in _KEYS:
        raise http.invalid(f"proposal {index} has an unknown action", proposal=index)
    if set(item) != _KEYS[action]:
        extra = len(set(item) - _KEYS[action])
        raise http.invalid(
            f"proposal {index} must have exactly {', '.join(sorted(_KEYS[action]))} ({extra} unknown key(s))",
            proposal=index,
        )
    bullets = item["bullets"]
    if not isinstance(bullets, list) or not 0 < len(bullets) <= BULLETS_MAX:
        raise http.invalid(f"proposal {index} needs 1 to {BULLETS_MAX} bullets", proposal=index)
    texts = []
    for b in bullets:
        text = _text(b, BULLET_MAX, "a bullet", index)
        text = _MARKER.sub("", text, count=1).strip()
        if not text:
            raise http.invalid(f"proposal {index}: a bullet is empty", proposal=index)
        texts.append(text)
    evidence = item["evidence"]
    if not isinstance(evidence, list) or not evidence or not all(isinstance(e, str) for e in evidence):
        raise http.invalid(f"proposal {index} needs a non-empty list of digest ids", proposal=index)
    unknown = sum(1 for e in evidence if e not in digest_ids)
    evidence = [e for e in evidence if e in digest_ids]
    if not evidence:
        raise http.invalid(f"proposal {index} cites {unknown} digest id(s), none of them in the request",
                           proposal=index)
    kind: NoteType | None = None
    title = description = file = ""
    if action == "create":
        if not isinstance(item["type"], str) or item["type"] not in _TYPES:
            raise http.invalid(f"proposal {index} has an unknown type", proposal=index)
        kind = _TYPES[item["type"]]
        title = _text(item["title"], TITLE_MAX, "the title", index)
        description = _text(item["description"], REPLY_DESCRIPTION_MAX, "the description", index)
    else:
        file = item["file"]
        allowed = topics if action == "update" else instructions
        if not isinstance(file, str) or file not in allowed:
            what = "an existing topic" if action == "update" else "an instruction file of the request"
            raise http.invalid(f"proposal {index} names a file that is not {what}", proposal=index)
    dropped.references += unknown  # the proposal stands: only the ids it could not cite are left out
    return Proposed(
        action=action,
        type=kind,
        title=title,
        description=description,
        file=file,
        bullets=tuple(texts),
        evidence=tuple(sorted(set(evidence))),
    )


def parse_reply(
    raw: bytes,
    digests: list[PublicDigest],
    snapshot: MemorySnapshot,
    *,
    instruction_files: Mapping[str, bytes | None],
    dropped: Dropped | None = None,
) -> list[Proposed]:
    """The valid proposals of a chat-completions response body; see the module docstring (what is dropped
    is counted in ``dropped``; a reply that proposed something and none of it valid is invalid)."""
    items = http.json_object(http.reply_content(raw), key="proposals")
    dropped = Dropped() if dropped is None else dropped
    return _settled(_validate(items, digests, snapshot, instruction_files, dropped), dropped)


# -- drafts ----------------------------------------------------------------------------


@attrs.define
class _Group:
    first: Proposed
    bullets: list[str] = attrs.Factory(list)  # final bullet lines ("- ...")
    keys: list[str] = attrs.Factory(list)  # normalised texts (fingerprint parts)
    texts: list[str] = attrs.Factory(list)  # redacted one-line texts (summaries)
    evidence: set[str] = attrs.Factory(set)


def _where(p: Proposed) -> tuple[str, str]:
    """What a proposal edits: its file, or for a create, its topic (title): one proposal per topic, whether
    a reply repeated a create or several requests (context windows) saw notes of one subject."""
    return (p.action, p.file) if p.action != "create" else ("create", "title:" + normalise(p.title))


def _groups(proposed: list[Proposed], digests: list[PublicDigest], known: list[str]) -> list[_Group]:
    """Proposals grouped by what they edit (one group per topic), bullets redacted and deduplicated."""
    by_id = {d.id: d for d in digests}
    groups: dict[tuple[str, str], _Group] = {}
    for p in proposed:
        group = groups.setdefault(_where(p), _Group(first=p))
        first = min((by_id[e] for e in p.evidence), key=lambda d: (d.session_time, d.created, d.id))
        day = first.session_day
        added = False
        for raw_text in p.bullets:
            text = one_line(redact(raw_text))
            norm = normalise(text)
            if not norm or norm in group.keys or any(norm in k for k in known):
                continue
            group.keys.append(norm)
            group.texts.append(text)
            group.bullets.append(f"- {text}" if p.action == "instruction" else f"- {text} (noted {day})")
            added = True
        if added:
            group.evidence.update(p.evidence)
    return [g for g in groups.values() if g.bullets]


def build_drafts(
    proposed: list[Proposed],
    digests: list[PublicDigest],
    snapshot: MemorySnapshot,
    scope: ReviewScope,
) -> list[ProposalDraft]:
    """Turn validated proposals into drafts by the embedded engine's construction rules."""
    index = snapshot.parsed_index()
    present = scope.present_instructions()
    new = NewTopics(snapshot, index)
    drafts: list[ProposalDraft] = []
    for g in _groups(proposed, digests, scope.known_texts(snapshot)):
        made: ProposalDraft | None
        p = g.first
        adds = Additions(bullets=tuple(g.bullets), summary_of=tuple(g.texts), parts=tuple(g.keys),
                         evidence=tuple(sorted(g.evidence)))
        if p.action == "instruction":
            made = instruction_draft(scope, p.file, present[p.file], adds)
        elif p.action == "update":
            tf = snapshot.topics[p.file]
            assert tf.topic is not None
            made = update_draft(scope, index, p.file, tf.topic.name, tf.data, adds)
        elif (home := _superseded_topic(snapshot, g.bullets)) is not None:  # a create that contradicts a topic
            tf = snapshot.topics[home]
            assert tf.topic is not None
            made = update_draft(scope, index, home, tf.topic.name, tf.data, adds)
        else:
            assert p.type is not None
            name = clip(redact(p.title), TITLE_MAX)
            made = new.draft(scope, p.type, name, clip(redact(p.description), DESCRIPTION_MAX), adds)
        if made is not None:
            drafts.append(made)
    drafts = unrejected(drafts, scope)
    return ordered(drafts + index_maintenance(snapshot, drafts, scope))


def _superseded_topic(snapshot: MemorySnapshot, bullets: list[str]) -> str | None:
    """The first topic (file order) a line of which one of ``bullets`` supersedes: it is replaced there."""
    for file, tf in sorted(snapshot.topics.items()):
        if tf.topic is not None and replace_superseded(tf.data, bullets)[2]:
            return file
    return None


# -- the review ------------------------------------------------------------------------


def _validate(items: list[Any], digests: list[PublicDigest], snapshot: MemorySnapshot,
              instruction_files: Mapping[str, bytes | None], dropped: Dropped) -> list[Proposed]:
    """The valid proposals of one reply's ``items``; each invalid one is left out and counted."""
    digest_ids = {d.id for d in digests}
    topics = {name for name, tf in snapshot.topics.items() if tf.topic is not None}
    instructions = set(present_instructions(instruction_files))
    out = []
    for i, item in enumerate(items):
        dropped.offered += 1
        try:
            out.append(_proposed(item, i, digest_ids=digest_ids, topics=topics, instructions=instructions,
                                 dropped=dropped))
        except CairnError as exc:
            if exc.code is not ErrorCode.PROVIDER_INVALID_REPLY:
                raise
            dropped.proposals += 1
    return out


def _settled(proposed: list[Proposed], dropped: Dropped) -> list[Proposed]:
    """``proposed``, unless the replies proposed something and none of it was valid (then the review fails)."""
    if dropped.offered and not proposed:
        raise http.invalid(f"none of the {dropped.offered} proposal(s) of the model is valid")
    return proposed


async def request_proposals(
    digests: list[PublicDigest],
    snapshot: MemorySnapshot,
    *,
    instruction_files: Mapping[str, bytes | None],
    policy: ModelPolicy,
    api_key: str | None,
    command: tuple[str, ...] = (),
    context_tokens: int | None = None,
    dropped: Dropped | None = None,
) -> list[Proposed]:
    """Send the review requests (one per context window) and return the valid proposals (cancellable).

    ``context_tokens`` None: the default window of the policy's provider.
    What the replies lost is counted in ``dropped``; the review fails only
    when they proposed something and none of it was valid.
    """
    route = Route(policy=policy, api_key=api_key, command=command,
                  context_tokens=context_window(policy.provider, context_tokens))
    check_route(route, what="review")
    dropped = Dropped() if dropped is None else dropped
    system = _system(instruction_files)
    proposed: list[Proposed] = []
    for n, part in enumerate(windows(digests, snapshot, instruction_files, route)):
        user = review_request.scope(part.digests, snapshot, instruction_files, bodies=part.bodies)
        items = await ask(route, system, user, key="proposals", what="review")
        valid = _validate(items, part.digests, snapshot, instruction_files, dropped)
        proposed += [attrs.evolve(p, window=n) for p in valid]
    return _settled(proposed, dropped)


def review_remote(
    digests: list[PublicDigest],
    snapshot: MemorySnapshot,
    scope: ReviewScope | None = None,
    *,
    policy: ModelPolicy,
    api_key: str | None,
    command: tuple[str, ...] = (),
    context_tokens: int | None = None,
    total_seconds: float | None = None,
    dropped: Dropped | None = None,
    **fields: Any,
) -> list[ProposalDraft]:
    """Review ``digests`` with the policy's model (same scope and result as ``engine.review``).

    Runs its own trio loop: call it from synchronous code only. An index
    that cannot be read raises its code before anything is sent. All
    requests together end within ``total_seconds`` (when given; each one
    within the policy timeout), else ``E_PROVIDER_TIMEOUT``. What the
    replies lost is counted in ``dropped`` and logged as counts.
    """
    dropped = Dropped() if dropped is None else dropped
    scope = ReviewScope.of(scope, fields)
    assert len(digests) <= MAX_DIGESTS, f"a review takes at most {MAX_DIGESTS} digests"
    snapshot.parsed_index()
    files = scope.instruction_files

    async def go() -> list[Proposed]:
        with trio.fail_after(total_seconds if total_seconds is not None else math.inf):
            return await request_proposals(digests, snapshot, instruction_files=files, policy=policy,
                                           api_key=api_key, command=command, context_tokens=context_tokens,
                                           dropped=dropped)

    try:
        proposed = trio.run(go)
    except trio.TooSlowError:
        raise CairnError(ErrorCode.PROVIDER_TIMEOUT,
                         f"the review requests took longer than {total_seconds:g} s together") from None
    except Exception as exc:  # a fixed code, never E_INTERNAL (worker.providers.route.provider_error)
        raise provider_error(exc) from None
    if dropped.proposals or dropped.references:  # counts only: never the reply's text
        log.warning("review %s: %d of %d proposal(s) of the model left out as invalid, %d unknown digest "
                    "reference(s) left out", scope.review_id, dropped.proposals, dropped.offered, dropped.references)
    return build_drafts(proposed, digests, snapshot, scope)
