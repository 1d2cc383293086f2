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
