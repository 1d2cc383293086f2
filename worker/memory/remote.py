"""The remote review: an OpenAI-compatible model proposes, cairn builds the proposals.

The model only *chooses*: which notes make a new topic, which extend an
existing one, which become working agreements of an instruction file. Every
byte that would be written is built here by the same rules and helpers as
the embedded engine (:mod:`worker.memory.engine`), so a remote proposal
looks, fingerprints and applies exactly like an embedded one.

Request (one chat-completions call, no tools, frozen policy fields and
exchange rules of :mod:`worker.providers.http`): the digests' notes (digest
id, type, title, body), the parsed topics of the root (file, name, type,
description, body clipped to :data:`TOPIC_BODY_MAX` characters) and the
names of the instruction files present, all redacted. Past rejections are
not sent: they filter the result afterwards. The prepared bytes are measured
against ``policy.max_payload_bytes`` before anything is sent.

Reply: exactly ``{"proposals": [...]}`` (empty: No action), each item one of

* ``{"action": "create", "type", "title", "description", "bullets", "evidence"}``
* ``{"action": "update", "file", "bullets", "evidence"}`` — ``file`` an existing topic
* ``{"action": "instruction", "file", "bullets", "evidence"}`` — ``file`` a present instruction file

with a known type, a one-line title of 1..120 characters, a description of
1..200, 1..20 bullets of 1..500 characters (a leading list marker is
dropped) and a non-empty list of digest ids of the request. Anything else
(unknown keys or actions, unknown files or ids, bad types, over-long text)
is ``E_PROVIDER_INVALID_REPLY``; the message names the item's position,
never the reply's text.

Construction (engine rules): text is redacted and collapsed to one line; a
bullet whose text memory already holds verbatim (any topic body or
instruction file) is dropped, as are repeats; topic bullets read
``- text (noted YYYY-MM-DD)`` with the date of the earliest cited digest,
instruction bullets ``- text``. Updates of one file (and instruction edits
of one file) are one proposal. A create's name is its title, its description
and index hook the description clipped to the engine's 150 characters (no
hook when it repeats the name), its file :func:`topic_filename` made unique
in the root; a create the index cannot take is not proposed. Fingerprints
are the engine's; a draft whose fingerprint is in ``rejected`` is dropped.
Index maintenance (the engine's rules 7 and 8: dangling entries, orphan
topics) is housekeeping of the snapshot, never asked of the model: the
engine's :func:`~worker.memory.engine.index_maintenance` adds it to the
model's drafts exactly as an embedded review would. Drafts are ordered as
the engine orders them.
"""

from __future__ import annotations

import json
import posixpath
import re
import time
import unicodedata
from collections.abc import Mapping
from typing import Any

import attrs
import trio
from cairn.protocol.digest import ModelPolicy
from cairn.protocol.journal import PublicDigest
from cairn.protocol.lsp import Settings
from cairn.protocol.memory import ProposalKind
from cairn.protocol.vocab import NoteType
from cairn.worker.memory.engine import (
    _KIND_ORDER,
    DESCRIPTION_MAX,
    MAX_DIGESTS,
    ProposalDraft,
    _clip,
    _fingerprint,
    _plural,
    admit_entry,
    index_maintenance,
    normalise,
)
from cairn.worker.memory.model import (
    INDEX_NAME,
    MemorySnapshot,
    add_working_agreements,
    append_to_topic,
    entry_line,
    one_line,
    render_topic,
    topic_filename,
)
from cairn.worker.providers import http
from cairn.worker.redact import redact

#: characters of a topic body sent to the model (the rest is not needed to place a note)
TOPIC_BODY_MAX = 2000
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

SYSTEM_PROMPT = """\
You maintain the long-term memory of an AI coding assistant for one project.
You receive new journal notes (grouped by digest id), the existing memory topics, and the names of the \
instruction files. Decide where each note that is worth keeping belongs:
- "update": it adds to an existing topic of the same subject; name the topic's "file" exactly.
- "create": it starts a new topic; give its "type" (user|feedback|project|reference), a short "title" \
(at most 120 characters) and a one-line "description" (at most 200 characters) saying what the topic covers.
- "instruction": it is a standing rule for the assistant ("always ...", "never ...", "don't ..."); \
name one of the instruction files exactly as "file".
Group related notes into one proposal; never propose what a topic already says; skip notes that are not \
lasting knowledge. Each proposal has "bullets" (1 to 20 items, each one self-contained sentence of at most \
500 characters, without a leading dash) and "evidence" (the digest ids its bullets come from, copied exactly).
Reply with one JSON object and nothing else: {"proposals": [{"action": "create", "type": "...", \
"title": "...", "description": "...", "bullets": ["..."], "evidence": ["..."]}, {"action": "update", \
"file": "...", "bullets": ["..."], "evidence": ["..."]}, {"action": "instruction", "file": "...", \
"bullets": ["..."], "evidence": ["..."]}]}. If nothing should change, reply {"proposals": []}.
"""


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


def review_policy(settings: Settings, *, timeout_seconds: float) -> ModelPolicy:
    """The policy of a remote review from the current settings (reviews are not frozen at capture)."""
    return ModelPolicy(
        provider="openai",
        model=settings.model,
        endpoint=settings.endpoint,
        max_output_tokens=MAX_OUTPUT_TOKENS,
        timeout_seconds=timeout_seconds,
    )


# -- the request ---------------------------------------------------------------------


def present_instruction_files(instruction_files: Mapping[str, bytes | None]) -> dict[str, bytes]:
    """Configured instruction files that exist and are UTF-8 text, in configured order (as the engine reads them)."""
    out: dict[str, bytes] = {}
    for path, data in instruction_files.items():
        if data is None:
            continue
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        out[path] = data
    return out


def _sorted(digests: list[PublicDigest]) -> list[PublicDigest]:
    return sorted(digests, key=lambda d: (d.created, d.id))


def _scope(
    digests: list[PublicDigest], snapshot: MemorySnapshot, instruction_files: Mapping[str, bytes | None]
) -> str:
    doc = {
        "digests": [
            {
                "id": d.id,
                "notes": [{"type": str(n.type), "title": redact(n.title), "body": redact(n.body)} for n in d.notes],
            }
            for d in _sorted(digests)
        ],
        "topics": [
            {
                "file": name,
                "name": redact(tf.topic.name),
                "type": str(tf.topic.type),
                "description": redact(tf.topic.description),
                "body": redact(tf.topic.body[:TOPIC_BODY_MAX]),
            }
            for name, tf in sorted(snapshot.topics.items())
            if tf.topic is not None
        ],
        "instruction_files": list(present_instruction_files(instruction_files)),
    }
    return json.dumps(doc, ensure_ascii=False, sort_keys=True)


def build_request(
    digests: list[PublicDigest],
    snapshot: MemorySnapshot,
    *,
    instruction_files: Mapping[str, bytes | None],
    policy: ModelPolicy,
) -> dict[str, Any]:
    """The request object; :func:`prepare_payload` gives its exact bytes."""
    return http.base_request(policy, SYSTEM_PROMPT, _scope(digests, snapshot, instruction_files), what="review")


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
    text = one_line(value)
    if not 0 < len(text) <= limit:
        raise http.invalid(f"proposal {index}: {what} must be 1 to {limit} characters", proposal=index)
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in text):
        raise http.invalid(f"proposal {index}: {what} holds control characters", proposal=index)
    return text


def _proposed(item: object, index: int, *, digest_ids: set[str], topics: set[str], instructions: set[str]) -> Proposed:
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
    if unknown:
        raise http.invalid(f"proposal {index} cites {unknown} digest id(s) that are not in the request", proposal=index)
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
) -> list[Proposed]:
    """Validate a chat-completions response body strictly; see the module docstring."""
    items = http.json_object(http.reply_content(raw), key="proposals")
    digest_ids = {d.id for d in digests}
    topics = {name for name, tf in snapshot.topics.items() if tf.topic is not None}
    instructions = set(present_instruction_files(instruction_files))
    return [
        _proposed(item, i, digest_ids=digest_ids, topics=topics, instructions=instructions)
        for i, item in enumerate(items)
    ]


# -- drafts ----------------------------------------------------------------------------


@attrs.define
class _Group:
    first: Proposed
    bullets: list[str] = attrs.Factory(list)  # final bullet lines ("- ...")
    keys: list[str] = attrs.Factory(list)  # normalised texts (fingerprint parts)
    texts: list[str] = attrs.Factory(list)  # redacted one-line texts (summaries)
    evidence: set[str] = attrs.Factory(set)


def build_drafts(
    proposed: list[Proposed],
    digests: list[PublicDigest],
    snapshot: MemorySnapshot,
    *,
    root_rel: str,
    index_rel: str,
    instruction_files: Mapping[str, bytes | None],
    rejected: set[str],
    now: float,
    review_id: str,
) -> list[ProposalDraft]:
    """Turn validated proposals into drafts by the embedded engine's construction rules."""
    index = snapshot.parsed_index()
    created_of = {d.id: d.created for d in digests}
    present = present_instruction_files(instruction_files)
    topics = {name: tf for name, tf in snapshot.topics.items() if tf.topic is not None}
    known = [normalise(tf.topic.body) for tf in topics.values() if tf.topic is not None]
    known += [normalise(data.decode("utf-8")) for data in present.values()]

    def path_of(file: str) -> str:
        return posixpath.join(root_rel, file) if root_rel else file

    groups: dict[tuple[str, str], _Group] = {}
    order = 0
    for p in proposed:
        if p.action == "create":
            key = ("create", str(order))
            order += 1
        else:
            key = (p.action, p.file)
        group = groups.setdefault(key, _Group(first=p))
        day = time.strftime("%Y-%m-%d", time.gmtime(min(created_of[e] for e in p.evidence)))
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

    drafts: list[ProposalDraft] = []
    taken = {n.casefold() for n in (*snapshot.topics, *snapshot.refused, INDEX_NAME)}
    taken |= {e.file.casefold() for e in index.entries}
    simulated = snapshot.index
    for (action, _), g in groups.items():
        if not g.bullets:
            continue
        summary = "; ".join(_clip(t, 80) for t in g.texts)
        evidence = tuple(sorted(g.evidence))
        if action == "instruction":
            path, before = g.first.file, present[g.first.file]
            drafts.append(
                ProposalDraft(
                    kind=ProposalKind.INSTRUCTION,
                    title=f"Add {_plural(len(g.bullets), 'working agreement')} to {posixpath.basename(path)}",
                    summary=summary,
                    target=path,
                    files={path: (before, add_working_agreements(before, g.bullets))},
                    index_path=index_rel,
                    index_edits=(),
                    evidence=evidence,
                    fingerprint=_fingerprint(ProposalKind.INSTRUCTION, path, g.keys),
                    review=review_id,
                    created=now,
                )
            )
        elif action == "update":
            file = g.first.file
            tf = topics[file]
            assert tf.topic is not None
            data = tf.data
            for bullet in g.bullets:
                data = append_to_topic(data, bullet)
            current = entry_line(index, file)
            path = path_of(file)
            drafts.append(
                ProposalDraft(
                    kind=ProposalKind.UPDATE,
                    title=f"Add {_plural(len(g.bullets), 'note')} to {tf.topic.name}",
                    summary=summary,
                    target=path,
                    files={path: (tf.data, data)},
                    index_path=index_rel,
                    index_edits=((file, current, current),),
                    evidence=evidence,
                    fingerprint=_fingerprint(ProposalKind.UPDATE, path, g.keys),
                    review=review_id,
                    created=now,
                )
            )
        else:
            kind = g.first.type
            assert kind is not None
            name = _clip(redact(g.first.title), TITLE_MAX)
            description = _clip(redact(g.first.description), DESCRIPTION_MAX)
            file = topic_filename(name)
            stem, n = file[: -len(".md")], 2
            while file.casefold() in taken:
                suffix = f"-{n}"
                file = f"{stem[: 57 - len(suffix)].rstrip('-')}{suffix}.md"
                n += 1
            body = "\n" + "".join(b + "\n" for b in g.bullets)
            data = render_topic(name, description, kind, body)
            admitted = admit_entry(simulated, name, file, description)
            if admitted is None:
                continue
            simulated, line = admitted
            taken.add(file.casefold())
            path = path_of(file)
            drafts.append(
                ProposalDraft(
                    kind=ProposalKind.CREATE,
                    title=f"New {kind} memory: {name}",
                    summary=summary,
                    target=path,
                    files={path: (None, data)},
                    index_path=index_rel,
                    index_edits=((file, None, line),),
                    evidence=evidence,
                    fingerprint=_fingerprint(ProposalKind.CREATE, path, g.keys),
                    review=review_id,
                    created=now,
                )
            )
    drafts = [d for d in drafts if d.fingerprint not in rejected]
    drafts += index_maintenance(
        snapshot, drafts, root_rel=root_rel, index_rel=index_rel, rejected=rejected, now=now, review_id=review_id
    )
    drafts.sort(key=lambda d: (_KIND_ORDER[d.kind], d.target))
    return drafts


# -- the review ------------------------------------------------------------------------


async def request_proposals(
    digests: list[PublicDigest],
    snapshot: MemorySnapshot,
    *,
    instruction_files: Mapping[str, bytes | None],
    policy: ModelPolicy,
    api_key: str | None,
) -> list[Proposed]:
    """Send the review request and return the validated proposals (cancellable with trio)."""
    payload = prepare_payload(digests, snapshot, instruction_files=instruction_files, policy=policy)
    raw = await http.post_chat(payload, policy, api_key=api_key, what="review")
    return parse_reply(raw, digests, snapshot, instruction_files=instruction_files)


def review_remote(
    digests: list[PublicDigest],
    snapshot: MemorySnapshot,
    *,
    root_rel: str,
    index_rel: str,
    instruction_files: Mapping[str, bytes | None],
    rejected: set[str],
    now: float,
    review_id: str,
    policy: ModelPolicy,
    api_key: str | None,
) -> list[ProposalDraft]:
    """Review ``digests`` with the policy's model (same signature and result as ``engine.review``).

    Runs its own trio loop: call it from synchronous code only. An index
    that cannot be read raises its code before anything is sent.
    """
    assert len(digests) <= MAX_DIGESTS, f"a review takes at most {MAX_DIGESTS} digests"
    snapshot.parsed_index()

    async def go() -> list[Proposed]:
        return await request_proposals(
            digests, snapshot, instruction_files=instruction_files, policy=policy, api_key=api_key
        )

    proposed = trio.run(go)
    return build_drafts(
        proposed,
        digests,
        snapshot,
        root_rel=root_rel,
        index_rel=index_rel,
        instruction_files=instruction_files,
        rejected=rejected,
        now=now,
        review_id=review_id,
    )
