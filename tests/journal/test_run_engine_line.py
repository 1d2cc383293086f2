"""``cairn run`` says when the embedded engine wrote the digests, once, and where better recall comes from."""

from __future__ import annotations

from pathlib import Path

from cairn.server.cli.run import EMBEDDED_LINE

from tests.journal.helpers import DEMO, cairn


def test_run_says_once_that_the_embedded_engine_wrote_the_digests(workspace: Path) -> None:
    first = cairn(workspace, "run", str(DEMO))
    lines = first.stdout.splitlines()
    assert lines.count(EMBEDDED_LINE) == 1
    assert "`cairn setup`" in EMBEDDED_LINE and "embedded engine" in EMBEDDED_LINE
    # with the stage report, before the journal
    assert lines.index(EMBEDDED_LINE) < lines.index("")
    assert any(x.startswith("digests: published 1") for x in lines[: lines.index(EMBEDDED_LINE)])

    again = cairn(workspace, "run", str(DEMO))  # nothing new digested: nothing to say about who digested it
    assert EMBEDDED_LINE not in again.stdout
