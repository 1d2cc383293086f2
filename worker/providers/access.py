"""Provider access: which policy may run and which API key goes with it, for digests and reviews alike.

Settings reach a worker already resolved by the user's process
(:func:`worker.settings.config.load`: user config and editor settings, or a
workspace file the user trusted), so the provider and endpoint they name are
the ones the user allowed. Two rules follow, in this one place:

* **The key, the program and the context window follow the settings.** The API key is the value of the
  variable the settings name (``apiKeyEnv``, read at call time, never
  stored); an unset or empty variable sends no key. It is sent only to the
  provider and endpoint the same settings name, never to another one. The
  ``command`` provider gets no key; it runs the argv the settings name now
  (``command``). The context window (``contextTokens``) describes the
  model that answers now, so it is read at call time too; unset, it is the
  default of the policy's provider (:func:`protocol.settings.context_window`:
  8192 for an endpoint, 32768 for a ``command``).
* **A frozen policy runs only while it is allowed.** A capture freezes its
  model policy; at digest time a remote policy whose provider and endpoint
  the current settings no longer name (the workspace was untrusted, the
  user switched providers, or the policy never came from the user at all,
  e.g. state shipped inside a repository) is not sent anywhere: the
  embedded engine digests the capture instead.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from cairn.protocol.digest import ModelPolicy
from cairn.protocol.settings import Settings, context_window
from cairn.worker.providers.route import Route

EMBEDDED = "extractive"
OFFLINE = (EMBEDDED, "remember")  # embedded providers: they send nothing anywhere


def allowed(policy: ModelPolicy, settings: Settings) -> bool:
    """Whether ``policy`` may run: the embedded engine always, a remote one only toward the configured endpoint.

    A ``command`` policy runs only while the settings name the ``command``
    provider, and then runs the program the settings name now.
    """
    if policy.provider in OFFLINE:
        return True
    if policy.provider != settings.provider:
        return False
    return policy.provider == "command" or policy.endpoint.rstrip("/") == settings.endpoint.rstrip("/")


def effective_policy(frozen: ModelPolicy, settings: Settings) -> ModelPolicy:
    """``frozen`` when it may run, else the embedded engine's policy."""
    return frozen if allowed(frozen, settings) else ModelPolicy(provider=EMBEDDED)


def api_key(policy: ModelPolicy, settings: Settings, env: Mapping[str, str] | None = None) -> str | None:
    """The key for a request under ``policy``: ``env[settings.apiKeyEnv]`` when the policy is allowed, else None."""
    if policy.provider != "openai" or not allowed(policy, settings):
        return None
    return (os.environ if env is None else env).get(settings.apiKeyEnv) or None


def route(policy: ModelPolicy, settings: Settings, env: Mapping[str, str] | None = None) -> Route:
    """Everything a request under ``policy`` needs from the settings: key, program, context window, concurrency.

    The program is the settings' ``command`` only while ``policy`` is allowed (else none runs).
    """
    ok = allowed(policy, settings)
    return Route(policy=policy, api_key=api_key(policy, settings, env),
                 command=settings.command if ok and policy.provider == "command" else (),
                 context_tokens=context_window(policy.provider, settings.contextTokens),
                 concurrency=settings.windowConcurrency)
