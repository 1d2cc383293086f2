"""I/O faults during ``cairn run`` and ``cairn accept``: EIO and EROFS on fsync, a disk that fills
between a file's data and its name (ENOSPC at the link or the rename), the state root's marker.
(EIO on read: ``test_read_faults.py``.)

Each fault is injected once (:mod:`state.crash` fault injection) at a
sampled point (every point with ``CAIRN_POWERLOSS=full``). The command either
fails (exit 2, or 1 when ``run`` reports one failed step in its
summary) with a fixed code naming the system's reason (``E_IO_FAILED`` /
``E_NO_SPACE``) and no traceback, or completes whole; a rerun with the fault
gone publishes exactly the digest an undisturbed run publishes and
``cairn doctor`` is clean. A failed fsync is fatal for that write: the temp is
dropped and the write is made afresh by the rerun, never fsynced again on
the same descriptor (whose error the kernel reports only once).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests import sweep
from tests.journal.test_crash_sweep import _check_evidence_until_coverage, _public
from tests.powerloss import harness
from tests.support import REPO, child_env
from tests.support.warm import run_python

pytestmark = [pytest.mark.slow, pytest.mark.timeout(7200 if harness.FULL else 300)]  # a fault sweep: sampled by default, CAIRN_POWERLOSS=full injects at every point

SRC = REPO / "tests" / "fixtures" / "sweep" / ".aider.chat.history.md"


def _run(ws: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_python(["-m", "cairn.server", "run", str(SRC), "-w", str(ws)],
                      env=child_env(CAIRN_CAPTURE_BATCH_TURNS="2", **env), timeout=120)


def test_io_faults_are_reported_with_a_code_and_recoverable(tmp_path: Path) -> None:
    ref = tmp_path / "ref"
    ref.mkdir()
    log = tmp_path / "points.log"
    assert _run(ref, CAIRN_CRASH_LOG=str(log)).returncode == 0
    (expected,) = _public(ref)
    points = [line.split(" ", 1) for line in log.read_text().splitlines()]
    faults = [(int(n), label, err) for n, label in points
              for err in (("EIO", "EROFS") if label.startswith("fsync") else ("ENOSPC",) if label.startswith("link") else ())]
    # sampled: every fifth fsync fault, every fourth full disk at a link
    chosen = faults if harness.FULL else [f for f in faults if f[2] != "ENOSPC"][::5] + [f for f in faults if f[2] == "ENOSPC"][::4]
    codes: set[str] = set()
    for n, label, err in chosen:
        ws = tmp_path / f"w{n}-{err}"
        ws.mkdir()
        where = f"{err} at point {n} ({label})"
        r = _run(ws, CAIRN_FAULT_AT=str(n), CAIRN_FAULT_ERRNO=err)
        assert "Traceback" not in r.stderr + r.stdout, where
        if r.returncode == 0:  # the fault hit a write the command does not depend on and redoes later
            assert [g.id for g in _public(ws)] == [expected.id], where
        else:
            code = "E_NO_SPACE" if err == "ENOSPC" else "E_IO_FAILED"
            said = r.stderr + r.stdout  # a failed step of ``run`` is reported in its summary (exit 1)
            assert r.returncode in (1, 2) and f"{code}: " in said and f"({err})" in said, (where, said[-400:])
            codes.add(code)
        assert not [p for p in ws.rglob(".tmp-*") if p.parent.name != "state"], (where, "a temp left beside a record")
        _check_evidence_until_coverage(ws, where)
        again = _run(ws, CAIRN_TEST_CLOCK_OFFSET="1000")
        assert again.returncode == 0, (where, again.stderr[-400:])
        got = _public(ws)
        assert [(g.id, g.notes, g.turn_ids) for g in got] == [(expected.id, expected.notes, expected.turn_ids)], where
        doctor = run_python(["-m", "cairn.server", "doctor", "-w", str(ws)], env=child_env())
        assert doctor.returncode == 0, (where, doctor.stdout[-400:])
    print(f"I/O faults injected: {len(chosen)} of {len(faults)}")
    assert codes == {"E_NO_SPACE", "E_IO_FAILED"} or harness.FULL


@pytest.mark.parametrize(("label", "err"), [("fsync-temp", "EIO"), ("fsync-dir", "EIO"), ("link owner", "ENOSPC")])
def test_a_failed_write_of_the_state_marker_stops_the_command_and_the_next_run_writes_it(
        tmp_path: Path, label: str, err: str) -> None:
    """The state root's marker (``.cairn/state/owner``) is a durable write like any other: a failed
    fsync or a full disk is reported with its code (not swallowed, not fsynced again), and a rerun
    writes the marker afresh and completes."""
    ref = tmp_path / "ref"
    ref.mkdir()
    log = tmp_path / "points.log"
    assert _run(ref, CAIRN_CRASH_LOG=str(log)).returncode == 0
    labels = [line.split(" ", 1)[1] for line in log.read_text().splitlines()]
    at_marker = labels.index("link owner")
    # the marker's own step: its temp's fsync and its directory's fsync are the nearest around its link
    n = {"link owner": at_marker, "fsync-temp": at_marker - 1,
         "fsync-dir": at_marker + labels[at_marker:].index("fsync-dir")}[label] + 1
    assert labels[n - 1] == label
    ws = tmp_path / "ws"
    ws.mkdir()
    r = _run(ws, CAIRN_FAULT_AT=str(n), CAIRN_FAULT_ERRNO=err)
    said = r.stderr + r.stdout
    code = "E_NO_SPACE" if err == "ENOSPC" else "E_IO_FAILED"
    assert r.returncode == 2 and f"{code}: " in said and f"({err})" in said and "Traceback" not in said, said[-400:]
    assert _public(ws) == []  # nothing published on a state root whose marker failed
    assert not [p for p in ws.rglob(".tmp-*")], "the failed write left its temp"
    again = _run(ws, CAIRN_TEST_CLOCK_OFFSET="1000")
    assert again.returncode == 0, again.stderr[-400:]
    (expected,) = _public(ref)
    assert [g.id for g in _public(ws)] == [expected.id]
    assert (ws / ".cairn/state/owner").read_bytes().startswith(b'{"id": ')
    doctor = run_python(["-m", "cairn.server", "doctor", "-w", str(ws)], env=child_env())
    assert doctor.returncode == 0, doctor.stdout[-400:]


def _faulted_at(log: Path, anchor: str, nth: int, offset: int) -> str:
    """The label of the point a label-placed fault hit, read from the faulted run's own log."""
    labels = [line.split(" ", 1)[1] for line in log.read_text().splitlines()]
    at = [i for i, label in enumerate(labels) if label == anchor]
    assert len(at) >= nth and at[nth - 1] + offset < len(labels), (anchor, nth, offset, len(at), len(labels))
    return labels[at[nth - 1] + offset]


def test_io_faults_during_accept_leave_every_memory_file_whole_and_recoverable(tmp_path: Path) -> None:
    """``cairn accept`` of every pending proposal, with one fault: a disk that fills between a memory
    file's data and its rename (ENOSPC at the rename), or at a link, or a failed fsync (EIO, EROFS).
    Each memory and instruction file is its before or its after bytes, the command names its code,
    and a rerun with the fault gone applies each proposal once. The writes after a decision (the
    marker's retirement, the public decision record) are no exception: their failure is reported too,
    the decision stands, and the rerun publishes the record."""
    import json
    import shutil

    from cairn.state.layout import PUBLIC_DECISIONS

    from tests.memory.converge import digested_template
    from tests.memory.test_crash_sweep import _files

    template = digested_template(tmp_path / "template")
    assert run_python(["-m", "cairn.server", "review", "-w", str(template)], env=child_env()).returncode == 0
    listed = run_python(["-m", "cairn.server", "proposals", "--json", "-w", str(template)], env=child_env())
    ids = [p["id"] for p in json.loads(listed.stdout)]

    def accept(ws: Path, **env: str) -> subprocess.CompletedProcess[str]:
        return run_python(["-m", "cairn.server", "accept", *ids, "-w", str(ws)], env=child_env(**env), timeout=120)

    ref = tmp_path / "ref"
    shutil.copytree(template, ref)
    log = tmp_path / "points.log"
    assert accept(ref, CAIRN_CRASH_LOG=str(log)).returncode == 0
    before, after = _files(template), _files(ref)
    published = sorted(p.name for p in (ref / PUBLIC_DECISIONS).iterdir())
    assert published == sorted(f"{i}-0001.json" for i in ids)
    points = [line.split(" ", 1) for line in log.read_text().splitlines()]
    renames = [(int(n), lb, "ENOSPC") for n, lb in points if lb.startswith("rename ")]
    links = [(int(n), lb, "ENOSPC") for n, lb in points if lb.startswith("link ")]
    fsyncs = [(int(n), lb, err) for n, lb in points if lb.startswith("fsync") for err in ("EIO", "EROFS")]
    assert renames
    # A copied workspace's state folder is adopted first (ADR 0011): its marker is written before anything
    # else. A read-only file system (EROFS) there is no failure of the accept: an adopted folder is read
    # without a marker, and on a disk that stays read-only the accept's own first write fails with its code.
    # Injected once, the accept completes whole and the next open writes the marker.
    labels = [lb for _, lb in points]
    at = labels.index("rename owner") + 1  # the marker's rename; its temp's fsync just before, the folder's after
    assert (labels[at - 2], labels[at]) == ("fsync-temp", "fsync-dir")
    adoption = [(at - 1, "fsync-temp", "EROFS"), (at + 1, "fsync-dir", "EROFS")]
    chosen = renames + links + fsyncs if harness.FULL else renames + links[::16] + fsyncs[::40] + adoption
    def placed(hit: str, label: str) -> bool:
        return hit.split(" ", 1)[0] == label.split(" ", 1)[0] and (hit == label or not label.startswith("rename "))

    for n, label, err in chosen:
        ws = tmp_path / f"a{n}-{err}"
        where = f"{err} at point {n} ({label})"
        # placed by label, not by number: a shard folder made only when missing shifts numbers (tests/sweep.py)
        anchor, nth, offset = sweep.anchor(labels, n)
        faulted = tmp_path / "faulted.log"
        hits = []
        # A fault placed at an offset past its anchor once hit the next step under a loaded full suite (an
        # fsync-temp for an fsync-dir), which no run alone reproduced: the placement is tried again on a fresh
        # copy (at most three times), and every product assertion below holds of the run that hit its step.
        for _ in range(3):
            shutil.rmtree(ws, ignore_errors=True)
            shutil.copytree(template, ws)
            faulted.unlink(missing_ok=True)
            r = accept(ws, CAIRN_FAULT_BEFORE=anchor, CAIRN_FAULT_NTH=str(nth), CAIRN_FAULT_OFFSET=str(offset),
                       CAIRN_FAULT_ERRNO=err, CAIRN_CRASH_LOG=str(faulted))
            hits.append(_faulted_at(faulted, anchor, nth, offset))
            if placed(hits[-1], label):
                break
        assert placed(hits[-1], label), (where, "the fault hit another step", hits)
        said = r.stdout + r.stderr
        assert "Traceback" not in said, (where, said[-400:])
        if (n, label, err) in adoption:
            assert (r.returncode, said) == (0, "".join(f"{i}: applied\n" for i in ids)), (where, said[-400:])
            assert _files(ws) == after and not list((ws / ".cairn/state").glob(".tmp-*")), where
            again = accept(ws, CAIRN_TEST_CLOCK_OFFSET="1000")
            assert again.returncode == 0 and _files(ws) == after, (where, again.stderr[-400:])
            marker = json.loads((ws / ".cairn/state/owner").read_bytes())
            assert marker["ino"] == (ws / ".cairn/state").stat().st_ino, (where, "the rerun adopted the folder")
            shutil.rmtree(ws)
            continue
        code = "E_NO_SPACE" if err == "ENOSPC" else "E_IO_FAILED"
        assert r.returncode != 0 and f"{code}: " in said, (where, said[-400:])
        for name, data in _files(ws).items():
            whole = after.get(name)
            # the index between two accepts holds some of its final entries, each line whole
            between = name.endswith("MEMORY.md") and data is not None and whole is not None and \
                data.endswith(b"\n") and set(data.splitlines()) <= set(whole.splitlines())
            assert data in (before.get(name), whole) or between, (where, name, "not its before or after bytes")
        again = accept(ws, CAIRN_TEST_CLOCK_OFFSET="1000")
        assert "Traceback" not in again.stdout + again.stderr, where
        assert _files(ws) == after, where
        # every decision has its public record (one each, whole; a failed write's temp is gone)
        assert sorted(p.name for p in (ws / PUBLIC_DECISIONS).iterdir()) == published, where
        doctor = run_python(["-m", "cairn.server", "doctor", "-w", str(ws)], env=child_env())
        assert doctor.returncode == 0, (where, doctor.stdout[-400:])
        shutil.rmtree(ws)
    print(f"I/O faults injected during accept: {len(chosen)} of {len(renames) + len(links) + len(fsyncs)}")
