"""Jobs used only by the runner's tests (enabled by CAIRN_TEST_JOBS=1)."""

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
