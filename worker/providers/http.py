"""One chat-completions exchange with an OpenAI-compatible endpoint, shared by every remote provider.

Contract (the digest provider and the remote review rely on all of it):

* :func:`check_policy` refuses an unusable frozen policy with
  ``E_CONFIG_INVALID`` (no model, a non-http endpoint, an unknown reasoning
  switch, non-positive limits).
* :func:`base_request` puts the frozen policy fields on the wire: ``model``,
  ``temperature``, ``max_tokens`` (= ``max_output_tokens``),
  ``response_format`` JSON object, ``stream: false`` and, when
  ``policy.reasoning == "disabled"``, ``"reasoning_effort": "none"``. No
  tools are ever offered.
* :func:`encode` gives the exact bytes sent (canonical JSON, every string
  redacted), so a request is a pure function of its inputs, can be
  measured before sending and never carries a recognised secret.
* :func:`post_chat` refuses a payload over ``policy.max_payload_bytes``
  before any connection is opened (``E_PAYLOAD_TOO_LARGE``), sends the key
  only in the ``Authorization`` header, maps non-2xx statuses and transport
  errors to ``E_PROVIDER_FAILED`` (the status code, or a short transport
  reason such as ``connection refused`` and the error class; never the
  body), the policy timeout over the whole exchange to
  ``E_PROVIDER_TIMEOUT``, and caps the reply at :data:`MAX_REPLY_BYTES`.
  Cancelling the surrounding trio cancel scope abandons the request at once.
  Every request it sends is accounted by
  :func:`worker.providers.usage.record_usage` (tokens, duration, outcome;
  a start record made durable before sending); one the endpoint refused
  with a status counts no token, so input sent again after a refusal is
  counted once.
* :func:`reply_content` accepts only a terminal reply: ``finish_reason``
  ``stop`` (``length`` → ``E_PROVIDER_TRUNCATED``) with string content;
  anything else is ``E_PROVIDER_INVALID_REPLY``. :func:`json_object` parses
  that content as one JSON object. Error messages never quote the reply.
"""

from __future__ import annotations

import errno
import json
import socket
import ssl
from typing import Any

import httpx
import trio
from cairn.protocol import boundedjson
from cairn.protocol.digest import ModelPolicy
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.worker.providers.usage import record_usage
from cairn.worker.redaction.redact import redact_obj

MAX_REPLY_BYTES = 4 << 20


def config_error(message: str) -> CairnError:
    return CairnError(ErrorCode.CONFIG_INVALID, message)


def invalid(message: str, **detail: object) -> CairnError:
    """``E_PROVIDER_INVALID_REPLY`` with a message that must not quote the reply."""
    return CairnError(ErrorCode.PROVIDER_INVALID_REPLY, message, **detail)


def chat_url(endpoint: str, *, what: str = "digest") -> str:
    """The chat-completions URL of a base endpoint such as ``http://127.0.0.1:11434/v1``."""
    base = endpoint.strip().rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise config_error(f"the {what} endpoint must be an http:// or https:// URL")
    return base if base.endswith("/chat/completions") else base + "/chat/completions"


def check_policy(policy: ModelPolicy, *, what: str = "digest") -> None:
    if not policy.model:
        raise config_error(f"the openai {what} provider needs a model name")
    if policy.reasoning not in ("disabled", "default"):
        raise config_error("model reasoning must be 'disabled' or 'default'")
    if not policy.timeout_seconds > 0 or policy.max_output_tokens <= 0 or policy.max_payload_bytes <= 0:
        raise config_error("timeout, output token and payload limits must be positive")
    chat_url(policy.endpoint, what=what)


def base_request(policy: ModelPolicy, system: str, user: str, *, what: str = "digest") -> dict[str, Any]:
    """A chat-completions request of two messages carrying the frozen policy fields."""
    check_policy(policy, what=what)
    request: dict[str, Any] = {
        "model": policy.model,
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ],
        "temperature": policy.temperature,
        "max_tokens": policy.max_output_tokens,
        "response_format": {"type": "json_object"},
        "stream": False,
    }
    if policy.reasoning == "disabled":
        request["reasoning_effort"] = "none"
    return request


def encode(obj: Any) -> bytes:
    """Canonical JSON (sorted keys, no spaces, UTF-8) of ``obj`` with every string redacted: the exact bytes sent.

    Every provider request is built here, so no request can carry a secret
    its builder forgot to redact.
    """
    return json.dumps(redact_obj(obj), ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")


def check_payload(payload: bytes, policy: ModelPolicy) -> None:
    if len(payload) > policy.max_payload_bytes:
        raise CairnError(
            ErrorCode.PAYLOAD_TOO_LARGE,
            f"the prepared request is {len(payload)} bytes, over the bound of {policy.max_payload_bytes}",
            size=len(payload),
            limit=policy.max_payload_bytes,
        )


async def _read_capped(response: httpx.Response) -> bytes:
    chunks: list[bytes] = []
    total = 0
    async for chunk in response.aiter_bytes():
        total += len(chunk)
        if total > MAX_REPLY_BYTES:
            raise invalid(f"the response exceeds {MAX_REPLY_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def post_chat(payload: bytes, policy: ModelPolicy, *, api_key: str | None, what: str = "digest") -> bytes:
    """POST ``payload`` to the policy's endpoint and return the raw response body (2xx only)."""
    check_payload(payload, policy)
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    url = chat_url(policy.endpoint, what=what)
    with record_usage(provider=policy.provider, model=policy.model, purpose=what, request=payload) as meter:
        try:
            raw = await _exchange(url, payload, headers, policy)
        except CairnError as exc:
            if "status" in exc.detail:
                meter.tokens(0, 0)  # refused with an HTTP status: no model read it, no token was spent
            raise
        meter.reply(raw)
        return raw


async def _exchange(url: str, payload: bytes, headers: dict[str, str], policy: ModelPolicy) -> bytes:
    try:
        with trio.fail_after(policy.timeout_seconds):
            async with httpx.AsyncClient(timeout=policy.timeout_seconds) as client:
                async with client.stream("POST", url, content=payload, headers=headers) as response:
                    if not 200 <= response.status_code < 300:
                        raise CairnError(
                            ErrorCode.PROVIDER_FAILED,
                            f"the endpoint answered HTTP {response.status_code}",
                            status=response.status_code,
                        )
                    return await _read_capped(response)
    except (trio.TooSlowError, httpx.TimeoutException):
        raise CairnError(
            ErrorCode.PROVIDER_TIMEOUT, f"no complete reply within {policy.timeout_seconds:g} s"
        ) from None
    except httpx.HTTPError as exc:
        raise CairnError(ErrorCode.PROVIDER_FAILED, f"{transport_reason(exc)} ({type(exc).__name__})") from None


_ERRNO_REASONS = {
    errno.ECONNREFUSED: "connection refused",
    errno.ECONNRESET: "connection reset",
    errno.ETIMEDOUT: "connection timed out",
    errno.EHOSTUNREACH: "host unreachable",
    errno.ENETUNREACH: "network unreachable",
}


def transport_reason(exc: BaseException) -> str:
    """A short, content-free reason for a transport error (``connection refused``, ...).

    httpx wraps the socket error (under trio, in an exception group of the
    connection attempts), so the causes are searched for the first known
    ``errno``, name-resolution or TLS failure.
    """
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        e = todo.pop(0)
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, socket.gaierror):
            return "host name not resolved"
        if isinstance(e, ssl.SSLError):
            return "TLS handshake failed"
        if isinstance(e, OSError) and e.errno in _ERRNO_REASONS:
            return _ERRNO_REASONS[e.errno]
        if isinstance(e, BaseExceptionGroup):
            todo.extend(e.exceptions)
        todo.extend(x for x in (e.__cause__, e.__context__) if x is not None)
    return "could not connect" if isinstance(exc, httpx.ConnectError) else "the request failed"


def reply_content(raw: bytes) -> str:
    """The message content of a terminal chat-completions response body."""
    try:
        reply = boundedjson.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):  # ValueError: not JSON, or nesting past the bound
        raise invalid("the endpoint's response is not JSON") from None
    choices = reply.get("choices") if isinstance(reply, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise invalid("the response has no choices")
    choice = choices[0]
    finish = choice.get("finish_reason")
    if finish == "length":
        raise CairnError(ErrorCode.PROVIDER_TRUNCATED, "the model reached its output limit before finishing")
    if finish != "stop":
        raise invalid("the response did not finish normally")
    message = choice.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        raise invalid("the response has no message content")
    return content


def json_object(content: str, *, key: str) -> Any:
    """The value of the single key of the JSON object ``content`` (``{"<key>": [...]}`` exactly)."""
    try:
        doc = boundedjson.loads(content)
    except ValueError:  # not JSON, or nesting past the bound
        raise invalid("the model's answer is not JSON") from None
    if not isinstance(doc, dict) or set(doc) != {key} or not isinstance(doc[key], list):
        raise invalid(f'the model\'s answer must be exactly {{"{key}": [...]}}')
    return doc[key]
