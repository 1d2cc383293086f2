"""Verification of memory against the working tree: staleness marks and the proposals they lead to.

:func:`verify_workspace` rechecks every topic of the workspace's memory
roots (``.agents/memory`` and relative ``memoryRoots``) with
:func:`worker.memory.citations.verify_entry`: the citations its front matter
records, or those its text names now. The result per topic file is kept as
a **mark** in private state (``.cairn/state/memory/verify.json``, replaced
whole): ``verified`` (the date of the last check that found every citation
true), ``stale`` (reasons), ``unverifiable`` (codes). A topic file is never
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

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.memory import ProposalKind, ReviewResult
from cairn.protocol.vocab import OutcomeKind
from cairn.worker.memory import model
from cairn.worker.memory.apply import load_proposal, proposal_ids, publish_review
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
    """The latest date a session, the topic's own ``confirmed`` date or a verification confirmed it."""
    dates = [d for d in (mark.get("verified"), topic.confirmed) if isinstance(d, str) and _DATE.match(d)]
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

