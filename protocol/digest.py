"""What a digest provider receives and returns, and the frozen model policy.

A digest holds only reusable knowledge of four types (user, feedback,
enduring project facts, references); every note cites the turn ids it came
from. An empty ``notes`` tuple is a valid "all-none" digest.
"""

from __future__ import annotations

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


@attrs.frozen(kw_only=True)
class DigestOutput:
    notes: tuple[Note, ...]
