"""Deciding several proposals at once, rules accepted in a row, undo naming what blocks it, remember --file.

Each test runs `cairn` as its own process on real files and asserts what the person sees: the lines on
stdout and stderr, the exit status, the bytes of `AGENTS.md`.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.journal.helpers import cairn, cairn_json
from tests.support import PYTHON, REPO, child_env

RULES = ("Never force push to shared branches", "Never commit secrets to the repository")
ORIGINAL = b"# Project\n\nSome words.\n"


def _two_rules(ws: Path) -> tuple[str, str]:
    """Two remembered rules, each proposed for AGENTS.md against the same bytes: (first, second)."""
    (ws / "AGENTS.md").write_bytes(ORIGINAL)
    ids = []
    for rule in RULES:
        [p] = cairn_json(ws, "remember", rule)["proposals"]
        assert p["kind"] == "instruction" and p["target"] == "AGENTS.md" and p["state"] == "pending"
        ids.append(p["id"])
    return ids[0], ids[1]


def _states(ws: Path) -> dict[str, str]:
    return {r["id"]: r["state"] for r in cairn_json(ws, "proposals")}


def test_accepting_two_rules_at_once_applies_both_and_reports_each(workspace: Path) -> None:
    a, b = _two_rules(workspace)
    r = cairn(workspace, "accept", a, b, check=False)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"{a}: applied"
    assert lines[1].startswith(f"{b}: applied (re-derived against AGENTS.md as {a} left it")
    assert r.stderr == ""
    text = (workspace / "AGENTS.md").read_text()
    assert text.startswith(ORIGINAL.decode()) and all(text.count(f"- {rule}") == 1 for rule in RULES)
    assert _states(workspace) == {a: "applied", b: "applied"}
    # what was written is what `show` says: the second rule added to the file the first one left
    shown = cairn(workspace, "show", b).stdout
    assert f"+- {RULES[1]}" in shown and f" - {RULES[0]}" in shown


def test_accepting_rules_one_after_the_other_just_works(workspace: Path) -> None:
    a, b = _two_rules(workspace)
    cairn(workspace, "accept", a)
    # not stale: only cairn changed the file since, and the second rule still adds to it
    assert _states(workspace)[b] == "pending"
    shown = cairn(workspace, "show", b).stdout
    assert f"+- {RULES[1]}" in shown and f" - {RULES[0]}" in shown  # against the file as it is now
    r = cairn(workspace, "accept", b)
    assert r.stdout.startswith(f"{b}: applied (re-derived")
    text = (workspace / "AGENTS.md").read_text()
    assert all(text.count(f"- {rule}") == 1 for rule in RULES)
    # undone in any order given, the latest first: the file is back to its bytes
    r = cairn(workspace, "undo", a, b, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [f"{b}: undone", f"{a}: undone"]
    assert (workspace / "AGENTS.md").read_bytes() == ORIGINAL
    # accepted again after the undo: the checked accept, against the file as it is
    cairn(workspace, "accept", b, a)
    text = (workspace / "AGENTS.md").read_text()
    assert all(text.count(f"- {rule}") == 1 for rule in RULES)


def test_a_half_failed_accept_reports_what_was_applied_and_what_was_not(workspace: Path) -> None:
    a, b = _two_rules(workspace)
    [topic] = cairn_json(workspace, "remember", "--type", "project", "The billing service is written in Rust")[
        "proposals"]
    # the person edits AGENTS.md by hand: both rule proposals are stale (their edit is never overwritten)
    edited = ORIGINAL + b"\nMy own line.\n"
    (workspace / "AGENTS.md").write_bytes(edited)
    r = cairn(workspace, "accept", topic["id"], a, check=False)
    assert r.returncode == 2
    assert r.stdout.splitlines() == [f"{topic['id']}: applied"]
    assert f"cairn: E_PROPOSAL_STALE: proposal {a} is stale: AGENTS.md changed since the proposal was made" \
        in r.stderr
    assert "nothing was written for it" in r.stderr and f"1 of 2 decided; 1 refused: {a}" in r.stderr
    assert "`cairn review` (or `cairn remember` of the same text) proposes it again" in r.stderr
    assert (workspace / "AGENTS.md").read_bytes() == edited
    assert _states(workspace)[topic["id"]] == "applied"
    # --json of several: every outcome on stdout (each refusal said on stderr too), the status the same
    r = cairn(workspace, "accept", topic["id"], b, "--json", check=False)
    out = json.loads(r.stdout)
    assert r.returncode == 2 and [e["code"] for e in out["errors"]] == ["E_PROPOSAL_STALE"]
    assert [d["id"] for d in out["decisions"]] == [topic["id"]] and f"cairn: E_PROPOSAL_STALE: proposal {b}" in r.stderr
    # one id: the command's own error, as it always was (nothing on stdout)
    r = cairn(workspace, "accept", b, "--json", check=False)
    assert (r.returncode, r.stdout) == (2, "") and r.stderr.startswith("cairn: E_PROPOSAL_STALE: ")


def test_a_stale_rule_is_proposed_again_by_remember_and_by_review(workspace: Path) -> None:
    a, b = _two_rules(workspace)
    (workspace / "AGENTS.md").write_bytes(ORIGINAL + b"\nMy own line.\n")
    assert _states(workspace) == {a: "stale", b: "stale"}
    # the same text remembered again: reviewed again against the file as it is now, and said so
    r = cairn(workspace, "remember", RULES[0])
    assert f"{a} proposed it before and went stale" in r.stdout and "proposed again as" in r.stdout
    fresh = [i for i, s in _states(workspace).items() if s == "pending"]
    assert len(fresh) == 1
    # `cairn review` proposes the other one again (no `cairn process` first)
    r = cairn(workspace, "review")
    assert "1 remembered text(s) reviewed" in r.stdout
    pending = [i for i, s in _states(workspace).items() if s == "pending"]
    assert len(pending) == 2
    cairn(workspace, "accept", *pending)
    text = (workspace / "AGENTS.md").read_text()
    assert "My own line." in text and all(text.count(f"- {rule}") == 1 for rule in RULES)
    # nothing stale is proposed a third time
    assert "remembered text" not in cairn(workspace, "review").stdout


def test_an_undo_blocked_by_a_later_proposal_names_it(workspace: Path) -> None:
    a, b = _two_rules(workspace)
    cairn(workspace, "accept", a, b)
    after = (workspace / "AGENTS.md").read_bytes()
    r = cairn(workspace, "undo", a, check=False)
    assert r.returncode == 2 and r.stdout == ""
    assert f"E_TARGET_CHANGED: undo refused: AGENTS.md changed since it was applied, by proposal {b} applied " \
        f"after it: undo {b} first (`cairn undo {b} {a}`" in r.stderr
    assert (workspace / "AGENTS.md").read_bytes() == after
    # a change by hand is said to be one
    (workspace / "AGENTS.md").write_bytes(after + b"mine\n")
    r = cairn(workspace, "undo", b, check=False)
    assert r.returncode == 2 and "(not by a cairn proposal: edit the file by hand)" in r.stderr


def test_undo_of_several_reports_each_and_goes_on(workspace: Path) -> None:
    a, b = _two_rules(workspace)
    cairn(workspace, "accept", a)
    r = cairn(workspace, "undo", a, b, check=False)
    assert r.returncode == 2
    assert r.stdout.splitlines() == [f"{a}: undone"]
    assert f"E_PROPOSAL_STATE: proposal {b} is pending" in r.stderr
    assert (workspace / "AGENTS.md").read_bytes() == ORIGINAL


def _remember_file(ws: Path, path: str) -> subprocess.CompletedProcess[str]:
    # its own process with a deadline: a read that blocks would hang the test, not pass it
    return subprocess.run([PYTHON, "-m", "cairn.server", "remember", "--file", path, "-w", str(ws)], cwd=REPO,
                          env=child_env(), capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("kind", ["fifo", "folder", "device"])
def test_remember_file_that_is_no_regular_file_is_refused_without_blocking(workspace: Path, kind: str) -> None:
    path = workspace / "note"
    if kind == "fifo":
        os.mkfifo(path)  # no writer: opening it to read would wait forever
    elif kind == "folder":
        path.mkdir()
    else:
        path = Path("/dev/zero")  # endless: read whole, it would only stop at the size bound
    r = _remember_file(workspace, str(path))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("cairn: E_PATH_NOT_REGULAR: remember: ") and "Traceback" not in r.stderr
    assert not (workspace / ".cairn/state/memory/remember").exists()  # nothing remembered


def test_a_stale_proposal_of_a_review_is_proposed_again_by_the_next_review(workspace: Path) -> None:
    cairn(workspace, "run", "--example")
    [p] = [r for r in cairn_json(workspace, "proposals") if r["title"].endswith("on a Friday")]
    topic = workspace / p["target"]
    topic.parent.mkdir(parents=True, exist_ok=True)
    topic.write_text("---\nname: mine\ndescription: my own\ntype: project\n---\n\n- something else\n")
    r = cairn(workspace, "accept", p["id"], check=False)
    assert r.returncode == 2 and "`cairn review` proposes it again against the files as they are now" in r.stderr
    cairn(workspace, "review")
    again = [r for r in cairn_json(workspace, "proposals")
             if r["title"].endswith("on a Friday") and r["state"] == "pending" and r["kind"] == "create"]
    assert len(again) == 1 and again[0]["id"] != p["id"]
    cairn(workspace, "accept", again[0]["id"])
    assert "- something else" in topic.read_text()  # the person's file is theirs


def test_rejecting_several_keeps_a_killed_auto_reviews_promise_waiting_for_the_users_word(workspace: Path) -> None:
    """An ``auto`` review killed before its write leaves a promise to apply B; ``cairn reject A B`` decides
    each id in a job of its own, and the first job's recovery must not keep B's promise: the user said no."""
    from tests.support import users_auto_mode

    (workspace / "AGENTS.md").write_bytes(ORIGINAL)
    [a] = [p["id"] for p in cairn_json(workspace, "remember", RULES[0])["proposals"]]
    users_auto_mode()
    killed = cairn(workspace, "remember", RULES[1], env={"CAIRN_CRASH_BEFORE": "rename AGENTS.md"}, check=False)
    assert killed.returncode != 0 and (workspace / "AGENTS.md").read_bytes() == ORIGINAL
    [b] = [i for i in _states(workspace) if i != a]
    r = cairn(workspace, "reject", a, b, env={"CAIRN_TEST_CLOCK_OFFSET": "1000"}, check=False)
    assert (r.returncode, r.stdout.splitlines()) == (0, [f"{a}: rejected", f"{b}: rejected"]), r.stderr
    assert (workspace / "AGENTS.md").read_bytes() == ORIGINAL
