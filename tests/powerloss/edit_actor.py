"""Edit-accept workload for the power-loss sweep: review, then accept the instruction proposal edited.

Usage: python -m tests.powerloss.edit_actor WORKSPACE
Each step tolerates having been done already (a rerun after a crash finishes the work): the edited
version is published and applied, the original rejected as superseded.
"""

from __future__ import annotations

import sys

from cairn.protocol.memory import ProposalKind
from cairn.protocol.settings import Settings
from cairn.worker.memory import apply, edited
from cairn.worker.memory.review import general_review, recover_review
from cairn.worker.memory.store import MemoryStore

MINE = "\n## Mine\n\nThe user's own wording.\n"


def main(ws: str) -> None:
    with MemoryStore(ws, Settings()) as ms:
        apply.recover(ms)
        recover_review(ms)  # a review whose proposals were not all published finishes publishing them
        if not apply.proposal_ids(ms):
            general_review(ms, automatic=False)
        props = [apply.load_proposal(ms, pid) for pid in apply.proposal_ids(ms)]
        insts = sorted((p for p in props if p.kind is ProposalKind.INSTRUCTION), key=lambda p: p.created)
        original = insts[0]
        if len(insts) == 1:
            shown = edited.editable(ms, original)
            assert shown is not None
            edited.accept_edited(ms, original.id, shown["text"] + MINE)
        else:  # the edited version was published by the run that lost power: finish its accept
            mine = insts[1]
            if not apply.decisions(ms, mine.id):
                apply.accept(ms, mine.id)
            if not apply.decisions(ms, original.id):
                apply.reject(ms, original.id, action="supersede")
    print("done")


if __name__ == "__main__":
    main(sys.argv[1])
