"""Run one job in this process: how the CLI and the MCP endpoint do their work.

The job functions are the ones a worker subprocess runs
(:func:`worker.entry.run_request`), under the same claims, so a command and
a background worker can never both own one piece of work; only the process
differs. The settings are the workspace's as a worker request carries them,
their warnings written to stderr (redacted, one line each): the CLI's and
the MCP endpoint's stderr are the user's.

Imports inside functions: every CLI command module imports this one, so
``cairn --help`` would load the settings (tomllib, psutil through the state
layer), the job table and the codec (cattrs) with it; they load when a
command runs a job. Measured with ``python -X importtime``: 32 ms more
for ``cairn --help`` with them at the top.
"""

from __future__ import annotations

import sys
from typing import Any

from cairn.protocol.errors import CairnError, ErrorCode


def load_config(ws: str) -> dict[str, Any]:
    """The workspace's settings as a worker request carries them; warnings go to stderr."""
    from cairn.worker.settings import config  # cold start: module docstring

    settings, warnings = config.load(ws)
    for w in config.unreported(warnings):
        from cairn.worker.redaction import redact_text  # cold start: its rules compile only for a warning

        sys.stderr.write(f"cairn: {redact_text(w)}\n")
    return config.to_dict(settings)


def call(ws: str, job: str, job_args: Any = None) -> Any:
    """Run ``job`` for workspace ``ws`` in this process and return its response, whatever its status.

    ``job_args``: the job's argument record (:mod:`protocol.results`), a plain object, or none.
    """
    from cairn.protocol.worker import WorkerRequest  # cold start: module docstring
    from cairn.worker.entry import run_request

    if job_args is None or isinstance(job_args, dict):
        args = job_args or {}
    else:
        from cairn.protocol.codec import to_body  # cold start: module docstring

        args = to_body(job_args)
    return run_request(WorkerRequest(job=job, workspace=ws, args=args, config=load_config(ws)))


def response_error(resp: Any) -> CairnError:
    """The fixed error a non-ok response carries (``E_INTERNAL`` for an unknown code)."""
    err = resp.error
    code = ErrorCode(err) if err is not None and err in ErrorCode._value2member_map_ else ErrorCode.INTERNAL
    return CairnError(code, resp.message or str(resp.status))
