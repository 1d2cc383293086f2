"""The worker envelope: one JSON request on stdin, one JSON response on stdout.

``python -m cairn.worker KIND`` reads a :class:`WorkerRequest`, runs one bounded
job and writes one :class:`WorkerResponse`. Diagnostics go to stderr and are
never mistaken for a result. A result holds ids, counts and fixed codes,
never evidence, memory bodies or prompts (``cockpit``/``proposal`` read jobs
return rows for the local editor; those never reach a log).

``args`` and ``result`` are the bodies of the job's records in
:mod:`.results` (the job kind names them), or plain objects for the jobs
not typed there.
"""

from __future__ import annotations

import enum
from typing import Any

import attrs
from cairn.protocol.codec import record


class WorkerStatus(enum.StrEnum):
    OK = "ok"
    FAILED = "failed"
    CANCELLED = "cancelled"
    BUSY = "busy"  # another owner holds the claim: not a failure


@record("worker-request", version=1)
class WorkerRequest:
    job: str
    workspace: str
    args: dict[str, Any] = attrs.field(factory=dict)  # the body of the job's argument record (.results)
    deadline: float = 0.0  # wall clock (epoch seconds); 0 = none
    job_id: str = ""
    config: dict[str, Any] = attrs.field(factory=dict)  # resolved settings from the server (mode, provider, roots…)


@record("worker-response", version=1)
class WorkerResponse:
    status: WorkerStatus = attrs.field(converter=WorkerStatus)
    result: dict[str, Any] = attrs.field(factory=dict)  # the body of the job's result record (.results)
    error: str | None = None  # fixed error code when status is not ok
    message: str = ""  # for a person; ids and counts only
    more: bool = False  # bounded progress: another batch would do more work
