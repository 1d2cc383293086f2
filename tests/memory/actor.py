"""Memory workload for the crash sweep: review, accept, undo, reject — idempotently.

Usage: python -m tests.memory.actor WORKSPACE
Each step tolerates having been done already (a rerun after a crash finishes the work).
"""

from __future__ import annotations

import sys

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.settings import Settings
from cairn.worker.memory import apply
from cairn.worker.memory.review import general_review
from cairn.worker.memory.store import MemoryStore


def main(ws: str) -> None:
    with MemoryStore(ws, Settings()) as ms:
        apply.recover(ms)
        general_review(ms, automatic=False)
        props = [apply.load_proposal(ms, pid) for pid in apply.proposal_ids(ms)]
        by_kind: dict[str, list] = {}
        for p in sorted(props, key=lambda p: (str(p.kind), p.target)):
            by_kind.setdefault(str(p.kind), []).append(p)
        create = by_kind["create"][0]
        inst = by_kind["instruction"][0]
        other = by_kind["create"][1]
        apply.accept(ms, create.id)
        apply.accept(ms, inst.id)
        history = apply.decisions(ms, inst.id)
        if history[-1].state == "applied":
            apply.undo(ms, inst.id)
        try:
            apply.reject(ms, other.id)
        except CairnError as exc:
            if exc.code is not ErrorCode.PROPOSAL_STATE:
                raise
    print("done")


if __name__ == "__main__":
    main(sys.argv[1])
