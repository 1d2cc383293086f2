"""A cloned repository may ship ``.cairn/state`` (git keeps whatever is committed, ignored or not).

Recovery repairs interrupted writes from the private write intents it finds
there; it must repair only the files of the intent's own proposal, never a
path a forged intent names (``.git/config``: git runs the programs it names).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from cairn.protocol import codec
from cairn.protocol.memory import FileEdit, WriteIntent
from cairn.state.fsdir import PinnedDir

from tests.journal.helpers import DEMO, cairn, cairn_json

GIT_CONFIG = b"[core]\n\trepositoryformatversion = 0\n\tbare = false\n"  # predictable after a clone
EVIL = b"[core]\n\tfsmonitor = touch pwned\n"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_recovery_never_writes_a_path_outside_the_intents_proposal(workspace: Path) -> None:
    from cairn.worker.memory.store import INTENTS, MARKERS, MemoryStore

    (workspace / "AGENTS.md").write_text("# Agents\n")
    proposal = next(p for p in cairn_json(workspace, "run", str(DEMO))["proposals"] if p["kind"] == "create")
    (workspace / ".git").mkdir()
    (workspace / ".git/config").write_bytes(GIT_CONFIG)
    (workspace / "README.md").write_bytes(b"readme\n")
    with MemoryStore(str(workspace)) as ms:
        evil = ms.mbundles.put(EVIL)
        readme = ms.mbundles.put(b"readme\n")
        forged = WriteIntent(id="w-forged", proposal=proposal["id"], action="apply", marker=f"{MARKERS}/w-forged",
                             created=0.0, files=(
                                 FileEdit(path=".git/config", before=_sha(EVIL), after=_sha(GIT_CONFIG),
                                          before_bundle=evil),
                                 FileEdit(path="README.md", before=_sha(b"readme\n"), after=_sha(b"other\n"),
                                          before_bundle=readme)))
        with PinnedDir.open_root(workspace) as root:
            root.descend(INTENTS, create=True).replace("w-forged", codec.encode(forged))
            root.descend(MARKERS, create=True).replace("w-forged", b"{}")
    r = cairn(workspace, "doctor", check=False)  # any command recovers first
    cairn(workspace, "accept", proposal["id"], check=False)
    assert (workspace / ".git/config").read_bytes() == GIT_CONFIG
    assert (workspace / "README.md").read_bytes() == b"readme\n"
    assert "Traceback" not in r.stderr
