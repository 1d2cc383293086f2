"""Typed job arguments and results (protocol/results.py): the registry, the wire, the codec's refusals."""

from __future__ import annotations

import enum
import json
import types
import typing
from typing import Any

import attrs
import pytest
from cairn.protocol import codec
from cairn.protocol import results as R
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.memory import ProposalKind, ProposalState
from cairn.protocol.worker import WorkerResponse
from cairn.worker import entry
from cairn.worker.envelope import Response, encode_response
from hypothesis import given, settings
from hypothesis import strategies as st

TYPED = sorted(kind for kind in entry.REGISTRY if kind in R.RESULTS)


def strategy(tp: Any) -> st.SearchStrategy[Any]:
    """Values of a record field's type, records included (every field, optional keys set or not)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is type(None):
        return st.none()
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(strategy(a) for a in args))
    if origin is tuple:
        return st.lists(strategy(args[0]), max_size=3).map(tuple)
    if origin is dict:
        return st.dictionaries(strategy(args[0]), strategy(args[1]), max_size=3)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return st.sampled_from(list(tp))
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.integers(-(2**53), 2**53)
    if tp is float:
        return st.floats(allow_nan=False, allow_infinity=False)
    if tp is str:
        return st.text(st.characters(codec="utf-8"), max_size=12)  # no lone surrogate: JSON text is UTF-8
    if isinstance(tp, type) and attrs.has(tp):
        fields = attrs.fields(attrs.resolve_types(tp))
        return st.fixed_dictionaries({f.name: strategy(f.type) for f in fields}).map(lambda kw: tp(**kw))
    raise AssertionError(f"no strategy for {tp!r}")


def _over_the_wire(rec: Any) -> dict[str, Any]:
    """``rec`` as a worker sends it and the server's runner reads it back (the response envelope)."""
    data = encode_response(Response(status="ok", result=codec.to_body(rec)))
    return codec.decode(data, WorkerResponse).result


def test_every_typed_job_returns_its_result_record_and_reads_its_argument_record() -> None:
    assert set(R.RESULTS) <= set(entry.REGISTRY) and set(R.ARGS) <= set(entry.REGISTRY)
    for kind in TYPED:
        returned = typing.get_type_hints(entry.resolve(kind))["return"]
        bounded = typing.get_origin(returned) is tuple and typing.get_args(returned) == (
            R.RESULTS[kind],
            bool,
        )
        assert returned is R.RESULTS[kind] or bounded, kind


@pytest.mark.parametrize("kind", TYPED)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_result_round_trips_through_the_codec(kind: str, data: st.DataObject) -> None:
    record = R.RESULTS[kind]
    rec = data.draw(strategy(record))
    body = _over_the_wire(rec)
    assert json.loads(json.dumps(body)) == body  # plain JSON: no record/v keys, no members of enums
    assert "record" not in body and "v" not in body
    assert R.read(record, json.loads(codec.dumps(body)), job=kind) == rec
    assert codec.decode(codec.encode(rec), record) == rec  # as a registered record too


@pytest.mark.parametrize("kind", sorted(R.ARGS))
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_arguments_round_trip_through_the_codec(kind: str, data: st.DataObject) -> None:
    record = R.ARGS[kind]
    rec = data.draw(strategy(record))
    assert R.read(record, json.loads(codec.dumps(codec.to_body(rec))), job=kind) == rec


@pytest.mark.parametrize("kind", TYPED)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_an_unknown_or_missing_field_is_refused_with_the_codecs_codes(kind: str, data: st.DataObject) -> None:
    record = R.RESULTS[kind]
    rec = data.draw(strategy(record))
    body = codec.to_body(rec)
    for extra in ({"surprise": 1}, {"record": rec.RECORD_KIND}, {"v": 1}):
        with pytest.raises(CairnError) as err:
            R.read(record, {**body, **extra}, job=kind)
        assert err.value.code is ErrorCode.RECORD_UNKNOWN_FIELD
    required = [f.name for f in attrs.fields(record) if f.default is attrs.NOTHING]
    for name in required:
        with pytest.raises(CairnError) as err:
            R.read(record, {k: v for k, v in body.items() if k != name}, job=kind)
        assert err.value.code is ErrorCode.RECORD_INVALID_FIELD
    with pytest.raises(CairnError) as err:
        R.read(record, [body], job=kind)
    assert err.value.code is ErrorCode.RECORD_MALFORMED


def test_nothing_is_coerced() -> None:
    ok = {"reviews": 1, "proposals": 2}
    assert R.read(R.DrainResult, ok, job="drain") == R.DrainResult(reviews=1, proposals=2)
    for bad in (
        {"reviews": "1", "proposals": 2},
        {"reviews": True, "proposals": 2},
        {"reviews": 1, "proposals": None},
    ):
        with pytest.raises(CairnError) as err:
            R.read(R.DrainResult, bad, job="drain")
        assert err.value.code is ErrorCode.RECORD_INVALID_FIELD
    with pytest.raises(CairnError) as err:
        R.read(R.Decision, {"id": "p1", "state": "maybe", "changed": True}, job="undo")
    assert err.value.code is ErrorCode.RECORD_INVALID_FIELD


def test_the_keys_editors_read_are_the_documented_ones() -> None:
    """docs/lsp.md: ``cairn.remember`` answers {remember, capture, reviewed, busy, reviews, proposals: [{id, kind,
    target, title, state}], applied}; a decision {id, state, changed, written}, plus ``supersedes`` when edited."""
    row = R.ProposalRow(
        id="p1", kind=ProposalKind.CREATE, target="t.md", title="T", state=ProposalState.PENDING
    )
    remembered = codec.to_body(
        R.RememberResult(
            remember="m1", capture="c1", reviews=1, busy=False, reviewed=True, proposals=(row,), applied=()
        )
    )
    assert set(remembered) == {"remember", "capture", "reviewed", "busy", "reviews", "proposals", "applied"}
    assert remembered["proposals"] == [
        {"id": "p1", "kind": "create", "target": "t.md", "title": "T", "state": "pending"}
    ]
    applied = R.Decision(id="p1", state=ProposalState.APPLIED, changed=True, written=("a.md",))
    assert codec.to_body(applied) == {"id": "p1", "state": "applied", "changed": True, "written": ["a.md"]}
    assert codec.to_body(codec.evolve(applied, supersedes="p0"))["supersedes"] == "p0"
    assert codec.to_body(R.Decision(id="p1", state=ProposalState.REJECTED, changed=True)) == {
        "id": "p1",
        "state": "rejected",
        "changed": True,
    }  # a rejection writes nothing: no "written"


def test_optional_keys_are_absent_not_null() -> None:
    skipped = R.ReviewJobResult(review=None, skipped="cap", recovered=False)
    assert codec.to_body(skipped) == {"review": None, "skipped": "cap", "recovered": False}
    each = codec.to_body(
        R.ImportResult(
            files=1, sessions=1, captured=2, skipped=0, session_ids=("s",), malformed=(), failed=()
        )
    )
    assert set(each) == {"files", "sessions", "captured", "skipped", "session_ids", "malformed", "failed"}


def test_the_envelope_carries_a_records_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    from cairn.protocol.worker import WorkerRequest

    monkeypatch.setattr(
        entry, "resolve", lambda kind: lambda req: (R.DrainResult(reviews=1, proposals=2), True)
    )
    resp = entry.run_request(WorkerRequest(job="drain", workspace="/nonexistent"))
    assert (resp.status, resp.result, resp.more) == ("ok", {"reviews": 1, "proposals": 2}, True)


def test_a_typed_job_refuses_arguments_outside_its_record(tmp_path: Any) -> None:
    from cairn.protocol.worker import WorkerRequest

    resp = entry.run_request(WorkerRequest(job="seal", workspace=str(tmp_path), args={"session": "s1"}))
    assert (resp.status, resp.error) == ("failed", str(ErrorCode.RECORD_UNKNOWN_FIELD))
