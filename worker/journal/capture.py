"""Capture and seal: freezing completed turns as evidence, closing captures.

Each completed root turn becomes one immutable :class:`TurnEvidence` bundle
(descriptor, evidence and frozen model policy in one exclusively created
file). Within the session's claim, a turn is written in this order:
evidence bundle → pin in the capture → turn index → ready entry. The ready
entry comes last, so a capture never lists a turn whose evidence is not
pinned. A crash between the index and the entry is repaired on the next
capture of the same turn (the index names its capture; the missing entry is
added), so a turn is never lost and never captured twice.

Sealing publishes ``seal`` exclusively: repeated sealing keeps the first
trigger. An empty capture is never sealed.
"""

from __future__ import annotations

import os
from typing import Any

from cairn.protocol import codec
from cairn.protocol.digest import ModelPolicy
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.journal import (
    TURN_SNAPSHOT_LIMIT,
    CaptureTurn,
    Seal,
    SessionInfo,
    TurnEvidence,
    TurnIndex,
)
from cairn.protocol.transcript import Session, Turn
from cairn.protocol.vocab import OpStatus, OutcomeKind, Trigger
from cairn.protocol.worker import WorkerRequest
from cairn.state import program as P
from cairn.state.claims import Claim
from cairn.worker.journal.store import CAPTURES, SESSIONS, TURNS, Journal, capture_id, h, session_dir

SESSION_TTL = 60.0


def policy_from_config(config: dict[str, Any]) -> ModelPolicy:
    provider = str(config.get("provider", "extractive"))
    if provider == "extractive":
        return ModelPolicy(provider="extractive")
    timeout = config.get("timeoutSeconds", 120.0)
    return ModelPolicy(provider=provider, model=str(config.get("model", "")), endpoint=str(config.get("endpoint", "")),
                       timeout_seconds=float(timeout) if isinstance(timeout, (int, float)) else 120.0)


def _session_record_path(sid: str) -> str:
    return f"{SESSIONS}/{session_dir(sid)}/session.json"


def current_capture(j: Journal, session_id: str) -> tuple[str | None, int, bool]:
    """(capture id or None, its number, sealed?) of a session's newest capture."""
    names = j.names(f"{SESSIONS}/{session_dir(session_id)}")
    ks = [int(n[2:]) for n in names if n.startswith("c-") and n[2:].isdigit()]
    if not ks:
        return None, 0, False
    k = max(ks)
    cid = capture_id(session_id, k)
    sealed = j.read_many([f"{CAPTURES}/{cid}/seal"])[f"{CAPTURES}/{cid}/seal"] is not None
    return cid, k, sealed


def _evidence(session: Session, turn: Turn, source: str, policy: ModelPolicy) -> TurnEvidence:
    size = len(turn.user.encode("utf-8")) + len(turn.assistant.encode("utf-8"))
    oversized = size > TURN_SNAPSHOT_LIMIT
    return TurnEvidence(
        session_id=session.session_id, turn_id=turn.turn_id, parent_turn_id=turn.parent_turn_id,
        user="" if oversized else turn.user, assistant="" if oversized else turn.assistant,
        completed_at=turn.completed_at, source=source, title=session.title, oversized=oversized, size=size,
        policy=policy,
    )


def capture_session(j: Journal, session: Session, *, source: str, policy: ModelPolicy) -> dict[str, Any]:
    """Capture every not-yet-captured turn of ``session``; idempotent."""
    sid = session.session_id
    sdir = session_dir(sid)
    claim = j.claims.elect(f"session/{sdir}", purpose="capture", ttl=SESSION_TTL, authority=j.authority)
    try:
        result = _capture_owned(j, claim, session, source=source, policy=policy)
    except BaseException:
        _settle_quietly(j, claim)
        raise
    # the turns are captured (each batch fenced on its own): a late completion does not undo them
    j.claims.finish(claim, payload={"captured": result["captured"]})
    return result


def _settle_quietly(j: Journal, claim: Claim) -> None:
    try:
        j.claims.settle(claim, OutcomeKind.FAILED, error=str(ErrorCode.INTERNAL))
    except CairnError:
        pass


def _capture_owned(j: Journal, claim: Claim, session: Session, *, source: str, policy: ModelPolicy) -> dict[str, Any]:
    sid = session.session_id
    sdir = session_dir(sid)
    now = claim.record.created
    index_paths = {t.turn_id: f"{TURNS}/{h(sid + chr(0) + t.turn_id)}" for t in session.turns}
    known = j.read_many(index_paths.values())
    cid, k, sealed = current_capture(j, sid)
    setup: list[P.Op] = [P.EnsureDir(f"{SESSIONS}/{sdir}"), P.EnsureDir(TURNS)]
    if j.read_many([_session_record_path(sid)])[_session_record_path(sid)] is None:
        setup.append(P.Link(_session_record_path(sid), codec.encode(SessionInfo(session_id=sid, title=session.title)),
                            optional=True))
    indexed: dict[str, str] = {}  # turn id -> capture named by its existing index
    for t in session.turns:
        raw = known[index_paths[t.turn_id]]
        if raw is not None:
            indexed[t.turn_id] = codec.decode(raw, TurnIndex, where=index_paths[t.turn_id]).capture
    # a turn indexed in a capture whose ready entry is missing (crash window) is finished, not skipped
    entries = j.read_many(f"{CAPTURES}/{c}/t-{h(t)}" for t, c in indexed.items()) if indexed else {}
    retired = j.read_many(f"{CAPTURES}/{c}/retired" for c in set(indexed.values())) if indexed else {}
    todo: list[tuple[Turn, bool]] = []  # (turn, repair?) in session order, so seq follows the session
    for t in session.turns:
        c = indexed.get(t.turn_id)
        if c is None:
            todo.append((t, False))
        elif entries[f"{CAPTURES}/{c}/t-{h(t.turn_id)}"] is None and retired[f"{CAPTURES}/{c}/retired"] is None:
            # indexed but never made ready (a crash window): finish it. A retired capture's
            # entries are gone on purpose (evidence retention); its turns stay covered.
            todo.append((t, True))
    if not todo:
        j.claims.guarded(claim, setup)
        return {"captured": 0, "skipped": len(session.turns), "capture": cid}
    if cid is None or sealed:
        k += 1
        cid = capture_id(sid, k)
        setup += [P.EnsureDir(f"{CAPTURES}/{cid}"), P.Create(f"{SESSIONS}/{sdir}/c-{k:04d}", optional=True)]
    else:
        setup.append(P.EnsureDir(f"{CAPTURES}/{cid}"))
    j.claims.guarded(claim, setup)
    seq0 = len([n for n in j.names(f"{CAPTURES}/{cid}") if n.startswith("t-")])
    for start in range(0, len(todo), 16):
        ops: list[P.Op] = []
        for i, (t, repair) in enumerate(todo[start : start + 16]):
            ev = _evidence(session, t, source, policy)
            sha, put = j.evidence.put_ops(codec.encode(ev))
            th = h(t.turn_id)
            ops += put
            ops.append(P.Create(f"{CAPTURES}/{cid}/pin-{sha}", optional=True))
            index = codec.encode(TurnIndex(turn_id=t.turn_id, session_id=sid, capture=cid))
            ops.append(P.Write(index_paths[t.turn_id], index) if repair else P.Link(index_paths[t.turn_id], index))
            entry = CaptureTurn(capture=cid, seq=seq0 + start + i, turn_id=t.turn_id, bundle=sha, captured_at=now)
            ops.append(P.Link(f"{CAPTURES}/{cid}/t-{th}", codec.encode(entry), optional=True))
        res = j.claims.guarded(claim, ops)
        bad = [r for r in res.results if r.status is OpStatus.FAILED]
        if bad or not res.ok and any(r.status is OpStatus.SKIPPED for r in res.results):
            first = next(r for r in res.results if r.status not in (OpStatus.OK, OpStatus.CONFLICT))
            raise CairnError(first.code or ErrorCode.CAPTURE_STATE, first.message or "capture program stopped")
    return {"captured": len(todo), "skipped": len(session.turns) - len(todo), "capture": cid}


def seal_session(j: Journal, session_id: str, trigger: Trigger, *, quiet_before: float | None = None) -> str | None:
    """Seal the session's open capture; returns its id when this call or an earlier one sealed it now.

    With ``quiet_before`` (target-clock time), seal only if the newest ready
    turn was captured before it (idle sealing).
    """
    sdir = session_dir(session_id)
    claim = j.claims.elect(f"session/{sdir}", purpose=f"seal:{trigger}", ttl=SESSION_TTL, authority=j.authority)
    try:
        cid, _, sealed = current_capture(j, session_id)
        sealed_now = None
        if cid is not None and not sealed:
            entries = [n for n in j.names(f"{CAPTURES}/{cid}") if n.startswith("t-")]
            if entries:
                raws = j.read_many(f"{CAPTURES}/{cid}/{n}" for n in entries)
                last = max(codec.decode(r, CaptureTurn).captured_at for r in raws.values() if r is not None)
                if quiet_before is None or last <= quiet_before:
                    seal = Seal(capture=cid, session_id=session_id, trigger=trigger, sealed_at=claim.record.created,
                                turns=len(entries))
                    res = j.claims.guarded(claim, [P.Link(f"{CAPTURES}/{cid}/seal", codec.encode(seal), optional=True)])
                    sealed_now = cid if res[1].status is OpStatus.OK else None
    except BaseException:
        _settle_quietly(j, claim)
        raise
    j.claims.finish(claim, payload={"sealed": sealed_now or ""})  # a landed seal stands, late or not
    return sealed_now


def open_sessions(j: Journal) -> list[str]:
    """Session ids that have an unsealed capture."""
    out = []
    sdirs = j.names(SESSIONS)
    recs = j.read_many(f"{SESSIONS}/{s}/session.json" for s in sdirs)
    for raw in recs.values():
        if raw is None:
            continue
        sid = codec.decode(raw, SessionInfo).session_id
        cid, _, sealed = current_capture(j, sid)
        if cid is not None and not sealed:
            out.append(sid)
    return sorted(out)


# -- jobs -------------------------------------------------------------------

def job_capture(req: WorkerRequest) -> dict[str, Any]:
    """Capture the turns of one session: ``turns`` (a batch, in session order) or one ``turn``."""
    given = req.args.get("turns")
    raw = given if isinstance(given, list) else [req.args.get("turn") or {}]
    try:
        turns = tuple(Turn(turn_id=str(t["turn_id"]), parent_turn_id=t.get("parent_turn_id"), user=str(t["user"]),
                           assistant=str(t["assistant"]), completed_at=t.get("completed_at")) for t in raw)
        session_id = str(req.args["session_id"])
    except (KeyError, TypeError) as exc:
        raise CairnError(ErrorCode.USAGE, f"capture request lacks {exc}") from None
    if not turns:
        raise CairnError(ErrorCode.USAGE, "capture request has no turn")
    session = Session(session_id=session_id, source_format="lsp", title=req.args.get("title"), turns=turns)
    with Journal(req.workspace) as j:
        return capture_session(j, session, source=str(req.args.get("source", "lsp")), policy=policy_from_config(req.config))


def import_paths(j: Journal, paths: list[str], fmt: str, policy: ModelPolicy, *,
                 follow_symlinks: bool = True, only: frozenset[str] | None = None) -> dict[str, Any]:
    """Capture the sessions of ``paths``; ``only`` keeps the sessions with those ids (one
    workspace's sessions of a database shared by many); ``follow_symlinks=False`` refuses links."""
    from pathlib import Path

    from cairn.worker.importers import load_report

    files = sessions = captured = skipped = 0
    session_ids: list[str] = []
    malformed: list[dict[str, Any]] = []  # lines left out: file name, line number, code (never content)
    for p in paths:
        loaded = load_report(Path(p), fmt, follow_symlinks=follow_symlinks)
        files += 1
        malformed += [{"file": Path(p).name, "line": e.detail.get("line"), "code": str(e.code), "message": e.message}
                      for e in loaded.skipped]
        for s in loaded.sessions:
            if only is not None and s.session_id not in only:
                continue
            r = capture_session(j, s, source=f"import:{s.source_format}", policy=policy)
            sessions += 1
            captured += r["captured"]
            skipped += r["skipped"]
            session_ids.append(s.session_id)
    return {"files": files, "sessions": sessions, "captured": captured, "skipped": skipped, "session_ids": session_ids,
            "malformed": malformed}


def import_each(j: Journal, paths: list[str], fmt: str, policy: ModelPolicy) -> dict[str, Any]:
    """:func:`import_paths` file by file: a file that cannot be imported is listed in ``failed``
    (name and fixed code) and the others are imported (a batch of live files is not held
    hostage by one that vanished or is being rewritten)."""
    total: dict[str, Any] = {"files": 0, "sessions": 0, "captured": 0, "skipped": 0, "session_ids": [],
                             "malformed": [], "failed": []}
    for p in paths:
        try:
            r = import_paths(j, [p], fmt, policy)
        except CairnError as exc:
            if exc.code not in (ErrorCode.IMPORT_UNREADABLE, ErrorCode.IMPORT_TOO_LARGE,
                                ErrorCode.IMPORT_UNKNOWN_FORMAT, ErrorCode.IMPORT_MALFORMED):
                raise  # the journal's own failures fail the job (and it is retried)
            total["failed"].append({"file": os.path.basename(p), "code": str(exc.code)})
            continue
        for key in ("files", "sessions", "captured", "skipped"):
            total[key] += r[key]
        total["session_ids"] += r["session_ids"]
        total["malformed"] += r["malformed"]
    return total


def job_import(req: WorkerRequest) -> dict[str, Any]:
    """Import transcript files; with ``each`` (live watching), file by file (:func:`import_each`)."""
    paths = [os.path.join(req.workspace, p) if not os.path.isabs(p) else p for p in req.args.get("paths", [])]
    run = import_each if req.args.get("each") else import_paths
    with Journal(req.workspace) as j:
        return run(j, paths, str(req.args.get("format", "auto")), policy_from_config(req.config))


def _trigger(value: object) -> Trigger:
    try:
        return Trigger(str(value))
    except ValueError:
        raise CairnError(ErrorCode.USAGE, f"unknown trigger {str(value)[:40]!r}; expected one of "
                         + ", ".join(t.value for t in Trigger)) from None


def job_seal(req: WorkerRequest) -> dict[str, Any]:
    trigger = _trigger(req.args.get("trigger", "session-end"))
    with Journal(req.workspace) as j:
        sid = req.args.get("session_id")
        targets = [str(sid)] if sid else open_sessions(j)
        sealed = [c for c in (seal_session(j, s, trigger) for s in targets) if c]
    return {"sealed": sealed}


def job_seal_idle(req: WorkerRequest) -> dict[str, Any]:
    quiet = float(req.args.get("quiet_seconds", 20 * 60))
    with Journal(req.workspace) as j:
        cutoff = j.now() - quiet
        sealed = [c for c in (seal_session(j, s, Trigger.IDLE, quiet_before=cutoff) for s in open_sessions(j)) if c]
    return {"sealed": len(sealed), "captures": sealed}
