"""Index maintenance: a dangling index entry becomes a DELETE, an orphan topic gets its entry back.

Drafted deterministically by the engine whichever provider reviews, never
in conflict with the review's other drafts, applied through the checked path
byte-exactly (CRLF and a missing final newline kept, the guarded topic never
rewritten), undone to the exact original bytes, stale when the affected entry
or the guarded file changes, and never proposed again once rejected.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from cairn.protocol.digest import Note
from cairn.protocol.journal import PublicDigest
from cairn.protocol.memory import ProposalKind
from cairn.protocol.settings import Settings
from cairn.protocol.vocab import NoteType, Trigger
from cairn.server.lsp import memory_docs
from cairn.state.layout import MEMORY_BUNDLES
from cairn.worker.memory import engine, model, remote, views

from tests import sweep
from tests.journal.helpers import DEMO, cairn, cairn_json
from tests.providers.endpoint import Endpoint
from tests.providers.endpoint import endpoint as endpoint
from tests.support import child_env
from tests.support.warm import run_python

DAY = 1767571200.0  # 2026-01-05 00:00 UTC
MEM = ".agents/memory"
INDEX_REL = f"{MEM}/MEMORY.md"

KEPT = model.render_topic("Aquarium pumps", "When the aquarium pumps run", "reference",
                          "\n- The aquarium pump cycles hourly.\n")
LAST = model.render_topic("Garden", "Garden watering", "reference", "\n- Tomatoes get watered at dawn.\n")
ORPHAN = model.render_topic("Bicycle gears", "Which gear ratios the bicycle uses", "reference",
                            "\n- The bicycle has eleven rear sprockets.\n")
GONE_LINE = b"- [Gone away](gone.md) - vanished"
ORPHAN_LINE = b"- [Bicycle gears](orphan.md) - Which gear ratios the bicycle uses"
# CRLF line endings and no final newline: both must survive every write byte for byte
INDEX = (b"# Memory\r\n\r\n- [Aquarium pumps](kept.md) - pump timing\r\n" + GONE_LINE + b"\r\n"
         b"- [Garden](last.md) - watering")


def note(kind: str, title: str, body: str) -> Note:
    return Note(type=NoteType(kind), title=title, body=body, turn_ids=("t1",))


def digest(n: int, *notes: Note) -> PublicDigest:
    return PublicDigest(id=f"d{n:02d}", capture=f"c{n}", session_id="s1", title=None, trigger=Trigger.IDLE,
                        created=DAY + n * 60, provider="extractive", turn_ids=("t1",), notes=notes)


def make_root(path: Path, index: bytes | None, topics: dict[str, bytes]) -> model.MemorySnapshot:
    path.mkdir(parents=True)
    if index is not None:
        (path / "MEMORY.md").write_bytes(index)
    for name, data in topics.items():
        (path / name).write_bytes(data)
    return model.read_root(path)


def run(snap: model.MemorySnapshot, *digests: PublicDigest, rejected: set[str] | None = None
        ) -> list[engine.ProposalDraft]:
    return engine.review(list(digests), snap, root_rel=MEM, index_rel=INDEX_REL, instruction_files={},
                         rejected=rejected or set(), now=DAY + 3600, review_id="r1")


def assert_no_contention(drafts: list[engine.ProposalDraft]) -> None:
    """No two drafts of one review touch the same entry or file, so accepting one never stales another."""
    entries = [f for d in drafts for f, _, _ in d.index_edits]
    files = [p for d in drafts for p in d.files]
    assert len(entries) == len(set(entries)) and len(files) == len(set(files))


# -- the rules -------------------------------------------------------------------------------


def test_a_dangling_entry_becomes_one_delete_that_removes_only_that_entry(tmp_path: Path) -> None:
    index = INDEX + (b"\r\n- [Site](https://example.org/notes.md) - a URL is not judged\r\n"
                     b"- [Nested](sub/n.md) - nor is a path\r\n- [Anchor](missing.md#part)\r\n"
                     b"- [Other case](KEPT.md) - resolves on a case-insensitive file system\r\n"
                     b"- [Again](gone.md) - a later duplicate is an ordinary line\r\n"
                     b"- [Also gone](also-gone.md)")
    snap = make_root(tmp_path / "m", index, {"kept.md": KEPT, "last.md": LAST})
    drafts = run(snap)
    assert [(d.kind, d.target, d.index_edits) for d in drafts] == [
        (ProposalKind.DELETE, f"{MEM}/also-gone.md", (("also-gone.md", "- [Also gone](also-gone.md)", None),)),
        (ProposalKind.DELETE, f"{MEM}/gone.md", (("gone.md", GONE_LINE.decode(), None),)),
    ]
    gone = drafts[1]
    # no file is written; the missing file is a guard (it must still be absent)
    assert gone.files == {f"{MEM}/gone.md": (None, None)} and gone.evidence == ()
    assert "gone.md" in gone.title and "line 4" in gone.summary and gone.index_path == INDEX_REL
    assert model.apply_index_edits(index, gone.index_edits) == index.replace(GONE_LINE + b"\r\n", b"", 1)


def test_an_orphan_topic_gets_its_entry_back_without_a_file_change(tmp_path: Path) -> None:
    long = model.render_topic("Long", "word " * 60, "project", "\n- x\n")
    echo = model.render_topic("Echo", "echo.", "user", "\n- y\n")
    index = b"# Memory\n\n- [Aquarium pumps](./kept.md) - pump timing\n- [Up](upper.md)\n\nSee the wiki.\n"
    snap = make_root(tmp_path / "m", index, {
        "kept.md": KEPT, "Upper.md": LAST, "orphan.md": ORPHAN, "long.md": long, "echo.md": echo,
        "broken.md": b"no front matter here\n",  # not a parsed topic: never indexed by cairn
    })
    drafts = run(snap)
    assert [(d.kind, d.target) for d in drafts] == [
        (ProposalKind.UPDATE, f"{MEM}/echo.md"), (ProposalKind.UPDATE, f"{MEM}/long.md"),
        (ProposalKind.UPDATE, f"{MEM}/orphan.md"),
    ]
    echo_d, long_d, orphan = drafts
    assert orphan.index_edits == (("orphan.md", None, ORPHAN_LINE.decode()),)
    assert orphan.files == {f"{MEM}/orphan.md": (ORPHAN, ORPHAN)} and orphan.evidence == ()
    assert "orphan.md" in orphan.title
    assert echo_d.index_edits == (("echo.md", None, "- [Echo](echo.md)"),)  # no hook repeating the name
    hook = model.parse_index(long_d.index_edits[0][2].encode()).entries[0].hook  # type: ignore[union-attr]
    assert len(hook) <= engine.DESCRIPTION_MAX and hook.endswith("…")
    # the entry goes after the last entry; the person's prose stays where it was
    assert model.apply_index_edits(index, orphan.index_edits) == (
        b"# Memory\n\n- [Aquarium pumps](./kept.md) - pump timing\n- [Up](upper.md)\n" + ORPHAN_LINE
        + b"\n\nSee the wiki.\n")
    assert_no_contention(drafts)


def test_repairs_leave_files_of_the_reviews_other_drafts_alone(tmp_path: Path) -> None:
    a = model.render_topic("Commit messages", "How to write commit messages", "feedback",
                           "\n- Use imperative commit messages.\n")
    b = model.render_topic("Commit messages", "How to write commit messages", "feedback",
                           "\n- Use imperative commit messages, always.\n")
    # two orphans about to be merged: only the merge, no entry for either
    (merge,) = run(make_root(tmp_path / "one", None, {"a.md": a, "b.md": b}))
    assert merge.kind == ProposalKind.MERGE
    # an orphan a note updates: only the update; its entry waits for a later review
    snap = make_root(tmp_path / "two", b"# Memory\n", {"orphan.md": ORPHAN})
    (update,) = run(snap, digest(1, note("reference", "Bicycle", "The bicycle has eleven rear sprockets now.")))
    assert update.kind == ProposalKind.UPDATE and update.evidence == ("d01",)
    assert update.index_edits == (("orphan.md", None, None),)
    # a new topic never takes a dangling entry's name; the entry is still repaired
    snap = make_root(tmp_path / "three", b"- [Deploys](deploys.md) - gone\n", {})
    drafts = run(snap, digest(1, note("project", "Deploys", "Deploys happen on Fridays only.")))
    assert [(d.kind, d.target) for d in drafts] == [
        (ProposalKind.DELETE, f"{MEM}/deploys.md"), (ProposalKind.CREATE, f"{MEM}/deploys-2.md")]
    assert_no_contention(drafts)
    index = b"- [Deploys](deploys.md) - gone\n"
    for d in drafts:  # each applies on its own, and all of them together
        model.apply_index_edits(index, d.index_edits)
        index = model.apply_index_edits(index, d.index_edits)
    assert index == b"# Memory\n\n- [Deploys](deploys-2.md) - Deploys happen on Fridays only. (confirmed 2026-01-05)\n"


def test_no_entry_is_restored_when_the_index_cannot_take_it(tmp_path: Path) -> None:
    other = model.render_topic("Lighthouse", "Where the lighthouse keeper lives", "user", "\n- On the cliff.\n")

    def entries(n: int) -> bytes:
        return b"".join(model.format_entry(f"T{i}", f"t{i}.md", "h").encode() + b"\n" for i in range(n))

    def restored(name: str, index: bytes, *digests: PublicDigest, rejected: set[str] | None = None) -> list[str]:
        snap = make_root(tmp_path / name, index, {"orphan.md": ORPHAN, "other.md": other})
        drafts = run(snap, *digests, rejected=rejected)
        return [d.target for d in drafts if d.kind == ProposalKind.UPDATE or d.kind == ProposalKind.CREATE]

    assert restored("room", entries(199)) == [f"{MEM}/orphan.md"]  # one line left: the first orphan by name
    assert restored("full", entries(200)) == []
    # a create of the same review comes first
    assert restored("create", entries(199), digest(1, note("project", "Deploys", "Deploys happen on Fridays."))) \
        == [f"{MEM}/deploys.md"]
    # a rejected repair takes no room
    (first,) = [d for d in run(model.read_root(tmp_path / "room")) if d.kind == ProposalKind.UPDATE]
    assert restored("rejected", entries(199), rejected={first.fingerprint}) == [f"{MEM}/other.md"]


def test_rejected_repairs_stay_rejected_and_output_is_deterministic(tmp_path: Path) -> None:
    snap = make_root(tmp_path / "m", INDEX, {"kept.md": KEPT, "last.md": LAST, "orphan.md": ORPHAN})
    drafts = run(snap)
    assert [d.kind for d in drafts] == [ProposalKind.DELETE, ProposalKind.UPDATE]  # removals first
    assert run(model.read_root(tmp_path / "m")) == drafts  # same input, same drafts
    assert run(snap, rejected={d.fingerprint for d in drafts}) == []
    assert run(snap, rejected={"0" * 64}) == drafts
    # the fingerprint names the repair, not the wording: a reworded entry or topic is still rejected
    reworded = make_root(tmp_path / "n", INDEX.replace(b"vanished", b"long gone"), {
        "kept.md": KEPT, "last.md": LAST, "orphan.md": ORPHAN.replace(b"Which gear", b"The gear")})
    again = run(reworded)
    assert [d.fingerprint for d in again] == [d.fingerprint for d in drafts] and again != drafts
    assert run(reworded, rejected={d.fingerprint for d in drafts}) == []


def test_repairs_come_from_the_engine_whatever_the_provider(endpoint: Endpoint, tmp_path: Path) -> None:
    snap = make_root(tmp_path / "m", INDEX, {"kept.md": KEPT, "last.md": LAST, "orphan.md": ORPHAN})
    d1 = digest(1, note("reference", "Bicycle chain", "The bicycle chain is waxed monthly."))
    policy = remote.review_policy(Settings(provider="openai", model="m", endpoint=endpoint.base_url),
                                  timeout_seconds=10.0)

    def review(*proposals: dict[str, object]) -> list[engine.ProposalDraft]:
        endpoint.answer(json.dumps({"proposals": list(proposals)}))
        return remote.review_remote([d1], snap, root_rel=MEM, index_rel=INDEX_REL, instruction_files={},
                                    rejected=set(), now=DAY + 3600, review_id="r1", policy=policy,
                                    api_key="sk-test-key")

    # the model proposes nothing: the repairs are exactly the embedded engine's
    assert review() == run(snap)
    # the model updates the orphan: that update, no competing entry for it; the dangling entry still goes
    drafts = review({"action": "update", "file": "orphan.md", "bullets": ["The chain is waxed monthly."],
                     "evidence": ["d01"]})
    assert [(d.kind, d.target, d.evidence) for d in drafts] == [
        (ProposalKind.DELETE, f"{MEM}/gone.md", ()), (ProposalKind.UPDATE, f"{MEM}/orphan.md", ("d01",))]
    assert_no_contention(drafts)


# -- through the checked path (real CLI, real files) -----------------------------------------------


def _setup(ws: Path) -> dict[str, dict]:
    mem = ws / MEM
    mem.mkdir(parents=True)
    (mem / "MEMORY.md").write_bytes(INDEX)
    for name, data in {"kept.md": KEPT, "last.md": LAST, "orphan.md": ORPHAN}.items():
        (mem / name).write_bytes(data)
    out = cairn_json(ws, "run", str(DEMO))
    assert isinstance(out, dict)
    return {p["kind"] + ":" + p["target"]: p for p in out["proposals"]}


def _changed(diff: str) -> tuple[list[str], list[str]]:
    """(removed, added) lines of a unified diff; split on LF only so a CR stays visible."""
    lines = diff.split("\n")
    return ([x[1:] for x in lines if x.startswith("-") and not x.startswith("---")],
            [x[1:] for x in lines if x.startswith("+") and not x.startswith("+++")])


def _states(ws: Path) -> dict[str, tuple[str, str]]:
    rows = cairn_json(ws, "proposals")
    assert isinstance(rows, list)
    return {r["id"]: (r["state"], r["reason"]) for r in rows}


def _memory_bytes(ws: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (ws / MEM).iterdir() if p.is_file()}


def test_accepting_a_dangling_delete_removes_exactly_that_line_and_undo_restores_bytes(workspace: Path) -> None:
    props = _setup(workspace)
    delete = props[f"delete:{MEM}/gone.md"]
    index = workspace / INDEX_REL
    shown = cairn_json(workspace, "show", delete["id"])
    assert isinstance(shown, dict) and shown["state"] == "pending"
    assert _changed(shown["diff"]) == ([GONE_LINE.decode() + "\r"], [])
    # the editor shows it on the line it removes, with its code actions
    (row,) = [r for r in views.pending_for_file(str(workspace), str(index)) if r["id"] == delete["id"]]
    assert row["kind"] == "delete" and row["ranges"] == [{"startLine": 3, "endLine": 3}]
    (diag,) = memory_docs.diagnostics([row], line_count=5)
    assert diag["range"]["start"]["line"] == 3 and diag["code"] == delete["id"]
    actions = memory_docs.code_actions(str(workspace), [row])
    assert {a["command"]["arguments"][0]["id"] for a in actions} == {delete["id"]} and len(actions) == 3

    others = {k: v for k, v in _memory_bytes(workspace).items() if k != "MEMORY.md"}
    cairn(workspace, "accept", delete["id"])
    assert index.read_bytes() == (b"# Memory\r\n\r\n- [Aquarium pumps](kept.md) - pump timing\r\n"
                                  b"- [Garden](last.md) - watering")  # CRLF, still no final newline
    assert {k: v for k, v in _memory_bytes(workspace).items() if k != "MEMORY.md"} == others
    assert _states(workspace)[delete["id"]][0] == "applied"
    cairn(workspace, "undo", delete["id"])
    assert index.read_bytes() == INDEX  # the entry is back on its own line
    assert _states(workspace)[delete["id"]][0] == "undone"
    assert cairn(workspace, "doctor").returncode == 0


def test_accepting_an_orphan_entry_never_rewrites_the_topic_and_undo_restores_bytes(workspace: Path) -> None:
    props = _setup(workspace)
    orphan, delete = props[f"update:{MEM}/orphan.md"], props[f"delete:{MEM}/gone.md"]
    index, topic = workspace / INDEX_REL, workspace / MEM / "orphan.md"
    shown = cairn_json(workspace, "show", orphan["id"])
    assert isinstance(shown, dict)
    # the former last line gains the file's newline; the new entry is the new last line, without one
    assert _changed(shown["diff"]) == (["- [Garden](last.md) - watering"],
                                       ["- [Garden](last.md) - watering\r", ORPHAN_LINE.decode()])
    assert "\\ No newline at end of file" in shown["diff"]
    seen = topic.stat()
    cairn(workspace, "accept", orphan["id"])
    assert index.read_bytes() == INDEX + b"\r\n" + ORPHAN_LINE
    assert topic.read_bytes() == ORPHAN
    assert (topic.stat().st_ino, topic.stat().st_mtime_ns) == (seen.st_ino, seen.st_mtime_ns)  # not rewritten
    # both repairs, then both undone newest first: the exact original bytes
    cairn(workspace, "accept", delete["id"])
    assert index.read_bytes() == (b"# Memory\r\n\r\n- [Aquarium pumps](kept.md) - pump timing\r\n"
                                  b"- [Garden](last.md) - watering\r\n" + ORPHAN_LINE)
    cairn(workspace, "undo", delete["id"])
    cairn(workspace, "undo", orphan["id"])
    assert index.read_bytes() == INDEX and topic.read_bytes() == ORPHAN
    assert cairn(workspace, "doctor").returncode == 0


def test_unrelated_index_edits_keep_repairs_applicable_but_their_entry_or_guard_makes_them_stale(
        workspace: Path) -> None:
    props = _setup(workspace)
    orphan, delete = props[f"update:{MEM}/orphan.md"], props[f"delete:{MEM}/gone.md"]
    index, topic = workspace / INDEX_REL, workspace / MEM / "orphan.md"
    mine = INDEX.replace(b"# Memory", b"# Memory (mine)").replace(b"watering", b"watering at dawn") + b"\r\nMy notes."
    index.write_bytes(mine)
    assert _states(workspace)[orphan["id"]][0] == _states(workspace)[delete["id"]][0] == "pending"
    # the guarded topic changes: the entry proposal is stale and accepting it writes nothing
    topic.write_bytes(ORPHAN + b"- My own line.\n")
    state, reason = _states(workspace)[orphan["id"]]
    assert state == "stale" and "orphan.md" in reason
    r = cairn(workspace, "accept", orphan["id"], check=False)
    assert r.returncode == 2 and "E_PROPOSAL_STALE" in r.stderr and index.read_bytes() == mine
    # the affected entry changes, or the missing file appears: the delete is stale
    index.write_bytes(mine.replace(b"vanished", b"vanished (mine)"))
    state, reason = _states(workspace)[delete["id"]]
    assert state == "stale" and "gone.md" in reason
    index.write_bytes(mine)
    (workspace / MEM / "gone.md").write_bytes(KEPT)
    assert _states(workspace)[delete["id"]][0] == "stale"
    r = cairn(workspace, "accept", delete["id"], check=False)
    assert r.returncode == 2 and "E_PROPOSAL_STALE" in r.stderr and index.read_bytes() == mine
    (workspace / MEM / "gone.md").unlink()
    # back to its before-state: it applies, and every unrelated edit survives
    cairn(workspace, "accept", delete["id"])
    assert index.read_bytes() == mine.replace(GONE_LINE + b"\r\n", b"")


def test_a_rejected_repair_is_not_proposed_by_a_later_review(workspace: Path) -> None:
    props = _setup(workspace)
    orphan, delete = props[f"update:{MEM}/orphan.md"], props[f"delete:{MEM}/gone.md"]
    cairn(workspace, "reject", delete["id"])
    cairn(workspace, "accept", orphan["id"])
    cairn(workspace, "undo", orphan["id"])  # undone, not rejected: a later review may propose it again
    other = workspace / "again.jsonl"
    other.write_text(DEMO.read_text().replace("3c9e1f52-7a4b-4d18-b6e0-5f2a9c8d1e73",
                                              "3c9e1f52-7a4b-4d18-b6e0-000000000000"))
    out = cairn_json(workspace, "run", str(other))
    assert isinstance(out, dict)
    fresh = {(p["kind"], p["target"]) for p in out["proposals"] if p["id"] not in (orphan["id"], delete["id"])}
    assert ("delete", f"{MEM}/gone.md") not in fresh
    assert ("update", f"{MEM}/orphan.md") in fresh


# the repairs accepted, then undone newest first; every step is skipped when a rerun finds it done
_WORKLOAD = """
import sys
from cairn.protocol.settings import Settings
from cairn.worker.memory import apply
from cairn.worker.memory.store import MemoryStore
ws, ids = sys.argv[1], sys.argv[2:]
with MemoryStore(ws, Settings()) as ms:
    apply.recover(ms)
    for pid in ids:
        if not apply.decisions(ms, pid):
            apply.accept(ms, pid)
    for pid in reversed(ids):
        if [d.action for d in apply.decisions(ms, pid)] == ["accept"]:
            apply.undo(ms, pid)
"""


def _work(ws: Path, ids: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return run_python(["-c", _WORKLOAD, str(ws), *ids], env=child_env(**env), timeout=120)


def test_a_kill_around_each_index_write_leaves_a_whole_state_that_a_rerun_completes(
        workspace: Path, tmp_path: Path) -> None:
    props = _setup(workspace)
    ids = [props[f"delete:{MEM}/gone.md"]["id"], props[f"update:{MEM}/orphan.md"]["id"]]
    after_delete = INDEX.replace(GONE_LINE + b"\r\n", b"")
    legit = {INDEX, after_delete, after_delete + b"\r\n" + ORPHAN_LINE}
    ref, log = tmp_path / "ref", tmp_path / "points.log"
    shutil.copytree(workspace, ref)
    # every shard folder of the reference's bundles exists already, so its points are numbered unlike any
    # killed run's (a decision record is timestamped: its shard folder is made when missing, see tests/sweep.py);
    # the sweep must find each write by its label, as it must anyway when a killed run's shards differ
    for shard in range(256):
        (ref / MEMORY_BUNDLES / f"{shard:02x}").mkdir(mode=0o700, parents=True, exist_ok=True)
    assert _work(ref, ids, CAIRN_CRASH_LOG=str(log)).returncode == 0
    assert (ref / INDEX_REL).read_bytes() == INDEX
    labels = [x.split(" ", 1)[1] for x in log.read_text().splitlines()]
    writes = [k for k, label in enumerate(labels, 1) if label == "rename MEMORY.md"]
    assert len(writes) == 4  # two accepts, two undos: the guarded topic is never renamed over
    hits = []
    for k in [w + d for w in writes for d in (-1, 0, 1)]:  # just before, at and after each write
        ws = tmp_path / f"k{k}"
        shutil.copytree(workspace, ws)
        where = sweep.kill_like(labels, k, tmp_path / "kill.log", _work, ws, ids)
        hits.append(where)
        mem = ws / MEM
        assert (mem / "MEMORY.md").read_bytes() in legit, (k, where)
        assert (mem / "orphan.md").read_bytes() == ORPHAN and not (mem / "gone.md").exists(), (k, where)
        again = _work(ws, ids, CAIRN_TEST_CLOCK_OFFSET="1000")
        assert again.returncode == 0, (k, where, again.stderr[-800:])
        assert (mem / "MEMORY.md").read_bytes() == INDEX and (mem / "orphan.md").read_bytes() == ORPHAN, (k, where)
        assert not [m for m in (ws / ".cairn/state/memory-write/markers").iterdir()
                    if not m.name.startswith(".tmp-")], (k, where)
        assert {_states(ws)[i][0] for i in ids} == {"undone"}, (k, where)
        shutil.rmtree(ws)
    # the sweep really reached each write: killed before its temp's fsync, before the rename, just after it
    assert [h.split(" ", 1)[1] for h in hits] == ["fsync-temp", "rename MEMORY.md", "fsync-dir"] * 4


def test_an_explicit_review_with_no_new_digests_still_repairs_the_index(workspace: Path) -> None:
    from cairn.worker.memory.review import general_review
    from cairn.worker.memory.store import MemoryStore

    props = _setup(workspace)  # reviews the demo's digests: nothing is left unreviewed
    for pid in (p["id"] for p in props.values()):
        cairn(workspace, "reject", pid)
    (workspace / MEM / "last.md").unlink()  # the user deletes a topic by hand; its entry now dangles
    with MemoryStore(str(workspace), Settings()) as ms:
        quiet, more = general_review(ms, automatic=True)
        assert quiet.review is None and quiet.digests == 0 and not more  # idle: no debt, no scan
        result, more = general_review(ms, automatic=False)
    assert result.review and result.digests == 0 and result.proposals == 1 and not more
    rows = cairn_json(workspace, "proposals")
    assert isinstance(rows, list)
    (fresh,) = [r for r in rows if r["state"] == "pending"]
    assert (fresh["kind"], fresh["target"]) == ("delete", f"{MEM}/last.md")
    # proposed once: a second explicit review finds it pending and proposes nothing
    again = cairn_json(workspace, "review")
    assert isinstance(again, dict) and not again.get("proposals")
    cairn(workspace, "accept", fresh["id"])
    assert b"last.md" not in (workspace / INDEX_REL).read_bytes()


def test_a_stale_repair_does_not_block_a_fresh_one(workspace: Path) -> None:
    props = _setup(workspace)
    orphan = props[f"update:{MEM}/orphan.md"]
    for pid in (p["id"] for p in props.values() if p["id"] != orphan["id"]):
        cairn(workspace, "reject", pid)
    topic = workspace / MEM / "orphan.md"
    topic.write_bytes(topic.read_bytes() + b"- The chain is lubricated monthly.\n")  # the user edits the topic
    assert _states(workspace)[orphan["id"]][0] == "stale"
    again = cairn_json(workspace, "review")
    assert isinstance(again, dict) and again["proposals"] == 1
    (fresh,) = [r for r in cairn_json(workspace, "proposals") if r["state"] == "pending"]
    assert (fresh["kind"], fresh["target"]) == ("update", f"{MEM}/orphan.md") and fresh["id"] != orphan["id"]
    cairn(workspace, "accept", fresh["id"])
    assert ORPHAN_LINE in (workspace / INDEX_REL).read_bytes()
    assert cairn_json(workspace, "review")["proposals"] == 0  # applied: nothing left to repair
