"""A decision killed between its steps is repaired by whatever runs next.

* Killed after the private decision, before its public record: ``cairn
  doctor`` reports the decided proposal without a record; the next decision's
  recovery publishes it (byte-identical, once), and doctor is clean again.
* Killed before a memory file's temp is renamed into place: the temp beside
  the memory files is reported by doctor and removed by the next recovery
  (never the temp of a live writer).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from tests import sweep
from tests.journal.helpers import DEMO, cairn, cairn_json
from tests.support import child_env
from tests.support.warm import run_python

MEM = ".agents/memory"
PUBLIC = ".cairn/journal/decisions"


def _decide(ws: Path, action: str, pid: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_python(["-m", "tests.memory.decide", str(ws), action, pid], env=child_env(**env), timeout=120)


def _template(tmp_path: Path) -> tuple[Path, dict[str, dict]]:
    ws = tmp_path / "template"
    ws.mkdir()
    (ws / "AGENTS.md").write_bytes(b"# Agents\n\nBe terse.\n")
    out = cairn_json(ws, "run", str(DEMO))
    return ws, {p["kind"]: p for p in out["proposals"]}


def _points(tpl: Path, tmp_path: Path, action: str, pid: str) -> list[str]:
    ref = tmp_path / "ref"
    shutil.copytree(tpl, ref)
    log = tmp_path / "ref.log"
    log.unlink(missing_ok=True)
    assert _decide(ref, action, pid, CAIRN_CRASH_LOG=str(log)).returncode == 0
    shutil.rmtree(ref)
    return [line.split(" ", 1)[1] for line in log.read_text().splitlines()]


def _kill_before(label: str, labels: list[str], tpl: Path, ws: Path, tmp_path: Path, action: str, pid: str) -> None:
    """Kill a fresh copy of ``tpl`` just before its point ``label`` (a step of the reference run)."""
    assert label in labels
    shutil.rmtree(ws, ignore_errors=True)
    shutil.copytree(tpl, ws)
    sweep.kill_before(label, tmp_path / "kill.log", _decide, ws, action, pid)


def _doctor(ws: Path) -> dict:
    r = cairn(ws, "doctor", "--json", check=False)
    return json.loads(r.stdout)


def test_a_decision_killed_before_its_public_record_is_published_by_the_next_recovery(tmp_path: Path) -> None:
    tpl, props = _template(tmp_path)
    for action, kind in (("accept", "create"), ("reject", "instruction")):
        pid = props[kind]["id"]
        labels = _points(tpl, tmp_path, action, pid)
        label = f"link {pid}-0001.json"  # after the private decision, before the public record
        assert "link 0001" in labels[: labels.index(label)]
        ws = tmp_path / f"{action}-killed"
        _kill_before(label, labels, tpl, ws, tmp_path, action, pid)
        assert not (ws / PUBLIC / f"{pid}-0001.json").exists()
        report = _doctor(ws)
        assert not report["ok"]
        assert [v["code"] for v in report["violations"]] == ["V_DECISION_UNPUBLISHED"]
        assert pid in report["violations"][0]["path"]
        # the rerun (any later decision runs recovery first) publishes it, once
        again = _decide(ws, action, pid)
        assert again.returncode == 0 and "'changed': False" in again.stdout, again.stderr
        record = ws / PUBLIC / f"{pid}-0001.json"
        assert json.loads(record.read_text())["proposal"] == pid
        assert _doctor(ws)["ok"]
        assert sorted(p.name for p in (ws / PUBLIC).iterdir() if p.name.startswith(pid)) == [f"{pid}-0001.json"]
        shutil.rmtree(ws)


def test_a_writer_temp_left_beside_memory_files_is_reported_and_removed_by_recovery(tmp_path: Path) -> None:
    tpl, props = _template(tmp_path)
    pid = props["create"]["id"]
    topic = Path(props["create"]["target"]).name
    labels = _points(tpl, tmp_path, "accept", pid)
    ws = tmp_path / "killed"  # the topic's bytes are complete in a temp, not yet renamed
    _kill_before(f"rename {topic}", labels, tpl, ws, tmp_path, "accept", pid)
    temps = [p.name for p in (ws / MEM).iterdir() if p.name.startswith(".tmp-")]
    assert len(temps) == 1
    notes = [n for n in _doctor(ws)["notes"] if n["code"] == "N_MEMORY_TEMP"]
    assert [n["path"] for n in notes] == [f"{MEM}/{temps[0]}"]
    # a live writer's temp is never touched: this process is alive, its temp stays
    live = ws / MEM / f".tmp-{os.getpid()}-0000"
    live.write_bytes(b"in flight")
    again = _decide(ws, "accept", pid, CAIRN_TEST_CLOCK_OFFSET="1000")  # the killed claim's deadline has passed
    assert again.returncode == 0, again.stderr
    left = sorted(p.name for p in (ws / MEM).iterdir() if p.name.startswith(".tmp-"))
    assert left == [live.name]
    live.unlink()
    report = _doctor(ws)
    assert report["ok"] and not [n for n in report["notes"] if n["code"] == "N_MEMORY_TEMP"], report
