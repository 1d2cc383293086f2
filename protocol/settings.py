"""The settings record: every option cairn reads, its default and its vocabulary.

One record serves every layer (embedded defaults, the user's
``config.toml``, the workspace's ``.cairn/config.toml``, the editor's
``initializationOptions`` / ``didChangeConfiguration``) and every process
(a worker receives the resolved record in its request). Field names are the
LSP wire names (camelCase); TOML files spell them in snake_case.

Validators state the vocabularies and ranges here, once: constructing a
record with a value outside them raises ``ValueError``. The merge of layers
(:mod:`worker.settings.config`) turns that into an ``E_CONFIG_INVALID``
warning and keeps the layer below; shapes (a list of strings, a number)
are checked there, where TOML and JSON values arrive. The editors' option
lists are held to this record by ``tests/worker/test_settings_record.py``.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

#: how consolidation proposals are applied
MODES = ("manual", "propose", "auto")
#: digest providers: the embedded engine, any OpenAI-compatible endpoint, a local program
PROVIDERS = ("extractive", "openai", "command")
#: the context window assumed when ``contextTokens`` is not set, by provider: an endpoint may serve any model
#: (local ones often run with 4-8k tokens), a ``command`` is an assistant's CLI, which takes far more
CONTEXT_TOKENS = {"openai": 8192, "command": 32768}


def context_window(provider: str, setting: int | None = None) -> int:
    """The context window of a request to ``provider``: ``setting`` (``contextTokens``) when set, else the default.

    Unset is not the default: ``context_tokens = 8192`` set for a ``command``
    provider stays 8192. A provider without a default of its own (the
    embedded engine sends no request) gets the ``openai`` one.
    """
    return setting if setting is not None else CONTEXT_TOKENS.get(provider, CONTEXT_TOKENS["openai"])


def _one_of(choices: tuple[str, ...]) -> Any:
    def check(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
    return check


def _time(_: Any, attribute: attrs.Attribute[Any], value: float) -> None:
    # TOML and Python's JSON read nan and inf: a timer or a timeout must be a time
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    if value < 0:
        raise ValueError("must not be negative")


def _count(_: Any, attribute: attrs.Attribute[Any], value: int) -> None:
    if value < 0:
        raise ValueError("must not be negative")


def _positive(_: Any, attribute: attrs.Attribute[Any], value: int) -> None:
    if value < 1:
        raise ValueError("must be at least 1")


#: how many context windows of one capture are sent at once, by default and at most
WINDOW_CONCURRENCY = 4
WINDOW_CONCURRENCY_MAX = 16


def _window_concurrency(_: Any, attribute: attrs.Attribute[Any], value: int) -> None:
    if not 1 <= value <= WINDOW_CONCURRENCY_MAX:
        raise ValueError(f"must be 1 to {WINDOW_CONCURRENCY_MAX}")


@attrs.frozen(kw_only=True)
class Settings:
    """Configuration from initializationOptions / didChangeConfiguration / the config files."""

    mode: str = attrs.field(default="propose", validator=_one_of(MODES))
    provider: str = attrs.field(default="extractive", validator=_one_of(PROVIDERS))
    model: str = ""
    endpoint: str = ""
    apiKeyEnv: str = "CAIRN_OPENAI_API_KEY"
    #: argv of the "command" provider (no shell), e.g. ("llm", "-m", "MODEL")
    command: tuple[str, ...] = ()
    #: the model's context window: longer evidence is split into windows that fit; None (unset): the
    #: provider's default (:data:`CONTEXT_TOKENS`, resolved by :func:`context_window` where a request is routed)
    contextTokens: int | None = attrs.field(default=None, validator=attrs.validators.optional(_count))
    #: context windows of one capture's model digest sent at once (the first window always goes alone first)
    windowConcurrency: int = attrs.field(default=WINDOW_CONCURRENCY, validator=_window_concurrency)
    #: one model request (HTTP exchange or command run), frozen at capture
    timeoutSeconds: float = attrs.field(default=120.0, validator=_time)
    #: maintenance opportunity after this much editor idleness
    idleMinutes: float = attrs.field(default=10.0, validator=_time)
    #: idle sealing quiet period
    sealIdleMinutes: float = attrs.field(default=20.0, validator=_time)
    #: extra (global) memory roots; the workspace's .agents/memory is implicit
    memoryRoots: tuple[str, ...] = ()
    instructionFiles: tuple[str, ...] = ("AGENTS.md",)
    maxWorkers: int = attrs.field(default=2, validator=_count)
    #: shared working notes, consolidated then disposed of
    notesDirs: tuple[str, ...] = (".agents/notes",)
    #: usage pricing, local: (model or "provider/model", price of 1M input tokens, of 1M output tokens)
    prices: tuple[tuple[str, float, float], ...] = ()
    #: the memory index budget: agents load the first 200 lines / 25 KB of a ``MEMORY.md`` and drop the rest, so a
    #: proposal that would cross it is refused (``E_INDEX_FULL``) and a review consolidates instead
    indexMaxLines: int = attrs.field(default=200, validator=_positive)
    indexMaxBytes: int = attrs.field(default=25 * 1024, validator=_positive)
    #: session files or folders followed live (relative: to the workspace)
    watchPaths: tuple[str, ...] = ()
    #: a memory topic no session or verification confirmed for this many days gets a "revalidate or retire"
    #: proposal from ``cairn verify`` (0: never)
    revalidateDays: int = attrs.field(default=90, validator=_count)
