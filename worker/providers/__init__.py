"""Digest providers: turn one capture's evidence into a digest under its frozen model policy.

``extractive`` (the default) is the embedded engine: offline, deterministic,
no configuration. ``openai`` is any OpenAI-compatible chat-completions
endpoint. Both return notes cleaned, redacted and ordered the same way
(:mod:`worker.providers.notes`). The HTTP provider is imported only when a
policy asks for it, so an extractive worker never loads an HTTP stack;
:mod:`worker.providers.http` is the one chat-completions exchange, shared
with the remote memory review. May import :mod:`protocol` and
:mod:`worker.redact` only: no storage, no claims. Guarantees: a provider is a
function of its input and its frozen policy — it reads and writes no file,
sends only redacted text, and fails with a fixed ``E_...`` code,
never with the reply's or the evidence's text.
"""

from __future__ import annotations

from collections.abc import Mapping

from cairn.protocol.digest import DigestInput, DigestOutput, ModelPolicy
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.worker.providers import extractive

DEFAULT_API_KEY_ENV = "CAIRN_OPENAI_API_KEY"
PROVIDERS = ("extractive", "openai")

__all__ = ["DEFAULT_API_KEY_ENV", "PROVIDERS", "default_policy", "run_digest"]


def default_policy() -> ModelPolicy:
    """The policy captured when the configuration names no provider: the extractive engine."""
    return ModelPolicy(provider="extractive")


async def run_digest(
    inp: DigestInput,
    policy: ModelPolicy,
    *,
    env: Mapping[str, str],
    api_key_env: str = DEFAULT_API_KEY_ENV,
) -> DigestOutput:
    """Digest ``inp`` with the provider named by ``policy``.

    The API key of the ``openai`` provider is read from ``env[api_key_env]``
    at call time (the variable's name comes from configuration); it is
    never part of the policy, so it is never persisted. An unset or empty
    variable sends no ``Authorization`` header (local servers need none).
    An unknown provider is ``E_CONFIG_INVALID``.
    """
    if policy.provider == "extractive":
        return extractive.digest(inp)
    if policy.provider == "openai":
        from cairn.worker.providers import openai_compat

        return await openai_compat.digest(inp, policy, api_key=env.get(api_key_env) or None)
    raise CairnError(
        ErrorCode.CONFIG_INVALID,
        f"unknown digest provider {policy.provider[:40]!r} (known: {', '.join(PROVIDERS)})",
    )
