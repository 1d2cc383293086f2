"""Remember this: CLI end to end, bad input, redaction, auto mode, coverage and the cap, coalescing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cairn.protocol import codec
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.settings import Settings
from cairn.worker.memory import focused as F
from cairn.worker.memory import review as R
from cairn.worker.memory.remember import MAX_BYTES, check_request, remember
from cairn.worker.memory.store import MemoryStore

from tests.journal.helpers import DEMO, cairn, cairn_json
from tests.support import PYTHON, REPO, child_env, users_auto_mode

SECRET = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6"
FACTS = [  # unrelated facts: no two are similar enough to share a topic
    "The billing service is written in Rust",
    "Staging deploys happen every Tuesday morning",
    "Grafana dashboards live in the ops repository",
    "Our Postgres major version is pinned to sixteen",
    "Translations are managed through Weblate",
    "Feature flags come from a LaunchDarkly project",
    "The mobile app targets Android API level 26",
    "Nightly fuzzing runs on a dedicated machine",
    "Invoices are rendered with WeasyPrint",
    "Customer exports expire after thirty days",
]


def _tree_text(root: Path) -> str:
    return "\n".join(p.read_bytes().decode("utf-8", "replace") for p in root.rglob("*") if p.is_file())


def test_cli_remember_makes_a_pending_proposal_at_once(workspace: Path) -> None:
    out = cairn_json(workspace, "remember", "--type", "feedback", "Use", "pnpm,", "not", "npm")
    assert out["reviewed"] and out["reviews"] == 1 and not out["busy"]
    [p] = out["proposals"]
    assert p["state"] == "pending" and p["kind"] == "create" and p["title"].endswith("Use pnpm, not npm")
    shown = cairn(workspace, "show", p["id"]).stdout
    assert "+- Use pnpm, not npm" in shown and "type: feedback" in shown
    # the text is a captured turn of its own remember session: private evidence, then a journal digest
    jobs = cairn_json(workspace, "jobs")
    assert [j["state"] for j in jobs] == ["pending"]
    cairn(workspace, "process")
    [entry] = cairn_json(workspace, "journal")
    assert entry["title"] == "remember" and entry["notes"][0]["type"] == "feedback"
    # the same text again: nothing new is captured or proposed, the same proposal is reported
    again = cairn_json(workspace, "remember", "--type", "feedback", "Use pnpm, not npm")
    assert again["remember"] == out["remember"] and again["proposals"] == out["proposals"]
    assert len(cairn_json(workspace, "proposals")) == 1


def test_a_remembered_text_is_classified_when_no_type_is_given(workspace: Path) -> None:
    out = cairn_json(workspace, "remember", "I prefer tabs over spaces in Makefiles")
    assert "user memory" in out["proposals"][0]["title"]
    out = cairn_json(workspace, "remember", "The staging database lives in eu-west-2")
    assert "project memory" in out["proposals"][0]["title"]


def test_remember_from_a_file_and_from_stdin(workspace: Path) -> None:
    note = workspace / "note.txt"
    note.write_text("Release notes go in CHANGES.md,\nnewest first.\n")
    out = cairn_json(workspace, "remember", "--file", str(note), "--type", "project")
    [p] = out["proposals"]
    assert p["title"].endswith("Release notes go in CHANGES.md,")  # titled by its first line
    assert "+- Release notes go in CHANGES.md, newest first." in cairn(workspace, "show", p["id"]).stdout
    r = subprocess.run([PYTHON, "-m", "cairn.server", "remember", "--file", "-", "-w", str(workspace)], cwd=REPO,
                       env=child_env(), input="Never commit generated protobuf files", capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and "New feedback memory" in r.stdout


@pytest.mark.parametrize(("argv", "code", "words"), [
    (["remember", ""], "E_USAGE", "empty"),
    (["remember", " \n\t "], "E_USAGE", "empty"),
    (["remember"], "E_USAGE", "empty"),
    (["remember", "--type", "opinion", "x y"], "E_USAGE", "user, feedback, project, reference"),
    (["remember", "x " * 1001], "E_RECORD_TOO_LARGE", "at most 2000"),
    (["remember", "é" * (MAX_BYTES // 2 + 1)], "E_RECORD_TOO_LARGE", f"at most {MAX_BYTES}"),
    (["remember", "--file", "/nonexistent/n.txt"], "E_USAGE", "cannot read"),
    (["remember", "--file", "n.txt", "words"], "E_USAGE", "not both"),
    # bytes that are not UTF-8 (argv carries them as lone surrogates): refused, as --file refuses them
    (["remember", "caf\udce9 au lait"], "E_USAGE", "not UTF-8"),
])
def test_bad_remember_input_is_a_fixed_error_and_writes_nothing(workspace: Path, argv: list[str], code: str,
                                                                 words: str) -> None:
    r = cairn(workspace, *argv, check=False)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"cairn: {code}: ") and words in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.splitlines()) == 1
    assert not (workspace / ".cairn").exists()


def test_an_oversized_file_is_refused_before_it_is_read_whole(workspace: Path) -> None:
    big = workspace / "big.txt"
    big.write_bytes(b"word " * (MAX_BYTES // 5 + 10))
    r = cairn(workspace, "remember", "--file", str(big), check=False)
    assert r.returncode == 2 and r.stderr.startswith("cairn: E_RECORD_TOO_LARGE: ")


def test_the_checks_name_their_errors() -> None:
    with pytest.raises(CairnError) as e:
        check_request(["not", "text"])
    assert e.value.code is ErrorCode.USAGE
    with pytest.raises(CairnError) as e:
        check_request("ok text", 3)
    assert e.value.code is ErrorCode.USAGE
    with pytest.raises(CairnError) as e:
        check_request("ok text", None, "Bad Source!")
    assert e.value.code is ErrorCode.USAGE
    assert check_request("ok text", "", "mcp:claude-code") == ("ok text", "", "mcp:claude-code")


def test_a_secret_in_a_remembered_text_never_reaches_the_proposal_or_public_records(workspace: Path) -> None:
    out = cairn_json(workspace, "remember", f"The deploy bot uses the key {SECRET} for staging")
    [p] = out["proposals"]
    assert SECRET not in json.dumps(out)
    shown = cairn_json(workspace, "show", p["id"])
    assert SECRET not in json.dumps(shown) and "[REDACTED" in shown["diff"]
    # the after-state bundles (what accept writes) and every public record are redacted
    assert SECRET not in _tree_text(workspace / ".cairn/state/memory")
    cairn(workspace, "process")
    assert SECRET not in _tree_text(workspace / ".cairn/journal")
    cairn(workspace, "accept", p["id"])
    assert SECRET not in _tree_text(workspace / ".agents")


def test_auto_mode_applies_the_proposal_through_the_checked_path(workspace: Path) -> None:
    users_auto_mode()
    out = cairn_json(workspace, "remember", "--type", "project", "Releases are cut from the main branch")
    [p] = out["proposals"]
    assert out["applied"] == [p["id"]] and p["state"] == "applied"
    topic = workspace / ".agents/memory" / Path(p["target"]).name
    assert "Releases are cut from the main branch" in topic.read_text()
    assert "Releases are cut" in (workspace / ".agents/memory/MEMORY.md").read_text()
    cairn(workspace, "undo", p["id"])
    assert not topic.exists()


def test_a_focused_review_neither_advances_coverage_nor_counts_against_the_cap(workspace: Path) -> None:
    cairn(workspace, "import", str(DEMO))
    cairn(workspace, "seal")
    cairn(workspace, "process")
    with MemoryStore(str(workspace), Settings(mode="propose")) as ms:
        before = [d.id for d in R.unreviewed(ms)]
        for fact in FACTS:  # more focused reviews than the automatic cap allows
            assert remember(ms, fact, "project").reviews == 1
        assert [d.id for d in R.unreviewed(ms)] == before
        assert R.automatic_reviews_in_window(ms, ms.now()) == 0
        recs = R.published_reviews(ms)
        assert len(recs) == len(FACTS) > R.AUTO_CAP and all(r.remembered and not r.digests for r in recs)
        assert R.general_review(ms, automatic=True)[0].review  # the cap still has room
    # the remember captures' digests, reviewed generally, propose nothing the focused reviews did not
    cairn(workspace, "process")
    proposals = {p["id"] for p in cairn_json(workspace, "proposals")}
    cairn(workspace, "drain")
    assert {p["id"] for p in cairn_json(workspace, "proposals")} == proposals


def test_a_general_review_pass_picks_up_a_request_whose_focused_review_never_ran(workspace: Path) -> None:
    from cairn.worker.memory.remember import record_request

    with MemoryStore(str(workspace)) as ms:
        req = record_request(ms, "Docs are built with mkdocs", "project", "cli")
        assert [r.id for r in F.pending(ms)] == [req.id]
    out = cairn_json(workspace, "review")
    assert out["focused"] == 1
    with MemoryStore(str(workspace)) as ms:
        assert F.pending(ms) == []
        assert F.proposals_for(ms, req.id)["proposals"]


def test_a_caller_that_finds_the_review_busy_waits_for_its_holder(workspace: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from cairn.worker.memory import remember as RM

    with MemoryStore(str(workspace)) as ms:
        claim = ms.mclaims.elect(F.SCOPE, purpose="test", ttl=60.0, authority=ms.mauthority)
        looks: list[float] = []

        def holder_finishes(seconds: float) -> None:  # the holder settles while the caller waits
            looks.append(seconds)
            if len(looks) == 2:
                ms.mclaims.finish(claim)

        monkeypatch.setattr(RM, "_sleep", holder_finishes)
        out = RM.remember(ms, "Logs rotate daily at midnight", "project")
        assert len(looks) == 2 and out.reviewed and not out.busy and len(out.proposals) == 1


def test_a_busy_focused_review_leaves_the_request_to_its_holder(workspace: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from cairn.worker.memory import remember as RM
    from cairn.worker.memory.remember import record_request

    monkeypatch.setattr(RM, "BUSY_WAIT", 0.0)  # the caller does not wait: its report says busy
    with MemoryStore(str(workspace)) as ms:
        claim = ms.mclaims.elect(F.SCOPE, purpose="test", ttl=60.0, authority=ms.mauthority)
        out = remember(ms, "Logs rotate daily at midnight", "project")
        assert out.busy and not out.reviewed and out.proposals == ()
        record_request(ms, "Backups run hourly", "project", "cli")  # linked while the holder runs
        ms.mclaims.finish(claim)
        # the holder looks again once it settled: both requests are covered by one coalesced review
        assert F.run_focused(ms) == {"reviews": 1, "busy": False, "applied": []}
        assert F.pending(ms) == []
        [rec] = R.published_reviews(ms)
        assert len(rec.remembered) == 2


def test_a_completed_but_unpublished_focused_review_is_published_not_rerun(workspace: Path) -> None:
    with MemoryStore(str(workspace)) as ms:
        remember(ms, "The API is versioned under /v2", "reference")
        [rec] = R.published_reviews(ms)
    public = workspace / ".cairn/journal/reviews" / f"{rec.id}.json"
    public.unlink()
    with MemoryStore(str(workspace)) as ms:
        assert F.recover_focused(ms) and public.exists()
        assert not F.recover_focused(ms)
        assert codec.decode(public.read_bytes(), type(rec)) == rec


CONCURRENT = 6


def test_concurrent_remembers_coalesce_and_lose_nothing(workspace: Path) -> None:
    """Processes remembering at once: every text is covered, in fewer reviews than texts when they overlap."""
    procs = [subprocess.Popen([PYTHON, "-m", "cairn.server", "remember", "--json", "--type", "project",
                               FACTS[i], "-w", str(workspace)], cwd=REPO,
                              env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(CONCURRENT)]
    outs = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=120)
        assert p.returncode == 0, stderr
        outs.append(json.loads(stdout))
    with MemoryStore(str(workspace)) as ms:
        assert F.pending(ms) == []
        done = F.covered(ms)
        assert {o["remember"] for o in outs} <= set(done)
        recs = R.published_reviews(ms)
        assert sum(len(r.remembered) for r in recs) == CONCURRENT  # each text reviewed exactly once
    # every caller got its own proposal, whoever ran the review that covered it
    assert all(o["reviewed"] and len(o["proposals"]) == 1 for o in outs), outs
    assert len(cairn_json(workspace, "proposals")) == CONCURRENT


def test_remember_into_a_full_index_with_no_topic_says_why_nothing_was_proposed(workspace: Path) -> None:
    """MEMORY.md written by hand past its budget, no topic: the note cannot be placed. The user reads that the
    index is full, its code and what to do (before: "memory already holds it", which was false)."""
    index = workspace / ".agents" / "memory" / "MEMORY.md"
    index.parent.mkdir(parents=True)
    index.write_text("# Memory\n" + "".join(f"- a line written by hand {i}\n" for i in range(205)))
    r = cairn(workspace, "remember", "Always run the linter with ruff before committing")
    assert r.returncode == 0, r.stderr
    assert "no proposal: the memory index is full (E_INDEX_FULL" in r.stdout and "already holds" not in r.stdout
    assert "1 note(s) left out of the review (E_INDEX_FULL): MEMORY.md has no room" in r.stderr
    assert "Traceback" not in r.stderr and index.read_text().count("\n") == 206  # never cut by cairn
