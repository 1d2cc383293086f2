"""Provider access: which policy may run and which API key goes with it, for digests and reviews alike.

Settings reach a worker already resolved by the user's process
(:func:`worker.config.load`: user config and editor settings, or a
workspace file the user trusted), so the provider and endpoint they name are
the ones the user allowed. Two rules follow, in this one place:

* **The key follows the settings.** The API key is the value of the
  variable the settings name (``apiKeyEnv``, read at call time, never
  stored); an unset or empty variable sends no key. It is sent only to the
  provider and endpoint the same settings name, never to another one.
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
from cairn.protocol.lsp import Settings

EMBEDDED = "extractive"


def allowed(policy: ModelPolicy, settings: Settings) -> bool:
    """Whether ``policy`` may run: the embedded engine always, a remote one only toward the configured endpoint."""
    if policy.provider == EMBEDDED:
        return True
    return policy.provider == settings.provider and policy.endpoint.rstrip("/") == settings.endpoint.rstrip("/")


def effective_policy(frozen: ModelPolicy, settings: Settings) -> ModelPolicy:
    """``frozen`` when it may run, else the embedded engine's policy."""
    return frozen if allowed(frozen, settings) else ModelPolicy(provider=EMBEDDED)


def api_key(policy: ModelPolicy, settings: Settings, env: Mapping[str, str] | None = None) -> str | None:
    """The key for a request under ``policy``: ``env[settings.apiKeyEnv]`` when the policy is allowed, else None."""
    if policy.provider == EMBEDDED or not allowed(policy, settings):
        return None
    return (os.environ if env is None else env).get(settings.apiKeyEnv) or None
