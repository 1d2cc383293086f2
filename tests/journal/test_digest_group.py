"""Grouped digest work: several captures per claim generation, attempts counted per capture."""

from __future__ import annotations

from pathlib import Path

from cairn.protocol import codec
from cairn.protocol.claims import OutcomeRecord
from cairn.protocol.journal import DigestGroup, GroupCoverage

from tests.journal.helpers import ALL_FORMATS, DEMO, J, cairn, cairn_json


def _three_sealed(ws: Path) -> list[str]:
    for src in (DEMO, ALL_FORMATS["claude-code"], ALL_FORMATS["codex"]):
        cairn(ws, "import", str(src))
    cairn(ws, "seal")
    return sorted(p.name for p in (ws / J / "captures").iterdir())


def test_several_captures_are_digested_under_one_generation_with_one_coverage_record(workspace: Path) -> None:
    cids = _three_sealed(workspace)
    counts = cairn_json(workspace, "process")
    assert counts["published"] + counts["all_none"] == 3 and counts["failed"] == 0
    (scope,) = (workspace / J / "claims").glob("digest_group*")
    outcomes = [codec.decode(p.read_bytes(), OutcomeRecord) for p in scope.glob("*.outcome")]
    (accepted,) = [o for o in outcomes if o.kind == "completed"]
    assert accepted.bundle is not None
    group = codec.decode((workspace / J / "bundles" / accepted.bundle[:2] / accepted.bundle).read_bytes(), DigestGroup)
    assert sorted(r.capture for r in group.results) == cids
    (cov,) = (workspace / J / "coverage").iterdir()
    assert sorted(c.capture for c in codec.decode(cov.read_bytes(), GroupCoverage).captures) == cids
    for c in cids:
        cap = workspace / J / "captures" / c
        assert (cap / "retired").exists() and not list(cap.glob("pin-*"))
    # no per-capture claim was needed for the embedded engine
    assert not [d for d in (workspace / J / "claims").iterdir() if d.name.startswith("digest_") and d != scope]
    assert cairn(workspace, "doctor", check=False).returncode == 0
    # a group published long ago is no recovery: every later pass said "recovered 3"
    assert cairn_json(workspace, "process")["recovered"] == 0


def test_a_group_generation_taken_over_counts_an_attempt_for_each_capture_it_named(workspace: Path) -> None:
    from cairn.worker.journal.digest_group import elect_group
    from cairn.worker.journal.store import Journal

    cids = _three_sealed(workspace)
    with Journal(str(workspace)) as j:
        elect_group(j, "digest-group", cids[:2])  # a worker that died holding the group
    assert cairn_json(workspace, "process")["busy"] == 3  # held: nothing digested, nothing counted
    # its deadline passed: the next pass takes the scope over and counts the attempt
    assert cairn(workspace, "process", env={"CAIRN_TEST_CLOCK_OFFSET": "1000"}).returncode == 0
    for c in cids:
        fails = [p.name for p in (workspace / J / "captures" / c).glob("fail-*")]
        assert fails == (["fail-g1"] if c in cids[:2] else []), c
        assert (workspace / J / "captures" / c / "retired").exists()
