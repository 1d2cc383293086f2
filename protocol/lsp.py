"""The cairn LSP contract: custom method and command names and their parameters.

Field names are the wire names (camelCase, as LSP uses). Editors depend on
these names; change them only with a new ``experimental.cairn.version`` in
the server's capabilities.

Every request, notification and command argument is structured into one of
the records below by :func:`structure`, the only place parameters are
checked: a wrong type, a missing field or a value outside its set is
``E_USAGE`` with the path of the offending field, never a guess ("p1" is not
a list of ids). Unknown keys are ignored, so an editor may send more than a
record knows. Validation messages name fields, never echo values.
"""

from __future__ import annotations

from typing import Any, TypeVar

import attrs
import cattrs
from cairn.protocol import codec
from cairn.protocol.errors import CairnError, ErrorCode

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
JOURNAL = "cairn/journal"  # the public journal's digests (notes, turn ids), newest first
CHECK_EDITED = "cairn/checkEdited"  # edit before accept: the edited text's problems and index lines
EVIDENCE = "cairn/evidence"  # a proposal's digests, notes and cited turns' text (for its user's own editor)

# workspace/executeCommand commands
CMD_DRAIN = "cairn.drainBacklog"
CMD_REVIEW = "cairn.review"
CMD_ACCEPT = "cairn.accept"
CMD_REJECT = "cairn.reject"
CMD_UNDO = "cairn.undo"
CMD_UNREJECT = "cairn.unreject"  # a rejected proposal back to pending (its fingerprint lifted)
CMD_RETRY = "cairn.retry"
CMD_DISCARD = "cairn.discard"
CMD_DISMISS = "cairn.dismiss"
CMD_CLEANUP = "cairn.cleanup"
CMD_DIAGNOSTIC_REPORT = "cairn.diagnosticReport"
CMD_ACCEPT_EDITED = "cairn.acceptEdited"  # edit before accept: the user's version through the checked path
CMD_SHOW_PROPOSAL = "cairn.showProposal"  # the "show diff" code action (same result as cairn/proposal)
CMD_REMEMBER = "cairn.remember"
CMD_WIRE_AGENTS = "cairn.wireAgents"  # the code action on an instruction file: ``agents wire`` proposals
CMD_VERIFY = "cairn.verify"  # ``cairn verify``: recheck citations, mark stale topics, propose updates/retirements
CMD_RETIRE_TOPIC = "cairn.retireTopic"  # the Memories view: propose one topic's retirement
CMD_CONFIRM_TOPIC = "cairn.confirmTopic"  # the Memories view: one topic is still true (not due any more)

SESSION_EVENT_KINDS = ("compaction", "clear", "session-end")
COCKPIT_VIEWS = ("candidates", "memories", "history", "overview")
STATUS_KEYS = ("pending", "running", "retryWaiting", "attention", "exhausted", "digests", "proposals")

T = TypeVar("T")


def _nonempty(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not value:
        raise ValueError(f"{attribute.name} must be a non-empty string")


def _optional_nonempty(_: object, attribute: attrs.Attribute[str | None], value: str | None) -> None:
    if value is not None and not value:
        raise ValueError(f"{attribute.name} must be a non-empty string")


def _one_of(choices: tuple[str, ...]) -> Any:
    def check(_: object, attribute: attrs.Attribute[str], value: str) -> None:
        if value not in choices:
            raise ValueError(f"{attribute.name} must be one of {', '.join(choices)}")

    return check


def _not_negative(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not value >= 0:
        raise ValueError(f"{attribute.name} must be a number >= 0")


def _ids(_: object, attribute: attrs.Attribute[tuple[str, ...]], value: tuple[str, ...]) -> None:
    if not all(value):
        raise ValueError(f"{attribute.name} must hold non-empty proposal ids")


# ---------------------------------------------------------------- notifications


@attrs.frozen(kw_only=True)
class TurnCompletedParams:
    sessionId: str = attrs.field(validator=_nonempty)
    turnId: str = attrs.field(validator=_nonempty)
    user: str
    assistant: str
    completedAt: str = attrs.field(validator=_nonempty)
    parentTurnId: str | None = None
    workspace: str | None = None


@attrs.frozen(kw_only=True)
class SessionEventParams:
    sessionId: str = attrs.field(validator=_nonempty)
    kind: str = attrs.field(validator=_one_of(SESSION_EVENT_KINDS))
    workspace: str | None = None


@attrs.frozen(kw_only=True)
class IdleParams:
    seconds: float = attrs.field(default=0.0, validator=_not_negative)


# ---------------------------------------------------------------- requests


@attrs.frozen(kw_only=True)
class StatusParams:
    workspace: str | None = None


@attrs.frozen(kw_only=True)
class JournalParams:
    workspace: str | None = None


@attrs.frozen(kw_only=True)
class JobsParams:
    pass


@attrs.frozen(kw_only=True)
class CockpitParams:
    view: str = attrs.field(validator=_one_of(COCKPIT_VIEWS))
    workspace: str | None = None


@attrs.frozen(kw_only=True)
class ProposalParams:
    """One proposal by id: ``cairn/proposal`` and the ``cairn.showProposal`` and ``cairn.undo`` commands."""

    id: str = attrs.field(validator=_nonempty)
    workspace: str | None = None


# ---------------------------------------------------------------- command arguments


@attrs.frozen(kw_only=True)
class WorkspaceParams:
    """``cairn.drainBacklog``, ``cairn.review``, ``cairn.cleanup``."""

    workspace: str | None = None


@attrs.frozen(kw_only=True)
class NoParams:
    """``cairn.diagnosticReport``."""


@attrs.frozen(kw_only=True)
class DecisionParams:
    """``cairn.accept`` / ``cairn.reject``: ``ids``, or one ``id`` (code actions send both); ``keepBoth``
    (accept only): even where memory now says otherwise on a proposal's subject (docs/adr/0025)."""

    ids: tuple[str, ...] = attrs.field(default=(), validator=_ids)
    id: str | None = attrs.field(default=None, validator=_optional_nonempty)
    workspace: str | None = None
    keepBoth: bool = False

    @property
    def proposal_ids(self) -> tuple[str, ...]:
        return self.ids or ((self.id,) if self.id else ())


@attrs.frozen(kw_only=True)
class AcceptEditedParams:
    """``cairn.acceptEdited``: the proposal reviewed and the user's version of its proposed text."""

    id: str = attrs.field(validator=_nonempty)
    text: str
    workspace: str | None = None


@attrs.frozen(kw_only=True)
class RememberParams:
    """``cairn.remember``: the text (checked by the worker's rules: empty, too large, type), its
    note type (``user``/``feedback``/``project``/``reference``, or none to classify it) and who asked."""

    text: str
    type: str | None = None
    source: str | None = None
    workspace: str | None = None


@attrs.frozen(kw_only=True)
class WireAgentsParams:
    """``cairn.wireAgents``: the agents to wire (names of ``cairn agents``; none: every agent in use)."""

    agents: tuple[str, ...] = ()
    workspace: str | None = None


@attrs.frozen(kw_only=True)
class TopicParams:
    """``cairn.retireTopic`` / ``cairn.confirmTopic``: a topic file, workspace-relative as the Memories view lists it."""

    file: str = attrs.field(validator=_nonempty)
    workspace: str | None = None


@attrs.frozen(kw_only=True)
class JobActionParams:
    """``cairn.retry`` / ``cairn.discard`` / ``cairn.dismiss``: a maintenance job, a capture,
    or (dismiss only) ``clearHistory``."""

    jobId: str | None = attrs.field(default=None, validator=_optional_nonempty)
    capture: str | None = attrs.field(default=None, validator=_optional_nonempty)
    clearHistory: bool = False
    workspace: str | None = None


# ---------------------------------------------------------------- settings


# ---------------------------------------------------------------- structuring

_converter = codec.converter.copy(forbid_extra_keys=False)  # strict types, unknown keys ignored


def _describe(exc: BaseException, _: Any) -> str:
    if isinstance(exc, KeyError):
        return "required"
    if isinstance(exc, (TypeError, ValueError)):
        return str(exc)[:120]
    return "invalid"


def structure(params: Any, cls: type[T], where: str) -> T:
    """``params`` (plain JSON) as ``cls``; else ``E_USAGE``.

    ``None`` and an empty array mean no parameters (some editors encode an
    empty table as ``[]``).
    """
    if params is None or params == []:
        params = {}
    if not isinstance(params, dict):
        raise CairnError(ErrorCode.USAGE, f"{where}: parameters must be an object")
    try:
        return _converter.structure(params, cls)
    except cattrs.BaseValidationError as exc:
        problems = cattrs.transform_error(exc, path="params", format_exception=_describe)
        raise CairnError(ErrorCode.USAGE, f"{where}: {'; '.join(problems)}"[:300]) from None
    except (TypeError, ValueError) as exc:
        raise CairnError(ErrorCode.USAGE, f"{where}: {_describe(exc, cls)}") from None
