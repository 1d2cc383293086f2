"""Maintenance job records: the durable job store the coordinator schedules.

A job is serialisable data describing work, never a running process: the
server's adapter persists the whole store as one ``job-store`` record and
reloads it strictly (``protocol.codec.decode(data, JobStore)``), so a restart
starts fresh workers from data instead of resuming something that died.

Identity and dedupe: a job's key is ``(workspace, kind, args)``. Kinds are
strings chosen by the caller (the worker refuses a kind it does not know
with ``E_WORKER_UNKNOWN_JOB``); args map names to identifiers (ids, relative
paths), never content, and are still kept out of diagnostic reports.

``attempts`` counts recorded failures, not executions: an interruption
(crash, restart, shutdown cancellation) or a ``busy`` reply does not consume
one. ``not_before`` is an eligibility deadline (wall-clock seconds since the
epoch), set only while the job is ``retry-waiting``; it is a lower bound,
not a promise of execution at that instant.
"""

from __future__ import annotations

import enum

import attrs
from cairn.protocol.codec import record


class JobState(enum.StrEnum):
    """Where a job is in its life. Only ``idle`` and ``retry-waiting`` are pending."""

    IDLE = "idle"  # queued, eligible when it reaches the head of its workspace's queue
    RUNNING = "running"  # a worker holds it; normalised back to idle on restart
    RETRY_WAITING = "retry-waiting"  # failed or busy; eligible again at not_before
    ATTENTION = "attention"  # a failure retrying cannot fix; waits for Retry/Discard/Dismiss
    EXHAUSTED = "exhausted"  # used its automatic attempts; waits for Retry/Discard/Dismiss
    DISMISSED = "dismissed"  # moved to history by the user; never runs automatically
    DONE = "done"  # finished; completed jobs leave the store, so this is only transient


PENDING_STATES = frozenset({JobState.IDLE, JobState.RETRY_WAITING})
"""States the coordinator may start from."""

HELD_STATES = frozenset({JobState.ATTENTION, JobState.EXHAUSTED})
"""States that need a person: not runnable, and blocking nothing."""

@record("job", version=1)
class Job:
    id: str
    workspace: str
    kind: str
    args: dict[str, str] = attrs.field(factory=dict)
    seq: int  # queue position; lower runs first within a workspace
    state: JobState = attrs.field(converter=JobState)  # converter: refuse unknown states on decode
    attempts: int = 0  # recorded failures
    not_before: float | None = None  # eligibility deadline while retry-waiting
    last_error: str | None = None  # a fixed error code, never a message
    created: float
    updated: float  # for dismissed jobs: the dismissal time (history pruning uses it)
    checkpoint: dict[str, str] = attrs.field(factory=dict)  # publication checkpoints, kept on dismiss

    @property
    def key(self) -> tuple[str, str, tuple[tuple[str, str], ...]]:
        """The dedupe key: equal work in the same workspace."""
        return (self.workspace, self.kind, tuple(sorted(self.args.items())))


@record("job-store", version=1)
class JobStore:
    """Everything durable about maintenance: pending, held and dismissed jobs.

    ``cleanup_offered`` maps a workspace to when automatic cleanup was last
    offered there (the hourly throttle survives restarts). ``next_seq`` keeps
    queue order and job ids unique across restarts.
    """

    jobs: tuple[Job, ...] = ()
    next_seq: int = 1
    cleanup_offered: dict[str, float] = attrs.field(factory=dict)
