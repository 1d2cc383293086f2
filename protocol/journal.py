"""Journal records: private capture state and the public digest entry.

Private records (under ``.cairn/state/journal/``) hold evidence and the
bookkeeping that makes every step recoverable. The public digest entry
(under ``.cairn/journal/``) holds only reusable notes, already redacted,
with the turn ids they cite; it is never proof of acceptance by itself.

Times: ``created`` is when an entry was published (the import's time, the
machine's clock); ``session_started`` / ``session_ended`` are when the
session was held: the earliest and latest source time of its turns
(:attr:`protocol.transcript.Turn.completed_at`), None when the source has
none. What a person reads as the session's date is
:attr:`PublicDigest.session_time`: the session's start, else ``created``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TypedDict

import attrs
from cairn.protocol.codec import optional_key, record
from cairn.protocol.digest import ModelPolicy, Note
from cairn.protocol.transcript import utc_instant, utc_stamp
from cairn.protocol.vocab import Trigger

#: a turn whose text exceeds this is ``oversized``, never truncated: its reply is left out whole, the user's
#: words kept when they alone fit (else unknown content)
TURN_SNAPSHOT_LIMIT = 512 * 1024
#: total bound of one public digest entry
PUBLIC_ENTRY_LIMIT = 8 * 1024 * 1024


@record("turn-evidence", version=1)
class TurnEvidence:
    """One completed root turn, frozen: the immutable content of an evidence bundle."""

    session_id: str
    turn_id: str
    parent_turn_id: str | None
    user: str
    assistant: str
    completed_at: str | None
    source: str  # "lsp" | "import:<format>"
    title: str | None
    oversized: bool  # true: text exceeded TURN_SNAPSHOT_LIMIT: no reply kept, the user's words when they fit
    size: int  # UTF-8 bytes of user + assistant as received (control characters cleaned)
    policy: ModelPolicy


@record("capture-turn", version=1)
class CaptureTurn:
    """A ready turn of a capture: written only after its evidence bundle is pinned."""

    capture: str
    seq: int
    turn_id: str
    bundle: str  # sha256 of the TurnEvidence bundle
    captured_at: float  # target clock


@attrs.frozen(kw_only=True)
class SegmentTurn:
    """One turn inside an :class:`EvidenceSegment`; ``user``/``assistant`` index the segment's text table."""

    turn_id: str
    parent_turn_id: str | None
    user: int
    assistant: int
    completed_at: str | None
    oversized: bool
    size: int


@record("evidence-segment", version=1)
class EvidenceSegment:
    """Completed root turns of one session batch, frozen together: the content of one segment.

    Each turn is addressable by its id; :meth:`evidence` gives back exactly the
    :class:`TurnEvidence` a per-turn bundle held. Identical texts are stored
    once in ``texts`` (first-appearance order, so the bytes are a function of
    the turns).
    """

    session_id: str
    source: str
    title: str | None
    policy: ModelPolicy
    texts: tuple[str, ...]
    turns: tuple[SegmentTurn, ...]

    def evidence(self) -> list[TurnEvidence]:
        return [TurnEvidence(session_id=self.session_id, turn_id=t.turn_id, parent_turn_id=t.parent_turn_id,
                             user=self.texts[t.user], assistant=self.texts[t.assistant],
                             completed_at=t.completed_at, source=self.source, title=self.title,
                             oversized=t.oversized, size=t.size, policy=self.policy)
                for t in self.turns]


@record("capture-batch", version=1)
class CaptureBatch:
    """A ready batch of a capture: written only after its segment is pinned.

    Turn ``turn_ids[i]`` has sequence number ``seq + i`` in its capture. The
    batch also names what its segment was built from (source, title, policy),
    so a torn segment can be rebuilt byte for byte from the transcript.
    Batch entries stay after retirement: they are the capture's turn identity.
    """

    capture: str
    seq: int
    turn_ids: tuple[str, ...]
    segment: str  # sha256 of the segment's canonical (uncompressed) bytes
    captured_at: float  # target clock
    source: str
    title: str | None
    policy: ModelPolicy


@record("turn-index", version=1)
class TurnIndex:
    """Identity of a captured turn, so a re-import never captures it twice."""

    turn_id: str
    session_id: str
    capture: str


@record("seal", version=1)
class Seal:
    capture: str
    session_id: str
    trigger: Trigger = attrs.field(converter=Trigger)
    sealed_at: float
    turns: int


@record("digest-result", version=1)
class DigestResult:
    """The accepted private result of one capture (the bundle a completed outcome names)."""

    capture: str
    session_id: str
    title: str | None
    trigger: Trigger = attrs.field(converter=Trigger)
    turn_ids: tuple[str, ...]  # every turn covered, oversized ones included
    notes: tuple[Note, ...]
    provider: str
    discarded: bool = False
    # when the session was held (:func:`session_span` of the turns); absent for a result without times
    session_started: str | None = optional_key()
    session_ended: str | None = optional_key()


@record("digest-group", version=1)
class DigestGroup:
    """The accepted private result of several captures digested under one claim generation."""

    results: tuple[DigestResult, ...]


@attrs.frozen(kw_only=True)
class CoveredCapture:
    capture: str
    session_id: str
    digest: str | None  # public digest id, or None for all-none
    turn_ids: tuple[str, ...]


@record("group-coverage", version=1)
class GroupCoverage:
    """Identity-only: these captures' turns were digested (one record per accepted group)."""

    group: str  # sha256 of the accepted DigestGroup bundle
    captures: tuple[CoveredCapture, ...]


def session_span(times: Iterable[str | None]) -> tuple[str | None, str | None]:
    """The earliest and latest of ``times`` (turn times, ISO 8601 with a zone) as UTC ``Z`` stamps.

    Texts that are no such time are left out; (None, None) when none is.
    """
    stamps = sorted({s for s in (utc_stamp(t) for t in times) if s is not None})  # one width: text order is time order
    return (stamps[0], stamps[-1]) if stamps else (None, None)


class SessionFields(TypedDict):
    session_started: str | None
    session_ended: str | None


def session_fields(evidence: Iterable[TurnEvidence]) -> SessionFields:
    """``session_started`` / ``session_ended`` of a :class:`DigestResult` over ``evidence`` (its keywords)."""
    started, ended = session_span(e.completed_at for e in evidence)
    return {"session_started": started, "session_ended": ended}


@record("digest", version=1)
class PublicDigestV1:
    """The public digest entry as first written (no session times); it reads as :class:`PublicDigest`."""

    id: str
    capture: str
    session_id: str
    title: str | None
    trigger: Trigger = attrs.field(converter=Trigger)
    created: float
    provider: str
    turn_ids: tuple[str, ...]
    notes: tuple[Note, ...]


@record("digest", version=2, upgrades=PublicDigestV1)
class PublicDigest:
    """A public digest entry. Version 2 adds when the session was held (see the module docstring)."""

    id: str
    capture: str
    session_id: str
    title: str | None
    trigger: Trigger = attrs.field(converter=Trigger)
    created: float  # published (import time)
    provider: str
    turn_ids: tuple[str, ...]
    notes: tuple[Note, ...]
    session_started: str | None = None  # the earliest turn time of the session (UTC ``Z``), if the source has one
    session_ended: str | None = None  # the latest

    @property
    def session_time(self) -> float:
        """When the session was held, in epoch seconds: its start, else the entry's ``created``."""
        start = utc_instant(self.session_started)
        return start.timestamp() if start is not None else self.created

    @property
    def session_day(self) -> str:
        """The day the session was held, ``YYYY-MM-DD`` (UTC) of :attr:`session_time`: what memory notes are dated by."""
        return time.strftime("%Y-%m-%d", time.gmtime(self.session_time))


def by_session(digests: Iterable[PublicDigest]) -> list[PublicDigest]:
    """``digests`` in the order their sessions were held (:attr:`PublicDigest.session_time`), then published."""
    return sorted(digests, key=lambda d: (d.session_time, d.created, d.id))


@record("coverage", version=1)
class Coverage:
    """Identity-only: this turn was digested (survives public expiry)."""

    turn_id: str
    session_id: str
    capture: str
    digest: str | None  # public digest id, or None for all-none / discarded


@record("retired", version=1)
class Retired:
    capture: str
    at: float
    digest: str | None
    reason: str  # "published" | "all-none" | "discarded"


@record("failure", version=1)
class Failure:
    capture: str
    generation: int
    error: str  # fixed error code
    at: float


@record("session", version=1)
class SessionInfo:
    session_id: str
    title: str | None


@attrs.frozen(kw_only=True)
class ExpiryEntry:
    name: str  # public entry file name
    sha256: str  # of its exact bytes


@record("expiry-manifest", version=1)
class ExpiryManifest:
    """Accepted before any deletion: exactly which public entries (by hash) expire."""

    id: str
    created: float
    entries: tuple[ExpiryEntry, ...]


#: an expiry manifest larger than this is never admitted
MANIFEST_LIMIT = 4 * 1024 * 1024
