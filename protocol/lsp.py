"""The cairn LSP contract: custom method and command names and their parameters.

Field names are the wire names (camelCase, as LSP uses). Editors depend on
these names; change them only with a new ``experimental.cairn.version`` in
the server's capabilities.
"""

from __future__ import annotations

import attrs

CONTRACT_VERSION = 1

# notifications from the editor
TURN_COMPLETED = "cairn/turnCompleted"
SESSION_EVENT = "cairn/sessionEvent"
IDLE = "cairn/idle"

# requests from the editor
STATUS = "cairn/status"
COCKPIT = "cairn/cockpit"
JOBS = "cairn/jobs"
PROPOSAL = "cairn/proposal"

# workspace/executeCommand commands
CMD_DRAIN = "cairn.drainBacklog"
CMD_REVIEW = "cairn.review"
CMD_ACCEPT = "cairn.accept"
CMD_REJECT = "cairn.reject"
CMD_UNDO = "cairn.undo"
CMD_RETRY = "cairn.retry"
CMD_DISCARD = "cairn.discard"
CMD_DISMISS = "cairn.dismiss"
CMD_CLEANUP = "cairn.cleanup"
CMD_DIAGNOSTIC_REPORT = "cairn.diagnosticReport"
CMD_SHOW_PROPOSAL = "cairn.showProposal"  # the "show diff" code action (same result as cairn/proposal)
COMMANDS = (CMD_DRAIN, CMD_REVIEW, CMD_ACCEPT, CMD_REJECT, CMD_UNDO, CMD_RETRY, CMD_DISCARD, CMD_DISMISS,
            CMD_CLEANUP, CMD_DIAGNOSTIC_REPORT)

SESSION_EVENT_KINDS = ("compaction", "clear", "session-end")
COCKPIT_VIEWS = ("candidates", "memories", "history")
STATUS_KEYS = ("pending", "running", "retryWaiting", "attention", "exhausted", "digests", "proposals")


@attrs.frozen(kw_only=True)
class TurnCompletedParams:
    workspace: str
    sessionId: str
    turnId: str
    user: str
    assistant: str
    completedAt: str
    parentTurnId: str | None = None


@attrs.frozen(kw_only=True)
class SessionEventParams:
    workspace: str
    sessionId: str
    kind: str  # one of SESSION_EVENT_KINDS


@attrs.frozen(kw_only=True)
class IdleParams:
    seconds: float


@attrs.frozen(kw_only=True)
class StatusParams:
    workspace: str | None = None


@attrs.frozen(kw_only=True)
class CockpitParams:
    view: str  # one of COCKPIT_VIEWS
    workspace: str | None = None


@attrs.frozen(kw_only=True)
class ProposalParams:
    id: str
    workspace: str | None = None


@attrs.frozen(kw_only=True)
class Settings:
    """Configuration from initializationOptions / didChangeConfiguration / .cairn/config.toml."""

    mode: str = "propose"  # manual | propose | auto
    provider: str = "extractive"  # extractive | openai
    model: str = ""
    endpoint: str = ""
    apiKeyEnv: str = "CAIRN_OPENAI_API_KEY"
    idleMinutes: float = 10.0  # maintenance opportunity after this much editor idleness
    sealIdleMinutes: float = 20.0  # idle sealing quiet period
    memoryRoots: tuple[str, ...] = ()  # extra (global) memory roots; the workspace's .agents/memory is implicit
    instructionFiles: tuple[str, ...] = ("AGENTS.md",)
    maxWorkers: int = 2
