"""A hand-written topic's control characters never reach the index cairn writes for it.

The index housekeeping gives an orphan topic (one no entry links) its entry
back from the topic's name and description: text cairn did not write, which
YAML's ``"\\e"`` escape makes a raw ESC. ``MEMORY.md`` is what every agent
loads and ``cat`` prints, so the entry keeps the words and drops the
controls, ANSI sequences whole (``protocol/text.py``).
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.journal.helpers import cairn, cairn_json

#: any control character but tab and newline, as bytes on a terminal or in a file
RAW = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")
EVIL = (b'---\nname: "evil \\e]0;PWNED\\a name"\ndescription: "desc \\e[31mRED\\e[0m"\ntype: project\n---\n\n'
        b"- body\n")


def _accept_pending(ws: Path) -> None:
    for p in cairn_json(ws, "proposals"):
        if p["state"] == "pending":
            cairn(ws, "accept", p["id"])


def test_an_orphan_topics_escapes_never_reach_the_index(workspace: Path) -> None:
    cairn(workspace, "remember", "Deploy with make release")
    _accept_pending(workspace)
    mem = workspace / ".agents/memory"
    (mem / "evil.md").write_bytes(EVIL)
    cairn(workspace, "review")
    [p] = [p for p in cairn_json(workspace, "proposals") if p["state"] == "pending"]
    assert "evil.md" in p["title"]
    cairn(workspace, "accept", p["id"])
    index = (mem / "MEMORY.md").read_bytes()
    assert not RAW.search(index), index
    assert b"\n- [evil name](evil.md) - desc RED\n" in index
    assert (mem / "evil.md").read_bytes() == EVIL  # the topic is the user's: never rewritten
    for argv in (("memory",), ("proposals",), ("show", p["id"])):
        out = cairn(workspace, *argv).stdout
        assert not RAW.search(out.encode()), (argv, out)
