"""One memory topic at the user's word (issue 30, "keys to verify, update or retire"): `cairn memory retire
TOPIC` proposes its retirement through the ordinary proposal path, `cairn memory confirm TOPIC` says it is
still true (no longer due for revalidation), and both refuse what is not a topic of this workspace."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.journal.helpers import cairn, cairn_json
from tests.support import child_env
from tests.support.warm import run_python

MEM = ".agents/memory"
DAY = 86400


def _topic(ws: Path, text: str = "Use pnpm, not npm, to install dependencies") -> str:
    cairn(ws, "remember", text)
    pending = [p for p in cairn_json(ws, "proposals") if p["state"] == "pending"]
    cairn(ws, "accept", pending[0]["id"])
    return pending[0]["target"]


def _aged(ws: Path, target: str, days: int) -> str:
    """As if ``days`` had passed since ``target`` was written and accepted: its front matter's date and the
    confirmation its acceptance recorded (the marks file) both moved back. Returns the old day."""
    old = time.strftime("%Y-%m-%d", time.gmtime(time.time() - days * DAY))
    topic = ws / target
    topic.write_text("\n".join(f"confirmed: '{old}'" if line.startswith("confirmed:") else line
                               for line in topic.read_text().split("\n")))
    marks = ws / ".cairn" / "state" / "memory" / "verify.json"
    data = json.loads(marks.read_text())
    assert data[target]["confirmed"] == time.strftime("%Y-%m-%d", time.gmtime()), "the accept confirmed it"
    data[target]["confirmed"] = old
    marks.write_text(json.dumps(data))
    return old


def test_retire_proposes_and_accept_removes_topic_and_index_line_undo_restores(workspace: Path) -> None:
    target = _topic(workspace)
    topic, index = workspace / target, workspace / MEM / "MEMORY.md"
    before_topic, before_index = topic.read_bytes(), index.read_bytes()

    out = cairn_json(workspace, "memory", "retire", Path(target).name)
    assert out["new"] is True and out["file"] == target
    assert topic.read_bytes() == before_topic, "a proposal only: nothing removed before accept"
    # asked twice: the pending one is named, not proposed again
    again = cairn(workspace, "memory", "retire", target).stdout
    assert f"{out['proposal']} already proposes to retire" in again
    assert [p["id"] for p in cairn_json(workspace, "proposals") if p["state"] == "pending"] == [out["proposal"]]

    cairn(workspace, "accept", out["proposal"])
    assert not topic.exists() and Path(target).name not in index.read_text()
    cairn(workspace, "undo", out["proposal"])
    assert topic.read_bytes() == before_topic and index.read_bytes() == before_index


def test_retire_asked_again_after_a_rejection_is_proposed_again(workspace: Path) -> None:
    target = _topic(workspace)
    first = cairn_json(workspace, "memory", "retire", target)["proposal"]
    cairn(workspace, "reject", first)
    second = cairn_json(workspace, "memory", "retire", target)
    assert second["new"] is True and second["proposal"] != first
    # proposed again once: asked a third time, the pending one is named, not proposed a second time
    third = cairn_json(workspace, "memory", "retire", target)
    assert third == {"file": target, "proposal": second["proposal"], "new": False}
    assert [p["id"] for p in cairn_json(workspace, "proposals") if p["state"] == "pending"] == [second["proposal"]]


def test_retire_names_a_verifications_pending_retirement_of_the_same_topic(workspace: Path) -> None:
    target = _topic(workspace)
    _aged(workspace, target, 200)
    cairn(workspace, "verify", check=False)  # proposes "revalidate or retire"
    [revalidate] = [p["id"] for p in cairn_json(workspace, "proposals") if p["state"] == "pending"]
    out = cairn_json(workspace, "memory", "retire", target)
    assert out == {"file": target, "proposal": revalidate, "new": False}
    assert [p["id"] for p in cairn_json(workspace, "proposals") if p["state"] == "pending"] == [revalidate]


def _root_topic(ws: Path, root: str, file: str, name: str) -> None:
    from cairn.worker.memory.model import render_topic

    (ws / root).mkdir(parents=True, exist_ok=True)
    (ws / root / file).write_bytes(render_topic(name, f"about {name}", "project", "\n- Keep it short.\n", {}))


def test_a_bare_topic_name_is_looked_up_in_every_configured_memory_root(workspace: Path) -> None:
    (workspace / ".cairn").mkdir()
    (workspace / ".cairn" / "config.toml").write_text('memory_roots = ["docs/memory"]\n')
    _root_topic(workspace, "docs/memory", "deploy.md", "Deploying")
    _root_topic(workspace, "docs/memory", "shared.md", "Shared (docs)")
    _root_topic(workspace, MEM, "shared.md", "Shared")

    # only in the configured root: found there, by its bare name
    out = cairn_json(workspace, "memory", "retire", "deploy.md")
    assert out["file"] == "docs/memory/deploy.md" and out["new"] is True
    # either separator between the parts of what the user typed
    assert cairn_json(workspace, "memory", "confirm", "docs\\memory\\deploy.md")["file"] == "docs/memory/deploy.md"
    assert cairn_json(workspace, "memory", "retire", ".agents\\memory\\shared.md")["file"] == f"{MEM}/shared.md"
    # in two roots: which one is meant is asked, nothing is proposed
    pending = [p["id"] for p in cairn_json(workspace, "proposals") if p["state"] == "pending"]
    r = cairn(workspace, "memory", "retire", "shared.md", check=False)
    assert r.returncode == 2 and "E_USAGE" in r.stderr, r.stderr
    assert f"{MEM}/shared.md" in r.stderr and "docs/memory/shared.md" in r.stderr and "folder" in r.stderr
    assert "Traceback" not in r.stderr
    assert [p["id"] for p in cairn_json(workspace, "proposals") if p["state"] == "pending"] == pending
    # in no root
    r = cairn(workspace, "memory", "confirm", "nowhere.md", check=False)
    assert r.returncode == 2 and "E_NOT_FOUND" in r.stderr and "nowhere.md" in r.stderr and "Traceback" not in r.stderr


def test_confirm_makes_a_due_topic_fresh(workspace: Path) -> None:
    target = _topic(workspace)
    # the topic was last confirmed 200 days ago (its front matter's date), past revalidateDays (90)
    topic = workspace / target
    assert "confirmed: '" in topic.read_text()
    old = _aged(workspace, target, 200)
    row = cairn_json(workspace, "memory")[0]
    assert row["due"] is True and row["age"] >= 200
    cairn(workspace, "verify", check=False)  # proposes "revalidate or retire"
    revalidate = [p for p in cairn_json(workspace, "proposals") if p["state"] == "pending"]
    assert len(revalidate) == 1 and revalidate[0]["kind"] == "delete"

    out = cairn_json(workspace, "memory", "confirm", target)
    assert out == {"file": target, "confirmed": time.strftime("%Y-%m-%d", time.gmtime()),
                   "rejected": [revalidate[0]["id"]]}
    assert {p["id"]: p["state"] for p in cairn_json(workspace, "proposals")}[revalidate[0]["id"]] == "rejected"
    row = cairn_json(workspace, "memory")[0]
    assert row["due"] is False and row["age"] == 0 and row["confirmed"] == out["confirmed"]
    assert topic.read_text().count(old) == 1, "private mark only: the topic file is not rewritten"


def test_confirm_refuses_a_stale_topic(workspace: Path) -> None:
    (workspace / "Makefile").write_text("check:\n\tpytest\n")
    target = _topic(workspace, "Run the tests with `make check`")
    (workspace / "Makefile").write_text("test:\n\tpytest\n")  # the target was renamed
    cairn(workspace, "verify", "--dry-run", check=False)
    assert cairn_json(workspace, "memory")[0]["stale"] is True
    r = cairn(workspace, "memory", "confirm", target, check=False)
    assert r.returncode == 2 and "E_TOPIC_STALE" in r.stderr and "update it or retire it" in r.stderr
    assert "Traceback" not in r.stderr


def test_what_is_not_a_topic_here_is_refused_with_a_code(workspace: Path) -> None:
    _topic(workspace)
    (workspace / "notes.md").write_text("x\n")
    for bad in ("nope.md", "../../etc/passwd", "notes.md", f"{MEM}/MEMORY.md", f"{MEM}/../notes.md"):
        r = cairn(workspace, "memory", "retire", bad, check=False)
        assert r.returncode == 2 and "E_NOT_FOUND" in r.stderr, (bad, r.stderr)
        assert "Traceback" not in r.stderr
    r = cairn(workspace, "memory", "confirm", check=False)
    assert r.returncode == 2 and "E_USAGE" in r.stderr and "name a topic file" in r.stderr
    assert json.loads(cairn(workspace, "proposals", "--json").stdout) == [
        p for p in cairn_json(workspace, "proposals")], "nothing proposed by the refusals"
    assert all(p["state"] == "applied" for p in cairn_json(workspace, "proposals"))


def test_a_topic_accepted_today_is_listed_as_confirmed_today(workspace: Path) -> None:
    target = _topic(workspace)
    listed = cairn(workspace, "memory").stdout
    assert f"{target}  (" in listed and ", today]" in listed and " d ago" not in listed, listed


def test_a_topic_with_broken_front_matter_is_reported_not_rewritten(workspace: Path) -> None:
    target = _topic(workspace)
    topic = workspace / target
    topic.write_text("no front matter at all\n")
    r = cairn(workspace, "memory", "retire", target, check=False)
    assert r.returncode == 2 and "E_TOPIC_FRONT_MATTER" in r.stderr
    assert topic.read_text() == "no front matter at all\n"
    # the listing says what is wrong with it, in words and by its code, not a Python None
    listed = cairn(workspace, "memory").stdout
    assert f"{target}  E_TOPIC_FRONT_MATTER: its front matter cannot be read; fix it by hand" in listed
    assert "None" not in listed
    [row] = cairn_json(workspace, "memory")
    assert row["file"] == target and row["error"] == "E_TOPIC_FRONT_MATTER" and row["type"] is None


# -- a confirmation and a verification at the same time: the marks are one file, replaced whole ---------------

JAN1 = 1767225600.0  # 2026-01-01T00:00:00Z


def _verify_ws(tmp_path: Path, body: str, confirmed: str) -> Path:
    from cairn.worker.memory import citations as C
    from cairn.worker.memory.model import render_topic

    ws = tmp_path / "ws"
    (ws / MEM).mkdir(parents=True)
    (ws / "Makefile").write_text("check:\n\t./run-tests.sh\n")
    prov: dict[str, object] = {"confirmed": confirmed, "citations": [c.as_front_matter() for c in C.find_citations(str(ws), body)]}
    (ws / MEM / "tests.md").write_bytes(render_topic("Running the tests", "how to run them", "project", body, prov))
    (ws / MEM / "MEMORY.md").write_text("- [Running the tests](tests.md) - how to run them\n")
    return ws


def test_a_confirmation_made_while_a_verification_runs_is_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The verification read the marks before the user confirmed and writes them after: the confirmation (and
    the rejection of the revalidation proposal it made) both stand, so the topic is no longer due."""
    from cairn.protocol.settings import Settings
    from cairn.worker.memory import verify as V
    from cairn.worker.memory.apply import load_proposal, state_of
    from cairn.worker.memory.marks import load_marks
    from cairn.worker.memory.store import MemoryStore

    ws = _verify_ws(tmp_path, "\n- We prefer small commits.\n", "2026-01-01")
    now = JAN1 + 91 * DAY  # past revalidateDays
    rel = f"{MEM}/tests.md"
    with MemoryStore(str(ws), Settings(revalidateDays=90)) as ms:
        [pid] = V.verify_workspace(ms, now=now)["proposals"]  # "revalidate or retire"
        real = V.verify_entry
        done: list[dict[str, Any]] = []

        def confirm_meanwhile(*a: Any, **kw: Any) -> Any:
            if not done:  # the next verification has read the marks; the user confirms before it writes them
                done.append(V.confirm_topic(ms, rel, now=now + 30))
            return real(*a, **kw)

        monkeypatch.setattr(V, "verify_entry", confirm_meanwhile)
        r = V.verify_workspace(ms, now=now + 60)
        monkeypatch.setattr(V, "verify_entry", real)
        assert done and done[0]["rejected"] == [pid] and r["proposals"] == []
        assert load_marks(str(ws))[rel].get("confirmed") == "2026-04-02"
        assert state_of(ms, load_proposal(ms, pid))[0].value == "rejected"
        # the next verification finds it confirmed: not due, nothing proposed
        again = V.verify_workspace(ms, now=now + 120)
    assert again["topics"][0]["aged"] is False and again["topics"][0]["confirmed"] == "2026-04-02"


def test_a_verification_finishing_between_a_confirmations_read_and_write_is_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A verification writes the marks after the confirmation read them: the confirmation reads them again (a
    compare-and-set), so both the verification's marks and the confirmation stand; when that verification
    found the topic stale, the confirmation is refused."""
    from cairn.protocol.errors import CairnError
    from cairn.protocol.settings import Settings
    from cairn.worker.memory import verify as V
    from cairn.worker.memory.marks import load_marks
    from cairn.worker.memory.store import MemoryStore

    ws = _verify_ws(tmp_path, "\n- Run the tests with `make check`.\n", "2026-01-01")
    now = JAN1 + 10 * DAY
    rel = f"{MEM}/tests.md"
    real = V.mark_of

    def verify_between(before_verify: Callable[[], object] = lambda: None) -> tuple[list[dict[str, Any]], Any]:
        ran: list[dict[str, Any]] = []

        def hooked(marks: dict[str, Any], file: str) -> dict[str, Any]:
            if not ran:  # the confirmation has read the marks: a verification finishes before it writes them
                ran.append({})
                before_verify()
                ran[0] = V.verify_workspace(ms, now=now, propose=False)
            return real(marks, file)
        return ran, hooked

    with MemoryStore(str(ws), Settings(revalidateDays=90)) as ms:
        ran, hooked = verify_between()
        monkeypatch.setattr(V, "mark_of", hooked)
        out = V.confirm_topic(ms, rel, now=now)
        monkeypatch.setattr(V, "mark_of", real)
        assert ran and ran[0]["checked"] == 1
        mark = load_marks(str(ws))[rel]
        assert out["confirmed"] == mark["confirmed"] == "2026-01-11"
        assert mark.get("checked") == mark.get("verified") == "2026-01-11", "the verification's marks are kept"

        # the verification in between finds what it cites changed: the confirmation is refused, nothing recorded
        ran, hooked = verify_between(lambda: (ws / "Makefile").write_text("test:\n\t./run-tests.sh\n"))
        monkeypatch.setattr(V, "mark_of", hooked)
        with pytest.raises(CairnError) as info:
            V.confirm_topic(ms, rel, now=now + DAY)
        monkeypatch.setattr(V, "mark_of", real)
    assert info.value.code == "E_TOPIC_STALE"
    mark = load_marks(str(ws))[rel]
    assert mark["stale"] and mark["confirmed"] == "2026-01-11"


def test_accepting_a_memory_from_an_old_session_confirms_it_today(workspace: Path) -> None:
    """The shipped example session was held in 2025: its notes are dated then. The user who accepts one has
    just read it and said yes: it is not "due for revalidation" the moment it lands, nor does the next
    verification ask to revalidate or retire it. A topic nobody accepted keeps its session's date."""
    cairn(workspace, "run")
    pending = [p for p in cairn_json(workspace, "proposals") if p["state"] == "pending" and p["kind"] == "create"]
    assert len(pending) >= 2
    cairn(workspace, "accept", pending[0]["id"])
    [row] = cairn_json(workspace, "memory")
    today = time.strftime("%Y-%m-%d", time.gmtime())
    assert row["file"] == pending[0]["target"] and row["due"] is False and row["age"] == 0
    assert row["confirmed"] == today
    assert "confirmed: '2025-" in (workspace / pending[0]["target"]).read_text(), "the session's date stays recorded"
    cairn(workspace, "verify", check=False)
    assert not [p for p in cairn_json(workspace, "proposals")
                if p["state"] == "pending" and p["kind"] == "delete"], "no revalidation asked right after a yes"


def test_the_actions_take_their_options_before_or_after_the_topic(workspace: Path) -> None:
    """`cairn memory retire --json TOPIC` is how a user types it (`--json` was refused as `E_USAGE` there,
    TOPIC "unrecognized"); `-w` and `--json` go before the action or after it."""
    target = _topic(workspace)
    name = Path(target).name
    for argv in (("memory", "retire", "--json", name), ("memory", "--json", "retire", name),
                 ("memory", "confirm", "--json", name)):
        r = cairn(workspace, *argv)
        assert json.loads(r.stdout)["file"] == target, argv
    r = run_python(["-m", "cairn.server", "memory", "retire", "-w", str(workspace), name], env=child_env())
    assert r.returncode == 0 and "already proposes to retire" in r.stdout
    r = cairn(workspace, "memory", "bogus", check=False)
    assert r.returncode == 2 and "E_USAGE" in r.stderr and "Traceback" not in r.stderr


def test_a_date_after_today_confirms_nothing(workspace: Path) -> None:
    """A hand-written `confirmed: 2099-01-01` showed "-26323 days ago" and kept the topic from ever being due."""
    target = _topic(workspace)
    old = _aged(workspace, target, 120)
    topic = workspace / target
    topic.write_text(topic.read_text().replace(f"confirmed: '{old}'", "confirmed: '2099-01-01'"))
    [row] = [r for r in cairn_json(workspace, "memory") if r["file"] == target]
    assert row["confirmed"] != "2099-01-01" and row["due"] is True and (row["age"] or 0) >= 0, row
