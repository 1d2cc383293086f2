"""A transport failure is named by a short, content-free reason, wherever httpx wrapped the socket error."""

from __future__ import annotations

import errno
import socket

import httpx
import pytest
from cairn.worker.providers.http import transport_reason


def _wrapped(cause: BaseException, outer: httpx.HTTPError) -> httpx.HTTPError:
    """``outer`` raised from an exception group holding ``cause`` (how httpx under trio reports it)."""
    try:
        try:
            raise ExceptionGroup("all attempts to connect failed", [cause])  # type: ignore[type-var]
        except ExceptionGroup as group:
            raise outer from group
    except httpx.HTTPError as exc:
        return exc


@pytest.mark.parametrize(("cause", "reason"), [
    (ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"), "connection refused"),
    (ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"), "connection reset"),
    (OSError(errno.EHOSTUNREACH, "No route to host"), "host unreachable"),
    (socket.gaierror(socket.EAI_NONAME, "Name or service not known"), "host name not resolved"),
    (OSError(errno.EPERM, "Operation not permitted"), "could not connect"),
])
def test_connect_errors_name_their_reason(cause: Exception, reason: str) -> None:
    assert transport_reason(_wrapped(cause, httpx.ConnectError("all attempts failed"))) == reason


def test_other_transport_errors_keep_a_generic_reason() -> None:
    assert transport_reason(httpx.RemoteProtocolError("peer closed")) == "the request failed"
