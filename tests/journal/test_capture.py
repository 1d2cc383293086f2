"""Capture and seal, through the real CLI on real files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from cairn.protocol import codec
from cairn.protocol.journal import Seal
from cairn.worker.ingest.importers import load

from tests.journal.helpers import ALL_FORMATS, DEMO, batches, cairn, cairn_json, ready_evidence, segment_path

J = ".cairn/state/journal"


def _captures(ws: Path) -> list[Path]:
    return sorted((ws / J / "captures").iterdir())


def test_reimport_is_idempotent_and_a_grown_file_adds_only_new_turns(workspace: Path, tmp_path: Path) -> None:
    src = tmp_path / "session.jsonl"
    lines = DEMO.read_text().splitlines(keepends=True)
    # keep the first part of the session: a later, longer copy is the "grown" file
    cut = next(i for i, line in enumerate(lines) if '"Now add a retry' in line or i > len(lines) // 2)
    src.write_text("".join(lines[:cut]))
    first = cairn_json(workspace, "import", str(src))
    assert first["captured"] > 0 and first["skipped"] == 0
    again = cairn_json(workspace, "import", str(src))
    assert again == dict(first, captured=0, skipped=first["captured"])
    src.write_text("".join(lines))
    grown = cairn_json(workspace, "import", str(src))
    assert grown["skipped"] == first["captured"]
    assert grown["captured"] == 10 - first["captured"]
    # one open capture holds every turn exactly once
    (cap,) = _captures(workspace)
    entries = ready_evidence(workspace, cap)
    assert len(entries) == 10 == len({e.turn_id for _, e in entries})
    assert sorted(seq for seq, _ in entries) == list(range(10))
    # two imports wrote two batches: a bounded number of files, not one per turn
    assert len(batches(cap)) == 2 and len(list(cap.glob("pin-*"))) == 2


def test_every_ready_turn_has_pinned_verified_evidence(workspace: Path) -> None:
    cairn(workspace, "import", str(DEMO))
    (cap,) = _captures(workspace)
    (batch,) = batches(cap)
    assert (cap / f"pin-{batch.segment}").exists()
    blob = segment_path(workspace, batch.segment)
    assert oct(blob.stat().st_mode & 0o777) == "0o600"
    evs = ready_evidence(workspace, cap)
    assert [seq for seq, _ in evs] == list(range(10))
    assert all(ev.policy.provider == "extractive" for _, ev in evs)
    assert oct((workspace / ".cairn/state").stat().st_mode & 0o777) == "0o700"


def test_oversized_turn_is_recorded_unknown_not_truncated(workspace: Path, tmp_path: Path) -> None:
    big = "x" * (600 * 1024)
    src = tmp_path / "big.md"
    src.write_text(f"# aider chat started at 2025-01-01 10:00:00\n\n#### {big}\n\nsure.\n\n#### from now on never "
                   "use tabs\n\nNoted.\n")
    cairn(workspace, "import", str(src), "--format", "aider", "--ended")  # its last turn too: the session is over
    (cap,) = _captures(workspace)
    evs = [e for _, e in ready_evidence(workspace, cap)]
    over = [e for e in evs if e.oversized]
    assert len(over) == 1 and over[0].user == "" and over[0].size > 600 * 1024
    cairn(workspace, "seal")
    cairn(workspace, "process")
    (d,) = cairn_json(workspace, "journal")
    # the oversized turn is covered but never becomes (wrong) evidence
    assert over[0].turn_id in d["turn_ids"]
    assert all(over[0].turn_id not in n["turn_ids"] for n in d["notes"])
    assert any("tabs" in n["body"] for n in d["notes"])


def test_a_short_rule_before_an_oversized_reply_keeps_the_users_words(workspace: Path, tmp_path: Path) -> None:
    """The turn is past the limit by its reply alone: the reply is left out whole, the user's words are kept
    whole and reach the journal (before, both were emptied and the rule was lost)."""
    rule = "Never commit generated files; regenerate them in CI."
    src = tmp_path / "big.md"
    src.write_text(f"# aider chat started at 2025-01-01 10:00:00\n\n#### {rule}\n\n" + "word " * (140 * 1024) + "\n")
    cairn(workspace, "import", str(src), "--format", "aider", "--ended")
    (cap,) = _captures(workspace)
    (ev,) = [e for _, e in ready_evidence(workspace, cap)]
    assert ev.oversized and ev.user == rule and ev.assistant == "" and ev.size > 512 * 1024
    cairn(workspace, "seal")
    cairn(workspace, "process")
    (d,) = cairn_json(workspace, "journal")
    assert any(ev.turn_id in n["turn_ids"] and "generated files" in n["body"] for n in d["notes"]), d["notes"]


def test_sealing_keeps_the_first_trigger_and_never_seals_an_empty_capture(workspace: Path) -> None:
    assert cairn_json(workspace, "seal")["sealed"] == []
    cairn(workspace, "import", str(DEMO))
    assert len(cairn_json(workspace, "seal", "--trigger", "compaction")["sealed"]) == 1
    assert cairn_json(workspace, "seal", "--trigger", "clear")["sealed"] == []
    (cap,) = _captures(workspace)
    assert codec.decode((cap / "seal").read_bytes(), Seal).trigger == "compaction"
    bad = cairn(workspace, "seal", "--trigger", "lunch", check=False)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


def test_turns_after_a_seal_start_a_new_capture(workspace: Path, tmp_path: Path) -> None:
    src = tmp_path / "s.jsonl"
    lines = DEMO.read_text().splitlines(keepends=True)
    src.write_text("".join(lines[:20]))
    cairn(workspace, "import", str(src))
    cairn(workspace, "seal")
    src.write_text("".join(lines))
    cairn(workspace, "import", str(src))
    caps = _captures(workspace)
    assert len(caps) == 2
    assert (caps[0] / "seal").exists() and not (caps[1] / "seal").exists()
    turns = [len(ready_evidence(workspace, c)) for c in caps]
    assert sum(turns) == 10 and all(turns)


def test_idle_sealing_waits_for_the_quiet_period(workspace: Path) -> None:
    from cairn.protocol.worker import WorkerRequest
    from cairn.worker.entry import run_request

    cairn(workspace, "import", str(DEMO))
    r = run_request(WorkerRequest(job="seal-idle", workspace=str(workspace), args={"quiet_seconds": 1200}))
    assert r.result["sealed"] == 0
    # 21 minutes later on the target clock
    import os

    os.environ["CAIRN_TEST_CLOCK_OFFSET"] = str(21 * 60)
    try:
        r = run_request(WorkerRequest(job="seal-idle", workspace=str(workspace), args={"quiet_seconds": 1200}))
    finally:
        del os.environ["CAIRN_TEST_CLOCK_OFFSET"]
    assert r.result["sealed"] == 1
    (cap,) = _captures(workspace)
    assert json.loads((cap / "seal").read_text())["trigger"] == "idle"


def test_unknown_and_malformed_files_lose_nothing(workspace: Path, tmp_path: Path) -> None:
    cairn(workspace, "import", str(DEMO))
    before = sorted(p.name for p in _captures(workspace)[0].iterdir())
    junk = tmp_path / "notes.txt"
    junk.write_text("just some text\n")
    r = cairn(workspace, "import", str(junk), check=False)
    assert r.returncode == 2 and "E_IMPORT_UNKNOWN_FORMAT" in r.stderr
    broken = tmp_path / "broken.jsonl"
    shutil.copy(ALL_FORMATS["claude-code"], broken)
    with broken.open("a") as fh:
        fh.write("{not json}\n{\"type\":\"user\"}\n")
    r = cairn(workspace, "import", str(broken), check=False)
    assert r.returncode == 2 and "E_IMPORT_MALFORMED" in r.stderr and "line" in r.stderr
    assert sorted(p.name for p in _captures(workspace)[0].iterdir()) == before


def test_a_missing_file_among_those_named_refuses_the_import_whatever_its_place(workspace: Path,
                                                                              tmp_path: Path) -> None:
    """``cairn import good.jsonl nope.jsonl`` captured good.jsonl, then failed with no summary, and named the
    other way round captured nothing: the files before the bad one were captured, those after it not. Now no
    file is captured until every file named can be opened; the error names the bad one."""
    good = tmp_path / "good.jsonl"
    shutil.copy(ALL_FORMATS["claude-code"], good)
    for argv in ([str(good), str(tmp_path / "nope.jsonl")], [str(tmp_path / "nope.jsonl"), str(good)]):
        r = cairn(workspace, "import", *argv, check=False)
        assert r.returncode == 2 and r.stderr.startswith("cairn: E_IMPORT_UNREADABLE: nope.jsonl: cannot open")
        assert not (workspace / ".cairn" / "state" / "journal" / "captures").exists()
    assert cairn_json(workspace, "import", str(good))["captured"] > 0


def test_a_claude_session_ended_before_its_last_signal_is_captured_whole_once_it_is_over(
        workspace: Path, tmp_path: Path) -> None:
    """Read while it may go on, its last turn waits (counted pending); read once it is over (the hook's
    session end, `--ended`), the file unchanged, the turn is captured, once."""
    import json as _json

    from cairn.worker.ingest.importers import claude_code

    from tests.support.transcripts import FIXTURES

    src = tmp_path / "s.jsonl"
    lines = (FIXTURES / "claude-code" / "entire-plan-clear-context.jsonl").read_text().splitlines()
    last = max(i for i, ln in enumerate(lines) if _json.loads(ln).get("type") == "assistant")
    lines = lines[:last + 1] + [ln for ln in lines[last + 1:] if not claude_code._stop_signal(_json.loads(ln))]
    src.write_text("\n".join(lines) + "\n")
    first = cairn_json(workspace, "import", str(src))
    assert first["pending"] == 1 and first["captured"] >= 1
    again = cairn_json(workspace, "import", "--ended", str(src))
    assert (again["captured"], again["skipped"]) == (1, first["captured"])
    assert cairn_json(workspace, "import", "--ended", str(src))["captured"] == 0


def test_a_record_torn_in_the_middle_of_a_session_leaves_out_that_line_only(workspace: Path, tmp_path: Path) -> None:
    """A writer that died mid-record, then the agent went on appending: the torn line is reported and left out,
    every turn around it captured (the whole file was refused, on every later run too)."""
    src = tmp_path / "s.jsonl"
    lines = ALL_FORMATS["claude-code"].read_text().splitlines()
    src.write_text("\n".join([*lines[:4], '{"type": "user", "message": {"role": "us', *lines[4:]]) + "\n")
    r = cairn(workspace, "import", "--ended", str(src), "--json")
    out = json.loads(r.stdout)
    assert r.returncode == 0 and out["captured"] == len(load(ALL_FORMATS["claude-code"])[0].sealed().turns)
    assert [(m["line"], m["code"]) for m in out["malformed"]] == [(5, "E_IMPORT_MALFORMED")]
