"""What every memory crash sweep checks after a killed run: a rerun converges and leaves nothing behind."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from cairn.protocol.worker import WorkerRequest
from cairn.state.doctor import check_workspace
from cairn.state.fsdir import PinnedDir
from cairn.worker.entry import run_request

from tests.journal.helpers import DEMO, cairn
from tests.support import users_auto_mode

Files = dict[str, bytes | None]

_DAY = re.compile(rb"\b\d{4}-\d{2}-\d{2}\b")


def undated(files: Mapping[str, bytes | None]) -> Files:
    """``files`` with every calendar day written as ``<day>``.

    A topic carries the day of the run that wrote it (``noted``, ``confirmed``):
    a rerun "past every claim's deadline" runs 1000 s later on the test clock,
    so near midnight (UTC) it writes the next day, as a user's rerun would. What
    a sweep checks is that the rerun converges on the same memory, not the day.
    """
    return {name: None if data is None else _DAY.sub(b"<day>", data) for name, data in files.items()}


def digested_template(template: Path, *, auto: bool = False) -> Path:
    """A workspace with an AGENTS.md and the demo session imported, sealed and digested (``auto``: auto mode)."""
    template.mkdir(parents=True)
    if auto:
        users_auto_mode()
    (template / "AGENTS.md").write_bytes(b"# Agents\n\nBe terse.\n")
    cairn(template, "import", str(DEMO))
    cairn(template, "seal")
    cairn(template, "process")
    return template


def assert_rerun_converges(ws: Path, rerun: Callable[..., subprocess.CompletedProcess[str]],
                           files: Callable[[Path], Files], final: Files, k: int, where: str,
                           also: Callable[[Path], None] | None = None) -> None:
    """Rerun past every claim's deadline: the undisturbed end state, no marker, no temp, doctor clean.

    ``also``: the sweep's own checks of the rerun workspace. Removes ``ws``
    afterwards (a sweep makes one copy per kill point).
    """
    again = rerun(ws, CAIRN_TEST_CLOCK_OFFSET="1000")
    assert again.returncode == 0, (k, where, again.stderr[-800:])
    assert undated(files(ws)) == undated(final), (k, where)
    markers = [m for m in (ws / ".cairn/state/memory-write/markers").iterdir() if not m.name.startswith(".tmp-")]
    assert not markers, (k, where)
    run_request(WorkerRequest(job="cleanup", workspace=str(ws)))  # collects the killed writer's temps
    assert not list(ws.rglob(".tmp-*")), (k, where)
    with PinnedDir.open_root(ws) as root:
        assert check_workspace(root).violations == (), (k, where)
    if also is not None:
        also(ws)
    shutil.rmtree(ws)
