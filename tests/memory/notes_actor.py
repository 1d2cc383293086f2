"""Working-note workload for the disposition crash sweep: review, apply the extractions, dispose, undo.

Usage: python -m tests.memory.notes_actor WORKSPACE
Each step tolerates having been done already (a rerun after a crash finishes the work).
"""

from __future__ import annotations

import sys

from cairn.protocol.memory import ProposalKind, ProposalState
from cairn.protocol.settings import Settings
from cairn.worker.memory import apply
from cairn.worker.memory.review import general_review, recover_review
from cairn.worker.memory.store import MemoryStore


def main(ws: str) -> None:
    with MemoryStore(ws, Settings()) as ms:
        apply.recover(ms)
        recover_review(ms)
        if not apply.proposal_ids(ms):
            general_review(ms, automatic=False)
        props = [apply.load_proposal(ms, pid) for pid in apply.proposal_ids(ms)]
        (disposition,) = [p for p in props if p.kind is ProposalKind.DISPOSITION]
        for p in sorted(props, key=lambda p: p.target):  # one acceptance order: one index line order
            if p.kind is not ProposalKind.DISPOSITION:
                apply.accept(ms, p.id)
        if not apply.decisions(ms, disposition.id):
            apply.accept(ms, disposition.id)
        if apply.decisions(ms, disposition.id)[-1].state is ProposalState.APPLIED:
            apply.undo(ms, disposition.id)
    print("done")


if __name__ == "__main__":
    main(sys.argv[1])
