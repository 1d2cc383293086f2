"""Kill review, application, undo and rejection at every mutating operation.

After any kill, every memory and instruction file is byte-identical to one of
its legitimate states (never mixed); a rerun after the claims' deadlines
reconciles the marked writes and reaches the same decided end state as an
uninterrupted run, with `cairn doctor` clean and no marker left behind.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests import sweep
from tests.memory.converge import assert_rerun_converges, digested_template
from tests.support import child_env
from tests.support.warm import run_python

pytestmark = pytest.mark.slow  # a crash sweep or race: sampled by default, see tests/sweep.py

FILES = ("AGENTS.md", ".agents/memory/MEMORY.md")


def _actor(ws: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_python(["-m", "tests.memory.actor", str(ws)], env=child_env(**env), timeout=120)


def _files(ws: Path) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for rel in FILES:
        p = ws / rel
        out[rel] = p.read_bytes() if p.exists() else None
    mem = ws / ".agents/memory"
    if mem.exists():
        for p in sorted(mem.iterdir()):
            if not p.name.startswith(".tmp-"):  # a killed writer's temp: never visible as a memory file
                out[f".agents/memory/{p.name}"] = p.read_bytes()
    return out


def test_memory_decisions_survive_a_kill_at_every_point(tmp_path: Path) -> None:
    template = digested_template(tmp_path / "template")
    initial = _files(template)
    ref = tmp_path / "ref"
    shutil.copytree(template, ref)
    log = tmp_path / "points.log"
    r = _actor(ref, CAIRN_CRASH_LOG=str(log))
    assert r.returncode == 0, r.stderr
    final = _files(ref)
    points = log.read_text().splitlines()
    assert len(points) > 80
    # every legitimate state of each file: initial, after accept, after undo (== initial for AGENTS.md)
    legit: dict[str, set[bytes | None]] = {}
    for snap in (initial, final):
        for rel, content in snap.items():
            legit.setdefault(rel, set()).add(content)
    initial_agents = initial["AGENTS.md"]
    assert initial_agents is not None  # the template wrote it
    agents_applied = None
    for k, ws, where in sweep.killed_runs(len(points), tmp_path, template, _actor):
        now = _files(ws)
        for name, data in now.items():
            ok = data in legit.get(name, {None}) or name == "AGENTS.md" and data is not None \
                and data.startswith(initial_agents) and b"## Working agreements" in data
            if name == "AGENTS.md" and data not in legit[name]:
                agents_applied = agents_applied or data
                ok = ok and data == agents_applied  # the one applied state, whole
            assert ok, (k, where, name)
        assert_rerun_converges(ws, _actor, _files, final, k, where)
