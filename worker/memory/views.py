"""Read-only views for the cockpit, the CLI and code actions.

Observations only: a proposal's state comes from its private accepted
decisions (never from public records) and, while pending, from a fresh
comparison with the current files (stale when its before-state no longer
holds).

Imports inside functions: the topic files' model (yaml) loads only for the
views that read memory files (:func:`memory_rows`, a proposal's diff), so
the proposal rows and the status counts (``status`` job, the language
server's status) start without it. Measured with ``python -X importtime``:
16 ms more for those with it at the top.
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.memory import Proposal, ProposalState
from cairn.protocol.settings import Settings
from cairn.worker.memory import diff
from cairn.worker.memory.apply import (
    _read_current,
    _resolve,
    decisions,
    load_intent,
    load_proposal,
    proposal_ids,
    rebased_file,
    state_of,
)
from cairn.worker.memory.edited import editable
from cairn.worker.memory.marks import load_marks, mark_of
from cairn.worker.memory.store import DEFAULT_ROOT, MemoryStore


def _store(workspace: str, settings: Settings | None) -> MemoryStore:
    return MemoryStore(workspace, settings)


def _rows(ms: MemoryStore) -> list[tuple[Proposal, ProposalState, str, list[Any]]]:
    out = []
    for pid in proposal_ids(ms):
        p = load_proposal(ms, pid)
        state, why = state_of(ms, p)
        out.append((p, state, why, decisions(ms, pid)))
    return out


def proposal_rows(workspace: str, settings: Settings | None = None) -> list[dict[str, Any]]:
    with _store(workspace, settings) as ms:
        return [{"id": p.id, "kind": str(p.kind), "target": p.target, "title": p.title, "state": str(state),
                 "summary": p.summary, "evidence": list(p.evidence), "reason": why, "review": p.review,
                 "decided": ds[-1].decided if ds else None, "created": p.created}
                for p, state, why, ds in _rows(ms)]


def pending_count(workspace: str, settings: Settings | None = None) -> int:
    if not os.path.isdir(os.path.join(workspace, ".cairn", "state", "memory")):
        return 0
    # pending or stale is every proposal not decided since (or pending again): no file needs reading to
    # count them, so the status the editor polls never runs the freshness checks
    with _store(workspace, settings) as ms:
        return sum(1 for pid in proposal_ids(ms)
                   if not (ds := decisions(ms, pid)) or ds[-1].state is ProposalState.PENDING)


def memory_rows(workspace: str, settings: Settings | None = None) -> list[dict[str, Any]]:
    from cairn.worker.memory import model  # yaml: module docstring

    settings = settings or Settings()
    rows = []
    marks = load_marks(workspace)
    today = _today()
    roots = [DEFAULT_ROOT, *settings.memoryRoots]
    for root in roots:
        path = root if os.path.isabs(root) else os.path.join(workspace, root)
        if not os.path.isdir(path):
            continue
        snap = model.read_root(Path(path), workspace=workspace)
        # a *.md never read (a symlink, a FIFO, too large) is listed with its code, not left out unsaid
        rows += [{"file": os.path.join(root, name), "name": name, "type": "", "description": "", "root": root,
                  **provenance_row(os.path.join(root, name), None, marks, settings.revalidateDays, today),
                  "error": str(code),
                  "refused": True} for name, code in sorted(snap.refused.items()) if name != model.INDEX_NAME]
        for name, topic in sorted(snap.topics.items()):
            file = os.path.join(root, name)
            rows.append({"file": file, "name": topic.name, "type": topic.type, "description": topic.description,
                         "root": root, **provenance_row(file, topic.topic, marks, settings.revalidateDays, today),
                         **({"error": str(topic.error or ErrorCode.TOPIC_FRONT_MATTER)} if topic.topic is None
                            else {})})
    return rows


def _today() -> str:
    """Today (UTC, ``YYYY-MM-DD``) on the clock verification dates marks by: this machine's, moved on by
    ``CAIRN_TEST_CLOCK_OFFSET`` seconds as the journal's is (:class:`~cairn.worker.journal.store.Journal`),
    so that a topic ``cairn memory verify`` finds due is listed due."""
    import datetime as dt
    import time

    offset = float(os.environ.get("CAIRN_TEST_CLOCK_OFFSET", "0") or 0)
    return dt.datetime.fromtimestamp(time.time() + offset, dt.UTC).strftime("%Y-%m-%d")


def provenance_row(file: str, topic: Any, marks: dict[str, Any], revalidate: int = 90,
                   today: str | None = None) -> dict[str, Any]:
    """A topic's ``sources``, ``citations`` (as recorded), ``confirmed``, and its last verification's
    ``verified`` date, ``stale`` flag and reasons (``why``), ``unverifiable`` codes (private marks);
    ``age`` and ``due`` as of ``today`` (default: :func:`_today`)."""
    from cairn.worker.memory.verify import last_confirmed  # yaml: module docstring

    mark = mark_of(marks, file)
    today = today or _today()
    if topic is None:
        return {"sources": None, "citations": [], "confirmed": None, "verified": None, "stale": False, "why": [],
                "age": None, "due": False}
    confirmed = last_confirmed(topic, mark, today)
    cites = topic.citations if isinstance(topic.citations, list) else ([] if topic.citations is None
                                                                          else [topic.citations])
    return {"sources": _plain(topic.sources), "citations": _plain(cites),
            "confirmed": confirmed, "verified": mark.get("verified"),
            "stale": bool(mark.get("stale")), "why": list(mark.get("stale") or []),
            "unverifiable": list(mark.get("unverifiable") or []), **_age(confirmed, revalidate, today)}


def _age(confirmed: str | None, revalidate: int, today: str) -> dict[str, Any]:
    """``age``: whole days from ``confirmed`` to ``today`` (None: never confirmed); ``due``: older than
    ``revalidate`` days."""
    import datetime as dt

    try:
        age = (dt.date.fromisoformat(today) - dt.date.fromisoformat(confirmed)).days if confirmed else None
    except ValueError:
        age = None
    return {"age": age, "due": age is not None and revalidate > 0 and age > revalidate}


def _plain(value: Any) -> Any:
    """YAML values as JSON can carry them (a date becomes its ISO text)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # JSON has no infinity nor NaN
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def cockpit(workspace: str, view: str, settings: Settings | None = None) -> list[dict[str, Any]]:
    if view == "memories":
        return memory_rows(workspace, settings)
    rows = proposal_rows(workspace, settings)
    if view == "candidates":  # newest proposal first, as History lists the newest decision first
        return sorted((r for r in rows if r["state"] in ("pending", "stale")), key=lambda r: (-r["created"], r["id"]))
    if view == "history":
        return history_rows(workspace, settings)
    if view == "overview":
        return overview_rows(workspace, settings)
    raise CairnError(ErrorCode.USAGE, f"unknown cockpit view {view[:30]!r}")


#: decisions the overview's "Recently decided" section lists, newest first
RECENT_DECISIONS = 10


def overview_rows(workspace: str, settings: Settings | None = None) -> list[dict[str, Any]]:
    """The memory part of the cockpit's overview, one typed row per item, each with its ``section``:

    - ``pending``: the pending and stale proposals (``group``: the target topic file), grouped by target,
      newest first within a group;
    - ``stale``: topics the last verification marked stale (``why``) or due for revalidation (``due``:
      not confirmed for ``revalidateDays``), with ``age`` (days since ``confirmed``);
    - ``decided``: the newest :data:`RECENT_DECISIONS` rows of the reflog (:func:`history_rows`).

    The language server adds ``jobs`` and ``sessions`` rows (what only it knows).
    """
    out: list[dict[str, Any]] = []
    pending = [r for r in proposal_rows(workspace, settings) if r["state"] in ("pending", "stale")]
    pending.sort(key=lambda r: (r["target"], -r["created"], r["id"]))
    out += [dict(r, section="pending", group=r["target"]) for r in pending]
    stale = [r for r in memory_rows(workspace, settings) if r["stale"] or r["due"]]
    out += [dict(r, section="stale") for r in sorted(stale, key=lambda r: (not r["stale"], -(r["age"] or 0), r["file"]))]
    out += [dict(r, section="decided") for r in history_rows(workspace, settings)[:RECENT_DECISIONS]]
    return out


def history_rows(workspace: str, settings: Settings | None = None) -> list[dict[str, Any]]:
    """The reflog of decisions: one row per decision, newest first, with its time and action.

    ``state`` is what the decision made the proposal; the newest row of each proposal also says
    what can be done now: ``canUndo`` (applied), ``canUnreject`` (rejected), ``canAccept``
    (undone: accepted again through the checked path).
    """
    out: list[dict[str, Any]] = []
    with _store(workspace, settings) as ms:
        for p, state, _why, ds in _rows(ms):
            for d in ds:
                latest = d is ds[-1]
                shown = "superseded" if d.action == "supersede" else str(d.state)  # an edited version replaced it
                out.append({"id": p.id, "seq": d.seq, "action": d.action, "state": shown,
                            "decided": d.decided, "kind": str(p.kind), "target": p.target, "title": p.title,
                            "review": p.review, "evidence": list(p.evidence), "now": str(state),
                            "canUndo": latest and state is ProposalState.APPLIED,
                            "canUnreject": latest and state is ProposalState.REJECTED,
                            "canAccept": latest and state is ProposalState.UNDONE})
    return sorted(out, key=lambda r: (-r["decided"], r["id"], -r["seq"]))


def _file_pairs(ms: MemoryStore, p: Proposal) -> list[tuple[str, bytes | None, bytes | None]]:
    """(path, before bytes, after bytes) for every affected file, index included."""
    from cairn.worker.memory import model  # yaml: module docstring

    ds = decisions(ms, p.id)
    if ds and ds[-1].write:
        # decided: show what was written (or reverted)
        intent = load_intent(ms, ds[-1].write)
        target, rels = _resolve(ms, p)
        back = {v: k for k, v in rels.items()}
        return [(back.get(f.path, f.path), ms.mbundles.get(f.before_bundle) if f.before_bundle else None,
                 ms.mbundles.get(f.after_bundle) if f.after_bundle else None) for f in intent.files]
    if (rebased := rebased_file(ms, p)) is not None:
        return [rebased]  # only cairn changed its file since: what accepting it writes to the file as it is now
    out: list[tuple[str, bytes | None, bytes | None]] = []
    for f in p.files:
        out.append((f.path, ms.mbundles.get(f.before_bundle) if f.before_bundle else None,
                    ms.mbundles.get(f.after_bundle) if f.after_bundle else None))
    by_index: dict[str, list[tuple[str, str | None, str | None]]] = {}
    for e in p.index:
        by_index.setdefault(e.index, []).append((e.file, e.before, e.after))
    if by_index:
        target, rels = _resolve(ms, p)
        base, tclaims = ms.target_stores(target)
        try:
            current = _read_current(base, [rels[i] for i in by_index])
        finally:
            tclaims.close()
        for index, edits in by_index.items():
            before = current[rels[index]]  # None: the index does not exist yet (the diff creates it)
            try:
                after: bytes | None = model.apply_index_edits(before or b"", edits)
            except CairnError:
                after = before  # stale entry: nothing this proposal could write
            out.append((index, before, after))
    return out


def proposal(workspace: str, proposal_id: str, settings: Settings | None = None) -> dict[str, Any]:
    with _store(workspace, settings) as ms:
        p = load_proposal(ms, proposal_id)
        state, why = state_of(ms, p)
        text = "".join(diff.unified_diff(path, b, a) for path, b, a in _file_pairs(ms, p))
        out: dict[str, Any] = {"id": p.id, "kind": str(p.kind), "target": p.target, "title": p.title, "summary": p.summary,
               "state": str(state), "reason": why, "evidence": list(p.evidence), "diff": text}
        if state is ProposalState.PENDING and (proposed := editable(ms, p)) is not None:
            # the one file it writes, its proposed text (edit before accept) and the index lines it writes
            out["edit"] = dict(proposed, index=[{"index": e.index, "file": e.file, "before": e.before,
                                                 "after": e.after} for e in p.index])
        return out


def check_edited(workspace: str, proposal_id: str, text: str, settings: Settings | None = None) -> dict[str, Any]:
    """``cairn/checkEdited``: what accepting ``text`` as the edited version would do (nothing written)."""
    from cairn.worker.memory.edited import preview

    with _store(workspace, settings) as ms:
        return preview(ms, proposal_id, text)


def _changed_ranges(before: bytes | None, after: bytes | None) -> list[dict[str, int]]:
    a = (before or b"").decode("utf-8", "replace").splitlines()
    b = (after or b"").decode("utf-8", "replace").splitlines()
    ranges = []
    for tag, i1, i2, _j1, _j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        start = min(i1, max(len(a) - 1, 0))
        ranges.append({"startLine": start, "endLine": max(start, i2 - 1)})
    return ranges


def pending_for_file(workspace: str, path: str, settings: Settings | None = None) -> list[dict[str, Any]]:
    """Pending proposals touching ``path`` (absolute or workspace-relative), with the lines they change."""
    return pending_for_files(workspace, [path], settings)[path]


def pending_for_files(workspace: str, paths: Iterable[str],
                      settings: Settings | None = None) -> dict[str, list[dict[str, Any]]]:
    """:func:`pending_for_file` for each of ``paths`` in one pass over the proposals."""
    wanted = {f: os.path.relpath(f, workspace) if os.path.isabs(f) else os.path.normpath(f) for f in paths}
    by_rel: dict[str, list[str]] = {}
    for f, rel in wanted.items():
        by_rel.setdefault(rel, []).append(f)
    out: dict[str, list[dict[str, Any]]] = {f: [] for f in wanted}
    if not wanted:
        return out
    with _store(workspace, settings) as ms:
        for p, state, _why, _ds in _rows(ms):
            if state is not ProposalState.PENDING:
                continue
            done: set[str] = set()
            for fpath, before, after in _file_pairs(ms, p):
                rel = os.path.normpath(fpath)
                if rel in done or rel not in by_rel:
                    continue
                done.add(rel)
                row = {"id": p.id, "title": p.title, "kind": str(p.kind), "ranges": _changed_ranges(before, after)}
                for asked in by_rel[rel]:
                    out[asked].append(dict(row))
    return out
