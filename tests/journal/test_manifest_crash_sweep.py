"""Kill an import that resumes a grown file, reads a new one and writes their manifest entries, at every
mutating operation; run it again; check nothing is lost or captured twice, and that a run after that
finds nothing new and writes nothing (docs/adr/0022).

After each kill, every manifest entry on disk is checked against the captures: an entry is written only
once every turn it counts is durable, so no entry may count more turns than its sessions hold.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from cairn.protocol import codec
from cairn.protocol.sources import SourceEntry

from tests import sweep
from tests.journal.helpers import J, batches
from tests.journal.test_manifest import snapshot
from tests.support import child_env
from tests.support.generated import session_lines
from tests.support.warm import run_python

pytestmark = pytest.mark.slow  # a crash sweep: sampled by default, see tests/sweep.py


def _import(ws: Path, *paths: str, **env: str) -> subprocess.CompletedProcess[str]:
    env.setdefault("CAIRN_CAPTURE_BATCH_TURNS", "2")
    env.setdefault("CAIRN_IMPORT_WORKERS", "1")
    return run_python(["-m", "cairn.server", "import", *paths, "-w", str(ws), "--json"], env=child_env(**env), timeout=120)


def _ready(ws: Path) -> dict[str, list[str]]:
    caps = ws / J / "captures"
    return {cap.name: [t for b in batches(cap) for t in b.turn_ids] for cap in sorted(caps.iterdir())}


def _entries_claim_no_more_than_captured(ws: Path, where: str) -> None:
    held: dict[str, int] = {}
    for cap, turns in _ready(ws).items():
        held[cap.rsplit("-", 1)[0]] = held.get(cap.rsplit("-", 1)[0], 0) + len(set(turns))
    d = ws / J / "sources"
    for p in d.iterdir() if d.exists() else ():
        if p.name.startswith("."):
            continue
        e = codec.decode(p.read_bytes(), SourceEntry)
        have = sum(n for cap, n in held.items() for s in e.sessions if cap.startswith(s))
        assert have >= e.turns, (where, p.name, have, e.turns)


def _write(path: Path, session: int, turns: int) -> Path:
    path.write_text("".join(line + "\n" for line in session_lines(session, turns, words=8)))
    return path


def test_killing_an_import_with_manifest_writes_at_every_point_converges(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    grown, new = src / "grown.jsonl", src / "new.jsonl"
    template = tmp_path / "template"
    template.mkdir()
    _write(grown, 50, 6)
    assert _import(template, str(grown)).returncode == 0
    _write(grown, 50, 10)  # the same records, then four turns more (appended: the same file)
    _write(new, 51, 4)
    ref = tmp_path / "reference"
    shutil.copytree(template, ref)
    log = tmp_path / "points.log"
    r = _import(ref, str(grown), str(new), CAIRN_CRASH_LOG=str(log))
    assert r.returncode == 0 and json.loads(r.stdout)["captured"] == 8
    expected = _ready(ref)
    assert sorted(len(v) for v in expected.values()) == [4, 10]
    assert len(list((ref / J / "sources").iterdir())) == 2
    for _, ws, killed_at in sweep.killed_runs(len(log.read_text().splitlines()), tmp_path, template, _import,
                                              str(grown), str(new)):
        where = f"crash at {killed_at}"
        _entries_claim_no_more_than_captured(ws, where)
        again = _import(ws, str(grown), str(new), CAIRN_TEST_CLOCK_OFFSET="1000")
        assert again.returncode == 0, (where, again.stderr[-800:])
        out = json.loads(again.stdout)
        assert out["captured"] + out["skipped"] == 14, where
        assert _ready(ws) == expected, where  # every turn once, in session order
        doctor = run_python(["-m", "cairn.server", "doctor", "-w", str(ws)], env=child_env())
        assert doctor.returncode == 0, (where, doctor.stdout)
        _entries_claim_no_more_than_captured(ws, where)
        before = snapshot(ws)
        third = _import(ws, str(grown), str(new), CAIRN_TEST_CLOCK_OFFSET="2000")
        assert third.returncode == 0 and json.loads(third.stdout)["skipped"] == 14, where
        assert snapshot(ws) == before, where  # the entries are whole: nothing new, nothing written
        shutil.rmtree(ws)
