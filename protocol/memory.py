"""Memory consolidation records: proposals, decisions, intents and markers.

A proposal carries its exact before-state: for every affected topic or
instruction file the sha256 of its bytes (``None``: the file must not
exist), and for every affected ``MEMORY.md`` entry the exact entry line
(``None``: no entry for that file). Application compares these afresh;
unrelated index lines never make a proposal stale. Bodies (before and after
bytes) live in private bundles, never in public records.
"""

from __future__ import annotations

import attrs
from cairn.protocol.codec import optional_key, record
from cairn.protocol.vocab import (
    ProposalKind as ProposalKind,  # re-exported: defined with the other vocabularies
)
from cairn.protocol.vocab import ProposalState as ProposalState


@attrs.frozen(kw_only=True)
class FileEdit:
    """One whole-file change, relative to the workspace (or an absolute configured root path)."""

    path: str
    before: str | None  # sha256 of the exact bytes expected now; None = must not exist
    after: str | None  # sha256 of the bytes to write; None = delete
    before_bundle: str | None = None  # private bundle holding the before bytes (for undo and diffs)
    after_bundle: str | None = None  # private bundle holding the after bytes


@attrs.frozen(kw_only=True)
class IndexEdit:
    """An entry-level change of a root's MEMORY.md: the line for ``file``."""

    index: str  # path of the MEMORY.md
    file: str  # the topic file name the entry links to
    before: str | None  # exact current entry line (without newline); None = no entry
    after: str | None  # new entry line; None = remove the entry


@record("proposal", version=1)
class Proposal:
    id: str
    review: str  # id of the review that made it
    kind: ProposalKind = attrs.field(converter=ProposalKind)
    title: str
    summary: str
    target: str  # the main affected path (for listing)
    files: tuple[FileEdit, ...]
    index: tuple[IndexEdit, ...]
    evidence: tuple[str, ...]  # digest ids
    fingerprint: str  # stable identity of "the same proposal" (rejections are remembered by it)
    created: float
    requires: tuple[str, ...] = ()  # proposals that must be applied before this one (a note disposition)
    #: what the proposal answers besides its files' before-states: ``"stale-citations:KEY"`` (``cairn verify``
    #: found what the topic cites changed) or ``"unconfirmed:KEY"`` (a revalidation), KEY naming the proposal
    #: the topic's mark says answers it now (plain ``"stale-citations"`` before keys); once a later verification
    #: finds the topic true again, or another proposal answers it, the proposal is stale
    #: (``worker.memory.apply.check_fresh``), never applied over a memory that holds
    premise: str | None = optional_key()


@record("review", version=1)
class ReviewRecord:
    """Public record of a published review: ids and counts only.

    A general review lists the digests it covered; a focused review (of
    remembered texts) lists none, so it never advances digest coverage, and
    names the remember requests it covered in ``remembered`` instead.
    """

    id: str
    created: float
    digests: tuple[str, ...]  # digest ids it covered
    proposals: tuple[str, ...]  # proposal ids it made (empty = No action)
    provider: str
    automatic: bool
    remembered: tuple[str, ...] = ()  # remember ids a focused review covered


@record("decision", version=1)
class DecisionRecord:
    """Public record of a decision. Alone it never decides anything: the accepted
    private outcome (whose hash ``accepted`` names) does."""

    proposal: str
    action: str  # accept | reject | undo | unreject
    state: ProposalState = attrs.field(converter=ProposalState)
    decided: float
    accepted: str  # sha256 of the private accepted decision bundle


@record("write-intent", version=1)
class WriteIntent:
    """Complete private intent, persisted before any mutation of a target."""

    id: str  # write id (unique per attempt)
    proposal: str
    action: str  # apply | undo
    files: tuple[FileEdit, ...]  # exact before/after per file (index files included, whole-file)
    marker: str  # path of the hash-only marker for this write
    created: float
    # apply: directories (base-relative, outermost first) that did not exist and the write creates;
    # undo: the directories its application created, removed again (innermost first) once empty
    dirs: tuple[str, ...] = ()


@record("write-marker", version=1)
class WriteMarker:
    """Hash-only marker at the target: a write may be in flight."""

    write: str
    intent: str  # sha256 of the intent bundle


@record("decision-private", version=1)
class PrivateDecision:
    """The accepted decision (the authority); its bundle hash is what public records cite."""

    proposal: str
    seq: int
    action: str  # accept | reject | undo | unreject
    state: ProposalState = attrs.field(converter=ProposalState)
    decided: float
    write: str | None  # write id of the application/reversal, if any
    fingerprint: str


@record("review-result", version=1)
class ReviewResult:
    """The accepted private result of a review (what its completed outcome names)."""

    id: str
    digests: tuple[str, ...]
    proposals: tuple[Proposal, ...]
    provider: str
    automatic: bool
    remembered: tuple[str, ...] = ()  # a focused review: the remember ids it covered


@record("auto-apply", version=1)
class AutoApply:
    """Private: an ``auto``-mode review's proposals still to be applied (see :mod:`worker.memory.autoapply`).

    Linked in the program that accepts the review (before its outcome), removed
    once every proposal of the review was applied, decided otherwise or refused.
    """

    review: str  # review id (the record's file name)
    scope: str  # the review claim's scope: review/general or review/focused
    generation: int  # the review claim's generation whose completed outcome accepts ``bundle``
    bundle: str  # sha256 of the accepted ReviewResult bundle


@record("remember", version=1)
class RememberRequest:
    """Private: a remembered text is waiting for (or got) its focused review.

    Written once, after the text is captured as a turn of its own ``remember``
    session; covered when a published focused review lists its id.
    """

    id: str  # "m" + hash of (type, text): the same text remembered again is the same request
    session_id: str
    turn_id: str
    capture: str
    bundle: str  # evidence segment (or earlier per-turn bundle) of the captured turn ("" when gone)
    type: str  # a NoteType value, or "" to let the review classify the text
    source: str  # who asked: cli | lsp | emacs | nvim | mcp | ...
    created: float
