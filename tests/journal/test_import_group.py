"""Small sessions captured together: each under its own claim, in a handful of programs (docs/adr/0023)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cairn.protocol.digest import ModelPolicy
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.vocab import OutcomeKind

from tests import sweep
from tests.journal.helpers import J, batches
from tests.support import child_env
from tests.support.generated import write_session
from tests.support.warm import run_python

POLICY = ModelPolicy(provider="extractive")


def _files(tmp_path: Path, n: int, turns: int, first: int = 70) -> list[str]:
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    return [str(write_session(src / f"s{i}.jsonl", first + i, turns, words=8)) for i in range(n)]


def _state(ws: Path) -> dict[str, Any]:
    """What a capture leaves that does not depend on when it ran: each capture's turns and segments, the
    sessions' records and markers, the stored segments and the claims' generations."""
    root = ws / J
    caps = {c.name: [(b.turn_ids, b.segment, b.seq) for b in batches(c)] for c in sorted((root / "captures").iterdir())}
    pins = sorted(p.name for p in (root / "captures").glob("*/pin-*"))
    sessions = sorted(str(p.relative_to(root)) for p in (root / "sessions").rglob("*") if p.is_file())
    records = {str(p.relative_to(root)): p.read_bytes() for p in (root / "sessions").glob("*/session.json")}
    segments = sorted(p.name for p in (root / "segments").glob("*/*") if not p.name.startswith("."))
    claims = sorted(str(p.relative_to(root)) for p in (root / "claims").glob("*/*.*") if not p.name.startswith("."))
    return {"captures": caps, "pins": pins, "sessions": sessions, "records": records, "segments": segments,
            "claims": claims}


def _import(ws: Path, paths: list[str], monkeypatch: pytest.MonkeyPatch, *, group: int,
            tolerant: bool = False) -> tuple[Any, int]:
    """Import ``paths`` into ``ws`` (files grouped ``group`` at a time); (tally, locked programs run: the
    elections, guarded writes and settlements)."""
    from cairn.state import program as P
    from cairn.worker.journal import imports as I
    from cairn.worker.journal.store import Journal

    monkeypatch.setattr(I, "GROUP_FILES", group)
    real, runs = P.run, [0]

    def counted(*args: Any, **kw: Any) -> Any:
        runs[0] += bool(kw.get("lock") or kw.get("locks"))
        return real(*args, **kw)

    monkeypatch.setattr(P, "run", counted)
    with Journal(str(ws)) as j:
        out = I.import_items(j, [(p, "auto", None) for p in paths], POLICY, workers=4, tolerant=tolerant)
    monkeypatch.setattr(P, "run", real)
    return out, runs[0]


def test_small_sessions_get_the_same_evidence_and_claims_in_far_fewer_programs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _files(tmp_path, 12, 3)
    alone, grouped = tmp_path / "alone", tmp_path / "grouped"
    alone.mkdir()
    grouped.mkdir()
    a, runs_alone = _import(alone, paths, monkeypatch, group=1)
    g, runs_grouped = _import(grouped, paths, monkeypatch, group=32)
    assert (g.files, g.sessions, g.captured, g.session_ids) == (a.files, a.sessions, a.captured, a.session_ids)
    assert g.captured == 36
    assert _state(grouped) == _state(alone)  # the same captures, segments, pins, records and claim generations
    # elect, write, settle: for all twelve, or for each (and the manifest's claim, elected and settled once)
    assert (runs_grouped, runs_alone) == (3 + 2, 3 * 12 + 2)
    # a second import finds nothing new and writes nothing, as after a capture one at a time
    again, _ = _import(grouped, paths, monkeypatch, group=32)
    assert (again.captured, again.skipped) == (0, 36)


def test_a_session_whose_claim_is_in_use_is_captured_alone_beside_the_group(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workspace: Path) -> None:
    from cairn.worker.ingest.importers import load
    from cairn.worker.journal.store import Journal, session_dir

    paths = _files(tmp_path, 5, 2)
    sid = load(Path(paths[2]))[0].session_id
    with Journal(str(workspace)) as other:  # a seal attempt, say, that found nothing: a generation, no capture
        claim = other.claims.elect(f"session/{session_dir(sid)}", purpose="seal:idle", ttl=60,
                                   authority=other.authority)
        other.claims.settle(claim, OutcomeKind.COMPLETED)
    out, _ = _import(workspace, paths, monkeypatch, group=32)
    assert out.captured == 10
    caps = {c.name: [t for b in batches(c) for t in b.turn_ids] for c in (workspace / J / "captures").iterdir()}
    assert sorted(len(v) for v in caps.values()) == [2] * 5
    assert len(list((workspace / J / "claims").glob("*/2.claim"))) == 1  # that session's capture took generation 2


def test_a_malformed_file_in_a_group_is_listed_alone_and_the_others_are_captured(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workspace: Path) -> None:
    paths = _files(tmp_path, 4, 2)
    bad = Path(paths[1])
    # a record whose shape no check foresaw, after the first line: the file opens, its turns fail to read
    bad.write_bytes(bad.read_bytes() + b'{"type": "user", "uuid": 7, "message": []}\n')
    out, _ = _import(workspace, paths, monkeypatch, group=32, tolerant=True)
    assert [f.index for f in out.failed] in ([], [1])
    if out.failed:
        assert out.failed[0].code in (str(ErrorCode.IMPORT_MALFORMED), "E_IMPORT_MALFORMED")
        assert out.captured == 6
    else:  # the reader left the line out and reported it: the file's turns are all captured
        assert out.captured == 8 and out.malformed


def test_a_late_group_writer_is_refused_for_every_session(workspace: Path) -> None:
    from cairn.state import program as P
    from cairn.worker.journal.store import Journal

    with Journal(str(workspace)) as j:
        claims = j.claims.elect_new(["session/a", "session/b"], purpose="capture", ttl=60, authority=j.authority)
        assert all(c is not None for c in claims)
    # the writer stalls past its deadline; another process takes one scope over
    with Journal(str(workspace)) as later:
        later.claims.clock_offset = 120.0
        taken = later.claims.elect("session/b", purpose="capture", ttl=60, authority=later.authority)
        assert taken.generation == 2
    with Journal(str(workspace)) as j:
        with pytest.raises(CairnError) as err:
            j.claims.guarded_many([c for c in claims if c is not None], [P.EnsureDir("late"), P.Create("late/x")])
        assert err.value.code in (ErrorCode.CLAIM_LOST, ErrorCode.CLAIM_EXPIRED)
    assert not (workspace / ".cairn" / "late").exists()  # nothing of the program ran


def test_finishing_a_group_after_a_takeover_reports_the_winner_and_completes_the_rest(workspace: Path) -> None:
    from cairn.worker.journal.store import Journal

    with Journal(str(workspace)) as j:
        a, b = j.claims.elect_new(["session/a", "session/b"], purpose="capture", ttl=60, authority=j.authority)
        assert a is not None and b is not None
        j.claims.settle(b, OutcomeKind.FAILED)  # b was settled meanwhile (its writer gave up)
        j.claims.finish_many([a, b], [{"captured": 1}, {"captured": 1}])
        assert j.claims.outcome(a).kind is OutcomeKind.COMPLETED  # type: ignore[union-attr]
        assert j.claims.outcome(b).kind is OutcomeKind.FAILED  # type: ignore[union-attr]


def test_a_program_holding_several_locks_gives_every_one_back_when_one_is_busy(workspace: Path) -> None:
    from cairn.state import program as P
    from cairn.state.fsdir import PinnedDir
    from cairn.state.locks import LockWait

    waits = iter(range(1000))
    wait = LockWait(seconds=0.05, clock=lambda: next(waits) * 0.01, sleep=lambda s: None)
    base = PinnedDir.open_root(workspace)
    (workspace / "a").mkdir()
    (workspace / "b").mkdir()
    held = os.open(workspace / "b" / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(held, fcntl.LOCK_EX)
    try:
        with pytest.raises(CairnError) as err:
            P.run(base, [P.Create("a/x")], locks=["b", "a"], wait=wait)
        assert err.value.code is ErrorCode.CLAIM_BUSY
        assert not (workspace / "a" / "x").exists()
        probe = os.open(workspace / "a" / ".lock", os.O_RDWR)
        fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)  # "a" was given back
        os.close(probe)
    finally:
        os.close(held)
        base.close()


def _run_import(ws: Path, *paths: str, **env: str) -> subprocess.CompletedProcess[str]:
    env.setdefault("CAIRN_IMPORT_WORKERS", "1")
    env.setdefault("CAIRN_IMPORT_PROCESSES", "1")
    return run_python(["-m", "cairn.server", "import", *paths, "-w", str(ws), "--json"], env=child_env(**env),
                      timeout=120)


@pytest.mark.slow
def test_killing_a_grouped_import_at_every_point_converges(tmp_path: Path) -> None:
    paths = _files(tmp_path, 4, 2)
    ref = tmp_path / "reference"
    ref.mkdir()
    log = tmp_path / "points.log"
    assert _run_import(ref, *paths, CAIRN_CRASH_LOG=str(log)).returncode == 0
    points = [line.split(" ", 1)[1] for line in log.read_text().splitlines()]
    claims = [i for i, p in enumerate(points) if p == "link 1.claim"]
    first_segment = next(i for i, p in enumerate(points) if p.startswith("link ") and len(p) == 69)
    # one group: every session's claim before any evidence (the fifth is the manifest's, at the end)
    assert len([i for i in claims if i < first_segment]) == 4
    expected = _state(ref)["captures"]
    for _, ws, killed_at in sweep.killed_runs(len(points), tmp_path, None, _run_import, *paths):
        where = f"crash at {killed_at}"
        again = _run_import(ws, *paths, CAIRN_TEST_CLOCK_OFFSET="1000")
        assert again.returncode == 0, (where, again.stderr[-800:])
        got = _state(ws)
        assert {k: [t for t, _, _ in v] for k, v in got["captures"].items()} == \
            {k: [t for t, _, _ in v] for k, v in expected.items()}, where  # every turn once, in its own capture
        doctor = run_python(["-m", "cairn.server", "doctor", "-w", str(ws)], env=child_env())
        assert doctor.returncode == 0, (where, doctor.stdout)
        pins = {p[4:] for p in got["pins"]}
        assert set(got["segments"]) <= pins, where  # no segment left unpinned
        shutil.rmtree(ws)
