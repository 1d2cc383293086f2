"""`cairn memory` dates a topic's age by the clock `cairn verify` uses, ``CAIRN_TEST_CLOCK_OFFSET`` included.

A topic `cairn verify` finds not confirmed for ``revalidateDays`` (``aged``)
is listed ``due`` with that age by `cairn memory --json` (and the cockpit's
overview built from the same rows), never ``age 0, due false``.
"""

from __future__ import annotations

import time
from pathlib import Path

from cairn.worker.memory.model import render_topic

from tests.journal.helpers import cairn_json
from tests.support import child_env
from tests.support.warm import run_python

DAYS = 100  # past the default revalidateDays (90)


def _json(ws: Path, *argv: str, offset: int = 0) -> object:
    import json

    env = child_env(**({"CAIRN_TEST_CLOCK_OFFSET": str(offset)} if offset else {}))
    r = run_python(["-m", "cairn.server", *argv, "--json", "-w", str(ws)], env=env, timeout=300)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def test_memory_json_ages_a_topic_by_the_clock_verify_uses(workspace: Path) -> None:
    mem = workspace / ".agents/memory"
    mem.mkdir(parents=True)
    today = time.strftime("%Y-%m-%d", time.gmtime())
    (mem / "tea.md").write_bytes(render_topic("Tea", "How tea is made", "project", "\n- Steep three minutes.\n",
                                              {"confirmed": today}))
    (mem / "MEMORY.md").write_text("- [Tea](tea.md) - How tea is made\n")

    [row] = cairn_json(workspace, "memory")
    assert (row["confirmed"], row["age"], row["due"]) == (today, 0, False)

    later = DAYS * 86400
    verified = _json(workspace, "verify", "--dry-run", offset=later)
    assert isinstance(verified, dict)
    [checked] = verified["topics"]
    assert checked["aged"] is True  # verify, on the offset clock: due
    listed = _json(workspace, "memory", offset=later)
    assert isinstance(listed, list)
    [row] = listed
    assert (row["confirmed"], row["age"], row["due"]) == (today, DAYS, True)
