"""One decision in a fresh process, the way every worker job runs it: recovery first.

Usage: python -m tests.memory.decide WORKSPACE accept|undo|reject PROPOSAL_ID
"""

from __future__ import annotations

import sys

from cairn.protocol.codec import to_body
from cairn.protocol.settings import Settings
from cairn.worker.memory import apply
from cairn.worker.memory.store import MemoryStore


def main(ws: str, action: str, pid: str) -> None:
    with MemoryStore(ws, Settings()) as ms:
        apply.recover(ms)
        print(to_body(getattr(apply, action)(ms, pid)))  # the decision's fields


if __name__ == "__main__":
    main(*sys.argv[1:4])
