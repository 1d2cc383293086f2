"""Batched capture: segments, one claim generation per batch, torn and cut-short batches."""

from __future__ import annotations

import json
from pathlib import Path

from cairn.protocol import codec
from cairn.protocol.claims import OutcomeRecord
from cairn.state import program as P
from cairn.state.fsdir import PinnedDir
from cairn.state.segments import SegmentStore

from tests.journal.helpers import DEMO, J, batches, cairn, cairn_json, ready_evidence, segment_path


def _only_capture(ws: Path) -> Path:
    (cap,) = sorted((ws / J / "captures").iterdir())
    return cap


def test_each_batch_is_one_segment_pin_and_entry_under_its_own_generation(workspace: Path) -> None:
    r = json.loads(cairn(workspace, "import", str(DEMO), "--json", env={"CAIRN_CAPTURE_BATCH_TURNS": "3"}).stdout)
    assert r["captured"] == 10 and not r["interrupted"]
    cap = _only_capture(workspace)
    assert [(b.seq, len(b.turn_ids)) for b in batches(cap)] == [(0, 3), (3, 3), (6, 3), (9, 1)]
    assert sorted(p.name for p in cap.glob("pin-*")) == sorted(f"pin-{b.segment}" for b in batches(cap))
    assert [seq for seq, _ in ready_evidence(workspace, cap)] == list(range(10))
    (scope,) = [d for d in (workspace / J / "claims").iterdir() if d.name.startswith("session")]
    outcomes = [codec.decode(p.read_bytes(), OutcomeRecord) for p in sorted(scope.glob("*.outcome"))]
    # one settled generation per batch: no generation holds more than one batch's work
    assert [o.payload["captured"] for o in outcomes if o.payload] == [3, 3, 3, 1]
    assert all(o.kind == "completed" for o in outcomes)
    assert not (workspace / J / "turns").exists() and not (workspace / J / "evidence").exists()


def test_a_truncated_segment_is_found_by_doctor_and_recaptured_from_the_source(workspace: Path) -> None:
    cairn(workspace, "import", str(DEMO), env={"CAIRN_CAPTURE_BATCH_TURNS": "4"})
    cap = _only_capture(workspace)
    before = ready_evidence(workspace, cap)
    victim = segment_path(workspace, batches(cap)[1].segment)
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    doctor = cairn(workspace, "doctor", check=False)
    assert doctor.returncode == 1 and "V_SEGMENT_TORN" in doctor.stdout
    # a digest of this capture would fail closed rather than read torn evidence; the source rebuilds it
    again = cairn_json(workspace, "import", str(DEMO))
    assert (again["captured"], again["skipped"], again["repaired"]) == (0, 10, 1)
    assert cairn(workspace, "doctor", check=False).returncode == 0
    assert ready_evidence(workspace, cap) == before


def test_a_batch_cut_short_before_its_entry_is_discarded_whole(workspace: Path, tmp_path: Path) -> None:
    src = tmp_path / "s.jsonl"
    lines = DEMO.read_text().splitlines(keepends=True)
    src.write_text("".join(lines[:20]))
    first = cairn_json(workspace, "import", str(src))
    cap = _only_capture(workspace)
    # what a kill between the pin and the entry leaves: a pinned segment no entry names
    with PinnedDir.open_root(workspace) as root:
        sha, ops = SegmentStore(root, f"{J}/segments").put_ops(b"a batch that never became ready")
        assert P.run(root, [*ops, P.Create(f"{J}/captures/{cap.name}/pin-{sha}")]).ok
    assert cairn(workspace, "doctor", check=False).returncode == 0  # not ready: not a violation
    src.write_text("".join(lines))
    grown = cairn_json(workspace, "import", str(src))
    assert grown["captured"] == 10 - first["captured"]
    assert not (cap / f"pin-{sha}").exists() and not segment_path(workspace, sha).exists()
    assert {p.name[4:] for p in cap.glob("pin-*")} == {b.segment for b in batches(cap)}
    assert [seq for seq, _ in ready_evidence(workspace, cap)] == list(range(10))


def test_sealing_discards_a_batch_cut_short(workspace: Path) -> None:
    cairn(workspace, "import", str(DEMO))
    cap = _only_capture(workspace)
    with PinnedDir.open_root(workspace) as root:
        sha, ops = SegmentStore(root, f"{J}/segments").put_ops(b"cut short")
        assert P.run(root, [*ops, P.Create(f"{J}/captures/{cap.name}/pin-{sha}")]).ok
    assert len(cairn_json(workspace, "seal")["sealed"]) == 1
    assert not (cap / f"pin-{sha}").exists() and not segment_path(workspace, sha).exists()
