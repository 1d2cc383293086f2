"""Verification of memory against the working tree: staleness marks and the proposals they lead to.

:func:`verify_workspace` rechecks every topic of the workspace's memory
roots (``.agents/memory`` and relative ``memoryRoots``) with
:func:`worker.memory.citations.verify_entry`: the citations its front matter
records, or those its text names now. The result per topic file is kept as
a **mark** in private state (``.cairn/state/memory/verify.json``, replaced
whole): ``verified`` (the date of the last check that found every citation
true), ``stale`` (reasons), ``unverifiable`` (codes), ``confirmed`` (the
date the user last said it is still true: :func:`confirm_topic`, or accepted
a proposal that wrote it: :func:`confirm_accepted`). A topic file is never
rewritten here: a topic found stale, or not confirmed for ``revalidateDays``
(by a session named in its ``sources``, its ``confirmed`` date or a
verification), gets a proposal through the ordinary proposal path (``cairn
show`` / ``accept`` / ``reject`` / ``undo``), whose summary gives the reason
and the cited lines as they read now: an update when every stale finding has
one replacement (a target renamed in place, a file moved, a value changed:
:func:`_renamable`), in the text, the name, the description and the index
line (a front matter the user edited keeps their lines:
:func:`worker.memory.provenance.edit_front_matter`); else a retirement. A
topic whose front matter is broken is reported with its code and left alone.

The proposals of one run form a review of scope ``review/verify`` (its own
claim, beside general and focused reviews). A proposal's fingerprint names
the topic file and its bytes (a "revalidate or retire" one's also the last
confirmation: :func:`revalidate_fingerprint`): a rejected or pending one is
not proposed again until the topic changes (or, for age, is confirmed). Each
proposal's premise carries a key the topic's mark names (``proposal``) while
it is the one answering the topic: an older one for the same topic is no
longer live (:func:`worker.memory.marks.premise_gone`).

One topic at the user's word (the cockpit's Memories view, ``cairn memory
retire|confirm TOPIC``; a topic file as listed, or a bare file name found in
exactly one memory root): :func:`retire_topic` proposes its retirement (a
proposal like the others; one already pending for the same bytes is named
instead), :func:`confirm_topic` records that it is still true.

The marks file is replaced whole by a compare-and-set (:func:`_update_marks`:
the bytes read are verified and the new ones written under the marks
folder's target lock, else it reads again): a verification keeps the
``confirmed`` dates recorded while it ran, and a confirmation that finds a
verification's marks written since it read them confirms against those.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import posixpath
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import attrs
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.memory import ProposalKind, ProposalState, ReviewResult
from cairn.protocol.vocab import OpStatus, OutcomeKind
from cairn.state import program as P
from cairn.worker.memory import agents, model
from cairn.worker.memory.apply import load_proposal, proposal_ids, publish_review, state_of
from cairn.worker.memory.citations import (
    OK,
    STALE,
    UNVERIFIABLE,
    Check,
    Tree,
    from_front_matter,
    git_commit,
    read_lines,
    refused_code,
    rename_in_text,
    verify_entry,
)
from cairn.worker.memory.drafts import ProposalDraft, clip
from cairn.worker.memory.fingerprints import repair_fingerprint
from cairn.worker.memory.marks import (
    AGED_PREMISE,
    LINES,
    MARKS,
    STALE_PREMISE,
    line_key,
    load_marks,
    mark_of,
    premise_of,
    proposal_key,
)
from cairn.worker.memory.provenance import edit_front_matter
from cairn.worker.memory.store import AGENT_FILES, DEFAULT_ROOT, M, MemoryStore

SCOPE = "review/verify"
_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})")


def _date(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts, _dt.UTC).strftime("%Y-%m-%d")


_MARKS_PATH = f"{M}/{MARKS}"
_MARKS_TRIES = 8  # compare-and-set rounds before giving up (each lost round means another writer finished one)


def _update_marks(ms: MemoryStore, change: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    """Replace the marks file with ``change(marks as they are now)`` and return what was written.

    A compare-and-set: the new bytes are written under the target lock of the marks folder only when the
    file still holds the bytes ``change`` was given (or is still absent); a write by another verification or
    confirmation in between makes it read and call ``change`` again. ``change`` may raise: nothing is written.
    After :data:`_MARKS_TRIES` lost rounds: ``E_CLAIM_BUSY`` (nothing written, try again)."""
    for _ in range(_MARKS_TRIES):
        r = ms.run([P.Read(_MARKS_PATH, optional=True)])
        r.raise_failed()
        raw = r[0].value if r[0].status is OpStatus.OK else None
        try:
            current = json.loads(raw) if raw is not None else {}
        except ValueError:
            current = {}  # unreadable: as load_marks reads it, no marks
        marks = change(current if isinstance(current, dict) else {})
        data = json.dumps(marks, sort_keys=True, ensure_ascii=True).encode("ascii")
        same = P.Verify(_MARKS_PATH, absent=True) if raw is None else P.Verify(_MARKS_PATH, data=raw)
        res = ms.run([same, P.Write(_MARKS_PATH, data)], lock=M)
        res.raise_failed()
        if res.ok:
            return marks
    raise CairnError(ErrorCode.CLAIM_BUSY, "the memory marks kept changing while they were updated; nothing was "
                                           "written, try again")


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


def last_confirmed(topic: model.Topic, mark: dict[str, Any], today: str | None = None) -> str | None:
    """The latest date a session, the topic's own ``confirmed`` date, a verification or the user (the mark's
    ``confirmed``: :func:`confirm_topic`) confirmed it. A date after ``today`` (the caller's clock, the one its
    marks are dated by; else UTC now; a typo in a hand-written front matter, ``confirmed: 2099-01-01``)
    confirms nothing: it would keep the topic from ever being due."""
    dates = [d for d in (mark.get("verified"), topic.confirmed, mark.get("confirmed"))
             if isinstance(d, str) and _DATE.match(d)]
    dates = [_DATE.match(d).group(1) for d in dates] + _session_dates(topic.sources)  # type: ignore[union-attr]
    today = today or _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d")
    dates = [d for d in dates if d <= today]
    return max(dates) if dates else None


def _roots(ms: MemoryStore) -> list[str]:
    return [r for r in dict.fromkeys([DEFAULT_ROOT, *ms.settings.memoryRoots]) if not os.path.isabs(r)]


def _retire_fingerprint(index_rel: str, file: str, data: bytes) -> str:
    """A verification's retirement of topic ``file`` as it reads (``data``): not proposed again until it changes."""
    return repair_fingerprint("verify-retire", index_rel, f"{file}\0{hashlib.sha256(data).hexdigest()[:16]}")


def _went_back(ms: MemoryStore, made: list[Any], fp: str, data: bytes) -> bool:
    """Whether every proposal made before with fingerprint ``fp`` was applied and the topic now holds again
    the bytes it had before (a checkout or a pull brought back memory as it was): the same proposal is
    made again, since the one applied cannot be applied twice nor undone (its files changed). One rejected,
    undone or pending still stands for it."""
    sha = hashlib.sha256(data).hexdigest()
    same = [p for p in made if p.fingerprint == fp]
    return bool(same) and all(state_of(ms, p)[0] is ProposalState.APPLIED and p.files and p.files[0].before == sha
                              for p in same)


def revalidate_fingerprint(index_rel: str, file: str, data: bytes, since: str) -> str:
    """A "revalidate or retire" proposal of topic ``file`` as it reads (``data``), due because nothing confirmed
    it after ``since``: one per period, so a confirmation makes the next period's a new proposal, while one
    rejected stays rejected until the topic is confirmed or changed."""
    return repair_fingerprint("verify-revalidate", index_rel,
                              f"{file}\0{hashlib.sha256(data).hexdigest()[:16]}\0{since}")


def _retire_draft(index_rel: str, file: str, name: str, path: str, data: bytes, entry: str | None,
                  why: str, title: str, review_id: str, now: float, *, premise: str | None = None,
                  fingerprint: str | None = None) -> ProposalDraft:
    return ProposalDraft(
        kind=ProposalKind.DELETE, title=title, summary=why, target=path,
        files={path: (data, None)},
        index_path=index_rel,
        index_edits=((file, entry, None),) if entry is not None else (),
        evidence=(), fingerprint=fingerprint or _retire_fingerprint(index_rel, file, data),
        review=review_id, created=now, premise=premise,
    )


def _asked_before(made: Iterable[Any], legacy: str, since: str | None) -> bool:
    """Whether a "revalidate or retire" proposal of an older version (its fingerprint ``legacy``, the topic's
    bytes only; no premise) was made after ``since``, the topic's last confirmation: it asked for this period."""
    return since is not None and any(p.fingerprint == legacy and p.premise is None and _date(p.created) >= since
                                     for p in made)


def _bounded(old: str) -> re.Pattern[str]:
    """``old`` where it is a whole path or value: not part of a longer name, path or number."""
    return re.compile(r"(?<![\w./-])" + re.escape(old) + r"(?![\w/-]|\.\w)")


def _renamed(text: str, stale: list[Check]) -> str:
    """``text`` naming anew what each of ``stale`` says changed: a renamed target in every runner invocation
    (:func:`rename_in_text`), a moved path or a changed value wherever it stands whole."""
    for c in stale:
        if c.replace is not None:
            old, new = c.replace
            text = _bounded(old).sub(new.replace("\\", "\\\\"), text)  # the new path or value, as written
        elif c.citation.kind != "symbol":  # a symbol that moved keeps its name: the text stays
            assert c.renamed is not None and c.citation.target and c.renamed.target
            text = rename_in_text(text, c.citation.target, c.renamed.target)
    return text


def _renamable(topic: model.Topic, c: Check) -> bool:
    """Whether an update can say what ``c`` found: a target renamed in place, a path moved to one file, or a
    value changed to one value that the topic's text states once (a number said twice may be two things)."""
    if c.replace is None:  # a target renamed in place; a symbol now defined in another file (its text unchanged)
        return c.renamed is not None and (c.citation.kind == "target" or (
            c.citation.kind == "symbol" and c.renamed.target == c.citation.target))
    old, new = c.replace
    if not old or not new or old == new or not re.fullmatch(r"[\w./@:+-]{1,200}", new):
        return False
    said = len(_bounded(old).findall(topic.body))
    return said >= 1 if "/" in old else said == 1


def _renamed_topic(topic: model.Topic, stale: list[Check], commit: str | None = None) -> bytes | None:
    """The topic naming anew what changed (name, description, text and citations), when every stale check says
    what it changed to (:func:`_renamable`) and the topic's front matter is exactly as cairn writes it (else
    None: a retirement is proposed). The index line is renamed by the caller: agents load the index, not the
    topic. ``commit``: the workspace's commit now, recorded on each citation cited afresh (its hash is of the
    tree as it is now, not as it was at the old commit)."""
    if not stale or not all(_renamable(topic, c) for c in stale) or (
            topic.citations is not None and not isinstance(topic.citations, list)):
        return None
    cites, bad = from_front_matter(topic.citations) if topic.citations else ([], [])
    if bad:
        return None
    prov: dict[str, object] = {"sources": topic.sources, "citations": topic.citations, "confirmed": topic.confirmed}
    for c in stale:
        if c.renamed is not None:
            cites = [attrs.evolve(c.renamed, commit=commit) if x == c.citation else x for x in cites]
    name, description, body = (_renamed(topic.name, stale), _renamed(topic.description, stale),
                               _renamed(topic.body, stale))
    try:
        own = model.render_topic(topic.name, topic.description, topic.type, topic.body, prov) == topic.raw
        if own:
            prov["citations"] = [x.as_front_matter() for x in cites]
            return model.render_topic(name, description, topic.type, body, prov)
    except CairnError:
        pass
    # a front matter the user edited (a comment, a key of theirs): its lines of these keys only are written anew
    return edit_front_matter(topic.raw, {"name": name, "description": description,
                                         "citations": [x.as_front_matter() for x in cites]}, body)


def _changes(stale: list[Check]) -> str:
    """What an update changes, for its title: ``check → test``, ``src/a.py → src/b.py``, ``100 → 120``."""
    return ", ".join(f"{c.replace[0]} \u2192 {c.replace[1]}" if c.replace is not None
                     else f"{c.citation.target}: {c.citation.path} \u2192 {c.renamed.path}"
                     if c.citation.kind == "symbol" and c.renamed is not None
                     else f"{c.citation.target} \u2192 {c.renamed.target if c.renamed else ''}" for c in stale)


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
    made = [load_proposal(ms, pid) for pid in proposal_ids(ms)] if propose else []
    known = {p.fingerprint for p in made}
    trees: list[Tree] = []  # listed once, when the first topic without recorded citations needs it

    def tree() -> Tree:
        if not trees:
            trees.append(Tree(ws, exclude=_roots(ms)))
        return trees[0]
    budget = model.IndexBudget.of(ms.settings)
    over: list[dict[str, Any]] = []  # indexes already past what agents load (reported, never cut)
    for root in _roots(ms):
        if not os.path.isdir(os.path.join(ws, root)):
            continue
        snap = model.read_root(Path(os.path.join(ws, root)), workspace=ws)
        index_rel = posixpath.join(root, model.INDEX_NAME)
        past = model.over_budget(snap.index, budget)
        if past is not None:
            over.append({"index": index_rel, **past})
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
                                  tree=None if tf.topic.citations else tree(), exclude=_roots(ms))
            stale = [c for c in checks if c.verdict == STALE]
            mark = dict(mark_of(old, file))
            if checks and not stale and any(c.verdict == OK for c in checks):
                mark["verified"] = today
            mark["stale"] = [c.reason for c in stale]
            mark["unverifiable"] = [{"path": c.citation.path, "code": c.code} for c in checks
                                    if c.verdict == UNVERIFIABLE]
            mark["checked"] = today
            confirmed = last_confirmed(tf.topic, mark, today)
            age = ((_dt.date.fromisoformat(today) - _dt.date.fromisoformat(confirmed)).days
                   if confirmed else None)
            aged = age is not None and days > 0 and age > days
            marks[file] = mark
            rows.append({"file": file, "citations": [c.as_json() for c in checks], "stale": bool(stale),
                         "why": mark["stale"], "verified": mark.get("verified"), "confirmed": confirmed,
                         "aged": aged})
            if not (stale or aged):
                mark.pop("proposal", None)  # nothing answers it now: a proposal made before is no longer live
                continue
            if not propose:
                continue  # a dry run proposes nothing: the proposal live before stays the one
            entry = index.entry(name) if index is not None else None
            renamed = _renamed_topic(tf.topic, stale, git_commit(ws))
            if renamed is not None:
                fp = repair_fingerprint("verify-update", index_rel,
                                        f"{name}\0{hashlib.sha256(tf.data).hexdigest()[:16]}")
                d = ProposalDraft(
                    kind=ProposalKind.UPDATE,
                    title=clip(f"Update {name} ({tf.topic.name}): "
                               + ("renamed " if all(c.replace is None for c in stale) else "") + _changes(stale), 160),
                    summary=_evidence_text(stale) + ". The entry is updated to say so.", target=file,
                    files={file: (tf.data, renamed)}, index_path=index_rel,
                    index_edits=((name, entry.raw, _renamed(entry.raw, stale)),) if entry is not None else (),
                    evidence=(), fingerprint=fp, review=review_id, created=now,
                    premise=premise_of(STALE_PREMISE, fp))
            elif stale:
                fp = _retire_fingerprint(index_rel, name, tf.data)
                d = _retire_draft(index_rel, name, tf.topic.name, file, tf.data, entry.raw if entry else None,
                                  _evidence_text(stale) + ". Accept to retire it, or edit it before accepting.",
                                  clip(f"Retire {name} ({tf.topic.name}): what it cites changed", 160), review_id,
                                  now, premise=premise_of(STALE_PREMISE, fp))
            else:
                assert confirmed is not None
                fp = revalidate_fingerprint(index_rel, name, tf.data, confirmed)
                d = _retire_draft(index_rel, name, tf.topic.name, file, tf.data, entry.raw if entry else None,
                                  f"No session or verification confirmed it for {age} days (revalidateDays {days}).",
                                  clip(f"Revalidate or retire {name} ({tf.topic.name}): not confirmed since "
                                       f"{confirmed}", 160), review_id, now,
                                  premise=premise_of(AGED_PREMISE, fp), fingerprint=fp)
            # the one proposal that answers the topic now: one made before for what it was is no longer live
            mark["proposal"] = proposal_key(fp)
            if (d.fingerprint not in known or _went_back(ms, made, d.fingerprint, tf.data)) and not (
                    not stale and _asked_before(made, _retire_fingerprint(index_rel, name, tf.data), confirmed)):
                drafts.append(d)

    def keep_confirmed(current: dict[str, Any]) -> dict[str, Any]:
        # a confirmation recorded while this run checked (confirm_topic) is the user's word: it stays
        for file, mark in marks.items():
            theirs = mark_of(current, file).get("confirmed")
            if isinstance(theirs, str) and theirs > str(mark.get("confirmed") or ""):
                mark["confirmed"] = theirs
        return marks

    _update_marks(ms, keep_confirmed)
    proposals = _propose(ms, drafts, review_id, now) if drafts else []
    read, lines = verify_instructions(ms, tree)
    _save_stale_lines(ms, read, lines)
    lines = [{k: v for k, v in row.items() if k != "key"} for row in lines]
    # an instruction file there but never read (a link, a FIFO, a folder, too large) is said, not skipped unsaid;
    # a link to an instruction file of the workspace that was checked (CLAUDE.md -> AGENTS.md) was checked with it,
    # as `cairn agents` reads it
    refused = [{"file": rel, "code": code} for rel in dict.fromkeys([*ms.settings.instructionFiles, *AGENT_FILES])
               if not os.path.isabs(rel) and (code := refused_code(ms.workspace, rel))
               and not (code == ErrorCode.PATH_SYMLINK and _linked_to(ms.workspace, rel) in read)]
    return {"checked": len(rows), "stale": sum(1 for r in rows if r["stale"]),
            "instructionFiles": read, "instructions": lines, "instructionRefused": refused,
            "unverifiable": sum(1 for r in rows for c in r["citations"] if c["verdict"] == UNVERIFIABLE),
            "broken": sum(1 for r in rows if "error" in r), "proposals": proposals, "topics": rows,
            "review": review_id if proposals else None, "overBudget": over}


def _linked_to(workspace: str, rel: str) -> str | None:
    """The workspace file the link ``rel`` names (read as text, never followed), or None; None too when a folder
    on the way to ``rel`` is itself a link (what is read then lies wherever that folder leads)."""
    parts = rel.split("/")
    try:
        for i in range(1, len(parts)):
            if os.path.islink(os.path.join(workspace, *parts[:i])):
                return None
        dest = os.readlink(os.path.join(workspace, rel))
    except OSError:
        return None
    return agents.link_target(workspace, rel, dest)


def verify_instructions(ms: MemoryStore, tree: Callable[[], Tree]) -> tuple[list[str], list[dict[str, Any]]]:
    """The instruction files agents load every session (``instructionFiles`` and the agents' own files
    :data:`AGENT_FILES`, those at hand), each line checked like a topic's text (:func:`verify_entry`, the lines
    before it as context): (the files read, ``{file, line, why}`` for each stale line). The files are the
    user's: a stale line is reported, never rewritten, and nothing is proposed. A line naming a memory root
    (the pointer ``cairn agents wire`` writes) is cairn's own and not judged; a link, a FIFO or a huge file is
    never read."""
    roots = _roots(ms)
    read: list[str] = []
    out: list[dict[str, Any]] = []
    for rel in dict.fromkeys([*ms.settings.instructionFiles, *AGENT_FILES]):
        if os.path.isabs(rel) or not (lines := read_lines(ms.workspace, rel)):
            continue
        read.append(rel)
        for i, line in enumerate(lines):
            if not line.strip() or any(root.rstrip("/") in line for root in roots):
                continue
            stale = [c.reason for c in verify_entry(ms.workspace, line, tree=tree(), context=lines[:i],
                                                    base=posixpath.dirname(rel)) if c.verdict == STALE]
            if stale:
                out.append({"file": rel, "line": i + 1, "why": stale, "key": line_key(line)})
    return read, out


def _save_stale_lines(ms: MemoryStore, read: list[str], lines: list[dict[str, Any]]) -> None:
    """Keep what :func:`verify_instructions` found for the editor (:data:`marks.LINES`): every file read,
    each with its stale lines (a line's hash, never its text). Replaced whole by each verification; of two
    at once the later rename stands, and either one's lines are only shown where a line's text still is
    what was checked."""
    files: dict[str, list[dict[str, Any]]] = {rel: [] for rel in read}
    for row in lines:
        files[row["file"]].append({"line": row["line"], "key": row["key"], "why": row["why"]})
    d = ms.root.descend(M, create=True)
    try:
        d.replace(LINES, json.dumps({"files": files}, sort_keys=True, ensure_ascii=True).encode("ascii"))
    finally:
        d.close()


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

    Costs a few ``lstat`` calls when nothing changed; without a memory root or an instruction file agents
    load (whose stale lines the editor marks) it does nothing at all.
    """
    ws = ms.workspace
    if not any(os.path.isdir(os.path.join(ws, r)) for r in _roots(ms)) and not any(
            os.path.isfile(os.path.join(ws, rel)) for rel in (*ms.settings.instructionFiles, *AGENT_FILES)
            if not os.path.isabs(rel)):
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
    # counts and ids only: the reasons name the workspace's paths and targets
    return {**{k: v for k, v in result.items() if k not in ("topics", "instructions", "instructionFiles")},
            "staleInstructionLines": len(result["instructions"])}



# -- one topic, at the user's word: retire it, or confirm it is still true ------------------------

def _snapshot(ms: MemoryStore, root: str) -> model.MemorySnapshot | None:
    path = os.path.join(ms.workspace, root)
    return model.read_root(Path(path), workspace=ms.workspace) if os.path.isdir(path) else None


def _one_topic(ms: MemoryStore, file: str) -> tuple[str, str, model.TopicFile, Any]:
    """(memory root, topic name, topic file, index entry or None) of ``file``, as the user typed it.

    ``file`` is a topic file of one of the workspace's memory roots (``.agents/memory`` and relative
    ``memoryRoots``), workspace-relative as ``cairn memory`` lists it, or a bare file name (no folder part),
    looked up in every memory root. ``/`` and ``\\`` both separate its parts. Anything else (a path outside
    the roots, a file that is not a topic, a bare name no root has) is ``E_NOT_FOUND``; a bare name that
    several roots have is ``E_USAGE`` (name its folder too); a topic whose front matter is broken is
    ``E_TOPIC_FRONT_MATTER`` (reported, never rewritten)."""
    typed = str(file).replace("\\", "/").replace(os.sep, "/") if file else ""
    rel = posixpath.normpath(typed) if typed else ""
    found: list[tuple[str, str, model.MemorySnapshot]] = []
    if rel and "/" not in rel and rel not in (".", ".."):  # a bare name: whichever memory root has it
        seen: set[str] = set()
        for root in _roots(ms):
            if posixpath.normpath(root) in seen:
                continue  # one folder named twice (".agents/memory/" in memoryRoots) is one root
            seen.add(posixpath.normpath(root))
            snap = _snapshot(ms, root)
            if snap is not None and rel in snap.topics:
                found.append((root, rel, snap))
        if len(found) > 1:
            places = ", ".join(posixpath.join(root, rel) for root, _, _ in found)
            raise CairnError(ErrorCode.USAGE, f"{len(found)} memory roots have a topic {clip(rel, 120)!r} "
                                              f"({clip(places, 300)}): name the one you mean with its folder")
    else:
        for root in _roots(ms):
            prefix = posixpath.normpath(root) + "/"
            if not rel.startswith(prefix) or "/" in rel[len(prefix):]:
                continue
            snap = _snapshot(ms, root)
            if snap is not None and rel[len(prefix):] in snap.topics:
                found.append((root, rel[len(prefix):], snap))
            break
    if not found:
        raise CairnError(ErrorCode.NOT_FOUND, f"no memory topic {clip(rel, 120)!r} (`cairn memory` lists them)")
    root, name, snap = found[0]
    tf = snap.topics[name]
    if tf.topic is None:
        raise CairnError(ErrorCode.TOPIC_FRONT_MATTER, f"{posixpath.join(root, name)}: its front matter is not "
                                                       "readable; fix it by hand (cairn doctor names the problem)")
    try:
        index = snap.parsed_index()
    except CairnError:
        index = None
    return root, name, tf, index.entry(name) if index is not None else None


def _retires(p: Any, file: str, sha: str) -> bool:
    """Whether proposal ``p`` retires topic ``file`` (workspace-relative) as it is now (bytes hashing to ``sha``):
    the user's own retirement or a verification's, whatever its fingerprint."""
    return p.kind is ProposalKind.DELETE and p.target == file and any(
        f.path == file and f.before == sha and f.after is None for f in p.files)


def retire_topic(ms: MemoryStore, file: str, *, now: float | None = None) -> dict[str, Any]:
    """Propose the retirement of one topic the user chose (the cockpit's Memories view, ``cairn memory retire``).

    An ordinary proposal (diff, accept, reject, undo); nothing is removed until it is accepted. A pending
    retirement of the same topic file and bytes (this user's or a verification's) is answered with its id
    (``new`` false), not proposed twice; one decided before (rejected, undone) is proposed again.
    """
    now = ms.now() if now is None else now
    root, name, tf, entry = _one_topic(ms, file)
    assert tf.topic is not None
    rel = posixpath.join(root, name)
    index_rel = posixpath.join(root, model.INDEX_NAME)
    full = hashlib.sha256(tf.data).hexdigest()
    sha = full[:16]
    fingerprint = repair_fingerprint("user-retire", index_rel, f"{name}\0{sha}")
    earlier = False
    for pid in proposal_ids(ms):
        p = load_proposal(ms, pid)
        # by what it does, not by its fingerprint: one proposed again after a rejection has its own
        if _retires(p, rel, full) and state_of(ms, p)[0] is ProposalState.PENDING:
            return {"file": rel, "proposal": pid, "new": False}
        if p.fingerprint == fingerprint:
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


def confirm_accepted(ms: MemoryStore, written: Iterable[str], *, now: float | None = None) -> list[str]:
    """The user accepted a proposal that wrote ``written``: each topic file among them is confirmed today (its
    mark's ``confirmed``, as :func:`confirm_topic` records it), so a memory made from an old session is not
    "due for revalidation" the moment the user said yes to it. Index files, files of no memory root and
    removed files are skipped. A topic marked stale is checked again as it now reads (one topic: what an
    accepted update fixed is no longer shown stale, in the cockpit or by `cairn memory`, and `confirm` takes
    it; what it did not fix stays marked). Private state only; returns the topic files confirmed. Auto mode's
    applications are nobody's word and do not come here."""
    roots = [posixpath.normpath(r) for r in _roots(ms)]
    files = sorted({f for f in written if posixpath.basename(f) != model.INDEX_NAME and f.endswith(".md")
                    and posixpath.dirname(posixpath.normpath(f)) in roots
                    and os.path.isfile(os.path.join(ms.workspace, f))})
    if not files:
        return []
    today = _date(ms.now() if now is None else now)
    marked = load_marks(ms.workspace)
    again = {f: _rechecked(ms, f, today) for f in files if mark_of(marked, f).get("stale")}

    def confirmed(marks: dict[str, Any]) -> dict[str, Any]:
        out = dict(marks)
        for f in files:
            out[f] = {**mark_of(marks, f), **(again.get(f) or {}), "confirmed": today}
        return out

    _update_marks(ms, confirmed)
    return files


def _rechecked(ms: MemoryStore, file: str, today: str) -> dict[str, Any] | None:
    """The verification marks of one topic as it reads now (as :func:`verify` records them), None when it
    cannot be read as a topic (its mark is left as it was)."""
    try:
        _root, _name, tf, _entry = _one_topic(ms, file)
    except CairnError:
        return None
    if tf.topic is None:
        return None
    checks = verify_entry(ms.workspace, tf.topic.body, tf.topic.citations, exclude=_roots(ms))
    stale = [c for c in checks if c.verdict == STALE]
    out: dict[str, Any] = {"stale": [c.reason for c in stale], "checked": today,
                           "unverifiable": [{"path": c.citation.path, "code": c.code} for c in checks
                                            if c.verdict == UNVERIFIABLE]}
    if checks and not stale and any(c.verdict == OK for c in checks):
        out["verified"] = today
    return out


def confirm_topic(ms: MemoryStore, file: str, *, now: float | None = None) -> dict[str, Any]:
    """The user says one topic is still true: its mark records ``confirmed`` today, so it is no longer due
    for revalidation (private state only; the topic file is not rewritten), and a pending "revalidate or
    retire" proposal of the topic as it is now is rejected (``rejected``: their ids). A stale topic is
    refused (``E_TOPIC_STALE``): what it cites changed, and the next verification would mark it again."""
    now = ms.now() if now is None else now
    root, name, tf, _entry = _one_topic(ms, file)
    rel = posixpath.join(root, name)
    today = _date(now)

    def confirmed(marks: dict[str, Any]) -> dict[str, Any]:
        # the marks as they are at the write (_update_marks): a verification that just marked it stale refuses it
        mark = dict(mark_of(marks, rel))
        if mark.get("stale"):
            raise CairnError(ErrorCode.TOPIC_STALE, f"{rel} is stale ({clip('; '.join(map(str, mark['stale'])), 160)}):"
                                                    " update it or retire it")
        mark["confirmed"] = today
        return {**marks, rel: mark}

    _update_marks(ms, confirmed)
    # the "revalidate or retire" proposal of these bytes is answered: the user keeps the topic
    from cairn.worker.memory.apply import reject  # cold start: as the review machinery in _propose

    legacy = _retire_fingerprint(posixpath.join(root, model.INDEX_NAME), name, tf.data)  # made before periods
    answered = []
    for pid in proposal_ids(ms):
        p = load_proposal(ms, pid)
        asks = (p.target == rel and (p.premise or "").startswith(AGED_PREMISE + ":")
                or p.fingerprint == legacy and p.premise is None)
        if asks and _retires(p, rel, hashlib.sha256(tf.data).hexdigest()) and \
                state_of(ms, p)[0] is ProposalState.PENDING:
            reject(ms, pid)
            answered.append(pid)
    return {"file": rel, "confirmed": today, "rejected": answered}
