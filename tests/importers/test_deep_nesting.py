"""JSON nested far past any real record: a fixed code for that line or record, never a RecursionError.

A transcript line ``[[[[…]]]]`` 100,000 deep used to escape the importers'
"not JSON" handling as a ``RecursionError`` traceback and lose the whole file.
Now the line is left out and reported (``E_IMPORT_MALFORMED``, its line number,
no content) and the other turns are imported; control records, worker
envelopes and provider replies refuse such text with their own fixed codes.
"""

from __future__ import annotations

import json
import pathlib
import subprocess

import pytest
from cairn.protocol import boundedjson, codec
from cairn.protocol.claims import ClaimRecord
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.worker.envelope import decode_request
from cairn.worker.ingest.importers import claude_code, load, load_report
from cairn.worker.ingest.importers._common import iter_jsonl
from cairn.worker.providers.http import json_object, reply_content

from tests.journal.helpers import ALL_FORMATS, cairn_json
from tests.support import PYTHON, REPO, child_env

DEEP = "[" * 100_000 + "]" * 100_000
DEEP_OBJECT = '{"a":' * 100_000 + "1" + "}" * 100_000
JSONL = ("claude-code", "codex")


def _with_line(src: pathlib.Path, dst: pathlib.Path, at: int, line: str) -> pathlib.Path:
    lines = src.read_text().splitlines(keepends=True)
    lines.insert(at, line + "\n")
    dst.write_text("".join(lines))
    return dst


@pytest.mark.parametrize(
    ("text", "deep"),
    [
        ("[]", False),
        ("[" * 256 + "]" * 256, False),
        ("[" * 257 + "]" * 257, True),
        ('{"a":' * 300 + "1" + "}" * 300, True),
        (json.dumps({"s": "[" * 5000, "t": ["{" * 5000]}), False),  # brackets inside strings do not nest
        ('"' + '\\"' * 50_000, False),  # an unterminated string is one match, not a rescan per quote
        ('["\\\\"' + "[" * 300, True),  # an escaped backslash ends the string before the brackets
    ],
)
def test_depth_scan(text: str, deep: bool) -> None:
    assert boundedjson.too_deep(text) is deep
    if deep:
        with pytest.raises(boundedjson.TooDeep):
            boundedjson.loads(text)


@pytest.mark.parametrize("fmt", JSONL)
def test_a_deep_line_is_left_out_and_reported(fmt: str, tmp_path: pathlib.Path) -> None:
    src = ALL_FORMATS[fmt]
    expected = [t.turn_id for s in load(src) for t in s.turns]
    path = _with_line(src, tmp_path / src.name, 3, DEEP)
    got = load_report(path)
    assert [t.turn_id for s in got.sessions for t in s.turns] == expected
    (issue,) = got.skipped
    assert (issue.code, issue.detail["line"]) == (ErrorCode.IMPORT_MALFORMED, 4)
    assert "[[" not in issue.message


def test_parsing_a_deep_line_directly_is_a_malformed_line() -> None:
    good = '{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"hi"}}'
    with pytest.raises(CairnError) as ei:
        claude_code.parse(good + "\n" + DEEP_OBJECT + "\n", source_name="x.jsonl")
    assert (ei.value.code, ei.value.detail["line"]) == (ErrorCode.IMPORT_MALFORMED, 2)
    # an unterminated deep last line is a write in progress, like any unterminated line
    assert [n for n, _ in iter_jsonl(good + "\n" + DEEP)] == [1]


def test_a_deep_first_line_is_a_clean_detection_failure_or_reported(tmp_path: pathlib.Path) -> None:
    src = ALL_FORMATS["claude-code"]
    path = _with_line(src, tmp_path / "first.jsonl", 0, DEEP)
    # the head is one unjudgeable line: detection names no format (a fixed code, not a crash) ...
    with pytest.raises(CairnError) as ei:
        load_report(path)
    assert ei.value.code is ErrorCode.IMPORT_UNKNOWN_FORMAT
    # ... and with the format given, the line is left out and reported like any other
    got = load_report(path, "claude-code")
    assert got.sessions and [e.detail["line"] for e in got.skipped] == [1]


def test_a_deep_json_body_in_a_claude_export_is_text(tmp_path: pathlib.Path) -> None:
    src = ALL_FORMATS["claude-export"]
    text = src.read_text()
    cut = text.index("### User", text.index("### User") + 1)
    path = tmp_path / src.name
    path.write_text(text[:cut] + "### User\n\n" + DEEP + "\n\n" + text[cut:])
    assert len(load(path)[0].turns) >= len(load(src)[0].turns)


@pytest.mark.parametrize("fmt", JSONL)
def test_cli_imports_the_other_turns_and_reports_the_line(fmt: str, workspace: pathlib.Path,
                                                           tmp_path: pathlib.Path) -> None:
    src = ALL_FORMATS[fmt]
    expected = sum(len(s.turns) for s in load(src))
    path = _with_line(src, tmp_path / src.name, 5, DEEP)
    r = subprocess.run([PYTHON, "-m", "cairn.server", "import", str(path), "--json", "-w", str(workspace)],
                       cwd=REPO, env=child_env(), capture_output=True, text=True, timeout=300)
    assert "Traceback" not in r.stderr and r.returncode == 0, r.stderr[-2000:]
    assert "E_IMPORT_MALFORMED" in r.stderr and "line 6" in r.stderr and "[[" not in r.stderr
    out = json.loads(r.stdout)
    assert out["captured"] == expected > 0
    assert out["malformed"] == [{"file": src.name, "line": 6, "code": "E_IMPORT_MALFORMED",
                                 "message": "line 6: nesting deeper than 256 levels; line skipped"}]
    # and the captured turns are those of the file without the deep line (its tail too, once it is over)
    tails = sum(1 for s in load(src) if s.tail is not None)
    assert cairn_json(workspace, "import", "--ended", str(src))["captured"] == tails


@pytest.mark.parametrize("deep", [DEEP, DEEP_OBJECT])
def test_control_records_refuse_deep_json(deep: str) -> None:
    with pytest.raises(CairnError) as ei:
        codec.decode(deep.encode(), ClaimRecord)
    assert ei.value.code is ErrorCode.RECORD_MALFORMED and "nesting" in ei.value.message


def test_worker_requests_refuse_deep_json() -> None:
    with pytest.raises(CairnError) as ei:
        decode_request(('{"record":"worker-request","v":1,"args":' + DEEP_OBJECT + "}").encode())
    assert ei.value.code is ErrorCode.RECORD_MALFORMED


def test_a_worker_given_deep_json_answers_with_a_fixed_code() -> None:
    r = subprocess.run([PYTHON, "-m", "cairn.worker", "status"], input=DEEP.encode(), capture_output=True, cwd=REPO,
                       env=child_env(), timeout=60)
    assert r.returncode == 0 and b"Traceback" not in r.stderr
    assert json.loads(r.stdout)["error"] == "E_RECORD_MALFORMED"


def test_provider_replies_refuse_deep_json() -> None:
    for call in (lambda: reply_content(DEEP.encode()), lambda: json_object(DEEP_OBJECT, key="notes")):
        with pytest.raises(CairnError) as ei:
            call()
        assert ei.value.code is ErrorCode.PROVIDER_INVALID_REPLY
