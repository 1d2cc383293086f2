"""Kill points for crash sweeps, learned from each killed run itself.

A workload's number of mutating operations is not a constant: records carry
timestamps, so content-addressed bundles land in different two-hex-digit
shard directories from run to run, and a shard that already exists needs no
``mkdir``. A sweep that trusted a reference run's count would sometimes ask to
die at a point the workload never reaches. Instead every run is told both to
die at point *k* and to log its points; a run that exits normally must have
logged fewer than *k* points, which proves the sweep has passed the end of the
workload. A test about particular steps (each write of the index, and the
points around it) names them instead: :func:`kill_like` finds a reference
run's point *k* in any run by label, as the *n*-th point of the nearest
:func:`steady` label at or before it plus an offset.

By default a sweep is *sampled*: every point up to ``EXHAUSTIVE_HEAD``, then
every ``CAIRN_SWEEP_STRIDE``-th (default 5), so CI stays within its budget
while the start-up points, where most of the claim and directory set-up
happens, are all killed. Which residue past the head is sampled rotates
with the day (``CAIRN_SWEEP_PHASE`` fixes it), so five daily runs kill at
every point between them. ``CAIRN_SWEEP=full`` kills at every single point:

    CAIRN_SWEEP=full .venv/bin/python -m pytest -m slow
"""

from __future__ import annotations

import datetime
import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

Run = Callable[..., subprocess.CompletedProcess[str]]

EXHAUSTIVE_HEAD = 12


def stride() -> int:
    """1 for an exhaustive sweep (``CAIRN_SWEEP=full``), else the sampling stride."""
    if os.environ.get("CAIRN_SWEEP") == "full":
        return 1
    return max(1, int(os.environ.get("CAIRN_SWEEP_STRIDE", "5")))


def phase(step: int) -> int:
    """Which of the ``step`` residues past the head this run samples: ``CAIRN_SWEEP_PHASE``, else the day's."""
    fixed = os.environ.get("CAIRN_SWEEP_PHASE")
    return (int(fixed) if fixed else datetime.datetime.now(datetime.UTC).date().toordinal()) % step


def kill_at(k: int, log: Path, run: Run, *args: object, **env: str) -> str | None:
    """Run ``run(*args, **env)`` set to die before mutating point *k*.

    Returns the label of the point it died at, or None when the workload
    completed in fewer than *k* points. Anything else (an error exit, or a
    clean exit after *k* points) fails the test.
    """
    log.unlink(missing_ok=True)
    r = run(*args, CAIRN_CRASH_AT=str(k), CAIRN_CRASH_LOG=str(log), **env)
    points = log.read_text().splitlines() if log.exists() else []
    if r.returncode == -signal.SIGKILL:
        assert len(points) == k, (k, len(points), r.stderr[-400:])
        return points[-1]
    assert r.returncode == 0 and len(points) < k, (k, r.returncode, len(points), r.stderr[-400:])
    return None


def kill_before(label: str, log: Path, run: Run, *args: object, nth: int = 1, offset: int = 0, **env: str) -> str:
    """Run ``run(*args, **env)`` set to die just before its ``nth`` mutating point labelled ``label``, or
    ``offset`` points past it (``CAIRN_CRASH_NTH``, ``CAIRN_CRASH_OFFSET``).

    Returns the logged point it died at (``"N label"``, as :func:`kill_at`).
    Fails the test unless the run died there (a workload that never reaches
    ``label`` is not testing what its caller claims).
    """
    where = kill_past(label, nth, offset, log, run, *args, **env)
    assert where is not None, (label, nth, offset, "the run completed first")
    return where


def kill_past(label: str, nth: int, offset: int, log: Path, run: Run, *args: object, **env: str) -> str | None:
    """:func:`kill_at`, counting from the ``nth`` point labelled ``label``: die ``offset`` points past it.

    Returns the logged point it died at, or None when the workload completed
    first. The run must reach that ``label`` point either way.
    """
    log.unlink(missing_ok=True)
    r = run(*args, CAIRN_CRASH_BEFORE=label, CAIRN_CRASH_NTH=str(nth), CAIRN_CRASH_OFFSET=str(offset),
            CAIRN_CRASH_LOG=str(log), **env)
    points = log.read_text().splitlines() if log.exists() else []
    at = [i for i, p in enumerate(points, 1) if p.split(" ", 1)[1] == label]
    assert len(at) >= nth, (label, nth, offset, len(at), r.returncode, r.stderr[-400:])
    if r.returncode == -signal.SIGKILL:
        assert len(points) == at[nth - 1] + offset, (label, nth, offset, points[-3:])
        return points[-1]
    assert r.returncode == 0 and len(points) < at[nth - 1] + offset, \
        (label, nth, offset, r.returncode, len(points), r.stderr[-400:])
    return None


def steady(label: str) -> bool:
    """Whether every run of one workload has as many points labelled ``label`` before the same step.

    Temps are written, fsynced and dropped for every record, whether or not
    its content-addressed copy exists already, and a rename names the file it
    replaces. Not so ``mkdir`` (a shard folder is made only when missing, and
    its parent fsynced: ``fsync-dir``) or a link named by content or by a
    random id.
    """
    return label in ("write-temp", "fsync-temp", "unlink-temp") or label.startswith("rename ")


def anchor(labels: list[str], k: int) -> tuple[str, int, int]:
    """Point *k* (1-based) of a reference run with these ``labels``, named so any run of the workload finds it.

    A global index does not carry over (see the module's docstring). Returns
    ``(label, nth, offset)`` for :func:`kill_before`: ``offset`` points past the
    ``nth`` point labelled ``label``, the nearest :func:`steady` point at or before *k*.
    """
    a = next((i for i in range(k, 0, -1) if steady(labels[i - 1])), None)
    assert a is not None, (k, "no steady point at or before it")
    return labels[a - 1], labels[:a].count(labels[a - 1]), k - a


def kill_like(labels: list[str], k: int, log: Path, run: Run, *args: object, **env: str) -> str:
    """:func:`kill_before` the step that was point *k* of the reference run whose ``labels`` are given.

    Returns the logged point it died at, which is checked to be the same
    operation as the reference run's point *k* (its number may differ).
    """
    label, nth, offset = anchor(labels, k)
    where = kill_before(label, log, run, *args, nth=nth, offset=offset, **env)
    assert where.split(" ", 1)[1] == labels[k - 1], (k, labels[k - 1], where)
    return where


def points(reference: int, start: int = 1) -> Iterator[int]:
    """Kill points start, start + 1, … (sampled past the head, see :func:`stride`) until the caller stops at a
    completed run.

    *reference* is an uninterrupted run's count; a workload that ends far from
    it (or never ends) means the sweep is not measuring what it claims to.
    *start* skips the points before a window of interest (the head is counted from it).
    """
    step = stride()
    head = start - 1 + EXHAUSTIVE_HEAD
    k = start - 1
    while True:
        k += 1 if k < head else (step if k > head else 1 + phase(step))
        assert k <= reference + 32, f"workload still running after {k} points (reference run: {reference})"
        yield k


def covered(k: int, reference: int) -> None:
    """Check the completed run at *k* ended near the reference run's count."""
    assert k > reference - 32, f"workload ended after {k - 1} points, reference run had {reference}"


def killed_runs(reference: int, tmp_path: Path, template: Path | None, run: Run, *args: object,
                start: int = 1, labels: list[str] | None = None, **env: str) -> Iterator[tuple[int, Path, str]]:
    """The sweep's killed runs, each as ``(k, ws, where)``: ``run(ws, *args, **env)`` died at point *k*, labelled ``where``.

    ``ws`` is a fresh copy of ``template`` (an empty directory when None)
    under ``tmp_path``. The sweep starts at point *start* and ends at the first
    run that completes, which must end near *reference* (see :func:`covered`).
    Given the reference run's ``labels``, *start* is found in each run by label
    (:func:`anchor`) and *k* counts from there, so every run is first killed at
    the same step, whatever shard folders it had to make before it.
    """
    base, first = (anchor(labels, start), labels[start - 1]) if labels is not None and start > 1 else (None, "")
    for k in points(reference, start):
        ws = tmp_path / f"k{k}"
        if template is None:
            ws.mkdir()
        else:
            shutil.copytree(template, ws)
        if base is None:
            where = kill_at(k, tmp_path / "kill.log", run, ws, *args, **env)
        else:
            label, nth, offset = base
            where = kill_past(label, nth, offset + k - start, tmp_path / "kill.log", run, ws, *args, **env)
            assert k > start or (where and where.split(" ", 1)[1] == first), (start, first, where)
        if where is None:
            covered(k, reference)
            return
        yield k, ws, where
