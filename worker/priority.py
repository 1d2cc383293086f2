"""Workers yield the CPU to the editor-facing server.

On a two-core machine a busy worker at normal priority competes with the
language server; at nice 10 it only gets what the server leaves.
"""

from __future__ import annotations

import os

WORKER_NICE = 10


def lower_priority() -> None:
    if os.environ.get("CAIRN_WORKER_NICE", "1") == "0":
        return
    try:
        current = os.nice(0)
        if current < WORKER_NICE:
            os.nice(WORKER_NICE - current)
    except OSError:
        pass
