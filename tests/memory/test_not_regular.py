"""A FIFO, a directory or a ``/dev/null`` symlink where a memory file belongs.

Opening a FIFO for reading blocks until a writer appears, so a FIFO planted
at ``MEMORY.md`` or at a topic path used to hang every command that reads
memory. Every read now opens without blocking and refuses anything that is not
a regular file with a fixed code (``E_PATH_NOT_REGULAR``; a symlink is
``E_PATH_SYMLINK``), promptly, and nothing changes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.journal.helpers import DEMO, cairn, cairn_json
from tests.support import child_env
from tests.support.warm import run_python

MEM = ".agents/memory"
CODES = {"fifo": "E_PATH_NOT_REGULAR", "directory": "E_PATH_NOT_REGULAR", "devnull": "E_PATH_SYMLINK"}


def _plant(path: Path, thing: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        path.unlink()
    if thing == "fifo":
        os.mkfifo(path)
    elif thing == "directory":
        path.mkdir()
    else:
        os.symlink("/dev/null", path)


def _quick(ws: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """A command that must return promptly (a hang fails the test instead of stalling it)."""
    return run_python(["-m", "cairn.server", *argv, "-w", str(ws)], env=child_env(), timeout=60)


def _visible(ws: Path) -> dict[str, bytes | str]:
    """Every memory and instruction file (not cairn's records): regular bytes, or the kind of node."""
    out: dict[str, bytes | str] = {}
    for p in sorted(ws.rglob("*")):
        rel = str(p.relative_to(ws))
        if rel.startswith(".cairn"):
            continue
        if p.is_symlink():
            out[rel] = f"-> {os.readlink(p)}"
        elif p.is_fifo():
            out[rel] = "fifo"
        elif p.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = p.read_bytes()
    return out


@pytest.mark.parametrize("thing", ["fifo", "directory", "devnull"])
@pytest.mark.parametrize("where", ["index", "topic"])
def test_decisions_and_views_refuse_a_non_regular_file_promptly(workspace: Path, where: str, thing: str) -> None:
    (workspace / "AGENTS.md").write_bytes(b"# Agents\n\nBe terse.\n")
    out = cairn_json(workspace, "run", str(DEMO))
    create = next(p for p in out["proposals"] if p["kind"] == "create")
    _plant(workspace / (f"{MEM}/MEMORY.md" if where == "index" else create["target"]), thing)
    before = _visible(workspace)
    code = CODES[thing]

    r = _quick(workspace, "accept", create["id"])
    assert r.returncode == 2 and code in r.stderr, r.stderr
    assert "Traceback" not in r.stderr

    r = _quick(workspace, "proposals", "--json")
    assert r.returncode == 0, r.stderr
    row = {x["id"]: x for x in json.loads(r.stdout)}[create["id"]]
    assert row["state"] == "stale" and code in row["reason"], row

    r = _quick(workspace, "show", create["id"], "--json")
    if r.returncode == 0:  # shown as stale with the reason, or refused outright: either names the code
        shown = json.loads(r.stdout)
        assert shown["state"] == "stale" and code in shown["reason"], shown
    else:
        assert r.returncode == 2 and code in r.stderr, r.stderr

    assert _visible(workspace) == before


@pytest.mark.parametrize("thing", ["fifo", "directory", "devnull"])
@pytest.mark.parametrize("where", ["index", "topic"])
def test_review_refuses_or_skips_a_non_regular_file_promptly(tmp_path: Path, where: str, thing: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").write_bytes(b"# Agents\n\nBe terse.\n")
    # the file names this workload's review would create, learned from an untouched copy
    ref = tmp_path / "ref"
    cairn(ws, "import", str(DEMO))
    cairn(ws, "seal")
    cairn(ws, "process")
    shutil.copytree(ws, ref)
    created = [p["target"] for p in cairn_json(ref, "run", str(DEMO))["proposals"] if p["kind"] == "create"]
    _plant(ws / (f"{MEM}/MEMORY.md" if where == "index" else created[0]), thing)
    before = _visible(ws)

    r = _quick(ws, "review", "--json")
    if where == "index":  # the index cannot be read: the review refuses, naming the code
        assert r.returncode == 2 and CODES[thing] in r.stderr, r.stderr
    else:  # an unreadable topic is left alone: nothing is proposed for its name
        assert r.returncode == 0, r.stderr
        targets = [p["target"] for p in cairn_json(ws, "proposals")]
        assert created[0] not in targets
    assert "Traceback" not in r.stderr
    assert _visible(ws) == before


def test_a_topic_whose_name_cairn_does_not_read_is_said_so_not_called_too_large(workspace: Path) -> None:
    """``my notes.md`` (a space) or a name with a control character is never read: ``cairn memory`` says what
    is wrong with the name and what to do, not "too large or unreadable" (neither was true)."""
    root = workspace / ".agents" / "memory"
    root.mkdir(parents=True)
    (root / "my notes.md").write_text("---\nname: x\ndescription: y\ntype: project\n---\n\n- body\n")
    r = cairn(workspace, "memory")
    assert r.returncode == 0, r.stderr
    assert "my notes.md  E_PATH_INVALID_NAME: a name cairn does not read" in r.stdout and "rename" in r.stdout
    assert "too large" not in r.stdout
