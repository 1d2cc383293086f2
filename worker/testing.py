"""Test doubles for the worker layer; production code never imports this module.

The runner's test jobs (echo, sleep, crash, noise): named only by string in
``cairn.worker.entry.TEST_REGISTRY`` and resolvable only when
``CAIRN_TEST_JOBS=1``, so a real run can neither import nor dispatch them.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cairn.protocol.worker import WorkerRequest


def job_echo(req: WorkerRequest) -> dict[str, object]:
    return {"args": req.args, "nice": os.nice(0), "pid": os.getpid()}


def job_sleep(req: WorkerRequest) -> dict[str, object]:
    time.sleep(float(req.args.get("seconds", 60)))
    return {"slept": True}


def job_crash(req: WorkerRequest) -> dict[str, object]:
    os.kill(os.getpid(), signal.SIGKILL)
    return {}


def job_noise(req: WorkerRequest) -> dict[str, object]:
    sys.stderr.write("diagnostic noise that must not be parsed as a result\n" * 100)
    print("stray stdout line is a protocol violation", file=sys.stderr)
    return {"ok": True}
