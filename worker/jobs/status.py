"""The status counts the editor shows: captures by state, public digests, pending proposals, unwired agents.

Read-only, an observation for people and editors, never authority. It reads
both the journal and the memory's proposals, so it lives here, above both.
"""

from __future__ import annotations

import os
from typing import Any

from cairn.protocol.worker import WorkerRequest
from cairn.worker.jobs.agents import unwired
from cairn.worker.journal.batches import capture_states
from cairn.worker.journal.store import Journal
from cairn.worker.journal.views import public_digests
from cairn.worker.memory.marks import stale_count
from cairn.worker.memory.views import pending_count


def read_status(workspace: str) -> dict[str, int]:
    """Capture-level counts for ``cairn/status`` (the server adds its own job counts)."""
    if not os.path.isdir(os.path.join(workspace, ".cairn")):
        return {"pending": 0, "retryWaiting": 0, "exhausted": 0, "open": 0, "digests": 0, "proposals": 0,
                "unwiredAgents": unwired(workspace)}
    with Journal(workspace) as j:
        states = capture_states(j)
    counts = {"pending": 0, "retryWaiting": 0, "exhausted": 0, "open": 0}
    for st in states:
        s = st.state
        if s == "pending":
            counts["pending"] += 1
        elif s == "retry-waiting":
            counts["retryWaiting"] += 1
        elif s == "exhausted":
            counts["exhausted"] += 1
        elif s == "open":
            counts["open"] += 1
    counts["digests"] = len(public_digests(workspace)[0])
    counts["proposals"] = _pending_proposals(workspace)
    # agents in use that do not read the memory, without a scan (worker.jobs.agents.unwired)
    counts["unwiredAgents"] = unwired(workspace)
    counts["staleMemories"] = stale_count(workspace)  # topics the last `cairn verify` marked stale
    return counts


def _pending_proposals(workspace: str) -> int:
    return int(pending_count(workspace))


def job_status(req: WorkerRequest) -> dict[str, Any]:
    return read_status(req.workspace)
