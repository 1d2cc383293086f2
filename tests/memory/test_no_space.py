"""A full disk during a decision: reported as ``E_NO_SPACE``, nothing half-done, nothing left busy.

Every mutating step of an accept is made to fail once with ``ENOSPC``
(:mod:`state.crash` fault injection). Each failed attempt reports
``E_NO_SPACE`` naming ``ENOSPC`` (never ``E_PROPOSAL_STALE``), leaves every
memory and instruction file at its before-state (or, when only a bookkeeping
step after the decision failed, at its after-state), leaves no temp beside
them, and an immediate retry -- no waiting for a claim deadline -- succeeds
and ends exactly like an uninterrupted accept. The steps after the decision
(the marker's retirement, the public decision record) are reported like any
other: only removing a temp after its link may fail unreported (cleanup
collects the temp).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cairn.protocol.worker import WorkerRequest
from cairn.state import crash
from cairn.state.doctor import check_workspace
from cairn.state.fsdir import PinnedDir
from cairn.worker.entry import run_request

from tests.journal.helpers import DEMO, cairn_json

MEM = ".agents/memory"


def _files(ws: Path) -> dict[str, bytes]:
    out = {"AGENTS.md": (ws / "AGENTS.md").read_bytes()}
    if (ws / MEM).exists():
        out.update({f"{MEM}/{p.name}": p.read_bytes() for p in sorted((ws / MEM).iterdir())})
    return out


def _accept(ws: Path, pid: str, *, fault_at: int = 0, log: Path | None = None) -> tuple[str, str, str]:
    crash.reset_for_tests(log_path=str(log) if log else None, fault_at=fault_at)
    try:
        resp = run_request(WorkerRequest(job="accept", workspace=str(ws), args={"ids": [pid]}))
    finally:
        crash.reset_for_tests()
    return resp.status, resp.error or "", resp.message or ""


@pytest.fixture
def template(tmp_path: Path) -> tuple[Path, str]:
    ws = tmp_path / "template"
    ws.mkdir()
    (ws / "AGENTS.md").write_bytes(b"# Agents\n\nBe terse.\n")
    out = cairn_json(ws, "run", str(DEMO))
    create = next(p for p in out["proposals"] if p["kind"] == "create")
    return ws, create["id"]


def test_no_space_at_every_step_of_an_accept(template: tuple[Path, str], tmp_path: Path) -> None:
    tpl, pid = template
    before = _files(tpl)
    ref = tmp_path / "ref"
    shutil.copytree(tpl, ref)
    log = tmp_path / "points.log"
    assert _accept(ref, pid, log=log)[0] == "ok"
    after = _files(ref)
    points = len(log.read_text().splitlines())
    assert points > 10
    failures = 0
    for k in range(1, points + 1):
        ws = tmp_path / f"k{k}"
        shutil.copytree(tpl, ws)
        hit_log = tmp_path / f"k{k}.log"
        status, code, message = _accept(ws, pid, fault_at=k, log=hit_log)
        steps = hit_log.read_text().splitlines()  # this run's own steps (their count can vary between runs)
        hit = steps[k - 1].split(" ", 1)[1] if len(steps) >= k else "none: the run ended before step k"
        assert status != "ok" or hit == "unlink-temp" or len(steps) < k, (k, hit, "a failed step was swallowed")
        if status != "ok":
            failures += 1
            assert (status, code) == ("failed", "E_NO_SPACE"), (k, status, code, message)
            assert "ENOSPC" in message, (k, message)
        assert _files(ws) in (before, after), k
        if _files(ws) == before:  # rolled back: the folders the write created are gone again too
            assert not (ws / ".agents").exists(), k
        assert not list((ws / MEM).glob(".tmp-*")) if (ws / MEM).exists() else True, k
        retry = _accept(ws, pid)  # at once: the failed attempt left no claim busy
        assert retry[0] == "ok", (k, retry)
        assert _files(ws) == after, k
        with PinnedDir.open_root(ws) as root:
            assert check_workspace(root).violations == (), k
        shutil.rmtree(ws)
    assert failures > points // 2  # most steps are on the reported path, not best-effort bookkeeping
