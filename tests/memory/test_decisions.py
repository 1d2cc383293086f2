"""Proposals end to end through the CLI: accept writes exactly the diff, undo
restores exact bytes, staleness is entry-level, rejections are remembered."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cairn.protocol.errors import CairnError, ErrorCode

from tests.journal.helpers import DEMO, cairn, cairn_json

MEM = ".agents/memory"


def _setup(ws: Path, *, agents: bytes = b"# Agents\r\n\r\nBe terse.") -> dict[str, dict]:
    (ws / "AGENTS.md").write_bytes(agents)  # CRLF and no final newline: must survive byte-exactly
    out = cairn_json(ws, "run", str(DEMO))
    return {p["kind"] + ":" + p["target"]: p for p in out["proposals"]}


def _by_kind(props: dict[str, dict], kind: str) -> dict:
    return next(p for k, p in props.items() if k.startswith(kind + ":"))


def _apply_diff_expectation(diff: str) -> list[str]:
    """Lines the diff adds (a line re-emitted only to gain its newline is not new)."""
    plus = [line[1:] for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    minus = {line[1:] for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")}
    return [line for line in plus if line not in minus]


def test_accept_writes_exactly_the_shown_diff_and_undo_restores_bytes(workspace: Path) -> None:
    props = _setup(workspace)
    inst = _by_kind(props, "instruction")
    shown = cairn_json(workspace, "show", inst["id"])
    assert shown["state"] == "pending" and shown["diff"].startswith("--- a/AGENTS.md")
    before = (workspace / "AGENTS.md").read_bytes()
    cairn(workspace, "accept", inst["id"])
    after = (workspace / "AGENTS.md").read_bytes()
    assert after.startswith(before)  # untouched bytes (CRLF, no final newline) kept exactly
    added = after[len(before):].decode()
    for line in _apply_diff_expectation(shown["diff"]):
        assert line in added
    rows = {r["id"]: r for r in cairn_json(workspace, "proposals")}
    assert rows[inst["id"]]["state"] == "applied"
    cairn(workspace, "undo", inst["id"])
    assert (workspace / "AGENTS.md").read_bytes() == before
    rows = {r["id"]: r for r in cairn_json(workspace, "proposals")}
    assert rows[inst["id"]]["state"] == "undone"
    assert cairn(workspace, "doctor").returncode == 0


def test_create_topic_then_undo_removes_it_and_its_entry(workspace: Path) -> None:
    props = _setup(workspace)
    create = _by_kind(props, "create")
    cairn(workspace, "accept", create["id"])
    topic = workspace / create["target"]
    assert topic.exists() and "type:" in topic.read_text()
    index = (workspace / MEM / "MEMORY.md").read_text()
    assert f"]({topic.name})" in index
    assert [r["file"] for r in cairn_json(workspace, "memory")] == [create["target"]]
    cairn(workspace, "undo", create["id"])
    assert not topic.exists()
    assert not (workspace / MEM / "MEMORY.md").exists()  # it did not exist before this proposal


def test_undo_refuses_when_the_file_changed_and_changes_nothing(workspace: Path) -> None:
    props = _setup(workspace)
    create = _by_kind(props, "create")
    cairn(workspace, "accept", create["id"])
    topic = workspace / create["target"]
    topic.write_bytes(topic.read_bytes() + b"my own note\n")
    snapshot = {p: p.read_bytes() for p in (workspace / MEM).iterdir()}
    r = cairn(workspace, "undo", create["id"], check=False)
    assert r.returncode == 2 and "E_TARGET_CHANGED" in r.stderr and "nothing was changed" in r.stderr
    assert {p: p.read_bytes() for p in (workspace / MEM).iterdir()} == snapshot
    assert {r["id"]: r for r in cairn_json(workspace, "proposals")}[create["id"]]["state"] == "applied"


def test_staleness_is_entry_level(workspace: Path) -> None:
    props = _setup(workspace)
    creates = [p for k, p in props.items() if k.startswith("create:")]
    assert len(creates) >= 2
    first, second = creates[0], creates[1]
    cairn(workspace, "accept", first["id"])
    index = workspace / MEM / "MEMORY.md"
    # an unrelated manual edit to the index: a new line and an edited heading
    index.write_text(index.read_text().replace("# Memory", "# Memory (mine)") + "- [Mine](mine.md) - by hand\n")
    rows = {r["id"]: r for r in cairn_json(workspace, "proposals")}
    assert rows[second["id"]]["state"] == "pending"
    cairn(workspace, "accept", second["id"])
    text = index.read_text()
    assert "# Memory (mine)" in text and "- [Mine](mine.md) - by hand" in text
    assert Path(second["target"]).name in text
    # a concurrent edit to an affected entry blocks: undoing the first now conflicts
    name = Path(first["target"]).name
    lines = [line + " (edited)" if f"]({name})" in line else line for line in index.read_text().splitlines()]
    index.write_text("\n".join(lines) + "\n")
    r = cairn(workspace, "undo", first["id"], check=False)
    assert r.returncode == 2 and "E_TARGET_CHANGED" in r.stderr


def test_a_manual_edit_of_the_target_makes_a_proposal_stale(workspace: Path) -> None:
    props = _setup(workspace)
    inst = _by_kind(props, "instruction")
    (workspace / "AGENTS.md").write_bytes(b"# Agents\n\nI rewrote this.\n")
    rows = {r["id"]: r for r in cairn_json(workspace, "proposals")}
    assert rows[inst["id"]]["state"] == "stale" and "AGENTS.md" in rows[inst["id"]]["reason"]
    r = cairn(workspace, "accept", inst["id"], check=False)
    assert r.returncode == 2 and "E_PROPOSAL_STALE" in r.stderr
    assert (workspace / "AGENTS.md").read_bytes() == b"# Agents\n\nI rewrote this.\n"


def test_rejections_are_remembered_by_later_reviews(workspace: Path) -> None:
    props = _setup(workspace)
    create = _by_kind(props, "create")
    cairn(workspace, "reject", create["id"])
    rows = {r["id"]: r for r in cairn_json(workspace, "proposals")}
    assert rows[create["id"]]["state"] == "rejected"
    r = cairn(workspace, "accept", create["id"], check=False)
    assert r.returncode == 2 and "E_PROPOSAL_STATE" in r.stderr
    # the same knowledge arrives again from another session: not proposed again
    other = workspace / "again.jsonl"
    other.write_text(DEMO.read_text().replace("3c9e1f52-7a4b-4d18-b6e0-5f2a9c8d1e73",
                                              "3c9e1f52-7a4b-4d18-b6e0-000000000000"))
    out = cairn_json(workspace, "run", str(other))
    titles = [p["title"] for p in out["proposals"] if p["id"] != create["id"]]
    assert create["title"] not in titles


def test_a_public_decision_record_alone_decides_nothing(workspace: Path) -> None:
    props = _setup(workspace)
    create = _by_kind(props, "create")
    forged = workspace / ".cairn/journal/decisions" / f"{create['id']}-0001.json"
    forged.parent.mkdir(parents=True, exist_ok=True)
    forged.write_text(json.dumps({"record": "decision", "v": 1, "proposal": create["id"], "action": "reject",
                                  "state": "rejected", "decided": 1.0, "accepted": "0" * 64}))
    rows = {r["id"]: r for r in cairn_json(workspace, "proposals")}
    assert rows[create["id"]]["state"] == "pending"
    cairn(workspace, "accept", create["id"])
    assert (workspace / create["target"]).exists()


@pytest.mark.parametrize("attack", ["symlinked-root", "non-directory-parent"])
def test_targets_through_symlinks_or_files_fail_closed(workspace: Path, tmp_path: Path, attack: str) -> None:
    props = _setup(workspace)
    create = _by_kind(props, "create")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    mem = workspace / ".agents" / "memory"
    if mem.exists():
        for p in mem.iterdir():
            p.unlink()
        mem.rmdir()
    mem.parent.mkdir(parents=True, exist_ok=True)
    if attack == "symlinked-root":
        os.symlink(elsewhere, mem)
        code = "E_PATH_SYMLINK"
    else:
        mem.write_text("not a directory")
        code = "E_PATH_NOT_DIRECTORY"
    r = cairn(workspace, "accept", create["id"], check=False)
    assert r.returncode == 2 and code in r.stderr, r.stderr
    assert list(elsewhere.iterdir()) == []


def test_paths_outside_roots_are_refused(workspace: Path) -> None:
    from cairn.protocol.errors import CairnError, ErrorCode
    from cairn.protocol.settings import Settings
    from cairn.worker.memory.store import MemoryStore

    with MemoryStore(str(workspace)) as ms:
        for bad in ("../escape.md", ".agents/memory/../../x.md", "/etc/passwd", "src/app.py", ".agents/memory/a/b.md"):
            with pytest.raises(CairnError) as ei:
                ms.check_target(bad)
            assert ei.value.code is ErrorCode.TARGET_OUTSIDE_ROOTS
        assert ms.check_target(".agents/memory/x.md")[1] == ".agents/memory/x.md"
        assert ms.check_target("AGENTS.md")[1] == "AGENTS.md"
    # settings that name git's or cairn's own files (however they were built) do not make them targets
    reserved = Settings(instructionFiles=(".git/config", ".cairn/config.toml"), memoryRoots=(".cairn/journal",))
    with MemoryStore(str(workspace), reserved) as ms:
        for bad in (".git/config", ".cairn/config.toml", ".cairn/journal/x.md"):
            with pytest.raises(CairnError) as ei:
                ms.check_target(bad)
            assert ei.value.code is ErrorCode.TARGET_OUTSIDE_ROOTS


def test_a_shipped_agents_symlink_does_not_read_another_projects_memory(workspace: Path, tmp_path: Path) -> None:
    other = tmp_path / "other-project/.agents/memory"
    other.mkdir(parents=True)
    (other / "private.md").write_text("---\nname: private\ndescription: another project's\ntype: project\n---\nbody\n")
    (workspace / ".agents").symlink_to(other.parent)  # git checks out symlinks, absolute ones too
    r = cairn(workspace, "memory", check=False)
    assert "E_PATH_SYMLINK" in r.stderr and "private" not in r.stdout
    r = cairn(workspace, "run", str(DEMO), check=False)
    assert "E_PATH_SYMLINK" in r.stdout + r.stderr and "private" not in r.stdout
    assert sorted(os.listdir(other)) == ["private.md"]


def test_a_workspace_file_cannot_make_git_config_an_instruction_file(workspace: Path) -> None:
    """``.git/config`` names programs git runs (core.fsmonitor, aliases): memory never writes it."""
    (workspace / ".git").mkdir()
    (workspace / ".git/config").write_text("[core]\n\tbare = false\n")
    (workspace / ".cairn").mkdir()
    (workspace / ".cairn/config.toml").write_text('mode = "auto"\ninstruction_files = [".git/config", "AGENTS.md"]\n')
    r = cairn(workspace, "run", str(DEMO), check=False)
    assert "E_CONFIG_INVALID" in r.stderr and ".git/config" in r.stderr
    assert (workspace / ".git/config").read_text() == "[core]\n\tbare = false\n"
    assert all(not p["target"].startswith(".git") for p in cairn_json(workspace, "proposals"))


def test_user_preferences_go_to_a_configured_global_root(workspace: Path, tmp_path: Path,
                                                         user_config_home: Path) -> None:
    home = tmp_path / "home-memory"  # a root outside the workspace, shared by every project
    (user_config_home / "cairn").mkdir()  # the user's own choice (a workspace file needs `cairn trust` for it)
    (user_config_home / "cairn/config.toml").write_text(f'memory_roots = ["{home}"]\n')
    out = cairn_json(workspace, "run", str(DEMO))
    user = next(p for p in out["proposals"] if p["kind"] == "create" and p["target"].startswith(str(home)))
    assert "emojis" in user["title"]
    assert all(not p["target"].startswith(str(home)) for p in out["proposals"] if p is not user)
    cairn(workspace, "accept", user["id"])
    topic = Path(user["target"])
    assert topic.parent == home and "type: user" in topic.read_text()
    assert f"]({topic.name})" in (home / "MEMORY.md").read_text()
    # its coordination lives with the root, so two workspaces sharing it share ownership
    assert (home / ".cairn/state/memory-write/claims").is_dir()
    assert not list((home / ".cairn/state/memory-write/markers").iterdir())
    assert any(r["file"] == str(topic) for r in cairn_json(workspace, "memory"))
    cairn(workspace, "undo", user["id"])
    assert not topic.exists() and not (home / "MEMORY.md").exists()  # absent before, absent again


def test_an_untrusted_workspace_file_cannot_send_auto_reviews_outside_the_workspace(workspace: Path,
                                                                                    tmp_path: Path) -> None:
    outside = tmp_path / "someone-elses-project"  # any folder of the user's: another project, ~/.ssh...
    (workspace / ".cairn").mkdir()
    (workspace / ".cairn/config.toml").write_text(f'mode = "auto"\nmemory_roots = ["{outside}"]\n')
    r = cairn(workspace, "run", str(DEMO), check=False)
    assert "E_WORKSPACE_UNTRUSTED" in r.stderr and "memory_roots" in r.stderr
    assert not outside.exists()
    assert all(not p["target"].startswith(str(outside)) for p in cairn_json(workspace, "proposals"))
    cairn(workspace, "trust")  # the user's decision: now the file's root is taken
    r = cairn(workspace, "review", check=False)
    assert "E_WORKSPACE_UNTRUSTED" not in r.stderr


@pytest.mark.parametrize("own_file", [False, True])
def test_undo_of_the_first_proposal_restores_absence_exactly(workspace: Path, own_file: bool) -> None:
    props = _setup(workspace)
    assert not (workspace / ".agents").exists()
    create = _by_kind(props, "create")
    shown = cairn_json(workspace, "show", create["id"])["diff"]
    assert f"--- /dev/null\n+++ b/{MEM}/MEMORY.md\n" in shown and f"--- a/{MEM}/MEMORY.md" not in shown
    assert f"--- /dev/null\n+++ b/{create['target']}\n" in shown
    cairn(workspace, "accept", create["id"])
    assert (workspace / MEM / "MEMORY.md").exists()
    if own_file:  # something of the user's own in the created folder keeps it (and only it)
        (workspace / MEM / "notes.txt").write_text("mine\n")
    cairn(workspace, "undo", create["id"])
    if own_file:
        assert sorted(p.name for p in (workspace / MEM).iterdir()) == ["notes.txt"]
    else:
        assert not (workspace / ".agents").exists()  # no MEMORY.md, no empty folders
    undone = cairn_json(workspace, "show", create["id"])
    assert undone["state"] == "undone"
    assert f"--- a/{MEM}/MEMORY.md\n+++ /dev/null\n" in undone["diff"]
    assert f"--- a/{create['target']}\n+++ /dev/null\n" in undone["diff"]
    assert cairn(workspace, "doctor").returncode == 0


class _HeldTarget:
    """A target claim store whose claim another live decision holds for ``busy`` more tries."""

    host = "this-host"

    def __init__(self, busy: int, pid: int) -> None:
        self.busy, self.pid, self.tries = busy, pid, 0

    def elect(self, scope: str, **_: object) -> str:
        self.tries += 1
        if self.tries <= self.busy:
            raise CairnError(ErrorCode.CLAIM_BUSY, f"{scope}: generation 2 is held until its deadline",
                             generation=2, pid=self.pid, host=self.host)
        return "claim"


def test_a_decision_waits_its_turn_behind_another_on_the_same_memory() -> None:
    """Eight `cairn accept` at once: several failed after a moment with 'target: generation 2 is held until
    its deadline'. A decision waits for a live holder (each holds for one decision), on the clock given."""
    from cairn.worker.memory import apply

    now = [0.0]

    def sleep(s: float) -> None:
        now[0] += s

    held = _HeldTarget(busy=50, pid=os.getpid())  # a live holder for one second
    got: object = apply._elect_target(held, "accept:p1", None, clock=lambda: now[0], sleep=sleep)  # type: ignore[arg-type]
    assert got == "claim"
    held = _HeldTarget(busy=10_000, pid=os.getpid())  # stuck: refused in words after the wait
    with pytest.raises(CairnError) as exc:
        apply._elect_target(held, "accept:p1", None, clock=lambda: now[0], sleep=sleep)  # type: ignore[arg-type]
    assert exc.value.code == ErrorCode.CLAIM_BUSY and "another cairn command is writing this memory" in exc.value.message
    gone = _HeldTarget(busy=10_000, pid=2 ** 22 + 12345)  # a pid no process has: not waited for
    start = now[0]
    with pytest.raises(CairnError):
        apply._elect_target(gone, "accept:p1", None, clock=lambda: now[0], sleep=sleep)  # type: ignore[arg-type]
    assert now[0] == start and gone.tries == 1


def test_accepts_of_several_proposals_at_once_all_apply(workspace: Path) -> None:
    """Real processes: four `cairn accept` of four proposals on one memory, at once."""
    import subprocess

    from tests.support import PYTHON, child_env

    for text in ("The API is written in Go", "Deploys run on Fridays only", "The staging host is stg1.example.org",
                 "Use pnpm to install dependencies"):
        cairn(workspace, "remember", text)
    ids = [p["id"] for p in cairn_json(workspace, "proposals") if p["state"] == "pending"]
    assert len(ids) == 4
    procs = [subprocess.Popen([PYTHON, "-m", "cairn.server", "accept", pid, "-w", str(workspace)], env=child_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for pid in ids]
    runs = [(p.wait(timeout=120), p.communicate()[1]) for p in procs]
    assert [code for code, _ in runs] == [0] * 4, runs
    assert {p["state"] for p in cairn_json(workspace, "proposals")} == {"applied"}
