"""Where one model request goes and how its answer comes back, for digests and reviews alike.

A :class:`Route` is the frozen (or review) policy plus what the current
settings add at call time and what is never persisted: the API key, the
argv of the ``command`` provider, how many windows go out at once and the context window
(:mod:`worker.providers.access` builds it, in the one place that decides).
:func:`ask` sends one request — a system prompt and an already redacted
request text — through the policy's provider and returns the list under
``key`` of the strict JSON object ``{"<key>": [...]}`` it answered:

* ``openai``: one chat-completions exchange (:mod:`worker.providers.http`);
* ``command``: one run of the configured program (:mod:`worker.providers.command`).

Both bound the request before sending (``E_PAYLOAD_TOO_LARGE``), the time
(``E_PROVIDER_TIMEOUT``) and the reply, and are cancelled with the
surrounding trio scope. Both are accounted by
:func:`worker.providers.usage.record_usage` (the HTTP exchange inside
:func:`~worker.providers.http.post_chat`, a command run here).

No ``E_INTERNAL`` leaves a provider call: whoever runs one (the digest's
:func:`~worker.journal.digest.infer`, the remote review) turns what escapes
it into a fixed code with :func:`provider_error`, so a digest counts it as
a failed attempt. An exception that crashed the job instead would leave the
attempt uncounted, and every later pass would send, and pay for, the same
request again.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any

import attrs
from cairn.protocol.digest import ModelPolicy
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.settings import WINDOW_CONCURRENCY, context_window
from cairn.worker.providers.usage import record_usage
from cairn.worker.redaction.redact import redact_text

REMOTE = ("openai", "command")


@attrs.frozen(kw_only=True)
class Route:
    policy: ModelPolicy
    api_key: str | None = attrs.field(default=None, repr=False)
    command: tuple[str, ...] = ()
    #: the model's context window; not given, the default of the policy's provider (``command``: 32768)
    context_tokens: int = attrs.field(
        default=attrs.Factory(lambda route: context_window(route.policy.provider), takes_self=True))
    #: context windows of one digest in flight at once (``windowConcurrency``)
    concurrency: int = WINDOW_CONCURRENCY


def check(route: Route, *, what: str = "digest") -> None:
    """``E_CONFIG_INVALID`` for a route that cannot send anything."""
    # the HTTP stack (httpx, trio) loads only when a remote route is used
    from cairn.worker.providers import http

    if route.policy.provider == "command":
        from cairn.worker.providers import command  # so does the command runner (trio, subprocess)

        command.check(route.command, route.policy)
    elif route.policy.provider == "openai":
        http.check_policy(route.policy, what=what)
    else:
        raise CairnError(ErrorCode.CONFIG_INVALID, f"{route.policy.provider[:40]!r} is not a remote provider")


async def ask(route: Route, system: str, user: str, *, key: str, what: str = "digest") -> list[Any]:
    """One request; the validated top-level list of the answer (see the module docstring)."""
    from cairn.worker.providers import http  # the HTTP stack loads only when a remote route is used

    check(route, what=what)
    if route.policy.provider == "command":
        from cairn.worker.providers import command  # the command runner too

        stdin = command.prompt_bytes(system, user)
        http.check_payload(stdin, route.policy)  # a request refused before it starts is not a request
        model = route.policy.model or os.path.basename(route.command[0])[:60]
        with record_usage(provider="command", model=model, purpose=what, request=stdin) as meter:
            out = await command.run(route.command, stdin, route.policy)
            meter.reply_text(out)  # a program reports no token counts: estimated
        return list(http.json_object(command.unfence(out), key=key))
    payload = http.encode(http.base_request(route.policy, system, user, what=what))
    raw = await http.post_chat(payload, route.policy, api_key=route.api_key, what=what)
    return list(http.json_object(http.reply_content(raw), key=key))


def provider_error(exc: Exception) -> CairnError:
    """The fixed error reported for ``exc``, escaped from a provider call (see the module docstring).

    A :class:`CairnError` is itself, also inside an exception group (a trio
    nursery's: the first one it holds); anything else, a bug or an
    unexpected library error, is ``E_PROVIDER_FAILED`` naming only its class
    (a message could quote the prompt or the reply). ``CAIRN_DEBUG=1`` writes
    its traceback, redacted, to stderr.
    """
    leaves = _leaves(exc)
    for leaf in leaves:
        if isinstance(leaf, CairnError):
            return leaf
    if os.environ.get("CAIRN_DEBUG") == "1":
        sys.stderr.write(redact_text("".join(traceback.format_exception(exc))))
    names = ", ".join(sorted({type(leaf).__name__ for leaf in leaves}))[:200]
    return CairnError(ErrorCode.PROVIDER_FAILED, f"the provider call failed unexpectedly ({names})")


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]
