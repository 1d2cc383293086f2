"""What every feature shares: the editor connection and the per-workspace state.

The editor is reached only through :class:`Client` (log, show, diagnostics,
progress, open-document text), so each feature runs under tests with a fake
editor and without pygls. Log levels are LSP's ``MessageType`` numbers.
:class:`Route` is one row of the service's routing tables.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import attrs
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.results import read
from cairn.protocol.settings import Settings
from cairn.protocol.worker import WorkerStatus
from cairn.server.scheduler.events import StartWorker
from cairn.server.scheduler.runner import RunResult

LOG_ERROR, LOG_WARNING, LOG_INFO, LOG_LOG = 1, 2, 3, 4
T = TypeVar("T")


class Client(Protocol):
    """The editor connection, as the service needs it."""

    def log(self, level: int, message: str) -> None: ...

    def show(self, level: int, message: str) -> None: ...

    def publish_diagnostics(self, uri: str, diagnostics: list[dict[str, Any]]) -> None: ...

    async def progress_begin(self, title: str, message: str) -> str | None: ...

    def progress_report(self, token: str, message: str, percentage: int | None) -> None: ...

    def progress_end(self, token: str, message: str) -> None: ...

    def document_text(self, uri: str) -> str | None: ...


def finished(client: Client, start: StartWorker, result: RunResult, record: type[T]) -> T | None:
    """The result record (:mod:`protocol.results`) of a worker that finished ok; None otherwise.

    A result that does not decode (never from a worker of this installation) is
    logged with ``E_WORKER_BAD_RESPONSE`` and read as none: a listener never fails on it.
    """
    if result.status is not WorkerStatus.OK:
        return None
    try:
        return read(record, result.result, job=start.kind)
    except CairnError as exc:
        client.log(LOG_WARNING, f"cairn: {start.job_id} {start.kind}: {ErrorCode.WORKER_BAD_RESPONSE} "
                                f"({exc.code}: {exc.message})"[:300])
        return None


@attrs.frozen
class Route:
    """A cairn method or command: its parameter record and its handler ``(service, params) -> result``."""

    params: type
    handler: Callable[[Any, Any], Any]


@attrs.define
class SessionInfo:
    last_turn: float  # clock time of the last completed turn
    idle_sealed: bool = False


@attrs.define
class DrainRun:
    token: str | None
    jobs: int = 0
    published: int = 0
    proposals: int = 0


@attrs.define
class WorkspaceState:
    path: str
    settings: Settings = attrs.field(factory=Settings)
    journal: dict[str, int] = attrs.field(factory=dict)
    usage: dict[str, Any] = attrs.field(factory=dict)  # today's provider usage (worker.providers.usage_report.today)
    usage_cache: dict[str, Any] = attrs.field(factory=dict)  # today's records as last read (usage_report.today)
    refreshed: float | None = None
    refreshed_at: float | None = None  # monotonic, for refresh spacing
    refresh_task: asyncio.Task[None] | None = None
    refresh_again: bool = False
    seen: tuple[Any, ...] | None = None  # control-directory signature the snapshot was read at
    sessions: dict[str, SessionInfo] = attrs.field(factory=dict)
    foreground: asyncio.Lock = attrs.field(factory=asyncio.Lock)
    drain: DrainRun | None = None
    foreign: CairnError | None = None  # its .cairn/state is not this user's (E_STATE_FOREIGN): nothing runs there
