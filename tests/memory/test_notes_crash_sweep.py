"""Kill a working note's consolidation and disposal (and its undo) at every mutating operation.

After any kill the note is either exactly its original bytes or absent (never
torn), every memory file is one of its legitimate states; a rerun after the
claims' deadlines converges on the uninterrupted end state: extractions
applied, the note restored byte for byte by the undo, no marker left,
`cairn doctor` clean.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cairn.worker.memory.notes import QUIET_SECONDS

from tests import sweep
from tests.memory.converge import assert_rerun_converges
from tests.support import child_env
from tests.support.warm import run_python

pytestmark = pytest.mark.slow  # a crash sweep: sampled by default, see tests/sweep.py

NOTE = b"# Ops\n\n- Logs of the api service go to the ops bucket\n- The cache is flushed nightly at two\n"
NOTE_PATH = ".agents/notes/ops.md"


def _actor(ws: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_python(["-m", "tests.memory.notes_actor", str(ws)], env=child_env(**env), timeout=120)


def _files(ws: Path) -> dict[str, bytes | None]:
    note = ws / NOTE_PATH
    out: dict[str, bytes | None] = {NOTE_PATH: note.read_bytes() if note.exists() else None}
    mem = ws / ".agents/memory"
    if mem.exists():
        for p in sorted(mem.iterdir()):
            if not p.name.startswith(".tmp-"):
                out[f".agents/memory/{p.name}"] = p.read_bytes()
    return out


def _template(tmp_path: Path) -> Path:
    """A workspace holding one working note, quiet for long enough to be consolidated."""
    template = tmp_path / "template"
    (template / ".agents/notes").mkdir(parents=True)
    note = template / NOTE_PATH
    note.write_bytes(NOTE)
    quiet = note.stat().st_mtime - QUIET_SECONDS - 60
    os.utime(note, (quiet, quiet))
    return template


def test_disposition_survives_a_kill_at_every_point(tmp_path: Path) -> None:
    template = _template(tmp_path)
    ref = tmp_path / "ref"
    shutil.copytree(template, ref)
    log = tmp_path / "points.log"
    r = _actor(ref, CAIRN_CRASH_LOG=str(log))
    assert r.returncode == 0, r.stderr
    final = _files(ref)
    assert final[NOTE_PATH] == NOTE and len(final) == 4  # two topics and their index; the note restored by undo
    points = log.read_text().splitlines()
    assert len(points) > 60
    legit: dict[str, set[bytes | None]] = {NOTE_PATH: {NOTE, None}}
    for rel, content in final.items():
        legit.setdefault(rel, {None}).add(content)
    for k in sweep.points(len(points)):
        ws = tmp_path / f"k{k}"
        shutil.copytree(template, ws)
        where = sweep.kill_at(k, tmp_path / "kill.log", _actor, ws)
        if where is None:
            sweep.covered(k, len(points))
            break
        for name, data in _files(ws).items():
            whole = final.get(name)
            # the index between the two creates holds the first entry alone: a prefix of its final bytes
            between = name.endswith("MEMORY.md") and data is not None and whole is not None and whole.startswith(data)
            assert data in legit.get(name, {None}) or between, (k, where, name)
        assert_rerun_converges(ws, _actor, _files, final, k, where)


def test_a_note_restore_killed_before_its_rename_leaves_a_temp_the_next_run_removes(tmp_path: Path) -> None:
    """The undo writes the note back through a temp in the notes folder: a kill before the rename leaves
    that temp, which doctor reports and the next run's recovery removes (like a memory file's)."""
    template = _template(tmp_path)
    ref = tmp_path / "ref"
    shutil.copytree(template, ref)
    assert _actor(ref).returncode == 0
    final = _files(ref)
    ws = tmp_path / "killed"
    shutil.copytree(template, ws)
    sweep.kill_before("rename ops.md", tmp_path / "kill.log", _actor, ws)
    temps = [p.name for p in (ws / ".agents/notes").iterdir() if p.name.startswith(".tmp-")]
    assert len(temps) == 1
    doctor = run_python(["-m", "cairn.server", "doctor", "-w", str(ws), "--json"], env=child_env(), timeout=120)
    assert f".agents/notes/{temps[0]}" in doctor.stdout
    assert_rerun_converges(ws, _actor, _files, final, 0, "rename ops.md")

