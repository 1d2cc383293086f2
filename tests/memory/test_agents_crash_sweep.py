"""Accepting and undoing a wiring survive a kill at every mutating point (``cairn agents wire``).

The wiring of Claude Code creates ``CLAUDE.md``, that of Copilot appends to
``.github/copilot-instructions.md``; each is an ordinary proposal decided
through the checked path. A decision killed at any point leaves every file
whole (its before or its after bytes, never a mix or a part), and the next
decision's recovery converges to the uninterrupted result: applied once,
and an undo afterwards gives the files back byte for byte.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import sweep
from tests.memory.agents_home import env_for, make_home, memory
from tests.memory.converge import assert_rerun_converges
from tests.support import child_env
from tests.support.warm import run_python

pytestmark = pytest.mark.slow  # a crash sweep: sampled by default, see tests/sweep.py

FILES = ("CLAUDE.md", ".github/copilot-instructions.md")


def _decide(ws: Path, action: str, *ids: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Each decision in a fresh process, recovery first (as every decision job runs)."""
    code = ("import sys\nfrom tests.memory.decide import main\n"
            "for pid in sys.argv[3:]:\n    main(sys.argv[1], sys.argv[2], pid)\n")
    return run_python(["-c", code, str(ws), action, *ids], env=child_env(**env), timeout=120)


def _files(ws: Path) -> dict[str, bytes | None]:
    return {rel: (ws / rel).read_bytes() if (ws / rel).exists() else None for rel in FILES}


def _template(tmp_path: Path) -> tuple[Path, list[str]]:
    ws = tmp_path / "template"
    ws.mkdir()
    home = make_home(tmp_path, ws, ("claude-code",))
    memory(ws)
    (ws / ".github").mkdir()
    (ws / ".github" / "copilot-instructions.md").write_bytes(b"Prefer small functions.\r\n")
    r = run_python(["-m", "cairn.server", "agents", "wire", "--json", "-w", str(ws)],
                   env=child_env(**env_for(home)), timeout=120)
    assert r.returncode == 0, r.stderr
    ids = sorted(p["id"] for p in json.loads(r.stdout)["proposals"])
    assert len(ids) == 2
    return ws, ids


def test_a_wiring_decided_under_kills_applies_once_and_undoes_byte_for_byte(tmp_path: Path) -> None:
    template, ids = _template(tmp_path)
    initial = _files(template)
    ref = tmp_path / "ref"
    shutil.copytree(template, ref)
    log = tmp_path / "points.log"
    assert _decide(ref, "accept", *ids, CAIRN_CRASH_LOG=str(log)).returncode == 0
    applied = _files(ref)
    assert applied["CLAUDE.md"] is not None and initial["CLAUDE.md"] is None
    assert applied != initial
    reference = len(log.read_text().splitlines())

    def undo_gives_every_byte_back(ws: Path) -> None:
        r = _decide(ws, "undo", *ids, CAIRN_TEST_CLOCK_OFFSET="1000")
        assert r.returncode == 0, r.stderr[-400:]
        assert _files(ws) == initial

    for k, ws, where in sweep.killed_runs(reference, tmp_path, template, _decide, "accept", *ids):
        now = _files(ws)
        for rel in FILES:  # whole: before or after, nothing in between
            assert now[rel] in (initial[rel], applied[rel]), (k, where, rel)
        assert_rerun_converges(ws, _accept(ids), _files, applied, k, where, also=undo_gives_every_byte_back)


def _accept(ids: list[str]) -> Callable[..., subprocess.CompletedProcess[str]]:
    """The rerun of a sweep: accept every id (recovery first), with the environment it is given."""

    def run(ws: Path, **env: str) -> subprocess.CompletedProcess[str]:
        return _decide(ws, "accept", *ids, **env)
    return run
