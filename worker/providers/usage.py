"""Usage accounting: what each provider request cost, recorded privately, counted even if the worker dies.

The hook is :func:`record_usage`, a context manager wrapped around every
provider request (the HTTP exchange :func:`worker.providers.http.post_chat`
does it for digests and reviews; any other transport — a command provider, a
focused review — wraps its own request the same way)::

    with record_usage(provider=policy.provider, model=policy.model,
                      purpose="digest", request=payload) as meter:
        raw = await send(payload)
        meter.reply(raw)            # OpenAI-compatible body: reads its ``usage``
        # or meter.tokens(n_in, n_out) / meter.reply_text(text) for other transports

Contract:

* **Durable before sending.** A *start* record (id, process, provider,
  model, purpose, start time, request size in characters) is published and
  fsynced before the body of the ``with`` runs; an *end* record (duration,
  outcome, error code, tokens) after it, however it ends: ``ok``,
  ``failed`` (with its ``E_...`` code), ``timeout`` (``E_PROVIDER_TIMEOUT``)
  or ``cancelled`` (a cancelled scope, an interrupt). A worker killed
  mid-request leaves a start without an end: readers count it
  ``interrupted`` once its process is gone (``running`` while it lives).
* **Tokens.** The provider's own count when the reply reports one
  (``usage.prompt_tokens`` / ``completion_tokens``); otherwise an estimate
  of characters / 4 for the request and the reply, and the record says
  ``estimated``. A request that got no reply has 0 output tokens; one the
  endpoint refused with an HTTP status (429, 5xx, …) has 0 input tokens as
  well (no model read it), so a window sent again after a refusal counts
  its input once. A digest window answered from a kept reply is no request.
* **Private, content-free.** Records live under ``.cairn/state/usage/``
  (0700 folders, 0600 files), one pair per request, in a folder per UTC day
  (the day the request started). They hold counts, names, times and codes:
  never prompt or reply text. Reading, summing, pricing and the roll-up of
  old days are :mod:`worker.providers.usage_report`.
* **Where.** Records go to the workspace bound by :func:`bound` (each job
  run by :func:`worker.entry.run_request` binds its own); with none bound
  (a provider used as a library) nothing is recorded. A start record that
  cannot be written stops the request (``E_...`` of the failure): a request
  is never sent uncounted. A failing end record is left to readers
  (counted interrupted).

Imports inside functions: every job binds this module
(:func:`worker.entry.run_request`), so it imports only the standard library
and the light protocol modules at its top; the state layer (psutil) loads
when a request is recorded. Measured with ``python -X importtime -m
cairn.worker test-echo``: with :mod:`state.fsdir` at the top, 24 ms more.
"""

from __future__ import annotations

import contextvars
import json
import os
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cairn.protocol import boundedjson
from cairn.protocol.errors import CairnError, ErrorCode

USAGE = ".cairn/state/usage"
VERSION = 1
OUTCOMES = ("ok", "failed", "timeout", "cancelled")

_WORKSPACE: contextvars.ContextVar[str | None] = contextvars.ContextVar("cairn_usage_workspace", default=None)


@contextmanager
def bound(workspace: str | None) -> Iterator[None]:
    """Record provider requests made inside the block under ``workspace`` (None: not at all)."""
    token = _WORKSPACE.set(workspace)
    try:
        yield
    finally:
        _WORKSPACE.reset(token)


def day_of(t: float) -> str:
    """The UTC day (``YYYY-MM-DD``) records of a request started at ``t`` are filed under."""
    return time.strftime("%Y-%m-%d", time.gmtime(t))


def estimate(chars: int) -> int:
    """Tokens of ``chars`` characters when the provider does not say: about four characters a token."""
    return (chars + 3) // 4


class Meter:
    """What one request consumed; the transport tells it what the reply said."""

    def __init__(self, request_chars: int) -> None:
        self.request_chars = request_chars
        self.tokens_in: int | None = None
        self.tokens_out: int | None = None
        self.reply_chars = 0

    def tokens(self, tokens_in: int | None, tokens_out: int | None) -> None:
        """The provider's own counts (None: not reported, estimated instead)."""
        self.tokens_in, self.tokens_out = tokens_in, tokens_out

    def reply_text(self, text: str) -> None:
        self.reply_chars = len(text)

    def reply(self, raw: bytes) -> None:
        """An OpenAI-compatible response body: its ``usage`` counts, else its message length."""
        try:
            doc = boundedjson.loads(raw.decode("utf-8"))
        except ValueError:  # not UTF-8, not JSON, or nesting past the bound: the reply's size estimates it
            self.reply_chars = len(raw)
            return
        if not isinstance(doc, dict):
            return
        usage = doc.get("usage")
        if isinstance(usage, dict):
            self.tokens(_count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")))
        choices = doc.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            message = choices[0].get("message")
            content = message.get("content") if isinstance(message, dict) else None
            self.reply_chars = len(content) if isinstance(content, str) else 0

    def counts(self) -> tuple[int, int, bool]:
        """(tokens in, tokens out, estimated?)."""
        estimated = self.tokens_in is None or self.tokens_out is None
        tin = self.tokens_in if self.tokens_in is not None else estimate(self.request_chars)
        tout = self.tokens_out if self.tokens_out is not None else estimate(self.reply_chars)
        return tin, tout, estimated


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _process_started(pid: int) -> float | None:
    try:
        import psutil  # worker cold start: module docstring

        return float(psutil.Process(pid).create_time())
    except Exception:  # gone, or not ours to see: the reader treats it as gone
        return None


def alive(pid: int, started: float | None) -> bool:
    """Whether the process that wrote a start record still runs (same pid, same start time)."""
    now = _process_started(pid)
    return now is not None and started is not None and abs(now - started) < 1.0


def _publish(workspace: str, day: str, name: str, record: dict[str, Any]) -> None:
    from cairn.state.fsdir import PinnedDir  # worker cold start: module docstring

    data = json.dumps(record, sort_keys=True, separators=(",", ":")).encode()
    with PinnedDir.open_root(workspace) as root, root.descend(f"{USAGE}/{day}", create=True) as d:
        d.publish(name, data)


def _outcome(exc: BaseException | None) -> tuple[str, str | None]:
    if exc is None:
        return "ok", None
    if isinstance(exc, CairnError):
        return ("timeout" if exc.code is ErrorCode.PROVIDER_TIMEOUT else "failed"), str(exc.code)
    if isinstance(exc, Exception):
        return "failed", str(ErrorCode.INTERNAL)
    return "cancelled", str(ErrorCode.CANCELLED)  # a cancelled scope, an interrupt, a generator closed


@contextmanager
def record_usage(*, provider: str, model: str, purpose: str, request: bytes | str) -> Iterator[Meter]:
    """Account for the one provider request made inside the block (see the module docstring)."""
    chars = len(request.decode("utf-8", "replace") if isinstance(request, bytes) else request)
    meter = Meter(chars)
    workspace = _WORKSPACE.get()
    if workspace is None:
        yield meter
        return
    rid = secrets.token_hex(8)
    started = time.time()
    day = day_of(started)
    pid = os.getpid()
    _publish(workspace, day, f"{rid}.start", {
        "v": VERSION, "id": rid, "pid": pid, "pidStarted": _process_started(pid), "provider": provider[:80],
        "model": model[:120], "purpose": purpose[:40], "started": started, "requestChars": chars,
    })
    failure: BaseException | None = None
    try:
        yield meter
    except BaseException as exc:
        failure = exc
        raise
    finally:
        outcome, code = _outcome(failure)
        tin, tout, estimated = meter.counts()
        try:
            _publish(workspace, day, f"{rid}.end", {
                "v": VERSION, "id": rid, "ended": time.time(), "seconds": round(time.time() - started, 3),
                "outcome": outcome, "code": code, "tokensIn": tin, "tokensOut": tout, "estimated": estimated,
            })
            from cairn.worker.providers.usage_report import roll_up  # usage_report imports this module

            roll_up(workspace)
        except Exception:  # noqa: S110 - readers count a start without an end as interrupted
            pass
