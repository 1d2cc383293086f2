"""Private state is only state this user's cairn created (ADR 0011, ``state/stateroot.py``).

A repository can ship ``.cairn/state``; a clone recreates it with the cloner's
umask. Its forged proposals must never show as pending nor be accepted; an
earlier version's own folder (0700, no marker) keeps working and is adopted.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.state.fsdir import PinnedDir

from tests.journal.helpers import DEMO, cairn, cairn_json
from tests.support.shipped import clone_like

STATE = Path(".cairn/state")
MARKER, GITIGNORE = "owner", ".gitignore"  # what cairn writes into a state folder it creates


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, str]]]:
    """A workspace with pending proposals (the repository whose state is shipped)."""
    ws = tmp_path_factory.mktemp("source")
    (ws / "AGENTS.md").write_text("# Agents\n")
    proposals = cairn_json(ws, "run", str(DEMO))["proposals"]
    assert proposals
    return ws, proposals


def _git(ws: Path, *argv: str) -> None:
    subprocess.run(["git", "-C", str(ws), *argv], check=True, capture_output=True, timeout=60)


def _files(ws: Path) -> set[str]:
    return {str(p.relative_to(ws)) for p in (ws / STATE).rglob("*")}


def test_a_cloned_state_folder_is_refused_and_lists_nothing(source: tuple[Path, list[dict[str, str]]],
                                                            tmp_path: Path) -> None:
    src, proposals = source
    ws = clone_like(src, tmp_path / "clone")  # 0755 folders, 0644 files, marker included
    before = _files(ws)
    r = cairn(ws, "proposals", check=False)
    assert r.returncode == 2 and r.stderr.startswith("cairn: E_STATE_FOREIGN: "), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert "mode 0755" in r.stderr and "move it aside" in r.stderr.lower()
    assert not any(p["id"] in r.stdout for p in proposals)
    create = next(p for p in proposals if p["kind"] == "create")
    r = cairn(ws, "accept", create["id"], check=False)
    assert r.returncode == 2 and "E_STATE_FOREIGN" in r.stderr
    assert not (ws / create["target"]).exists()
    assert not list(ws.glob(".cairn/journal/decisions/*"))
    r = cairn(ws, "watch", "--once", check=False)
    assert r.returncode == 2 and r.stderr.startswith("cairn: E_STATE_FOREIGN: "), r.stderr
    doc = cairn(ws, "doctor", "--json", check=False)
    assert doc.returncode == 1
    violations = json.loads(doc.stdout)["violations"]
    assert [v["code"] for v in violations] == ["E_STATE_FOREIGN"]
    assert _files(ws) == before  # nothing deleted, nothing added (no marker written into it)
    assert stat.S_IMODE(os.stat(ws / STATE).st_mode) == 0o755
    (ws / STATE).rename(ws / ".cairn/state.foreign")  # what the message says to do
    assert cairn_json(ws, "proposals") == []
    assert len(_files(ws)) == 0 and (ws / ".cairn/state.foreign" / MARKER).exists()  # kept aside, untouched


def test_a_group_readable_state_folder_is_refused_in_process(tmp_path: Path) -> None:
    (tmp_path / ".cairn/state/memory").mkdir(parents=True)
    os.chmod(tmp_path / ".cairn/state", 0o750)
    with PinnedDir.open_root(tmp_path) as root, pytest.raises(CairnError) as info:
        root.descend(".cairn/state/memory")
    assert info.value.code is ErrorCode.STATE_FOREIGN
    with PinnedDir.open_root(tmp_path) as root, pytest.raises(CairnError) as info:
        root.descend(".cairn").child("state")
    assert info.value.code is ErrorCode.STATE_FOREIGN


def test_a_clone_under_a_private_umask_is_refused_when_git_tracks_it(
        source: tuple[Path, list[dict[str, str]]], tmp_path: Path) -> None:
    src, proposals = source
    ws = clone_like(src, tmp_path / "clone", dirs=0o700, files=0o600)  # umask 077: mode alone passes
    _git(ws, "init", "-q")
    _git(ws, "add", "-f", ".cairn/state")
    r = cairn(ws, "proposals", check=False)
    assert r.returncode == 2 and "E_STATE_FOREIGN" in r.stderr and "git" in r.stderr
    assert not any(p["id"] in r.stdout for p in proposals)


def test_an_earlier_versions_state_folder_is_adopted(source: tuple[Path, list[dict[str, str]]],
                                                     tmp_path: Path) -> None:
    src, proposals = source
    ws = clone_like(src, tmp_path / "old", dirs=0o700, files=0o600)  # a copy is how an earlier version left it
    (ws / STATE / MARKER).unlink(missing_ok=True)
    (ws / STATE / GITIGNORE).unlink(missing_ok=True)
    rows = cairn_json(ws, "proposals")
    assert {p["id"] for p in proposals} <= {r["id"] for r in rows}
    marker = ws / STATE / MARKER
    assert stat.S_IMODE(marker.stat().st_mode) == 0o600
    assert json.loads(marker.read_text())["ino"] == (ws / STATE).stat().st_ino
    assert (ws / STATE / GITIGNORE).exists()
    assert cairn(ws, "doctor", check=False).returncode == 0


def test_new_state_is_marked_and_kept_out_of_git(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    _git(ws, "init", "-q")
    (ws / "AGENTS.md").write_text("# Agents\n")
    cairn(ws, "run", str(DEMO))
    assert stat.S_IMODE((ws / STATE).stat().st_mode) == 0o700
    assert json.loads((ws / STATE / MARKER).read_text())["ino"] == (ws / STATE).stat().st_ino
    status = subprocess.run(["git", "-C", str(ws), "status", "--porcelain", "--untracked-files=all"],
                            capture_output=True, text=True, check=True, timeout=60).stdout
    assert ".cairn/state" not in status and ".cairn/journal" in status
    _git(ws, "add", "-f", ".cairn/state/owner")
    doc = json.loads(cairn(ws, "doctor", "--json", check=False).stdout)
    assert [v["code"] for v in doc["violations"]] == ["V_STATE_TRACKED"]


@pytest.mark.skipif(os.geteuid() != 0, reason="ownership by another uid needs root")
def test_root_owned_state_works_as_root_and_another_users_is_refused(
        source: tuple[Path, list[dict[str, str]]], tmp_path: Path) -> None:
    src, proposals = source
    ws = clone_like(src, tmp_path / "mine", dirs=0o700, files=0o600)
    (ws / STATE / MARKER).unlink(missing_ok=True)
    assert (ws / STATE).stat().st_uid == 0
    assert {p["id"] for p in proposals} <= {r["id"] for r in cairn_json(ws, "proposals")}
    theirs = clone_like(src, tmp_path / "theirs", dirs=0o700, files=0o600)
    os.chown(theirs / STATE, 4242, 4242)
    r = cairn(theirs, "proposals", check=False)
    assert r.returncode == 2 and "E_STATE_FOREIGN" in r.stderr and "uid 4242" in r.stderr


@pytest.mark.xfail(strict=True, reason="known gap: git is asked only when a folder is adopted, so files a pull "
                   "checks out into an already marked state folder are read as this user's (see ADR 0011)")
def test_forged_state_files_a_pull_checks_out_into_own_state_are_not_read(
        source: tuple[Path, list[dict[str, str]]], tmp_path: Path) -> None:
    src, proposals = source
    ident = ("-c", "user.name=cairn-test", "-c", "user.email=test@example.invalid")
    theirs = tmp_path / "theirs"  # a branch that committed another workspace's private state
    theirs.mkdir()
    shutil.copytree(src / STATE / "memory", theirs / STATE / "memory")
    _git(theirs, "init", "-q", "-b", "main")
    _git(theirs, "add", "-f", ".")
    _git(theirs, *ident, "commit", "-qm", "theirs")
    ws = tmp_path / "mine"
    ws.mkdir()
    (ws / "README.md").write_text("# Mine\n")
    _git(ws, "init", "-q", "-b", "main")
    _git(ws, "add", ".")
    _git(ws, *ident, "commit", "-qm", "mine")
    with PinnedDir.open_root(ws) as root:
        root.descend(".cairn/state/usage", create=True).close()  # this user's own state, marked
    assert cairn_json(ws, "proposals") == []
    _git(ws, *ident, "pull", "-q", "--no-rebase", "--allow-unrelated-histories", str(theirs), "main")
    assert (ws / STATE / MARKER).exists() and any((ws / STATE / "memory").iterdir())
    r = cairn(ws, "proposals", "--json", check=False)
    assert not any(p["id"] in r.stdout for p in proposals), "forged proposals listed as pending"
