"""What a digest provider receives and returns, the frozen model policy, and the kept window replies.

A digest holds only reusable knowledge of four types (user, feedback,
enduring project facts, references); every note cites the turn ids it came
from. An empty ``notes`` tuple is a valid "all-none" digest.

A model digest of a long session is sent in several requests (context
windows, :mod:`worker.providers.openai_compat`). Each window's validated
reply is a :class:`WindowReply`, kept by the caller through a
:class:`WindowMemo` (the journal keeps it under the capture's digest claim),
so a later attempt sends only the windows still unanswered
(docs/adr/0018-durable-windows.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import attrs
from cairn.protocol.codec import record
from cairn.protocol.transcript import Turn
from cairn.protocol.vocab import NoteType


@record("model-policy", version=1)
class ModelPolicy:
    """Frozen at capture: later configuration changes never alter a captured turn's policy."""

    provider: str  # "extractive" | "openai" | "command" (whose argv the settings give at call time)
    model: str = ""
    endpoint: str = ""  # base URL for the openai-compatible provider
    temperature: float = 0.0
    max_output_tokens: int = 2000
    reasoning: str = "disabled"  # "disabled" | "default"
    timeout_seconds: float = 120.0
    max_payload_bytes: int = 1 << 20  # admission bound on the prepared request


def policy_from_config(config: Mapping[str, Any]) -> ModelPolicy:
    """The policy a workspace's configuration sets for new captures (the embedded engine unless a
    provider is named)."""
    provider = str(config.get("provider", "extractive"))
    if provider == "extractive":
        return ModelPolicy(provider="extractive")
    timeout = config.get("timeoutSeconds", 120.0)
    return ModelPolicy(provider=provider, model=str(config.get("model", "")), endpoint=str(config.get("endpoint", "")),
                       timeout_seconds=float(timeout) if isinstance(timeout, (int, float)) else 120.0)


@attrs.frozen(kw_only=True)
class Note:
    type: NoteType
    title: str  # one line, at most 120 characters
    body: str  # at most 2000 characters, already redacted
    turn_ids: tuple[str, ...]  # non-empty; every id is a turn of the evidence


@attrs.frozen(kw_only=True)
class DigestInput:
    session_id: str
    title: str | None
    turns: tuple[Turn, ...]
    #: the tool the session was held in (an importer's format, or ``editor``); "" when unknown
    source: str = ""


@attrs.frozen(kw_only=True)
class DigestOutput:
    notes: tuple[Note, ...]
    #: notes of the model's replies dropped as invalid, and turn ids dropped from kept notes (counts only)
    dropped_notes: int = 0
    dropped_ids: int = 0


@record("window-reply", version=1)
class WindowReply:
    """The validated reply to one context window of a model digest, kept until the capture is published.

    ``key`` names the window: a hash of the model and the exact evidence the
    window carries (never the text itself). ``notes`` cite only turns of that
    window, in the order the model gave them; ``dropped_notes`` and
    ``dropped_ids`` count what validation left out. ``generation`` is the
    digest claim generation that kept it (0 until kept).
    """

    key: str
    notes: tuple[Note, ...]
    dropped_notes: int = 0
    dropped_ids: int = 0
    generation: int = 0


class WindowMemo(Protocol):
    """Where a model digest finds and keeps its answered windows (the journal's, fenced by the claim)."""

    def kept(self, key: str) -> WindowReply | None:
        """The reply kept for window ``key``, if any."""
        ...

    def keep(self, reply: WindowReply) -> None:
        """Keep ``reply`` durably before it is used; raises the claim's code when the claim is lost."""
        ...
