"""Verification of memory against the working tree: staleness marks and the proposals they lead to.

:func:`verify_workspace` rechecks every topic of the workspace's memory
roots (``.agents/memory`` and relative ``memoryRoots``) with
:func:`worker.memory.citations.verify_entry`: the citations its front matter
records, or those its text names now. The result per topic file is kept as
a **mark** in private state (``.cairn/state/memory/verify.json``, replaced
whole): ``verified`` (the date of the last check that found every citation
true), ``stale`` (reasons), ``unverifiable`` (codes), ``confirmed`` (the
date the user last said it is still true: :func:`confirm_topic`). A topic file is never
rewritten here: a topic found stale, or not confirmed for ``revalidateDays``
(by a session named in its ``sources``, its ``confirmed`` date or a
verification), gets a retirement proposal through the ordinary proposal
path (``cairn show`` / ``accept`` / ``reject`` / ``undo``), whose summary
gives the reason and the cited lines as they read now. A topic whose front
matter is broken is reported with its code and left alone.

The proposals of one run form a review of scope ``review/verify`` (its own
claim, beside general and focused reviews). A proposal's fingerprint names
the topic file and its bytes: a rejected or pending one is not proposed
again until the topic changes.

One topic at the user's word (the cockpit's Memories view, ``cairn memory
retire|confirm TOPIC``): :func:`retire_topic` proposes its retirement (a
proposal like the others), :func:`confirm_topic` records that it is still
true. The marks file is replaced whole without a claim: a confirmation and
a verification finishing at the same instant can lose the confirmation
(the topic shows as due again; nothing else is lost).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import posixpath
import re
from pathlib import Path
from typing import Any

import attrs
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.memory import ProposalKind, ProposalState, ReviewResult
from cairn.protocol.vocab import OutcomeKind
from cairn.worker.memory import model
from cairn.worker.memory.apply import load_proposal, proposal_ids, publish_review, state_of
from cairn.worker.memory.citations import (
    OK,
    STALE,
    UNVERIFIABLE,
    Check,
    Tree,
    from_front_matter,
    rename_in_text,
    verify_entry,
)
from cairn.worker.memory.drafts import ProposalDraft, clip
from cairn.worker.memory.fingerprints import repair_fingerprint
from cairn.worker.memory.marks import MARKS, load_marks, mark_of
from cairn.worker.memory.store import DEFAULT_ROOT, M, MemoryStore

SCOPE = "review/verify"
_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})")


def _date(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts, _dt.UTC).strftime("%Y-%m-%d")


def _save_marks(ms: MemoryStore, marks: dict[str, Any]) -> None:
    d = ms.root.descend(M, create=True)
    try:
        d.replace(MARKS, json.dumps(marks, sort_keys=True, ensure_ascii=True).encode("ascii"))
    finally:
        d.close()


def _session_dates(sources: object) -> list[str]:
    if not isinstance(sources, dict):
        return []
    sessions = sources.get("sessions")
    out = []
    for s in sessions if isinstance(sessions, list) else []:
        for part in str(s).split("/"):
            m = _DATE.match(part.strip())
            if m:
                out.append(m.group(1))
    return out


def last_confirmed(topic: model.Topic, mark: dict[str, Any]) -> str | None:
    """The latest date a session, the topic's own ``confirmed`` date, a verification or the user (the mark's
    ``confirmed``: :func:`confirm_topic`) confirmed it."""
    dates = [d for d in (mark.get("verified"), topic.confirmed, mark.get("confirmed"))
             if isinstance(d, str) and _DATE.match(d)]
    dates = [_DATE.match(d).group(1) for d in dates] + _session_dates(topic.sources)  # type: ignore[union-attr]
    return max(dates) if dates else None


def _roots(ms: MemoryStore) -> list[str]:
    return [r for r in dict.fromkeys([DEFAULT_ROOT, *ms.settings.memoryRoots]) if not os.path.isabs(r)]


def _retire_draft(index_rel: str, file: str, name: str, path: str, data: bytes, entry: str | None,
                  why: str, title: str, review_id: str, now: float) -> ProposalDraft:
    sha = hashlib.sha256(data).hexdigest()[:16]
    return ProposalDraft(
        kind=ProposalKind.DELETE, title=title, summary=why, target=path,
        files={path: (data, None)},
        index_path=index_rel,
        index_edits=((file, entry, None),) if entry is not None else (),
        evidence=(), fingerprint=repair_fingerprint("verify-retire", index_rel, f"{file}\0{sha}"),
        review=review_id, created=now,
    )


def _renamed_topic(topic: model.Topic, stale: list[Check]) -> bytes | None:
    """The topic with each renamed target named anew (text and citations), when every stale check is a
    rename and the topic's front matter is exactly as cairn writes it (else None: a retirement is proposed)."""
    if not stale or any(c.renamed is None for c in stale) or not isinstance(topic.citations, list):
        return None
    cites, bad = from_front_matter(topic.citations)
    prov: dict[str, object] = {"sources": topic.sources, "citations": topic.citations, "confirmed": topic.confirmed}
    try:
        if bad or model.render_topic(topic.name, topic.description, topic.type, topic.body, prov) != topic.raw:
            return None
        body = topic.body
        for c in stale:
            assert c.renamed is not None and c.citation.target and c.renamed.target
            body = rename_in_text(body, c.citation.target, c.renamed.target)
            cites = [c.renamed if x == c.citation else x for x in cites]
        prov["citations"] = [x.as_front_matter() for x in cites]
        return model.render_topic(topic.name, topic.description, topic.type, body, prov)
    except CairnError:
        return None


def _evidence_text(checks: list[Check]) -> str:
    parts = []
    for c in checks:
        text = c.reason
        if c.evidence:
            text += "; now: " + " | ".join(c.evidence)
        parts.append(clip(text, 300))
    return "; ".join(parts)


def verify_workspace(ms: MemoryStore, *, now: float | None = None, propose: bool = True) -> dict[str, Any]:
    """Recheck every topic, save the marks, and (``propose``) queue retirement proposals. See the module docstring."""
    ws = ms.workspace
    now = ms.now() if now is None else now
    today = _date(now)
    days = ms.settings.revalidateDays
    old = load_marks(ws)
    marks: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    drafts: list[ProposalDraft] = []
    review_id = "v" + hashlib.sha256(f"{ws}\0{now}".encode()).hexdigest()[:12]
    known = {load_proposal(ms, pid).fingerprint for pid in proposal_ids(ms)} if propose else set()
    trees: list[Tree] = []  # listed once, when the first topic without recorded citations needs it

    def tree() -> Tree:
        if not trees:
            trees.append(Tree(ws, exclude=_roots(ms)))
        return trees[0]
    for root in _roots(ms):
        if not os.path.isdir(os.path.join(ws, root)):
            continue
        snap = model.read_root(Path(os.path.join(ws, root)), workspace=ws)
        index_rel = posixpath.join(root, model.INDEX_NAME)
        try:
            index = snap.parsed_index()
        except CairnError:
            index = None
        for name, tf in sorted(snap.topics.items()):
            file = posixpath.join(root, name)
            if tf.topic is None:
                rows.append({"file": file, "error": str(tf.error or ErrorCode.TOPIC_FRONT_MATTER),
                             "citations": [], "stale": False})
                continue
            checks = verify_entry(ws, tf.topic.body, tf.topic.citations,
                                  tree=None if tf.topic.citations else tree())
            stale = [c for c in checks if c.verdict == STALE]
            mark = dict(mark_of(old, file))
            if checks and not stale and any(c.verdict == OK for c in checks):
                mark["verified"] = today
            mark["stale"] = [c.reason for c in stale]
            mark["unverifiable"] = [{"path": c.citation.path, "code": c.code} for c in checks
                                    if c.verdict == UNVERIFIABLE]
            mark["checked"] = today
            confirmed = last_confirmed(tf.topic, mark)
            age = ((_dt.date.fromisoformat(today) - _dt.date.fromisoformat(confirmed)).days
                   if confirmed else None)
            aged = age is not None and days > 0 and age > days
            marks[file] = mark
            rows.append({"file": file, "citations": [c.as_json() for c in checks], "stale": bool(stale),
                         "why": mark["stale"], "verified": mark.get("verified"), "confirmed": confirmed,
                         "aged": aged})
            if not propose or not (stale or aged):
                continue
            entry = index.entry(name) if index is not None else None
            renamed = _renamed_topic(tf.topic, stale)
            if renamed is not None:
                names = ", ".join(f"{c.citation.target} \u2192 {c.renamed.target}" for c in stale if c.renamed)
                d = ProposalDraft(
                    kind=ProposalKind.UPDATE, title=clip(f"Update {name} ({tf.topic.name}): renamed {names}", 160),
                    summary=_evidence_text(stale) + ". The entry is updated to the new name.", target=file,
                    files={file: (tf.data, renamed)}, index_path=index_rel,
                    index_edits=((name, entry.raw, entry.raw),) if entry is not None else (), evidence=(),
                    fingerprint=repair_fingerprint("verify-update", index_rel,
                                                   f"{name}\0{hashlib.sha256(tf.data).hexdigest()[:16]}"),
                    review=review_id, created=now)
                if d.fingerprint not in known:
                    drafts.append(d)
                continue
            if stale:
                title = f"Retire {name} ({tf.topic.name}): what it cites changed"
                why = _evidence_text(stale) + ". Accept to retire it, or edit it before accepting."
            else:
                title = f"Revalidate or retire {name} ({tf.topic.name}): not confirmed since {confirmed}"
                why = f"No session or verification confirmed it for {age} days (revalidateDays {days})."
            d = _retire_draft(index_rel, name, tf.topic.name, file, tf.data, entry.raw if entry else None,
                              why, clip(title, 160), review_id, now)
            if d.fingerprint not in known:
                drafts.append(d)
    _save_marks(ms, marks)
    proposals = _propose(ms, drafts, review_id, now) if drafts else []
    return {"checked": len(rows), "stale": sum(1 for r in rows if r["stale"]),
            "unverifiable": sum(1 for r in rows for c in r["citations"] if c["verdict"] == UNVERIFIABLE),
            "broken": sum(1 for r in rows if "error" in r), "proposals": proposals, "topics": rows,
            "review": review_id if proposals else None}


def _propose(ms: MemoryStore, drafts: list[ProposalDraft], review_id: str, now: float) -> list[str]:
    # the review machinery loads only when there is something to propose
    from cairn.worker.memory.review import (  # cold start: verify without proposals never loads it
        REVIEW_TTL,
        _to_proposals,
        accept_review,
        apply_in_auto_mode,
        fail_unsettled,
    )

    try:
        claim = ms.mclaims.elect(SCOPE, purpose="verify-review", ttl=REVIEW_TTL, authority=ms.mauthority)
    except CairnError as exc:
        if exc.code is ErrorCode.CLAIM_BUSY:
            return []  # another verification is proposing: it sees the same marks
        raise
    try:
        proposals, ops = _to_proposals(ms, drafts, review_id, now)
        result = ReviewResult(id=review_id, digests=(), proposals=tuple(proposals), provider="extractive",
                              automatic=False)
        decided = accept_review(ms, claim, result, ops)
    except BaseException as exc:
        fail_unsettled(ms, claim, exc)
        raise
    if ms.mclaims.outcome(claim) is None:  # pragma: no cover - settled by accept_review
        ms.mclaims.settle(claim, OutcomeKind.CANCELLED, error=str(ErrorCode.CANCELLED))
    publish_review(ms, result, decided)
    apply_in_auto_mode(ms, review_id)
    return [p.id for p in proposals]


# -- idle maintenance: after a checkout, pull or a new day ---------------------------------------

SEEN = "verify-seen.json"  # in .cairn/state/memory: what the last idle verification saw
_GIT_FILES = (".git/HEAD", ".git/ORIG_HEAD", ".git/FETCH_HEAD")


def git_signature(workspace: str) -> list[Any]:
    """A cheap signature of the checkout: ``lstat`` of ``.git/HEAD``, ``ORIG_HEAD``, ``FETCH_HEAD`` (size,
    mtime) and the commit HEAD names. A ``git pull``, checkout or reset changes it."""
    from cairn.worker.memory.citations import git_commit  # cold start: loaded with this module already

    sig: list[Any] = []
    for rel in _GIT_FILES:
        try:
            st = os.lstat(os.path.join(workspace, rel))
            sig.append([rel, st.st_size, st.st_mtime_ns])
        except OSError:
            sig.append([rel, None, None])
    sig.append(git_commit(workspace))
    return sig


def idle_verify(ms: MemoryStore, *, now: float | None = None) -> dict[str, Any]:
    """The idle job: verify when the checkout changed since the last idle verification, or once a day.

    Costs a few ``lstat`` calls when nothing changed; without a memory root it does nothing at all.
    """
    ws = ms.workspace
    if not any(os.path.isdir(os.path.join(ws, r)) for r in _roots(ms)):
        return {"skipped": "no-memory"}
    now = ms.now() if now is None else now
    seen = {"git": git_signature(ws), "day": _date(now)}
    try:
        with open(os.path.join(ws, M, SEEN), "rb") as fh:
            last = json.loads(fh.read(1 << 16))
    except (OSError, ValueError):
        last = None
    if last == seen:
        return {"skipped": "unchanged"}
    result = verify_workspace(ms, now=now)
    d = ms.root.descend(M, create=True)
    try:
        d.replace(SEEN, json.dumps(seen).encode("ascii"))
    finally:
        d.close()
    return {k: v for k, v in result.items() if k != "topics"}



# -- one topic, at the user's word: retire it, or confirm it is still true ------------------------

def _one_topic(ms: MemoryStore, file: str) -> tuple[str, str, model.TopicFile, Any]:
    """(memory root, topic name, topic file, index entry or None) of workspace-relative ``file``.

    Only a topic of one of the workspace's memory roots is taken; anything else (a path outside them, a
    file that is not a topic, a name with a folder part) is ``E_NOT_FOUND``, its front matter broken
    ``E_TOPIC_FRONT_MATTER`` (reported, never rewritten)."""
    rel = posixpath.normpath(str(file).replace(os.sep, "/")) if file else ""
    for root in _roots(ms):
        prefix = posixpath.normpath(root) + "/"
        if not rel.startswith(prefix) or "/" in rel[len(prefix):]:
            continue
        name = rel[len(prefix):]
        if not os.path.isdir(os.path.join(ms.workspace, root)):
            break
        snap = model.read_root(Path(os.path.join(ms.workspace, root)), workspace=ms.workspace)
        tf = snap.topics.get(name)
        if tf is None:
            break
        if tf.topic is None:
            raise CairnError(ErrorCode.TOPIC_FRONT_MATTER,
                             f"{rel}: its front matter is not readable; fix it by hand (cairn doctor names the problem)")
        try:
            index = snap.parsed_index()
        except CairnError:
            index = None
        return root, name, tf, index.entry(name) if index is not None else None
    raise CairnError(ErrorCode.NOT_FOUND, f"no memory topic {clip(rel, 120)!r} (`cairn memory` lists them)")


def retire_topic(ms: MemoryStore, file: str, *, now: float | None = None) -> dict[str, Any]:
    """Propose the retirement of one topic the user chose (the cockpit's Memories view, ``cairn memory retire``).

    An ordinary proposal (diff, accept, reject, undo); nothing is removed until it is accepted. A pending
    retirement of the same topic bytes is answered with its id (``new`` false), not proposed twice.
    """
    now = ms.now() if now is None else now
    root, name, tf, entry = _one_topic(ms, file)
    assert tf.topic is not None
    rel = posixpath.join(root, name)
    index_rel = posixpath.join(root, model.INDEX_NAME)
    sha = hashlib.sha256(tf.data).hexdigest()[:16]
    fingerprint = repair_fingerprint("user-retire", index_rel, f"{name}\0{sha}")
    earlier = False
    for pid in proposal_ids(ms):
        p = load_proposal(ms, pid)
        if p.fingerprint == fingerprint:
            if state_of(ms, p)[0] is ProposalState.PENDING:
                return {"file": rel, "proposal": pid, "new": False}
            earlier = True  # decided before (rejected, undone): asked again, so proposed again
    review_id = "v" + hashlib.sha256(f"{ms.workspace}\0{now}\0{rel}".encode()).hexdigest()[:12]
    d = _retire_draft(index_rel, name, tf.topic.name, rel, tf.data, entry.raw if entry else None,
                      "You asked to retire it. Accept to remove the topic and its index line; undo brings both back.",
                      clip(f"Retire {name} ({tf.topic.name}): at your request", 160), review_id, now)
    # a fingerprint of its own: an earlier rejection of a verification's proposal does not hide it
    d = attrs.evolve(d, fingerprint=repair_fingerprint("user-retire", index_rel, f"{name}\0{sha}\0{now}")
                     if earlier else fingerprint)
    ids = _propose(ms, [d], review_id, now)
    if not ids:
        raise CairnError(ErrorCode.CLAIM_BUSY, "a verification is proposing now; try again in a moment")
    return {"file": rel, "proposal": ids[0], "new": True}


def confirm_topic(ms: MemoryStore, file: str, *, now: float | None = None) -> dict[str, Any]:
    """The user says one topic is still true: its mark records ``confirmed`` today, so it is no longer due
    for revalidation (private state only; the topic file is not rewritten), and a pending "revalidate or
    retire" proposal of the topic as it is now is rejected (``rejected``: their ids). A stale topic is
    refused (``E_TOPIC_STALE``): what it cites changed, and the next verification would mark it again."""
    now = ms.now() if now is None else now
    root, name, tf, _entry = _one_topic(ms, file)
    rel = posixpath.join(root, name)
    marks = load_marks(ms.workspace)
    mark = dict(mark_of(marks, rel))
    if mark.get("stale"):
        raise CairnError(ErrorCode.TOPIC_STALE,
                         f"{rel} is stale ({clip('; '.join(map(str, mark['stale'])), 160)}): update it or retire it")
    mark["confirmed"] = _date(now)
    marks[rel] = mark
    _save_marks(ms, marks)
    # the "revalidate or retire" proposal of these bytes is answered: the user keeps the topic
    from cairn.worker.memory.apply import reject  # cold start: as the review machinery in _propose

    retire = repair_fingerprint("verify-retire", posixpath.join(root, model.INDEX_NAME),
                                f"{name}\0{hashlib.sha256(tf.data).hexdigest()[:16]}")
    answered = []
    for pid in proposal_ids(ms):
        p = load_proposal(ms, pid)
        if p.fingerprint == retire and state_of(ms, p)[0] is ProposalState.PENDING:
            reject(ms, pid)
            answered.append(pid)
    return {"file": rel, "confirmed": mark["confirmed"], "rejected": answered}
