"""Batch entries and evidence segments of captures: naming, building, reading.

A capture's ready turns are listed by batch entries ``b-<seq>-<n>``
(:class:`CaptureBatch`): the batch starting at sequence number ``seq`` with
``n`` turns, whose evidence is one segment (:class:`EvidenceSegment`,
stored in :attr:`Journal.segments`). The count is in the name so that
status views count a capture's turns from one listing, without reads.
Captures made before segments existed list one ``t-<h>`` entry
(:class:`CaptureTurn`) per turn, each naming a per-turn bundle; both kinds are
read here, so such captures still digest (see docs/adr/0009). A capture's
state (:func:`capture_states`: open, sealed, failed attempts, retired) is
read from the same listings, by the digest and by the status views.
"""

from __future__ import annotations

import re

import attrs
from cairn.protocol import codec
from cairn.protocol.digest import ModelPolicy
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.journal import (
    TURN_SNAPSHOT_LIMIT,
    CaptureBatch,
    CaptureTurn,
    EvidenceSegment,
    Seal,
    SegmentTurn,
    TurnEvidence,
    TurnIndex,
)
from cairn.protocol.text import clean_text
from cairn.protocol.transcript import Turn
from cairn.worker.journal.store import CAPTURES, SESSIONS, TURNS, Journal, capture_id, h, session_dir

_BATCH = re.compile(r"^b-(\d{7})-(\d{4})$")
MAX_ATTEMPTS = 3  # digest attempts of a capture before it is exhausted (until a retry)


def batch_name(seq: int, n: int) -> str:
    return f"b-{seq:07d}-{n:04d}"


def parse_batch_name(name: str) -> tuple[int, int] | None:
    """(first seq, turn count) of a batch entry name, None for any other name."""
    m = _BATCH.match(name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def is_entry(name: str) -> bool:
    """A ready-turn entry of either kind (batch or per-turn)."""
    return name.startswith("t-") or _BATCH.match(name) is not None


def turn_count(names: list[str]) -> int:
    """Ready turns of a capture, from its listing alone."""
    n = 0
    for name in names:
        parsed = parse_batch_name(name)
        n += parsed[1] if parsed else int(name.startswith("t-"))
    return n


@attrs.frozen
class CaptureState:
    cid: str
    sealed: bool
    retired: bool
    failures: int
    retries: int
    turns: int
    sealed_at: float

    @property
    def attempts_left(self) -> int:
        return MAX_ATTEMPTS - (self.failures - MAX_ATTEMPTS * self.retries)

    @property
    def exhausted(self) -> bool:
        return self.sealed and not self.retired and self.attempts_left <= 0

    @property
    def state(self) -> str:
        if self.retired:
            return "retired"
        if not self.sealed:
            return "open"
        if self.exhausted:
            return "exhausted"
        if self.failures - MAX_ATTEMPTS * self.retries > 0:
            return "retry-waiting"
        return "pending"


def capture_states(j: Journal, cids: list[str] | None = None) -> list[CaptureState]:
    """Observe captures' markers in batched listings (an observation, never authority)."""
    cids = sorted(j.names(CAPTURES)) if cids is None else cids
    listings = j.list_many([f"{CAPTURES}/{c}" for c in cids])
    seals = j.read_many(f"{CAPTURES}/{c}/seal" for c in cids if "seal" in listings[f"{CAPTURES}/{c}"])
    out = []
    for c in cids:
        names = listings[f"{CAPTURES}/{c}"]
        raw = seals.get(f"{CAPTURES}/{c}/seal")
        sealed_at = codec.decode(raw, Seal).sealed_at if raw else 0.0
        out.append(CaptureState(
            cid=c, sealed="seal" in names, retired="retired" in names,
            failures=sum(1 for n in names if n.startswith("fail-")),
            retries=sum(1 for n in names if n.startswith("retry-")),
            turns=turn_count(names), sealed_at=sealed_at,
        ))
    return out


def build_segment(session_id: str, turns: list[Turn], *, source: str, title: str | None,
                  policy: ModelPolicy) -> tuple[EvidenceSegment, bytes]:
    """The segment of ``turns`` and its canonical bytes (a function of the inputs only).

    Texts and the title are kept as :func:`protocol.text.clean_text` gives
    them: transcript text enters cairn here, so no control character (a
    colour escape, an OSC sequence, a BEL) reaches the evidence. A turn whose
    text exceeds :data:`TURN_SNAPSHOT_LIMIT` is ``oversized``: nothing of it is
    cut, its reply is left out whole, and the user's words are kept whole when
    they alone fit (a short rule said before a long generated reply is still
    the user's), else left out too (unknown content).
    """
    texts: list[str] = []
    index: dict[str, int] = {}

    def intern(text: str) -> int:
        i = index.get(text)
        if i is None:
            i = index[text] = len(texts)
            texts.append(text)
        return i

    out = []
    for t in turns:
        user, assistant = clean_text(t.user), clean_text(t.assistant)
        size = len(user.encode("utf-8")) + len(assistant.encode("utf-8"))
        oversized = size > TURN_SNAPSHOT_LIMIT
        said = user if not oversized or len(user.encode("utf-8")) <= TURN_SNAPSHOT_LIMIT else ""
        out.append(SegmentTurn(turn_id=t.turn_id, parent_turn_id=t.parent_turn_id,
                               user=intern(said),
                               assistant=intern("" if oversized else assistant),
                               completed_at=t.completed_at, oversized=oversized, size=size))
    title = None if title is None else clean_text(title)
    seg = EvidenceSegment(session_id=session_id, source=source, title=title, policy=policy, texts=tuple(texts),
                          turns=tuple(out))
    return seg, codec.encode(seg)


def kept_size(t: Turn) -> int:
    """Bytes a turn adds to a segment (an oversized turn keeps at most its user's words)."""
    size = len(t.user) + len(t.assistant)  # characters: a cheap stand-in for UTF-8 bytes
    if size <= TURN_SNAPSHOT_LIMIT:
        return size
    return len(t.user) if len(t.user) <= TURN_SNAPSHOT_LIMIT else 0


def read_batches(j: Journal, cid: str, names: list[str]) -> list[CaptureBatch]:
    """The batch entries of ``cid`` (given its listing), in sequence order."""
    paths = [f"{CAPTURES}/{cid}/{n}" for n in names if parse_batch_name(n)]
    raws = j.read_many(paths)
    out = [codec.decode(r, CaptureBatch, where=p) for p, r in raws.items() if r is not None]
    return sorted(out, key=lambda b: b.seq)


def segment(j: Journal, sha: str) -> EvidenceSegment:
    return codec.decode(j.segments.get(sha), EvidenceSegment, where=f"segment {sha[:16]}")


def batch_evidence(j: Journal, batch: CaptureBatch) -> list[TurnEvidence]:
    """The evidence of a batch's turns, in its order; the segment must hold exactly those turns."""
    evidence = segment(j, batch.segment).evidence()
    if tuple(e.turn_id for e in evidence) != batch.turn_ids:
        raise CairnError(ErrorCode.RECORD_INVALID_FIELD,
                         f"segment {batch.segment[:16]} does not hold the turns of batch {batch.seq} of {batch.capture}")
    return evidence


def capture_evidence(j: Journal, cid: str, names: list[str]) -> list[TurnEvidence]:
    """Every ready turn's evidence of ``cid`` in sequence order (batches and per-turn entries)."""
    seqd: list[tuple[int, TurnEvidence]] = []
    for b in read_batches(j, cid, names):
        seqd += [(b.seq + i, e) for i, e in enumerate(batch_evidence(j, b))]
    legacy = [f"{CAPTURES}/{cid}/{n}" for n in names if n.startswith("t-")]
    if legacy:
        raws = j.read_many(legacy)
        for p, r in raws.items():
            if r is None:
                continue
            e = codec.decode(r, CaptureTurn, where=p)
            seqd.append((e.seq, codec.decode(j.evidence.get(e.bundle), TurnEvidence, where=f"evidence of {cid}")))
    seqd.sort(key=lambda x: x[0])
    return [e for _, e in seqd]


def find_turn(j: Journal, session_id: str, turn_id: str) -> tuple[str, str] | None:
    """(capture, evidence name) of a captured turn: its segment, or a per-turn bundle of an earlier
    capture ("" once that capture's entries were cleaned up); None when the turn was never captured."""
    ks = sorted(int(n[2:]) for n in j.names(f"{SESSIONS}/{session_dir(session_id)}")
                if n.startswith("c-") and n[2:].isdigit())
    cids = [capture_id(session_id, k) for k in ks]
    listings = j.list_many([f"{CAPTURES}/{c}" for c in cids])
    for c in cids:
        for b in read_batches(j, c, listings[f"{CAPTURES}/{c}"]):
            if turn_id in b.turn_ids:
                return c, b.segment
    ipath = f"{TURNS}/{h(session_id + chr(0) + turn_id)}"
    raw = j.read_many([ipath])[ipath]
    if raw is None:
        return None
    cid = codec.decode(raw, TurnIndex, where=ipath).capture
    epath = f"{CAPTURES}/{cid}/t-{h(turn_id)}"
    entry = j.read_many([epath])[epath]
    return cid, codec.decode(entry, CaptureTurn, where=epath).bundle if entry is not None else ""


def turn_evidence(j: Journal, name: str, turn_id: str) -> TurnEvidence:
    """The evidence of ``turn_id`` from the segment (or earlier per-turn bundle) ``name``, verified."""
    try:
        raw = j.segments.get(name)
    except CairnError as exc:
        if exc.code is not ErrorCode.BUNDLE_MISSING:
            raise
        return codec.decode(j.evidence.get(name), TurnEvidence, where=f"evidence {name[:16]}")
    seg = codec.decode(raw, EvidenceSegment, where=f"segment {name[:16]}")
    for e in seg.evidence():
        if e.turn_id == turn_id:
            return e
    raise CairnError(ErrorCode.BUNDLE_MISSING, f"segment {name[:16]} does not hold the turn")
