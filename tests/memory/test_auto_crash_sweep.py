"""Kill an ``auto``-mode general review anywhere from its acceptance to the end of its applications.

Then run what a user or the server runs next (an explicit review, a drain,
the server's idle review), past the held claims' deadlines. Every proposal
is applied exactly once: the memory and instruction files are byte-identical
to an uninterrupted run's, none is left pending and no promise is left
behind, each proposal has one decision (private and public), no marker or
temp remains and `cairn doctor` is clean.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import sweep
from tests.memory.converge import assert_rerun_converges, digested_template
from tests.support import child_env
from tests.support.warm import run_python

pytestmark = pytest.mark.slow  # a crash sweep or race: sampled by default, see tests/sweep.py

M = ".cairn/state/memory"
_IDLE = ("import sys; from cairn.protocol.worker import WorkerRequest; from cairn.server.cli.support import "
         "load_config; from cairn.worker.entry import run_request; ws = sys.argv[1]; "
         "r = run_request(WorkerRequest(job='review', workspace=ws, args={'automatic': True}, config=load_config(ws))); "
         "sys.exit(0 if r.status == 'ok' else 1)")


def _cli(*argv: str) -> sweep.Run:
    def run(ws: Path, **env: str) -> subprocess.CompletedProcess[str]:
        return run_python([*argv, str(ws)], env=child_env(**env), timeout=120)
    return run


_review = _cli("-m", "cairn.server", "review", "-w")
NEXT = {"review": _review, "drain": _cli("-m", "cairn.server", "drain", "-w"), "idle": _cli("-c", _IDLE)}


def _files(ws: Path) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {"AGENTS.md": (ws / "AGENTS.md").read_bytes()}
    mem = ws / ".agents/memory"
    if mem.exists():
        out.update({f".agents/memory/{p.name}": p.read_bytes() for p in sorted(mem.iterdir())
                    if not p.name.startswith(".tmp-")})
    return out


def _names(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if not p.name.startswith(".tmp-")) if d.exists() else []


def _applied_once(ws: Path) -> None:
    """Every proposal decided once (applied), with its one public record; no promise left."""
    import cairn.worker.memory.apply as apply
    from cairn.protocol.settings import Settings
    from cairn.worker.memory.store import MemoryStore

    with MemoryStore(str(ws), Settings(mode="auto")) as ms:
        pids = apply.proposal_ids(ms)
        assert pids and {pid: [str(d.state) for d in apply.decisions(ms, pid)] for pid in pids} == \
            {pid: ["applied"] for pid in pids}
    assert _names(ws / ".cairn/journal/decisions") == sorted(f"{pid}-0001.json" for pid in pids)
    assert _names(ws / f"{M}/auto") == []


def test_killing_an_auto_review_before_it_applied_everything_converges(tmp_path: Path) -> None:
    template = digested_template(tmp_path / "template", auto=True)
    initial = _files(template)
    ref = tmp_path / "ref"
    shutil.copytree(template, ref)
    log = tmp_path / "points.log"
    assert _review(ref, CAIRN_CRASH_LOG=str(log)).returncode == 0
    final = _files(ref)
    _applied_once(ref)
    assert final != initial and len(final) > len(initial)  # it created topics and edited AGENTS.md
    labels = [line.split(" ", 1)[1] for line in log.read_text().splitlines()]
    first_proposal = next(i for i, lb in enumerate(labels) if re.fullmatch(r"link p[0-9a-f]{12}", lb))
    # the review's acceptance: the last outcome before its proposals are published (die just before it)
    start = max(i for i, lb in enumerate(labels[:first_proposal]) if re.fullmatch(r"link \d+\.outcome", lb)) + 1
    kinds = list(NEXT)
    runs = 0
    for k, ws, where in sweep.killed_runs(len(labels), tmp_path, template, _review, start=start,
                                          labels=labels):
        kind = kinds[runs % len(kinds)]
        runs += 1
        assert_rerun_converges(ws, NEXT[kind], _files, final, k, f"{where}, then {kind}", also=_applied_once)
    assert runs > 10
