"""Worker job arguments and results: one closed record per job.

A worker request's ``args`` and a response's ``result`` are JSON objects
(:mod:`.worker`) whose schema the job kind names: :data:`ARGS` and
:data:`RESULTS` map a kind to its records. Jobs build and return these
records; the envelope writes their *bodies* (:func:`.codec.to_body`: the
fields, no ``record``/``v`` keys), so the JSON a worker writes, the CLI's
``--json`` and an editor's LSP answer (``docs/lsp.md``) keep the keys they
always had; readers structure a body back with :func:`read` (the codec's
:func:`~.codec.from_body`: an unknown or missing field, a wrong type, is
refused with its fixed ``E_RECORD_...`` code, nothing is coerced). A field
declared ``optional_key()`` is absent, not ``null``, while unset: a
result shape with or without it (a review that was skipped has no digest
count, an ``each`` import no ``repaired``) is one record.

Server and worker are one installation, so these schemas change together
(a kind is registered once, at version 1, so no two records share one).
Results hold ids, counts and fixed codes, never evidence or memory bodies
(see :mod:`.worker`). Jobs not listed here (the views: ``journal``, ``jobs``,
``proposals``, ``proposal``, ``memory``, ``cockpit``, ``status``, ``usage``;
and ``cleanup``) still answer with plain objects.
"""

from __future__ import annotations

from typing import Any, TypeVar

import attrs
from cairn.protocol import codec
from cairn.protocol.codec import optional_key, record
from cairn.protocol.import_results import (  # the records of imports, captures and seals, re-exported
    CaptureResult,
    ImportArgs,
    ImportResult,
    SealArgs,
    SealIdleArgs,
    SealIdleResult,
    SealResult,
)
from cairn.protocol.vocab import ProposalKind, ProposalState

T = TypeVar("T")

# -- digests --------------------------------------------------------------------------------------


@record("recover-result", version=1)
class RecoverResult:
    recovered: int


@attrs.frozen(kw_only=True)
class DigestFailure:
    """A failed digest attempt: ids, code, message (never content), attempt n of N.

    ``kept``: windows of a model digest this attempt answered and kept; an
    attempt that kept one is not counted (``attempt`` is then the number of
    attempts used so far, not one more).
    """

    capture: str
    code: str
    message: str
    attempt: int
    of: int
    exhausted: bool
    kept: int | None = optional_key()


@record("process-args", version=1)
class ProcessArgs:
    max: int | None = None  # captures digested at most (None: as many as the deadline allows)


@record("process-result", version=1)
class ProcessResult:
    recovered: int = 0
    published: int = 0
    all_none: int = 0
    failed: int = 0
    busy: int = 0
    exhausted: tuple[str, ...] = ()  # captures that used their last attempt in this pass
    failures: tuple[DigestFailure, ...] = ()
    remaining: int = 0
    #: notes of model replies dropped as invalid, in the digests published by this pass (absent: none)
    notes_dropped: int | None = optional_key()


@record("capture-args", version=1)
class CaptureArgs:
    capture: str = ""  # a capture id or an unambiguous prefix


@record("capture-decision-result", version=1)
class CaptureDecision:
    """``retry`` or ``discard`` of a capture."""

    capture: str
    state: str
    changed: bool
    published: str | None = optional_key()  # a discard that published instead


# -- memory ---------------------------------------------------------------------------------------


@record("review-args", version=1)
class ReviewArgs:
    automatic: bool = False  # offered when idle: capped per day, skipped in manual mode


@record("review-job-result", version=1)
class ReviewJobResult:
    """A general review (:func:`worker.memory.review.general_review`; the job adds ``writes`` and ``focused``).

    ``review`` is None when none was published: then ``skipped`` says why
    (``manual-mode``, ``cap``), or the counts say there was nothing to review.
    """

    review: str | None
    recovered: bool  # a killed review's accepted result was published first
    skipped: str | None = optional_key()
    digests: int | None = optional_key()
    proposals: int | None = optional_key()
    applied: tuple[str, ...] | None = optional_key()  # in ``auto`` mode
    notes: int | None = optional_key()  # working notes read
    notesProblems: tuple[str, ...] | None = optional_key()
    writes: dict[str, int] | None = optional_key()  # the recovery's counts
    focused: int | None = optional_key()  # focused reviews of remembered texts
    skippedNotes: dict[str, int] | None = optional_key()  # notes left out (cannot be written), by code
    # a remote review's replies taken in good part: {"proposals": invalid ones left out,
    # "references": unknown digest ids left out of their proposals} (counts only; absent when none)
    droppedProposals: dict[str, int] | None = optional_key()


@record("drain-result", version=1)
class DrainResult:
    reviews: int
    proposals: int
    skippedNotes: dict[str, int] | None = optional_key()  # notes left out (cannot be written), by code


@record("decide-args", version=1)
class DecideArgs:
    ids: tuple[str, ...]  # proposal ids (at least one)
    #: accept even where memory says otherwise on a proposal's subject (docs/adr/0025): both are kept
    keepBoth: bool | None = optional_key()
    #: every id the user decides in the same command (``cairn accept A B`` runs one job per id): a promise a
    #: killed ``auto`` review left for one of them waits for the user's decision, never goes first
    deciding: tuple[str, ...] | None = optional_key()


@record("proposal-args", version=1)
class ProposalArgs:
    id: str


@record("accept-edited-args", version=1)
class AcceptEditedArgs:
    id: str
    text: str


@record("decision-result", version=1)
class Decision:
    """One decision on a proposal: ``accept``, ``reject``, ``unreject``, ``undo``, ``accept-edited``."""

    id: str
    state: ProposalState = attrs.field(converter=ProposalState)
    changed: bool  # False: it was in that state already
    written: tuple[str, ...] | None = optional_key()  # files an apply/undo wrote
    supersedes: str | None = optional_key()  # accept-edited: the edited proposal
    #: accept: the proposals whose applications changed its file since it was made; its working agreements were
    #: added to the file as they left it (re-derived, :func:`worker.memory.apply.rebase`)
    rebased: tuple[str, ...] | None = optional_key()


@record("decisions-result", version=1)
class Decisions:
    decisions: tuple[Decision, ...]


@record("remember-args", version=1)
class RememberArgs:
    text: str
    type: str = ""  # a note type, "" to classify
    source: str = ""  # the caller ("cli", "lsp", "mcp", an editor…), "" for the default


@attrs.frozen(kw_only=True)
class ProposalRow:
    id: str
    kind: ProposalKind = attrs.field(converter=ProposalKind)
    target: str
    title: str
    state: ProposalState = attrs.field(converter=ProposalState)


@record("remember-result", version=1)
class RememberResult:
    remember: str  # the request id
    capture: str
    reviews: int  # focused reviews run
    busy: bool  # another process held the focused review at the end
    reviewed: bool  # this text was reviewed (else its proposal follows)
    proposals: tuple[ProposalRow, ...]
    applied: tuple[str, ...]  # proposals applied (``auto`` mode)
    skippedNotes: dict[str, int] | None = optional_key()  # notes left out (cannot be written), by code
    #: the stale proposals this text had made (their files changed since): it was reviewed again against the
    #: files as they are now, and ``proposals`` are what that review proposed
    again: tuple[str, ...] | None = optional_key()


@record("agents-wire-args", version=1)
class AgentsWireArgs:
    agents: tuple[str, ...] = ()  # agent names (``cairn agents``); none: every agent in use


@attrs.frozen(kw_only=True)
class WireProposal:
    """A proposal of ``agents wire``: the file it edits (or creates), the agents it wires, how."""

    id: str
    target: str
    agents: tuple[str, ...]
    mechanism: str  # "import" (an ``@`` line), "pointer" (a section naming the index) or "read" (aider's ``read:``)
    title: str
    new: bool  # True: a new proposal (False: the same one was pending already)


@attrs.frozen(kw_only=True)
class WireRefusal:
    target: str
    agents: tuple[str, ...]
    code: str
    message: str


@record("agents-wire-result", version=1)
class AgentsWireResult:
    """What ``agents wire`` proposed, which agents read the memory already, what it refused (by file)."""

    proposals: tuple[WireProposal, ...]
    wired: tuple[str, ...]
    refused: tuple[WireRefusal, ...]
    index: str  # the memory index the wiring points to
    indexExists: bool


# -- one memory topic, at the user's word ---------------------------------------------------------


@record("topic-args", version=1)
class TopicArgs:
    """``memory-retire`` / ``memory-confirm``: the topic file, workspace-relative (as ``cairn memory`` lists it)."""

    file: str


@record("topic-retired", version=1)
class TopicRetired:
    """The retirement proposal of the chosen topic (``new`` false: the same one was pending already)."""

    file: str
    proposal: str
    new: bool


@record("topic-confirmed", version=1)
class TopicConfirmed:
    """The date the chosen topic was confirmed still true (its mark in private state), and the pending
    "revalidate or retire" proposals of it this rejected."""

    file: str
    confirmed: str
    rejected: tuple[str, ...] = ()


# -- the tables -----------------------------------------------------------------------------------

#: job kind -> its argument record (jobs not named take no arguments, or still plain ones)
ARGS: dict[str, type] = {
    "import": ImportArgs,
    "seal": SealArgs,
    "seal-idle": SealIdleArgs,
    "process": ProcessArgs,
    "retry": CaptureArgs,
    "discard": CaptureArgs,
    "review": ReviewArgs,
    "accept": DecideArgs,
    "reject": DecideArgs,
    "unreject": DecideArgs,
    "undo": ProposalArgs,
    "accept-edited": AcceptEditedArgs,
    "remember": RememberArgs,
    "agents-wire": AgentsWireArgs,
    "memory-retire": TopicArgs,
    "memory-confirm": TopicArgs,
}

#: job kind -> its result record
RESULTS: dict[str, type] = {
    "capture": CaptureResult,
    "import": ImportResult,
    "seal": SealResult,
    "seal-idle": SealIdleResult,
    "recover": RecoverResult,
    "process": ProcessResult,
    "retry": CaptureDecision,
    "discard": CaptureDecision,
    "review": ReviewJobResult,
    "drain": DrainResult,
    "accept": Decisions,
    "reject": Decisions,
    "unreject": Decisions,
    "undo": Decision,
    "accept-edited": Decision,
    "remember": RememberResult,
    "agents-wire": AgentsWireResult,
    "memory-retire": TopicRetired,
    "memory-confirm": TopicConfirmed,
}


def read(cls: type[T], body: Any, *, job: str) -> T:
    """The ``cls`` record of a job's result (or arguments) body; refused with the codec's fixed codes."""
    return codec.from_body(body, cls, where=f"{job} {'args' if cls in ARGS.values() else 'result'}")


def body(rec: Any) -> dict[str, Any]:
    """The JSON object of a job's result or arguments (:func:`.codec.to_body`)."""
    return codec.to_body(rec)
