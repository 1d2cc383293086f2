"""Ctrl-C during `cairn run`'s seal, digest or review stage: the stage lines earned, then where it stopped.

It exited 130 with no output at all: the import line already earned was lost and nothing said what to
run to go on. Each case is a real `cairn` process that gets a real SIGINT at the start of one stage (a
stage function wrapped to signal its own process first: the signal lands where a user's Ctrl-C would).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.journal.helpers import DEMO, cairn
from tests.support import PYTHON, REPO, child_env

#: the stage to interrupt -> the name in cairn.server.cli.run to wrap, and whether it is a job call (`run_result`)
_AT = {"seal": "run_result", "digest": "process_workspace", "review": "_review"}

_SCRIPT = """
import os, signal, sys
from cairn.server.cli import app, run as R
stage, name, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
real = getattr(R, name)
def interrupted(*a, **kw):
    if stage != "seal" or a[1] == "seal":  # run_result(ns, job, ...): only the seal job
        os.kill(os.getpid(), signal.SIGINT)
    return real(*a, **kw)
setattr(R, name, interrupted)
sys.exit(app.main(argv))
"""


def _run(stage: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYTHON, "-c", _SCRIPT, stage, _AT[stage], "run", *argv], cwd=REPO, env=child_env(),
                          capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize(("stage", "lines", "go_on"), [
    ("seal", 1, "cairn run {demo} -w {ws}"),
    ("digest", 2, "cairn process -w {ws} && cairn review -w {ws}"),
    ("review", 3, "cairn review -w {ws}"),
])
def test_ctrl_c_prints_the_stages_done_and_what_goes_on(workspace: Path, stage: str, lines: int, go_on: str) -> None:
    r = _run(stage, str(DEMO), "-w", str(workspace))
    assert r.returncode == 130, r.stderr
    out = r.stdout.splitlines()
    assert len(out) == lines, r.stdout
    assert out[0] == "imported 10 new turn(s) from 1 session(s) in 1 file(s) (claude-code), 0 already captured"
    if lines > 1:
        assert out[1] == "sealed 1 capture(s)"
    if lines > 2:
        assert out[2].startswith("digests: published 1, ")
    word = {"seal": "sealing", "digest": "digesting", "review": "reviewing"}[stage]
    assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"cairn: interrupted while {word}; "), r.stderr
    assert r.stderr.rstrip().endswith("Go on with: " + go_on.format(demo=DEMO, ws=workspace)), r.stderr
    assert "Traceback" not in r.stderr

    # what it says to run goes on from there: the capture is digested and reviewed, nothing twice
    if stage == "seal":
        cairn(workspace, "run", str(DEMO))
    elif stage == "digest":
        cairn(workspace, "process")
        cairn(workspace, "review")
    else:
        cairn(workspace, "review")
    journal = json.loads(cairn(workspace, "journal", "--json").stdout)
    assert len(journal) == 1
    assert [p for p in json.loads(cairn(workspace, "proposals", "--json").stdout) if p["state"] == "pending"]


def test_ctrl_c_with_json_prints_the_stages_done_and_the_stage(workspace: Path) -> None:
    r = _run("digest", str(DEMO), "-w", str(workspace), "--json")
    assert r.returncode == 130, r.stderr
    out = json.loads(r.stdout)
    assert out["interrupted"] == "digest" and out["import"]["captured"] == 10 and len(out["sealed"]) == 1
    assert "process" not in out
