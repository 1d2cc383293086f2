"""The coordinator's vocabulary: configuration, events in, actions out.

Events and actions are plain immutable values exchanged in process between
the pure scheduler (:mod:`server.scheduler.coordinator`) and the adapter that owns
clocks, timers and worker subprocesses. None of them carries wall time
except :class:`Tick` (optionally) and the deadlines the coordinator computes;
the current time is passed to ``Coordinator.handle(event, now)``.

Adapter contract, in short:

- Run every :class:`StartWorker` as one worker process with its deadline,
  and report exactly one :class:`WorkerFinished` for it when it has exited.
- On :class:`CancelWorker`, stop that worker; still report its
  :class:`WorkerFinished` (usually ``cancelled``) once it has exited. The
  workspace stays occupied until then, so two workers never overlap there.
- Keep one timer at the latest :class:`SetTimer` value (``None`` = none) and
  send :class:`Tick` when it fires.
- Write the latest :class:`Persist` store durably (``protocol.codec.encode``).
- Show each :class:`Report` to the user (e.g. one ``window/showMessage``).
"""

from __future__ import annotations

import enum

import attrs
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.jobs import JobStore
from cairn.protocol.worker import WorkerStatus

MIN_RETRY_SPACING = 30.0
"""Seconds. No automatic retry is ever eligible sooner than this after a failure."""

DEFAULT_ATTENTION_CODES = frozenset(
    {
        ErrorCode.RECORD_MALFORMED,
        ErrorCode.RECORD_UNKNOWN_KIND,
        ErrorCode.RECORD_UNKNOWN_VERSION,
        ErrorCode.RECORD_UNKNOWN_FIELD,
        ErrorCode.RECORD_INVALID_FIELD,
        ErrorCode.CLAIM_CORRUPT,
        ErrorCode.CLAIM_UNSETTLED,
        ErrorCode.WORKSPACE_INVALID,
        ErrorCode.CONFIG_INVALID,
        ErrorCode.WORKER_UNKNOWN_JOB,
        ErrorCode.TARGET_OUTSIDE_ROOTS,
    }
)
"""Failures that retrying cannot fix: the job needs a person at once."""


class CancelReason(enum.StrEnum):
    DEADLINE = "deadline"  # the job overran its budget: recorded as a failed attempt
    SHUTDOWN = "shutdown"  # the server is leaving: an interruption, not an attempt


def _positive(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise CairnError(ErrorCode.CONFIG_INVALID, f"coordinator: {attribute.name} must be > 0")


@attrs.frozen(kw_only=True)
class CoordinatorConfig:
    """Scheduling knobs. Invalid values raise ``E_CONFIG_INVALID`` at construction."""

    max_workers: int = 2  # global cap of concurrent workers (one per workspace regardless)
    max_attempts: int = 3  # recorded failures before a job is exhausted
    retry_delays: tuple[float, ...] = (30.0, 120.0)  # delay after failure n (last one repeats)
    busy_delay: float = MIN_RETRY_SPACING  # wait after a `busy` reply (no attempt consumed)
    notify_window: float = 1.0  # notification coalescing window after a pass
    default_budget: float = 120.0  # worker deadline, seconds after start
    budgets: dict[str, float] = attrs.field(factory=dict)  # per-kind worker deadline
    cleanup_interval: float = 3600.0  # automatic cleanup offered at most once per this, per workspace
    idle_kinds: tuple[str, ...] = ("process", "review")  # offered on every idle opportunity
    history_max: int = 500  # dismissed records kept
    history_max_age: float = 90 * 86400.0  # dismissed records older than this are pruned
    attention_codes: frozenset[str] = DEFAULT_ATTENTION_CODES
    # kinds that depend on no earlier job of their workspace and may overtake a delayed
    # retry there: a capture holds an editor turn in memory until it runs
    independent_kinds: tuple[str, ...] = ("capture",)

    def __attrs_post_init__(self) -> None:
        for name in ("max_workers", "max_attempts", "history_max"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise CairnError(ErrorCode.CONFIG_INVALID, f"coordinator: {name} must be an integer >= 1")
        if not self.retry_delays:
            raise CairnError(ErrorCode.CONFIG_INVALID, "coordinator: retry_delays must not be empty")
        for delay in (*self.retry_delays, self.busy_delay):
            if isinstance(delay, bool) or not isinstance(delay, (int, float)) or delay < MIN_RETRY_SPACING:
                raise CairnError(
                    ErrorCode.CONFIG_INVALID,
                    f"coordinator: retry delays must be at least {MIN_RETRY_SPACING:g} s",
                )
        for name in ("notify_window", "default_budget", "cleanup_interval", "history_max_age"):
            _positive(self, attrs.fields_dict(CoordinatorConfig)[name], getattr(self, name))
        for kind, budget in self.budgets.items():
            if not isinstance(kind, str) or isinstance(budget, bool) or not isinstance(budget, (int, float)) or budget <= 0:
                raise CairnError(ErrorCode.CONFIG_INVALID, "coordinator: budgets must map kinds to seconds > 0")

    def budget(self, kind: str) -> float:
        return float(self.budgets.get(kind, self.default_budget))

    def retry_delay(self, attempts: int) -> float:
        """Delay after the ``attempts``-th recorded failure (1-based)."""
        return float(self.retry_delays[min(attempts, len(self.retry_delays)) - 1])


# ---------------------------------------------------------------- events


@attrs.frozen
class Notify:
    """Something changed in ``workspace`` (a turn was saved, a session sealed).

    Enqueues one job per kind. Such notification-driven work coalesces: it
    is not started within ``notify_window`` of the workspace's last pass.
    """

    workspace: str
    kinds: tuple[str, ...]


@attrs.frozen
class Enqueue:
    """An explicit request for one job; starts as soon as order and slots allow."""

    workspace: str
    kind: str
    args: dict[str, str] = attrs.field(factory=dict)


@attrs.frozen
class Drain:
    """Explicit backlog drain: a ``drain`` job, re-run while the worker reports more."""

    workspace: str


@attrs.frozen
class Idle:
    """One maintenance opportunity per idle period.

    ``workspaces`` empty means every workspace this coordinator has seen.
    ``seconds`` (how long the editor has been idle) is informational: the
    adapter decides when an idle period has begun.
    A second Idle without activity in between (Notify, Enqueue, Drain,
    TurnActive(True)) is ignored, so a long idle period is quiet.
    """

    seconds: float = 0.0
    workspaces: tuple[str, ...] = ()


@attrs.frozen
class TurnActive:
    """A turn started or finished in ``workspace``; drains wait while one is active."""

    workspace: str
    active: bool


@attrs.frozen
class Tick:
    """A timer fired. ``at`` is an explicit clock reading; ``None`` means ``now``."""

    at: float | None = None


@attrs.frozen
class WorkerFinished:
    """A worker exited. ``more``: bounded progress, another batch is wanted.

    ``checkpoint`` entries (e.g. a publication already done) are merged into
    the job so a retry resumes instead of repeating them.
    """

    job_id: str
    status: WorkerStatus = attrs.field(converter=WorkerStatus)
    error_code: str | None = None
    more: bool = False
    checkpoint: dict[str, str] = attrs.field(factory=dict)


@attrs.frozen
class Retry:
    job_id: str


@attrs.frozen
class Dismiss:
    job_id: str


@attrs.frozen
class Discard:
    job_id: str


@attrs.frozen
class ClearHistory:
    """Remove every dismissed record (and nothing else)."""


@attrs.frozen
class Restart:
    """Load a durable store: a new server session starts from it."""

    store: JobStore


@attrs.frozen
class Shutdown:
    """Stop admitting and starting work.

    Running workers may finish; each is cancelled at its own deadline (a
    failed attempt), or at ``now + grace`` if that comes first (an
    interruption, no attempt). Everything else stays durable.
    """

    grace: float | None = None


Event = (
    Notify | Enqueue | Drain | Idle | TurnActive | Tick | WorkerFinished
    | Retry | Dismiss | Discard | ClearHistory | Restart | Shutdown
)


# ---------------------------------------------------------------- actions


@attrs.frozen
class StartWorker:
    job_id: str
    workspace: str
    kind: str
    args: dict[str, str]
    deadline: float  # absolute, on the clock ``now`` was read from


@attrs.frozen
class CancelWorker:
    job_id: str
    reason: CancelReason


@attrs.frozen
class SetTimer:
    """The single earliest wake-up; replaces any earlier one. ``None``: no timer."""

    at: float | None


@attrs.frozen
class Persist:
    """The job store changed; write it durably (it is one ``job-store`` record)."""

    store: JobStore


@attrs.frozen
class Report:
    """Tell the user once per server session: ``kind`` is ``exhausted`` or ``attention``."""

    kind: str
    job_id: str
    code: str | None


Action = StartWorker | CancelWorker | SetTimer | Persist | Report
