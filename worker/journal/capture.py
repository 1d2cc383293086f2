"""Capture and seal: freezing completed turns as evidence, closing captures.

Completed root turns are captured in *batches* (at most :data:`BATCH_TURNS`
turns and about :data:`BATCH_BYTES` of text each). A batch is written in one
guarded program, in this order: one immutable evidence segment (every turn of
the batch, addressable by turn id) → one pin of that segment in the capture →
one ready batch entry ``b-<seq>-<n>`` naming the turns in session order. The
entry comes last, so a capture never lists a turn whose evidence is not
pinned. Batch entries are also the turn index: a turn named by an entry of
any capture of its session is never captured again (docs/adr/0009).

Each batch runs under its own generation of the session's claim (elect →
write → settle, repeat), so no import outlives a claim deadline however long
the session. What was observed before the first batch is reused while the
generations stay consecutive (no other writer in between); otherwise the
session is observed afresh.

Crash windows: a segment and pin without their entry (a batch cut short) are
discarded whole by the next capture of the session before it writes; a ready
batch whose segment is torn on disk is rebuilt from the transcript (the entry
records what built it) and replaced in place when the bytes match its name.

New small sessions of an import are captured in groups
(:func:`capture_group`, docs/adr/0023): the same files per session, each
under its own claim, but the claims of the group elected in one program, the
batches written in one and the claims completed in one.

Sealing publishes ``seal`` exclusively: repeated sealing keeps the first
trigger. An empty capture is never sealed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping

import attrs
from cairn.protocol import codec
from cairn.protocol.digest import ModelPolicy
from cairn.protocol.digest import policy_from_config as policy_from_config  # its old home: re-exported
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.import_results import CaptureResult, SealArgs, SealResult, read
from cairn.protocol.journal import (
    CaptureBatch,
    CaptureTurn,
    Seal,
    SessionInfo,
)
from cairn.protocol.knobs import env_int
from cairn.protocol.transcript import Session, Turn
from cairn.protocol.vocab import OpStatus, OutcomeKind, Trigger
from cairn.protocol.worker import WorkerRequest
from cairn.state import program as P
from cairn.state.claims import Claim
from cairn.worker.ingest.importers._jsonl import StreamedSession
from cairn.worker.journal.batches import (
    batch_name,
    build_segment,
    kept_size,
    parse_batch_name,
    read_batches,
    turn_count,
)
from cairn.worker.journal.store import CAPTURES, SESSIONS, TURNS, Journal, capture_id, h, session_dir

SESSION_TTL = 60.0
#: seconds a capture or a seal waits for a session's claim another live process holds, counted from that
#: process's latest generation (``imports.HOLDER_WAIT``, which an import passes to :func:`capture_session`)
HOLDER_WAIT = 30.0
#: turns per batch (one segment, one pin, one entry, one claim generation)
BATCH_TURNS = env_int("CAIRN_CAPTURE_BATCH_TURNS", 512)
#: characters of kept text per batch (a single turn may exceed it: it then forms a batch alone)
BATCH_BYTES = 8 << 20

#: a session whose turns are listed, or read from its file on demand
AnySession = Session | StreamedSession
#: progress(turns) after each batch: turns just captured, or skipped as already captured
Progress = Callable[[int], None]
#: stop() -> True: stop at the next batch boundary
Stop = Callable[[], bool]


def _session_record_path(sid: str) -> str:
    return f"{SESSIONS}/{session_dir(sid)}/session.json"


def _capture_numbers(names: list[str]) -> list[int]:
    return sorted(int(n[2:]) for n in names if n.startswith("c-") and n[2:].isdigit())


def current_capture(j: Journal, session_id: str) -> tuple[str | None, int, bool]:
    """(capture id or None, its number, sealed?) of a session's newest capture."""
    ks = _capture_numbers(j.names(f"{SESSIONS}/{session_dir(session_id)}"))
    if not ks:
        return None, 0, False
    cid = capture_id(session_id, ks[-1])
    sealed = j.read_many([f"{CAPTURES}/{cid}/seal"])[f"{CAPTURES}/{cid}/seal"] is not None
    return cid, ks[-1], sealed


@attrs.define
class _Observed:
    """What one observation of a session found (valid while no other generation intervenes)."""

    captured: set[str]  # turn ids named by a ready entry of any capture of the session
    torn: list[CaptureBatch]  # ready batches of unretired captures whose segment fails verification
    cid: str | None
    k: int
    sealed: bool
    seq: int  # next sequence number in the current capture
    setup: list[P.Op]  # to run with the first write (session record, orphan discards)


@attrs.define
class _Known:
    """What one capture's observations already read: batch entries (they never change once linked) and
    the segments found whole, so that a second observation reads only what was written since."""

    batches: dict[str, CaptureBatch] = attrs.Factory(dict)
    intact: set[str] = attrs.Factory(set)


def _observe(j: Journal, session: AnySession, known: _Known | None = None) -> _Observed:
    """What the session's captures hold now (``known``: see :class:`_Known`)."""
    sid = session.session_id
    sdir = session_dir(sid)
    ks = _capture_numbers(j.names(f"{SESSIONS}/{sdir}"))
    cids = [capture_id(sid, k) for k in ks]
    listings = j.list_many([f"{CAPTURES}/{c}" for c in cids])
    captured: set[str] = set()
    torn: list[CaptureBatch] = []
    # a listed session (an editor's turn, a small file) can only repair batches holding its own turns:
    # only those segments are verified, so capturing one turn never reads a whole session's evidence
    mine = None if isinstance(session, StreamedSession) else {t.turn_id for t in session.turns}
    batches: list[CaptureBatch] = []
    for c in cids:
        names = listings[f"{CAPTURES}/{c}"]
        batches = read_batches(j, c, names) if known is None else _read_batches(j, c, names, known)
        retired = "retired" in names
        for b in batches:
            captured.update(b.turn_ids)
            if not retired and (mine is None or not mine.isdisjoint(b.turn_ids)):
                if known is not None and b.segment in known.intact:
                    continue
                try:
                    j.segments.get(b.segment)
                except CairnError as exc:
                    if exc.code not in (ErrorCode.BUNDLE_MISSING, ErrorCode.BUNDLE_HASH_MISMATCH):
                        raise
                    torn.append(b)
                    continue
                if known is not None:
                    known.intact.add(b.segment)
    setup: list[P.Op] = [P.EnsureDir(f"{SESSIONS}/{sdir}")]
    # a session with no capture yet has nothing to read: its record is linked (optional) with the first batch
    if not ks or j.read_many([_session_record_path(sid)])[_session_record_path(sid)] is None:
        setup.append(P.Link(_session_record_path(sid), codec.encode(SessionInfo(session_id=sid, title=session.title)),
                            optional=True))
    cid, k, sealed, seq = (cids[-1], ks[-1], False, 0) if cids else (None, 0, False, 0)
    if cid is not None:
        names = listings[f"{CAPTURES}/{cid}"]
        sealed = "seal" in names
        seq = turn_count(names)
        if not sealed:
            setup += _orphan_ops(j, cid, names, batches)  # the current capture's batches, read just above
    return _Observed(captured, torn, cid, k, sealed, seq, setup)


def _read_batches(j: Journal, cid: str, names: list[str], known: _Known) -> list[CaptureBatch]:
    """:func:`read_batches`, reading only the entries ``known`` does not hold yet (and keeping them there)."""
    paths = [f"{CAPTURES}/{cid}/{n}" for n in names if parse_batch_name(n)]
    have = known.batches
    fresh = [p for p in paths if p not in have]
    if fresh:
        have.update({p: codec.decode(r, CaptureBatch, where=p) for p, r in j.read_many(fresh).items() if r is not None})
    return sorted((have[p] for p in paths if p in have), key=lambda b: b.seq)


def _orphan_ops(j: Journal, cid: str, names: list[str], batches: list[CaptureBatch] | None = None) -> list[P.Op]:
    """Discard batches cut short before their entry: each orphan segment, then its pin (``batches``: the
    capture's batch entries when already read)."""
    named = {b.segment for b in (read_batches(j, cid, names) if batches is None else batches)}
    ops: list[P.Op] = []
    for n in names:
        if n.startswith("pin-") and n[4:] not in named:
            ops += [j.segments.remove_op(n[4:]), P.Remove(f"{CAPTURES}/{cid}/{n}", optional=True)]
    return ops


def _legacy_indexed(j: Journal, sid: str, turns: list[Turn]) -> set[str]:
    """Turn ids of ``turns`` indexed by a capture made before segments (``turns/`` exists only then)."""
    paths = {t.turn_id: f"{TURNS}/{h(sid + chr(0) + t.turn_id)}" for t in turns}
    known = j.read_many(paths.values())
    return {t for t, p in paths.items() if known[p] is not None}


class _Pending:
    """The not-yet-captured turns of a session, read from its iterator one batch at a time."""

    def __init__(self, j: Journal, session: AnySession, wanted: set[str]) -> None:
        self.it = iter(session.turns()) if callable(session.turns) else iter(session.turns)
        self.peeked: Turn | None = None
        self.ahead: list[Turn] = []  # turns given back (:meth:`give_back`), before ``peeked``
        self.legacy = j.has_legacy_turns()
        self.j, self.sid = j, session.session_id
        self.seen = self.skipped = 0
        self.wanted = wanted  # turn ids of torn batches: kept aside for their repair
        self.kept: dict[str, Turn] = {}

    def batch(self, captured: set[str]) -> list[Turn]:
        out: list[Turn] = []
        size = 0
        while len(out) < BATCH_TURNS:
            if self.ahead:
                t: Turn | None = self.ahead.pop()
            else:
                t = self.peeked if self.peeked is not None else next(self.it, None)
                self.peeked = None
            if t is None:
                break
            self.seen += 1
            if t.turn_id in self.wanted:
                self.kept[t.turn_id] = t
            if t.turn_id in captured:
                self.skipped += 1
                continue
            add = kept_size(t)
            if out and size + add > BATCH_BYTES:
                self.peeked = t
                self.seen -= 1
                break
            out.append(t)
            size += add
        if self.legacy and out:
            old = _legacy_indexed(self.j, self.sid, out)
            self.skipped += len(old)
            out = [t for t in out if t.turn_id not in old]
        return out

    def give_back(self, turns: list[Turn]) -> None:
        """Turns a :meth:`batch` returned, to be read again first (and counted once)."""
        self.ahead = self.ahead + turns[::-1]
        self.seen -= len(turns)

    def at_end(self) -> bool:
        if self.ahead:
            return False
        if self.peeked is None:
            self.peeked = next(self.it, None)
        return self.peeked is None

    def drain(self) -> None:
        """Read the rest (for repairs): count it, keep what torn batches need."""
        for t in self.it:
            self.seen += 1
            if t.turn_id in self.wanted:
                self.kept[t.turn_id] = t


def _check(res: P.ProgramResult, must: int | None = None) -> None:
    bad = [r for r in res.results if r.status is OpStatus.FAILED]
    if bad or (must is not None and res[must].status is not OpStatus.OK):
        first = bad[0] if bad else res[must or 0]
        raise CairnError(first.code or ErrorCode.CAPTURE_STATE, first.message or "capture program stopped")


def _write_batch(j: Journal, claim: Claim, session: AnySession, obs: _Observed, batch: list[Turn], *, source: str,
                 policy: ModelPolicy) -> None:
    sid = session.session_id
    ops = list(obs.setup)
    if obs.cid is None or obs.sealed:
        obs.k += 1
        obs.cid, obs.sealed, obs.seq = capture_id(sid, obs.k), False, 0
        ops += [P.EnsureDir(f"{CAPTURES}/{obs.cid}"),
                P.Create(f"{SESSIONS}/{session_dir(sid)}/c-{obs.k:04d}", optional=True)]
    else:
        ops.append(P.EnsureDir(f"{CAPTURES}/{obs.cid}"))
    _, raw = build_segment(sid, batch, source=source, title=session.title, policy=policy)
    sha, put = j.segments.put_ops(raw)
    ops += put
    ops.append(P.Create(f"{CAPTURES}/{obs.cid}/pin-{sha}", optional=True))
    entry = CaptureBatch(capture=obs.cid, seq=obs.seq, turn_ids=tuple(t.turn_id for t in batch), segment=sha,
                         captured_at=claim.record.created, source=source, title=session.title, policy=policy)
    ops.append(P.Link(f"{CAPTURES}/{obs.cid}/{batch_name(obs.seq, len(batch))}", codec.encode(entry)))
    _check(j.claims.guarded(claim, ops), must=len(ops))  # result 0 is the ownership proof
    obs.setup = []
    obs.seq += len(batch)
    obs.captured.update(entry.turn_ids)


def _repair(j: Journal, claim: Claim, session: AnySession, b: CaptureBatch, by_id: dict[str, Turn]) -> bool:
    """Rebuild a torn segment from the transcript; False when the transcript no longer yields its bytes."""
    if not all(t in by_id for t in b.turn_ids):
        return False
    _, raw = build_segment(session.session_id, [by_id[t] for t in b.turn_ids], source=b.source, title=b.title,
                           policy=b.policy)
    sha, ops = j.segments.repair_ops(raw)
    if sha != b.segment:
        return False
    _check(j.claims.guarded(claim, [*ops, P.Create(f"{CAPTURES}/{b.capture}/pin-{sha}", optional=True)]))
    return True


def _holder_gone(j: Journal, detail: Mapping[str, object]) -> bool:
    """Whether the process holding a claim is known to be gone: it ran on this host and its pid is free.

    Waiting for it would only delay the ``E_CLAIM_BUSY`` its claim gives until its deadline; the claim is
    never taken over for that (a pid may be reused; the fence is the deadline), only not waited for."""
    pid, host = detail.get("pid"), detail.get("host")
    if type(pid) is not int or host != j.claims.host or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # alive, another user's
    return False


def _elect(j: Journal, sid: str, busy_wait: float, stop: Stop | None, *, purpose: str = "capture") -> Claim | None:
    """The session's next claim generation; with ``busy_wait``, wait for a live holder.

    The wait is ``busy_wait`` seconds from the holder's latest generation: a holder
    settling batch after batch (the other half of a split import capturing a long
    session) is waited for as long as it makes progress; one stuck on a generation
    for that long is ``E_CLAIM_BUSY``. None: ``stop`` answered true while waiting.
    The wait is a retry of the same election: nothing about the fence changes.
    """
    end = time.monotonic() + busy_wait
    seen: object = None
    while True:
        try:
            return j.claims.elect(f"session/{session_dir(sid)}", purpose=purpose, ttl=SESSION_TTL,
                                  authority=j.authority)
        except CairnError as exc:
            if exc.code is not ErrorCode.CLAIM_BUSY or not busy_wait or _holder_gone(j, exc.detail):
                raise
            held = exc.detail.get("generation")
            if held is not None and held != seen:
                seen, end = held, time.monotonic() + busy_wait
            elif time.monotonic() >= end:
                raise
        if stop is not None and stop():
            return None
        time.sleep(0.02)  # the holder is another import's batch: well under a second


def capture_session(j: Journal, session: AnySession, *, source: str, policy: ModelPolicy,
                    progress: Progress | None = None, stop: Stop | None = None,
                    busy_wait: float = 0.0) -> CaptureResult:
    """Capture every not-yet-captured turn of ``session`` in batches; idempotent.

    The session's turns are read once, in order, one batch at a time (a
    :class:`StreamedSession` reads them from its file). Returns counts and
    ``interrupted`` (``stop`` answered true at a batch boundary before the
    session was done; everything written so far is kept). ``busy_wait``
    seconds are spent waiting for a claim another process holds (the other
    half of a split import) before ``E_CLAIM_BUSY``.
    """
    sid = session.session_id
    # Look before electing: a session with nothing to capture, repair or discard elects no claim and writes
    # nothing (a re-import of a file that grew by no complete turn). The look is an observation, never
    # authority: the first generation observes again, reading only the batch entries written since.
    known = _Known()
    look = _observe(j, session, known)
    pending: _Pending | None = _Pending(j, session, {t for b in look.torn for t in b.turn_ids})
    assert pending is not None
    first = pending.batch(look.captured)
    if not first and not look.torn and not any(isinstance(op, P.Remove) for op in look.setup):
        if progress and pending.skipped:
            progress(pending.skipped)
        return CaptureResult(captured=0, skipped=pending.skipped, capture=look.cid, repaired=0, unrepaired=0,
                             interrupted=False, turns=pending.seen)
    pending.give_back(first)
    obs: _Observed | None = None
    prev_gen = -1
    captured = repaired = unrepaired = reported = 0
    interrupted = done = False
    while not done:
        elected = _elect(j, sid, busy_wait, stop)
        if elected is None:
            interrupted = True
            break
        claim = elected
        n = 0
        try:
            if obs is None and claim.generation == 1:
                obs = look  # the session's first generation: nothing was ever written for it since the look
            elif obs is None or claim.generation != prev_gen + 1:
                obs = _observe(j, session, known)
                pending.wanted |= {t for b in obs.torn for t in b.turn_ids}
            batch = pending.batch(obs.captured)
            if batch:
                _write_batch(j, claim, session, obs, batch, source=source, policy=policy)
                n = len(batch)
                done = not obs.torn and pending.at_end()
            else:
                pending.drain()
                for b in obs.torn:
                    if _repair(j, claim, session, b, pending.kept):
                        repaired += 1
                    else:
                        unrepaired += 1
                obs.torn = []
                if obs.setup and obs.cid is not None:
                    _check(j.claims.guarded(claim, obs.setup))
                    obs.setup = []
                done = True
        except BaseException:
            _settle_quietly(j, claim)
            raise
        # the batch is captured (fenced on its own): a late completion does not undo it
        j.claims.finish(claim, payload={"captured": n})
        prev_gen = claim.generation
        captured += n
        if progress and (n or pending.skipped > reported):
            progress(n + pending.skipped - reported)
        reported = pending.skipped
        if not done and stop is not None and stop():
            interrupted = True
            break
    if obs is None:  # stopped while waiting for another process's claim: nothing captured
        return CaptureResult(captured=0, skipped=pending.skipped, capture=look.cid, repaired=0, unrepaired=0,
                             interrupted=True, turns=pending.seen)
    return CaptureResult(captured=captured, skipped=pending.skipped, capture=obs.cid, repaired=repaired,
                         unrepaired=unrepaired, interrupted=interrupted, turns=pending.seen)


def capture_group(j: Journal, sessions: list[tuple[Session, str]], *, policy: ModelPolicy,
                  progress: Progress | None = None) -> list[CaptureResult | None]:
    """Capture several new small sessions at once, each under its own claim (docs/adr/0023).

    ``sessions``: (session, source) pairs of distinct sessions, their turns
    listed. A session with no capture yet, nothing to repair or discard, and
    turns that fit one batch is captured here: generation 1 of every such
    session's claim elected in one program, every session's batch written in
    one program that proves every claim (segments, pins and entries each
    published together, their fsyncs waited on together), every claim
    completed in one program. Each session's evidence, entry and claim are the
    ones :func:`capture_session` would write; only the number of programs and
    of fsync waits changes.

    Returns one item per session, in order: its :class:`CaptureResult`, or
    None for the caller to capture it alone with :func:`capture_session` — a
    session seen before, one too long for one batch, or every session when a
    claim is in use or the group's write failed (the one-at-a-time path then
    meets the same cause and reports it for the session's own file).
    """
    out: list[CaptureResult | None] = []
    todo: list[tuple[int, Session, str, _Observed, list[Turn], _Pending]] = []
    # one program looks for every session's folder: a session with none was never captured (its folder is
    # made with its first capture), and has nothing else to read; the others are observed one by one
    dirs = [f"{SESSIONS}/{session_dir(s.session_id)}" for s, _ in sessions]
    found = j.run([P.ListDir(d, optional=True) for d in dirs])
    found.raise_failed()
    for (s, source), d, seen in zip(sessions, dirs, found.results, strict=True):
        if seen.status is OpStatus.ABSENT:
            record = P.Link(_session_record_path(s.session_id),
                            codec.encode(SessionInfo(session_id=s.session_id, title=s.title)), optional=True)
            look = _Observed(set(), [], None, 0, False, 0, [P.EnsureDir(d), record])
        else:
            look = _observe(j, s, _Known())
        if look.cid is not None or look.torn or any(not isinstance(op, (P.EnsureDir, P.Link)) for op in look.setup):
            out.append(None)
            continue
        pending = _Pending(j, s, set())
        batch = pending.batch(look.captured)
        if not pending.at_end():
            out.append(None)
            continue
        if not batch:  # nothing to capture: no claim, no write
            out.append(CaptureResult(captured=0, skipped=pending.skipped, capture=None, repaired=0, unrepaired=0,
                                     interrupted=False, turns=pending.seen))
            continue
        todo.append((len(out), s, source, look, batch, pending))
        out.append(None)
    if len(todo) < 2:
        return out  # one session alone is captured as always
    try:
        elected = j.claims.elect_new([f"session/{session_dir(t[1].session_id)}" for t in todo], purpose="capture",
                                     ttl=SESSION_TTL, authority=j.authority)
    except CairnError as exc:
        if exc.code is not ErrorCode.CLAIM_BUSY:
            raise
        return out
    todo = [t for t, c in zip(todo, elected, strict=True) if c is not None]  # the others: alone
    claims = [c for c in elected if c is not None]
    if not claims:
        return out
    try:
        _write_group(j, claims, todo, policy)
    except CairnError:
        for c in claims:
            _settle_quietly(j, c)
        return out  # each alone: a session's own failure is then reported for its own file
    except BaseException:
        for c in claims:
            _settle_quietly(j, c)
        raise
    j.claims.finish_many(claims, [{"captured": len(t[4])} for t in todo])
    for i, s, _, _, batch, pending in todo:
        out[i] = CaptureResult(captured=len(batch), skipped=pending.skipped, capture=capture_id(s.session_id, 1),
                               repaired=0, unrepaired=0, interrupted=False, turns=pending.seen)
    if progress is not None:
        progress(sum(len(t[4]) + t[5].skipped for t in todo))
    return out


def _write_group(j: Journal, claims: list[Claim],
                 todo: list[tuple[int, Session, str, _Observed, list[Turn], _Pending]], policy: ModelPolicy) -> None:
    """One guarded program writing every session's first batch: the order of :func:`_write_batch` kept
    across the group (records and markers, then every segment, every pin, every entry)."""
    dirs: list[str] = []
    records: list[tuple[str, bytes]] = []
    markers: list[str] = []
    segments: list[tuple[str, bytes]] = []
    pins: list[str] = []
    entries: list[tuple[str, bytes]] = []
    for claim, (_, s, source, look, batch, _) in zip(claims, todo, strict=True):
        sid = s.session_id
        cid = capture_id(sid, 1)
        dirs += [f"{SESSIONS}/{session_dir(sid)}", f"{CAPTURES}/{cid}"]
        for op in look.setup:
            if isinstance(op, P.Link):
                assert isinstance(op.data, bytes)
                records.append((op.path, op.data))
        markers.append(f"{SESSIONS}/{session_dir(sid)}/c-0001")
        _, raw = build_segment(sid, batch, source=source, title=s.title, policy=policy)
        sha, put = j.segments.put_ops(raw)
        for op in put:
            if isinstance(op, P.EnsureDir):
                dirs.append(op.path)
            elif isinstance(op, P.Link):
                assert isinstance(op.data, bytes)
                segments.append((op.path, op.data))
        pins.append(f"{CAPTURES}/{cid}/pin-{sha}")
        entry = CaptureBatch(capture=cid, seq=0, turn_ids=tuple(t.turn_id for t in batch), segment=sha,
                             captured_at=claim.record.created, source=source, title=s.title, policy=policy)
        entries.append((f"{CAPTURES}/{cid}/{batch_name(0, len(batch))}", codec.encode(entry)))
    ops: list[P.Op] = [P.EnsureDirs(tuple(dict.fromkeys(dirs)))]
    if records:
        ops.append(P.LinkAll(tuple(records), optional=True))
    ops += [P.CreateAll(tuple(markers), optional=True), P.LinkAll(tuple(dict(segments).items()), optional=True),
            P.CreateAll(tuple(pins), optional=True), P.LinkAll(tuple(entries))]
    _check(j.claims.guarded_many(claims, ops), must=len(claims) + len(ops) - 1)  # the entries


def _settle_quietly(j: Journal, claim: Claim) -> None:
    try:
        j.claims.settle(claim, OutcomeKind.FAILED, error=str(ErrorCode.INTERNAL))
    except CairnError:
        pass


def seal_session(j: Journal, session_id: str, trigger: Trigger, *, quiet_before: float | None = None,
                 busy_wait: float = HOLDER_WAIT) -> str | None:
    """Seal the session's open capture; returns its id when this call or an earlier one sealed it now.

    With ``quiet_before`` (target-clock time), seal only if the newest ready
    turn was captured before it (idle sealing).

    The session's claim another live process holds (a second ``cairn run`` sealing the same session, an
    import capturing it, an agent's hook) is waited for as an import waits for it (``busy_wait`` seconds
    from the holder's latest generation, :func:`_elect`); then the capture is sealed, or found sealed by
    the other process (None: a repeated seal keeps the first trigger). A holder known to be gone is not
    waited for (its claim holds until its deadline: ``E_CLAIM_BUSY``, which the watcher tries again).
    """
    cid, _, sealed = current_capture(j, session_id)
    if cid is None or sealed:  # nothing open to seal: no claim elected, no file written (a repeated hook)
        return None
    claim = _elect(j, session_id, busy_wait, None, purpose=f"seal:{trigger}")
    assert claim is not None  # no stop to answer
    try:
        cid, _, sealed = current_capture(j, session_id)  # again, under the claim: what was seen may have moved
        sealed_now = None
        if cid is not None and not sealed:
            names = j.names(f"{CAPTURES}/{cid}")
            last = _last_captured_at(j, cid, names)
            if last is not None and (quiet_before is None or last <= quiet_before):
                seal = Seal(capture=cid, session_id=session_id, trigger=trigger, sealed_at=claim.record.created,
                            turns=turn_count(names))
                # a sealed capture gets no further batch: discard any batch cut short first
                ops = [*_orphan_ops(j, cid, names), P.Link(f"{CAPTURES}/{cid}/seal", codec.encode(seal), optional=True)]
                res = j.claims.guarded(claim, ops)
                _check(res)
                sealed_now = cid if res[len(ops)].status is OpStatus.OK else None
    except BaseException:
        _settle_quietly(j, claim)
        raise
    j.claims.finish(claim, payload={"sealed": sealed_now or ""})  # a landed seal stands, late or not
    return sealed_now


def _last_captured_at(j: Journal, cid: str, names: list[str]) -> float | None:
    """Target-clock time of the capture's newest ready turn; None when it has none."""
    batches = sorted((parse_batch_name(n) or (0, 0), n) for n in names if parse_batch_name(n))
    paths = [f"{CAPTURES}/{cid}/{batches[-1][1]}"] if batches else []
    paths += [f"{CAPTURES}/{cid}/{n}" for n in names if n.startswith("t-")]
    times: list[float] = []
    for p, r in j.read_many(paths).items():
        if r is not None:
            rec: CaptureBatch | CaptureTurn = (codec.decode(r, CaptureBatch, where=p) if "/b-" in p
                                               else codec.decode(r, CaptureTurn, where=p))
            times.append(rec.captured_at)
    return max(times) if times else None


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

def job_capture(req: WorkerRequest) -> CaptureResult:
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


def _trigger(value: object) -> Trigger:
    try:
        return Trigger(str(value))
    except ValueError:
        raise CairnError(ErrorCode.USAGE, f"unknown trigger {str(value)[:40]!r}; expected one of "
                         + ", ".join(t.value for t in Trigger)) from None


def job_seal(req: WorkerRequest) -> SealResult:
    args = read(SealArgs, req.args, job=req.job)
    trigger = _trigger(args.trigger)
    with Journal(req.workspace) as j:
        targets = [args.session_id] if args.session_id else open_sessions(j)
        sealed = [c for c in (seal_session(j, s, trigger) for s in targets) if c]
    return SealResult(sealed=tuple(sealed))
