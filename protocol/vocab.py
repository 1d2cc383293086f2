"""Closed vocabularies shared by every layer."""

from __future__ import annotations

import enum


class Trigger(enum.StrEnum):
    """Why a capture was sealed. One vocabulary for capture, seal and public metadata."""

    COMPACTION = "compaction"
    CLEAR = "clear"
    SESSION_END = "session-end"
    IDLE = "idle"


class OpStatus(enum.StrEnum):
    """The one status each control-program operation reports."""

    OK = "ok"
    CONFLICT = "conflict"
    ABSENT = "absent"
    MISMATCH = "mismatch"
    FAILED = "failed"
    SKIPPED = "skipped"


class OutcomeKind(enum.StrEnum):
    """How a claim generation ended; exactly one per generation."""

    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    EXPIRED = "expired"


class NoteType(enum.StrEnum):
    """The only kinds of knowledge that become journal notes or memory topics."""

    USER = "user"
    FEEDBACK = "feedback"
    PROJECT = "project"
    REFERENCE = "reference"


class ProposalKind(enum.StrEnum):
    CREATE = "create"  # new topic file + index entry
    UPDATE = "update"  # append to / rewrite an existing topic
    MERGE = "merge"  # fold duplicate topics into one; sources deleted
    DELETE = "delete"  # remove a topic and/or its index entry (a dangling entry alone)
    INSTRUCTION = "instruction"  # edit an instruction file (AGENTS.md …)
    DISPOSITION = "disposition"  # a note judged: a working note removed once consolidated (or nothing written)


class ProposalState(enum.StrEnum):
    PENDING = "pending"
    STALE = "stale"  # derived, never stored: the before-state no longer matches
    APPLIED = "applied"
    REJECTED = "rejected"
    UNDONE = "undone"
