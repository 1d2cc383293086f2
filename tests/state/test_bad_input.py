"""Bad records: each gets its fixed error code, and nothing is lost or rewritten."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cairn.protocol import codec
from cairn.protocol.claims import Authority, ClaimRecord
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.vocab import OutcomeKind
from cairn.state.bundles import BundleStore
from cairn.state.claims import ClaimStore, scope_dirname
from cairn.state.fsdir import PinnedDir

from tests.support import child_env
from tests.support.warm import run_python

CLAIMS = ".cairn/state/journal/claims"


def _claim_bytes(**over: object) -> bytes:
    rec = ClaimRecord(scope="s", generation=1, nonce="n", pid=1, host="h", purpose="p", created=1.0, deadline=2.0,
                      authority=Authority(workspace="/w"))
    obj = codec.to_obj(rec)
    obj.update(over)
    return codec.dumps(obj)


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"", ErrorCode.RECORD_EMPTY),
        (_claim_bytes()[:-7], ErrorCode.RECORD_TRUNCATED),
        (b"{not json", ErrorCode.RECORD_MALFORMED),
        (b"\xff\xfe", ErrorCode.RECORD_MALFORMED),
        (b"[1,2]", ErrorCode.RECORD_MALFORMED),
        (_claim_bytes(v=2), ErrorCode.RECORD_UNKNOWN_VERSION),
        (_claim_bytes(v="1"), ErrorCode.RECORD_UNKNOWN_VERSION),
        (_claim_bytes(record="claimx"), ErrorCode.RECORD_UNKNOWN_KIND),
        (_claim_bytes(surprise=1), ErrorCode.RECORD_UNKNOWN_FIELD),
        (_claim_bytes(generation="1"), ErrorCode.RECORD_INVALID_FIELD),
        (_claim_bytes(generation=True), ErrorCode.RECORD_INVALID_FIELD),
    ],
)
def test_decode_refuses_with_fixed_code(data: bytes, code: ErrorCode) -> None:
    with pytest.raises(CairnError) as ei:
        codec.decode(data, ClaimRecord)
    assert ei.value.code is code


def test_missing_field_is_not_guessed() -> None:
    obj = codec.to_obj(ClaimRecord(scope="s", generation=1, nonce="n", pid=1, host="h", purpose="p", created=1.0,
                                   deadline=2.0, authority=Authority(workspace="/w")))
    del obj["deadline"]
    with pytest.raises(CairnError) as ei:
        codec.decode(codec.dumps(obj), ClaimRecord)
    assert ei.value.code is ErrorCode.RECORD_INVALID_FIELD


def _store(ws: Path) -> ClaimStore:
    return ClaimStore(PinnedDir.open_root(ws), CLAIMS)


@pytest.mark.parametrize(
    ("damage", "code"),
    [
        (lambda p: p.write_bytes(b""), "E_RECORD_EMPTY"),
        (lambda p: p.write_bytes(p.read_bytes()[:40]), "E_RECORD_TRUNCATED"),
        (lambda p: p.write_bytes(p.read_bytes().replace(b'"v":1', b'"v":9')), "E_RECORD_UNKNOWN_VERSION"),
    ],
)
def test_damaged_claim_blocks_election_and_doctor_reports_it(workspace: Path, damage, code: str) -> None:
    store = _store(workspace)
    c = store.elect("scope", purpose="t", ttl=60, authority=Authority(workspace="w"))
    store.settle(c, OutcomeKind.COMPLETED)
    path = workspace / CLAIMS / "scope" / "1.claim"
    damage(path)
    before = path.read_bytes()
    with pytest.raises(CairnError) as ei:
        _store(workspace).elect("scope", purpose="t", ttl=60, authority=Authority(workspace="w"))
    assert ei.value.code == code
    # nothing was lost or "repaired" by guessing; no successor was elected on top of it
    assert path.read_bytes() == before
    assert not (workspace / CLAIMS / "scope" / "2.claim").exists()
    r = run_python(["-m", "cairn.server", "doctor", "-w", str(workspace)], env=child_env())
    assert r.returncode == 1
    assert code in r.stdout and "scope/1.claim" in r.stdout


def test_wrong_hash_bundle_is_refused_and_kept(workspace: Path) -> None:
    root = PinnedDir.open_root(workspace)
    bs = BundleStore(root, ".cairn/state/journal/bundles")
    sha = bs.put(b"evidence")
    p = workspace / bs.path(sha)
    p.write_bytes(b"tampered")
    with pytest.raises(CairnError) as ei:
        bs.get(sha)
    assert ei.value.code is ErrorCode.BUNDLE_HASH_MISMATCH
    assert p.read_bytes() == b"tampered"
    r = run_python(["-m", "cairn.server", "doctor", "-w", str(workspace), "--json"], env=child_env())
    assert r.returncode == 1 and "E_BUNDLE_HASH_MISMATCH" in r.stdout
    # a later put of the true bytes repairs it (content-addressed: the right bytes are known)
    assert bs.put(b"evidence") == sha and bs.get(sha) == b"evidence"


def test_symlinked_record_and_directory_fail_closed(workspace: Path, tmp_path: Path) -> None:
    store = _store(workspace)
    c = store.elect("scope", purpose="t", ttl=60, authority=Authority(workspace="w"))
    store.settle(c, OutcomeKind.COMPLETED)
    # a symlinked outcome file
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    real = elsewhere / "1.outcome"
    outcome = workspace / CLAIMS / "scope" / "1.outcome"
    real.write_bytes(outcome.read_bytes())
    outcome.unlink()
    os.symlink(real, outcome)
    with pytest.raises(CairnError) as ei:
        _store(workspace).newest("scope")
    assert ei.value.code is ErrorCode.PATH_SYMLINK
    # a symlinked directory component
    victim = tmp_path / "victim"
    victim.mkdir()
    os.rename(workspace / CLAIMS / "scope", tmp_path / "moved")
    os.symlink(victim, workspace / CLAIMS / "scope")
    with pytest.raises(CairnError) as ei:
        _store(workspace).elect("scope", purpose="t", ttl=60, authority=Authority(workspace="w"))
    assert ei.value.code is ErrorCode.PATH_SYMLINK
    assert list(victim.iterdir()) == []  # nothing was written through the link
    assert real.exists() and (tmp_path / "moved" / "1.claim").exists()


def test_non_directory_component_fails_closed(workspace: Path) -> None:
    (workspace / ".cairn").write_text("not a dir")
    with pytest.raises(CairnError) as ei:
        _store(workspace).elect("scope", purpose="t", ttl=60, authority=Authority(workspace="w"))
    assert ei.value.code is ErrorCode.PATH_NOT_DIRECTORY
    assert (workspace / ".cairn").read_text() == "not a dir"


def test_scope_ids_never_become_paths(workspace: Path) -> None:
    store = _store(workspace)
    for scope in ("../../etc", "a/b", "digest/x y", ".hidden", "x" * 300):
        c = store.elect(scope, purpose="t", ttl=60, authority=Authority(workspace="w"))
        d = workspace / CLAIMS / scope_dirname(scope)
        assert d.parent == workspace / CLAIMS and (d / "1.claim").exists()
        assert c.record.scope == scope
    assert not (workspace.parent / "etc").exists()


def test_enum_fields_decode_to_members_and_unknown_values_are_refused() -> None:
    from cairn.protocol.claims import OutcomeRecord
    from cairn.protocol.vocab import OutcomeKind

    rec = OutcomeRecord(scope="s", generation=1, kind=OutcomeKind.COMPLETED, nonce="n", decided=1.0, claim_nonce="n")
    assert codec.decode(codec.encode(rec), OutcomeRecord).kind is OutcomeKind.COMPLETED
    obj = codec.to_obj(rec)
    obj["kind"] = "succeeded"
    with pytest.raises(CairnError) as ei:
        codec.from_obj(obj, OutcomeRecord)
    assert ei.value.code is ErrorCode.RECORD_INVALID_FIELD
