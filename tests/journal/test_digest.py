"""Digest work: publication, all-none retirement, attempts, recovery, fencing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cairn.protocol import codec
from cairn.protocol.journal import DigestResult, GroupCoverage, Retired
from cairn.protocol.vocab import OutcomeKind
from cairn.worker.journal import digest as D
from cairn.worker.journal.store import Journal

from tests.journal.helpers import ALL_FORMATS, DEMO, cairn, cairn_json

J = ".cairn/state/journal"


def _cap(ws: Path) -> Path:
    (cap,) = sorted((ws / J / "captures").iterdir())
    return cap


def test_run_publishes_only_reusable_knowledge_with_cited_turns(workspace: Path) -> None:
    out = cairn_json(workspace, "run", str(DEMO))
    (d,) = out["digests"]
    notes = {(n["type"], n["title"]) for n in d["notes"]}
    assert ("feedback", "Never use bare except in this codebase: catch the specific exception and log it with "
            "context") in notes
    assert ("reference", "The tracker is https://tracker.example.org/CAIRN") in notes
    assert all(n["turn_ids"] and set(n["turn_ids"]) <= set(d["turn_ids"]) for n in d["notes"])
    text = json.dumps(d)
    # tasks, logs and code from the same session never reach the journal
    for noise in ("Traceback", "def ", "rollover test is failing"):
        assert noise not in text
    # coverage for every turn, pins released, capture retired
    cap = _cap(workspace)
    assert not list(cap.glob("pin-*"))
    assert codec.decode((cap / "retired").read_bytes(), Retired).reason == "published"
    (cov,) = [codec.decode(p.read_bytes(), GroupCoverage) for p in (workspace / J / "coverage").iterdir()]
    (covered,) = cov.captures
    assert covered.turn_ids == tuple(d["turn_ids"]) and covered.digest == d["id"]
    assert cairn(workspace, "doctor").returncode == 0


@pytest.mark.parametrize("fmt", sorted(ALL_FORMATS))
def test_run_on_every_supported_format(workspace: Path, fmt: str) -> None:
    out = cairn_json(workspace, "run", str(ALL_FORMATS[fmt]))
    assert out["import"]["captured"] > 0
    assert out["process"]["failed"] == 0 and out["process"]["remaining"] == 0
    for d in out["digests"]:
        assert d["notes"] and all(n["type"] in ("user", "feedback", "project", "reference") for n in d["notes"])
        assert all(set(n["turn_ids"]) <= set(d["turn_ids"]) for n in d["notes"])
    # running again changes nothing: no new capture, no second digest
    again = cairn_json(workspace, "run", str(ALL_FORMATS[fmt]))
    assert again["import"]["captured"] == 0 and again["digests"] == out["digests"]


def test_all_none_capture_retires_without_a_public_entry(workspace: Path, tmp_path: Path) -> None:
    src = tmp_path / ".aider.chat.history.md"
    src.write_text("# aider chat started at 2025-01-01 10:00:00\n\n#### please fix the failing test in ledger.py\n\n"
                   "Done, the test passes now.\n\n#### can you add a docstring to parse()\n\nAdded.\n")
    out = cairn_json(workspace, "run", str(src))
    assert out["digests"] == [] and out["process"]["all_none"] == 1
    assert not (workspace / ".cairn/journal").exists() or not list((workspace / ".cairn/journal").iterdir())
    cap = _cap(workspace)
    assert codec.decode((cap / "retired").read_bytes(), Retired).reason == "all-none"
    (cov,) = [codec.decode(p.read_bytes(), GroupCoverage) for p in (workspace / J / "coverage").iterdir()]
    assert len(cov.captures[0].turn_ids) == 2 and cov.captures[0].digest is None


def _failing_workspace(ws: Path) -> None:
    (ws / ".cairn").mkdir()
    (ws / ".cairn/config.toml").write_text('provider = "openai"\nmodel = "m"\nendpoint = "http://127.0.0.1:9/v1"\n')
    cairn(ws, "trust")  # a workspace file may name an endpoint only when the user trusts the workspace
    cairn(ws, "import", str(DEMO))
    cairn(ws, "seal")


def test_three_failed_attempts_exhaust_then_retry_and_discard(workspace: Path) -> None:
    _failing_workspace(workspace)
    r = cairn(workspace, "process", "--json", check=False)
    first = json.loads(r.stdout)
    assert r.returncode == 1 and first["failed"] == 1 and first["exhausted"] == []
    (row,) = cairn_json(workspace, "jobs")
    assert row["state"] == "retry-waiting" and row["attempts"] == 1
    cairn(workspace, "process", check=False)
    third = json.loads(cairn(workspace, "process", "--json", check=False).stdout)
    (row,) = cairn_json(workspace, "jobs")
    assert row["state"] == "exhausted" and third["exhausted"] == [row["capture"]]
    # exhausted captures wait: processing again admits nothing
    idle = json.loads(cairn(workspace, "process", "--json", check=False).stdout)
    assert idle["failed"] == 0 and idle["remaining"] == 0
    assert cairn_json(workspace, "retry", row["capture"][:20])["state"] == "pending"
    cairn(workspace, "discard", row["capture"])
    (row,) = cairn_json(workspace, "jobs")
    assert row["state"] == "discarded"
    cap = _cap(workspace)
    assert codec.decode((cap / "retired").read_bytes(), Retired).reason == "discarded"
    assert not list(cap.glob("pin-*")) and cairn_json(workspace, "journal") == []
    assert cairn(workspace, "doctor").returncode == 0


def test_accepted_unpublished_result_is_recovered_not_reinferred(workspace: Path) -> None:
    cairn(workspace, "import", str(DEMO))
    cairn(workspace, "seal")
    with Journal(str(workspace)) as j:
        (st,) = D.capture_states(j)
        evidence, seal = D.load_evidence(j, st.cid)
        claim = j.claims.elect(f"digest/{st.cid}", purpose="digest", ttl=60, authority=j.authority)
        out = D.infer(evidence, deadline=claim.deadline)
        result = DigestResult(capture=st.cid, session_id=seal.session_id, title=None, trigger=seal.trigger,
                              turn_ids=tuple(e.turn_id for e in evidence), notes=out.notes, provider="extractive")
        sha, put = j.bundles.put_ops(codec.encode(result))
        j.claims.settle(claim, OutcomeKind.COMPLETED, bundle=sha, extra_ops=put)
        # crash here: accepted, nothing published
    # recovery publishes the accepted result: no second generation, no new inference
    counts = json.loads(cairn(workspace, "process", "--json").stdout)
    assert counts["recovered"] == 1 and counts["published"] == 0 and counts["failed"] == 0, counts
    (d,) = cairn_json(workspace, "journal")
    assert d["id"] == D.digest_id(st.cid, sha)
    gens = sorted((workspace / J / "claims").glob("digest_*/*.claim"))
    assert len(gens) == 1  # no second generation was admitted


def test_a_late_owner_cannot_accept_after_takeover(workspace: Path) -> None:
    from cairn.protocol.errors import CairnError, ErrorCode

    cairn(workspace, "import", str(DEMO))
    cairn(workspace, "seal")
    with Journal(str(workspace)) as j:
        (st,) = D.capture_states(j)
        old = j.claims.elect(f"digest/{st.cid}", purpose="digest", ttl=60, authority=j.authority)
    with Journal(str(workspace), clock_offset=1000) as later:
        counts, _ = D.process(later)
        assert counts.published == 1
    with Journal(str(workspace)) as j:
        sha, put = j.bundles.put_ops(b'{"not":"accepted"}')
        with pytest.raises(CairnError) as ei:
            j.claims.settle(old, OutcomeKind.COMPLETED, bundle=sha, extra_ops=put)
        assert ei.value.code is ErrorCode.CLAIM_LOST
    # the takeover counted as an attempt, and exactly one digest exists
    cap = _cap(workspace)
    assert [p.name for p in cap.glob("fail-*")] == ["fail-1"]
    assert len(cairn_json(workspace, "journal")) == 1


def test_an_unexpected_error_of_the_provider_call_is_a_counted_failed_attempt(
        workspace: Path, user_config_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from cairn.server.cli.journal import process_workspace
    from cairn.worker.providers import openai_compat

    (user_config_home / "cairn").mkdir()
    (user_config_home / "cairn/config.toml").write_text(
        f'provider = "command"\ncommand = {json.dumps([sys.executable, "-c", "pass"])}\n')
    cairn(workspace, "import", str(DEMO))
    cairn(workspace, "seal")

    async def broken(*args: object, **kwargs: object) -> None:  # as a nursery raises a bug: in a group
        raise ExceptionGroup("Exceptions from Trio nursery", [KeyError("prompt text")])

    monkeypatch.setattr(openai_compat, "digest", broken)
    for attempt in (1, 2):
        (failure,) = process_workspace(str(workspace)).failures
        assert failure.code == "E_PROVIDER_FAILED" and failure.attempt == attempt, failure
        assert "KeyError" in failure.message and "prompt text" not in failure.message


def test_a_provider_error_in_an_exception_group_is_itself() -> None:
    from cairn.protocol.errors import CairnError, ErrorCode
    from cairn.worker.providers.route import provider_error

    invalid = CairnError(ErrorCode.PROVIDER_INVALID_REPLY, "too long")
    assert provider_error(ExceptionGroup("nursery", [ExceptionGroup("inner", [invalid])])) is invalid
    assert provider_error(invalid) is invalid
    assert provider_error(ValueError("a reply's text")).code is ErrorCode.PROVIDER_FAILED
