"""The worker's stdlib envelope and the protocol codec agree on every request."""

from __future__ import annotations

import json
import subprocess

import pytest
from cairn.protocol import codec
from cairn.protocol.errors import CairnError
from cairn.protocol.worker import WorkerRequest, WorkerResponse
from cairn.worker.envelope import Response, decode_request, encode_response

from tests.support import PYTHON, REPO, child_env

GOOD = {"record": "worker-request", "v": 1, "job": "status", "workspace": "/w", "args": {"a": [1]},
        "deadline": 12.5, "job_id": "j1", "config": {"mode": "auto"}}

CASES = [
    codec.dumps(GOOD),
    codec.dumps({k: v for k, v in GOOD.items() if k not in ("args", "deadline", "job_id", "config")}),
    b"",
    b'{"record":"worker-request","v":1,"job":"x"',
    b"[1]",
    codec.dumps(dict(GOOD, v=2)),
    codec.dumps(dict(GOOD, v="1")),
    codec.dumps(dict(GOOD, record="worker-response")),
    codec.dumps(dict(GOOD, extra=1)),
    codec.dumps(dict(GOOD, deadline="soon")),
    codec.dumps(dict(GOOD, deadline=True)),
    codec.dumps(dict(GOOD, args=[])),
    codec.dumps({k: v for k, v in GOOD.items() if k != "workspace"}),
]


def _codec(data: bytes) -> object:
    try:
        r = codec.decode(data, WorkerRequest)
        return ("ok", r.job, r.workspace, r.args, r.deadline, r.job_id, r.config)
    except CairnError as exc:
        return str(exc.code)


def _fast(data: bytes) -> object:
    try:
        r = decode_request(data)
        return ("ok", r.job, r.workspace, r.args, r.deadline, r.job_id, r.config)
    except CairnError as exc:
        return str(exc.code)


@pytest.mark.parametrize("data", CASES)
def test_decoders_agree(data: bytes) -> None:
    assert _fast(data) == _codec(data)


def test_responses_decode_strictly_with_the_codec() -> None:
    raw = encode_response(Response(status="busy", result={"n": 1}, error="E_CLAIM_BUSY", message="m", more=True))
    resp = codec.decode(raw, WorkerResponse)
    assert (resp.status, resp.result, resp.error, resp.more) == ("busy", {"n": 1}, "E_CLAIM_BUSY", True)


def test_a_bad_request_gets_a_fixed_code_on_stdout_not_a_crash() -> None:
    r = subprocess.run([PYTHON, "-m", "cairn.worker", "status"], input=b'{"record":"worker-request","v":7}',
                       capture_output=True, cwd=REPO, env=child_env(), timeout=60)
    assert r.returncode == 0
    resp = json.loads(r.stdout)
    assert resp["status"] == "failed" and resp["error"] == "E_RECORD_UNKNOWN_VERSION"
