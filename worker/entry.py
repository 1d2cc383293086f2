"""Decode the request, dispatch to the job, encode the response.

Imports inside functions: a worker pays only for its job (:data:`REGISTRY`
names each job's module, imported by :func:`resolve`), so this module loads
nothing a job may not need: the codec (attrs, cattrs), the redaction rules
and the state layer (psutil) load when a record is returned, a failure is
reported or the disk is full. Measured with ``python -X importtime -m
cairn.worker test-echo``: about 50 ms of imports; at the top, the codec would
add 37 ms, the redaction rules 46 ms and the state layer 63 ms.
"""

from __future__ import annotations

import importlib
import os
import time
import traceback
from typing import IO, Any

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.worker.envelope import Request, Response, decode_request, encode_response
from cairn.worker.priority import lower_priority
from cairn.worker.providers.usage import bound

#: kind -> "module:function"; imported lazily so each job pays only for itself
REGISTRY: dict[str, str] = {
    "capture": "cairn.worker.journal.capture:job_capture",
    "import": "cairn.worker.journal.imports:job_import",
    "seal": "cairn.worker.journal.capture:job_seal",
    "seal-idle": "cairn.worker.journal.imports:job_seal_idle",
    "recover": "cairn.worker.journal.digest:job_recover",
    "process": "cairn.worker.journal.digest:job_process",
    "retry": "cairn.worker.journal.digest:job_retry",
    "discard": "cairn.worker.journal.digest:job_discard",
    "cleanup": "cairn.worker.jobs.cleanup:job_cleanup",
    "status": "cairn.worker.jobs.status:job_status",
    "journal": "cairn.worker.journal.views:job_journal",
    "jobs": "cairn.worker.journal.views:job_jobs",
    "review": "cairn.worker.memory.jobs:job_review",
    "drain": "cairn.worker.memory.jobs:job_drain",
    "remember": "cairn.worker.memory.remember:job_remember",
    "accept": "cairn.worker.memory.jobs:job_accept",
    "reject": "cairn.worker.memory.jobs:job_reject",
    "undo": "cairn.worker.memory.jobs:job_undo",
    "unreject": "cairn.worker.memory.jobs:job_unreject",
    "accept-edited": "cairn.worker.memory.jobs:job_accept_edited",
    "proposals": "cairn.worker.memory.jobs:job_proposals",
    "proposal": "cairn.worker.memory.jobs:job_proposal",
    "memory": "cairn.worker.memory.jobs:job_memory",
    "verify": "cairn.worker.memory.jobs:job_verify",
    "verify-idle": "cairn.worker.memory.jobs:job_verify_idle",
    "memory-retire": "cairn.worker.memory.jobs:job_memory_retire",
    "memory-confirm": "cairn.worker.memory.jobs:job_memory_confirm",
    "cockpit": "cairn.worker.memory.jobs:job_cockpit",
    "agents": "cairn.worker.jobs.agents:job_agents",
    "agents-wire": "cairn.worker.jobs.agents:job_wire",
    "agents-hooks": "cairn.worker.jobs.agents:job_hooks",
    "usage": "cairn.worker.providers.usage_report:job_usage",
}

#: test-only jobs, available when CAIRN_TEST_JOBS=1 (the runner's own tests)
TEST_REGISTRY: dict[str, str] = {
    "test-echo": "cairn.worker.testing:job_echo",
    "test-sleep": "cairn.worker.testing:job_sleep",
    "test-crash": "cairn.worker.testing:job_crash",
    "test-noise": "cairn.worker.testing:job_noise",
}


def resolve(kind: str) -> Any:
    target = REGISTRY.get(kind)
    if target is None and os.environ.get("CAIRN_TEST_JOBS") == "1":
        target = TEST_REGISTRY.get(kind)
    if target is None:
        raise CairnError(ErrorCode.WORKER_UNKNOWN_JOB, f"unknown job kind {kind[:40]!r}")
    mod, _, fn = target.partition(":")
    return getattr(importlib.import_module(mod), fn)


def run_request(req: Request | Any) -> Response:
    """Run one job in this process (the CLI uses this directly).

    ``req`` is a :class:`Request` or a ``protocol.worker.WorkerRequest``: jobs
    read only its attributes. A job returns its result record
    (:mod:`protocol.results`), or a plain object (the views), with ``more``
    when it stopped at its bound; the response carries the record's fields.
    """
    try:
        if req.deadline and time.time() >= req.deadline:
            return Response(status="cancelled", result={}, error=str(ErrorCode.CANCELLED),
                            message="deadline passed before start")
        job = resolve(req.job)
        with bound(req.workspace):  # provider requests of this job are accounted in its workspace
            out = job(req)
        result, more = out if isinstance(out, tuple) else (out, False)
        return Response(status="ok", result=result if isinstance(result, dict) else body(result), more=bool(more))
    except CairnError as exc:
        status = "busy" if exc.code is ErrorCode.CLAIM_BUSY else "failed"
        return Response(status=status, result={}, error=str(exc.code), message=redact_text(exc.message))
    except OSError as exc:  # a full device outside a control program: still its fixed code
        from cairn.state.program import os_error_code, os_error_message  # cold start: module docstring

        if os_error_code(exc) is not ErrorCode.NO_SPACE:
            raise
        return Response(status="failed", result={}, error=str(ErrorCode.NO_SPACE), message=os_error_message(exc))


def body(result: Any) -> dict[str, Any]:
    """A job's result record as the response carries it (``protocol.results``: its fields, the same keys).

    Imported here, not at the top: a job that returns a record has loaded the codec already.
    """
    from cairn.protocol.codec import to_body  # cold start: module docstring

    return to_body(result)


def redact_text(text: str) -> str:
    """The redaction gate, loaded only when a failure is reported (most jobs never need it)."""
    from cairn.worker.redaction.redact import redact_text as gate  # cold start: module docstring

    return gate(text)


def run_stdio(argv: list[str], stdin: IO[bytes], stdout: IO[bytes], stderr: IO[str]) -> int:
    try:
        lower_priority()
        req = decode_request(stdin.read())
        if argv and argv[0] != req.job:
            raise CairnError(ErrorCode.USAGE, f"job {argv[0]!r} does not match request {req.job!r}")
        resp = run_request(req)
    except CairnError as exc:
        resp = Response(status="failed", result={}, error=str(exc.code), message=redact_text(exc.message))
    except Exception as exc:  # a bug: report it as a fixed code; details (redacted) only on stderr
        stderr.write(redact_text(traceback.format_exc()))
        resp = Response(status="failed", result={}, error=str(ErrorCode.INTERNAL), message=type(exc).__name__)
    stdout.write(encode_response(resp) + b"\n")
    stdout.flush()
    return 0
