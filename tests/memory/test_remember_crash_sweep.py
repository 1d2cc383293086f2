"""Kill `cairn remember` at every mutating operation, run it again, and check it converges.

After any kill and a rerun (held claims expired): `cairn doctor` is clean;
there is exactly one remember request, covered by a published focused
review; exactly one proposal made for it, the same (kind, target, title) as
an uninterrupted run's, in the same state (pending in ``propose`` mode,
applied in ``auto`` mode with the same memory bytes); and the remembered
turn was captured once.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from cairn.protocol import codec
from cairn.protocol.memory import RememberRequest

from tests import sweep
from tests.journal.helpers import batches, cairn_json
from tests.memory.converge import undated
from tests.support import child_env, users_auto_mode
from tests.support.warm import run_python

pytestmark = pytest.mark.slow  # a crash sweep or race: sampled by default, see tests/sweep.py

TEXT = "Database migrations run through `make migrate`, never by hand"


def _remember(ws: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_python(["-m", "cairn.server", "remember", "--type", "project", TEXT, "-w", str(ws)], env=child_env(**env), timeout=120)


def _state(ws: Path) -> tuple[list[tuple[str, str, str, str]], dict[str, bytes | None]]:
    rows = sorted((r["kind"], r["target"], r["title"], r["state"]) for r in cairn_json(ws, "proposals"))
    mem = ws / ".agents/memory"
    files = {p.name: p.read_bytes() for p in sorted(mem.iterdir()) if not p.name.startswith(".tmp-")} \
        if mem.exists() else {}
    return rows, undated(files)  # a rerun near midnight writes the next day: see converge.undated


def _workspace(path: Path, mode: str) -> Path:
    path.mkdir()
    (path / ".cairn").mkdir()
    if mode == "auto":
        users_auto_mode()  # the user's to choose: an untrusted workspace's own file cannot
    else:
        (path / ".cairn/config.toml").write_text(f'mode = "{mode}"\n')
    return path


@pytest.mark.parametrize("mode", ["propose", "auto"])
def test_killing_remember_at_every_point_converges(tmp_path: Path, mode: str) -> None:
    ref = _workspace(tmp_path / "reference", mode)
    log = tmp_path / "points.log"
    assert _remember(ref, CAIRN_CRASH_LOG=str(log)).returncode == 0
    points = log.read_text().splitlines()
    assert len(points) > 20
    expected = _state(ref)
    assert len(expected[0]) == 1 and expected[0][0][3] == ("applied" if mode == "auto" else "pending")
    for k in sweep.points(len(points)):
        ws = _workspace(tmp_path / f"k{k}", mode)
        killed_at = sweep.kill_at(k, tmp_path / "kill.log", _remember, ws)
        if killed_at is None:
            sweep.covered(k, len(points))
            break
        where = f"crash at {killed_at}"
        # time passes (held claims expire), the user runs the same command again
        again = _remember(ws, CAIRN_TEST_CLOCK_OFFSET="1000")
        assert again.returncode == 0, (where, again.stderr[-800:])
        doctor = run_python(["-m", "cairn.server", "doctor", "-w", str(ws)], env=child_env())
        assert doctor.returncode == 0, (where, doctor.stdout)
        assert _state(ws) == expected, where
        reqs = [p for p in (ws / ".cairn/state/memory/remember").iterdir() if not p.name.startswith(".tmp-")]
        assert len(reqs) == 1, where
        req = codec.decode(reqs[0].read_bytes(), RememberRequest)
        assert req.bundle, where
        reviewed = [r for r in (ws / ".cairn/journal/reviews").glob("r*.json") if req.id in r.read_text()]
        assert len(reviewed) == 1, (where, "one published focused review covers the request")
        # the text is captured once: one ready batch of one turn (a killed writer's temp is never a record)
        ready = [t for cap in (ws / ".cairn/state/journal/captures").iterdir() for b in batches(cap) for t in b.turn_ids]
        assert ready == [req.turn_id], where
        shutil.rmtree(ws)


def test_a_killed_auto_remember_is_applied_by_whatever_runs_next(tmp_path: Path) -> None:
    """Killed between its focused review's acceptance and its application, the next general review (not the same
    `remember`) applies the proposal, once."""
    import re

    from tests.memory.test_auto_crash_sweep import NEXT

    ref = _workspace(tmp_path / "reference", "auto")
    log = tmp_path / "points.log"
    assert _remember(ref, CAIRN_CRASH_LOG=str(log)).returncode == 0
    labels = [line.split(" ", 1)[1] for line in log.read_text().splitlines()]
    expected = _state(ref)
    first_proposal = next(i for i, lb in enumerate(labels) if re.fullmatch(r"link p[0-9a-f]{12}", lb))
    start = max(i for i, lb in enumerate(labels[:first_proposal]) if re.fullmatch(r"link \d+\.outcome", lb)) + 1
    template = _workspace(tmp_path / "template", "auto")
    # from just before the acceptance, found by label in each run
    for _, ws, killed_at in sweep.killed_runs(len(labels), tmp_path, template, _remember, start=start,
                                              labels=labels):
        where = f"crash at {killed_at}"
        again = NEXT["review"](ws, CAIRN_TEST_CLOCK_OFFSET="1000")
        assert again.returncode == 0, (where, again.stderr[-800:])
        assert _state(ws) == expected, where
        auto = ws / ".cairn/state/memory/auto"
        assert not auto.exists() or not [p for p in auto.iterdir() if not p.name.startswith(".tmp-")], where
        doctor = run_python(["-m", "cairn.server", "doctor", "-w", str(ws)], env=child_env())
        assert doctor.returncode == 0, (where, doctor.stdout)
        shutil.rmtree(ws)
