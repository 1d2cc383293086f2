"""Digest providers: turn one capture's evidence into a digest under its frozen model policy.

``extractive`` (the default) is the embedded engine: offline, deterministic,
no configuration. ``remember`` (embedded too) digests a remembered text
into its own note (:mod:`worker.providers.remember`). ``openai`` is any OpenAI-compatible chat-completions
endpoint; ``command`` is a local program given as an argv list (prompt on
stdin, reply on stdout, :mod:`worker.providers.command`). The two remote
ones share the request, the strict reply schema and the context windows
(:mod:`worker.providers.openai_compat`). All return notes cleaned, redacted and ordered the same way
(:mod:`worker.providers.notes`). The HTTP provider is imported only when a
policy asks for it, so an extractive worker never loads an HTTP stack;
:mod:`worker.providers.http` is the one chat-completions exchange, shared
with the remote memory review. May import :mod:`protocol` and
:mod:`worker.redaction.redact` only: no storage, no claims. Guarantees: a provider is a
function of its input and its frozen policy — it reads and writes no file,
sends only redacted text, and fails with a fixed ``E_...`` code,
never with the reply's or the evidence's text.

Imports inside functions: every job imports this package, since
:func:`worker.entry.run_request` binds usage accounting
(:mod:`.usage`), so it loads nothing at its top but the error codes; the
records and the embedded engines load when a digest runs. Measured with
``python -X importtime -m cairn.worker test-echo``: the job starts with
about 50 ms of imports instead of 140 ms (the engines, the redaction rules,
attrs and cattrs); ``bench/worker_start.py``: 1.8x a bare interpreter
instead of 5.1x.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cairn.protocol.errors import CairnError, ErrorCode

if TYPE_CHECKING:
    from cairn.protocol.digest import DigestInput, DigestOutput, ModelPolicy, WindowMemo

DEFAULT_API_KEY_ENV = "CAIRN_OPENAI_API_KEY"
PROVIDERS = ("extractive", "openai", "command", "remember")

__all__ = ["DEFAULT_API_KEY_ENV", "PROVIDERS", "default_policy", "embedded_digest", "run_digest"]


def default_policy() -> ModelPolicy:
    """The policy captured when the configuration names no provider: the extractive engine."""
    from cairn.protocol.digest import ModelPolicy  # worker cold start: module docstring

    return ModelPolicy(provider="extractive")


def embedded_digest(inp: DigestInput, policy: ModelPolicy) -> DigestOutput | None:
    """The digest of an embedded engine (synchronous, offline); None for a remote provider."""
    from cairn.worker.providers import extractive, remember  # worker cold start: module docstring

    if policy.provider == "extractive":
        return extractive.digest(inp)
    if policy.provider == remember.NAME:  # a remembered text: its note, the type frozen as ``model``
        return remember.digest(inp, policy.model)
    return None


async def run_digest(
    inp: DigestInput,
    policy: ModelPolicy,
    *,
    api_key: str | None = None,
    command: tuple[str, ...] = (),
    context_tokens: int | None = None,
    concurrency: int | None = None,
    memo: WindowMemo | None = None,
) -> DigestOutput:
    """Digest ``inp`` with the provider named by ``policy``.

    ``api_key`` comes from :func:`worker.providers.access.api_key` (the
    variable the settings name, read at call time); it is never part of the
    policy, so it is never persisted. None sends no ``Authorization`` header
    (local servers need none). ``command`` (the argv of the ``command``
    provider), ``context_tokens`` and ``concurrency`` (windows in flight at
    once) come from the settings too (None: the default window of the
    policy's provider, the default concurrency). ``memo`` keeps each answered
    window of a remote digest (:class:`protocol.digest.WindowMemo`), so a
    later attempt sends only the others. An unknown provider is
    ``E_CONFIG_INVALID``.
    """
    local = embedded_digest(inp, policy)
    if local is not None:
        return local
    if policy.provider in ("openai", "command"):
        from cairn.protocol.settings import WINDOW_CONCURRENCY  # worker cold start: module docstring
        from cairn.worker.providers import openai_compat  # the HTTP stack loads only for a remote provider

        return await openai_compat.digest(inp, policy, api_key=api_key, command=command,
                                          context_tokens=context_tokens, memo=memo,
                                          concurrency=concurrency or WINDOW_CONCURRENCY)
    raise CairnError(
        ErrorCode.CONFIG_INVALID,
        f"unknown digest provider {policy.provider[:40]!r} (known: {', '.join(PROVIDERS)})",
    )
