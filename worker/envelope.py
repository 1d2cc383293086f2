"""The worker envelope on the hot path: decode a request, encode a response.

This is the ``worker-request``/``worker-response`` v1 schema of
:mod:`protocol.worker`, checked with the standard library only, so a cold
worker start does not pay for importing attrs and cattrs before it knows
which job it runs (jobs that need records import them themselves). The
checks are the codec's: an unknown version or field is refused with the same
fixed codes, nothing is coerced. ``tests/worker/test_envelope.py`` holds the
two implementations to the same answers.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from cairn.protocol import boundedjson
from cairn.protocol.errors import CairnError, ErrorCode

_REQUEST_TYPES: dict[str, tuple[type, ...]] = {
    "job": (str,), "workspace": (str,), "args": (dict,), "deadline": (int, float), "job_id": (str,),
    "config": (dict,),
}
_REQUIRED = ("job", "workspace")
STATUSES = ("ok", "failed", "cancelled", "busy")


class Request(NamedTuple):
    job: str
    workspace: str
    args: dict[str, Any]
    deadline: float
    job_id: str
    config: dict[str, Any]


class Response(NamedTuple):
    status: str  # one of STATUSES
    result: dict[str, Any]
    error: str | None = None
    message: str = ""
    more: bool = False


def decode_request(data: bytes) -> Request:
    where = "worker request"
    if not data.strip():
        raise CairnError(ErrorCode.RECORD_EMPTY, f"{where}: empty")
    try:
        obj = boundedjson.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise CairnError(ErrorCode.RECORD_MALFORMED, f"{where}: not UTF-8") from None
    except boundedjson.TooDeep as exc:
        raise CairnError(ErrorCode.RECORD_MALFORMED, f"{where}: {exc}") from None
    except json.JSONDecodeError as exc:
        body = data.strip()
        truncated = exc.pos >= len(body) or exc.msg.startswith("Unterminated string")
        raise CairnError(ErrorCode.RECORD_TRUNCATED if truncated else ErrorCode.RECORD_MALFORMED,
                         f"{where}: invalid JSON at byte {exc.pos}") from None
    if not isinstance(obj, dict):
        raise CairnError(ErrorCode.RECORD_MALFORMED, f"{where}: not a JSON object")
    if obj.get("record") != "worker-request":
        raise CairnError(ErrorCode.RECORD_UNKNOWN_KIND, f"{where}: unknown record kind {str(obj.get('record'))[:40]!r}")
    if type(obj.get("v")) is not int or obj["v"] != 1:
        raise CairnError(ErrorCode.RECORD_UNKNOWN_VERSION, f"{where}: no schema version {str(obj.get('v'))[:20]!r}")
    extra = set(obj) - set(_REQUEST_TYPES) - {"record", "v"}
    if extra:
        raise CairnError(ErrorCode.RECORD_UNKNOWN_FIELD, f"{where}: unknown field(s) {','.join(sorted(extra))[:120]}")
    for name in _REQUIRED:
        if name not in obj:
            raise CairnError(ErrorCode.RECORD_INVALID_FIELD, f"{where}: missing {name}")
    for name, types in _REQUEST_TYPES.items():
        if name in obj and (isinstance(obj[name], bool) or not isinstance(obj[name], types)):
            raise CairnError(ErrorCode.RECORD_INVALID_FIELD, f"{where}: {name} has the wrong type")
    return Request(job=obj["job"], workspace=obj["workspace"], args=obj.get("args", {}),
                   deadline=float(obj.get("deadline", 0.0)), job_id=obj.get("job_id", ""),
                   config=obj.get("config", {}))


def encode_response(resp: Response) -> bytes:
    obj = {"record": "worker-response", "v": 1, "status": resp.status, "result": resp.result,
           "error": resp.error, "message": resp.message, "more": resp.more}
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
