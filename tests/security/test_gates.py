"""The redaction gate at each boundary: provider requests, public records, logs, worker failures."""

from __future__ import annotations

import io
import json
import logging

import pytest
from cairn.protocol import codec
from cairn.protocol.digest import Note
from cairn.protocol.journal import PublicDigest
from cairn.protocol.vocab import NoteType, Trigger
from cairn.protocol.worker import WorkerRequest
from cairn.worker.entry import run_stdio
from cairn.worker.providers import http
from cairn.worker.redaction import secret_rules
from cairn.worker.redaction.redact import RedactingFilter, redact_bytes, redact_obj, redact_record

from tests.security.samples import SAMPLES

NPM = next(s.secret for s in SAMPLES if s.kind == "npm_token")
GH = next(s.secret for s in SAMPLES if s.kind == "github_token")


def test_every_provider_request_body_is_redacted_by_the_encoder() -> None:
    request = {"model": "m", "messages": [{"role": "user", "content": json.dumps({"turns": [{"user": NPM}]})}],
               "nested": {"list": [f"token {GH}", 1, None, True]}}
    body = http.encode(request)
    assert NPM.encode() not in body and GH.encode() not in body
    decoded = json.loads(body)
    assert decoded["model"] == "m" and decoded["nested"]["list"][1:] == [1, None, True]
    assert "[REDACTED:npm_token]" in decoded["messages"][0]["content"]


def test_a_json_message_stays_valid_json_when_a_secret_sits_next_to_an_escape() -> None:
    doc = {"turns": [{"user": f'token:\n{NPM[4:]}"quoted"', "turn_id": "t1"}, {"user": "ok", "turn_id": "t2"}]}
    content = json.dumps(doc, ensure_ascii=False, sort_keys=True)
    body = json.loads(http.encode({"messages": [{"role": "user", "content": content}]}))
    inner = json.loads(body["messages"][0]["content"])
    assert [t["turn_id"] for t in inner["turns"]] == ["t1", "t2"] and NPM[4:] not in str(inner)
    clean = json.dumps({"turns": [{"user": "nothing secret", "turn_id": "t1"}]}, indent=None)
    assert json.loads(http.encode({"content": clean}))["content"] == clean  # unchanged bytes when nothing is redacted


def test_redact_obj_keeps_keys_and_non_strings() -> None:
    assert redact_obj({NPM: [NPM, 3]}) == {NPM: ["[REDACTED:npm_token]", 3]}


def test_records_keep_ids_and_vocabulary_and_lose_secrets() -> None:
    entry = PublicDigest(id="d1", capture="c1", session_id="s1", title=f"publish with {NPM}",
                         trigger=Trigger.SESSION_END, created=1.0, provider="openai", turn_ids=("t1",),
                         notes=(Note(type=NoteType.FEEDBACK, title="npm", body=f"use {NPM}", turn_ids=("t1",)),))
    clean = redact_record(entry)
    data = codec.encode(clean)
    assert NPM.encode() not in data
    assert clean.notes[0].type is NoteType.FEEDBACK and clean.trigger is Trigger.SESSION_END
    assert (clean.id, clean.turn_ids) == (entry.id, entry.turn_ids)
    assert redact_record(clean) is clean  # nothing left to change: the same object


def test_bytes_that_are_not_utf8_pass_through() -> None:
    raw = b"\xff\xfe keep " + NPM.encode() + b" \x80"
    assert redact_bytes(raw) == b"\xff\xfe keep [REDACTED:npm_token] \x80"
    assert redact_bytes(b"\xff plain") == b"\xff plain"


def test_log_records_are_redacted() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactingFilter())
    log = logging.getLogger("cairn.test.redaction")
    log.addHandler(handler)
    try:
        log.warning("request failed with %s", f"Authorization: Bearer {GH}")
    finally:
        log.removeHandler(handler)
    assert GH not in stream.getvalue() and "[REDACTED:" in stream.getvalue()


def test_worker_failure_messages_are_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAIRN_WORKER_NICE", "0")  # in-process: the test runner must keep its priority
    stdin = io.BytesIO(codec.encode(WorkerRequest(job="status", workspace="/nonexistent", args={}, deadline=0.0,
                                                  job_id="j1", config={})))
    stdout = io.BytesIO()
    run_stdio([NPM], stdin, stdout, io.StringIO())  # the job named on the command line does not match
    reply = stdout.getvalue()
    assert b"E_USAGE" in reply and NPM.encode() not in reply and b"[REDACTED:npm_token]" in reply


def test_the_docstring_table_names_every_kind_of_the_rule_table() -> None:
    doc = secret_rules.__doc__ or ""
    assert not [r.kind for r in secret_rules.RULES if f"\n{r.kind} " not in doc]


def test_a_write_redacts_what_it_adds_and_keeps_what_the_file_held() -> None:
    """The gate before a memory or agent file is written: the user's own lines (a token in their settings)
    stay byte for byte; added lines are redacted, a key over several added lines as one text."""
    from cairn.worker.redaction.redact import redact_added

    from tests.security.samples import PEM_BODY

    token = "ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5"
    before = f'{{\r\n  "env": {{"GITHUB_TOKEN": "{token}"}}\r\n}}\r\n'.encode()
    pem = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----\n"
    after = before + b"- added note with key sk-ant-api03-" + b"x" * 90 + b"\n" + pem.encode() + b"- plain\n"
    out = redact_added(before, after)
    assert out.startswith(before) and token.encode() in out  # the user's line, byte for byte
    assert b"sk-ant-api03-" not in out and b"BEGIN RSA PRIVATE KEY" not in out and PEM_BODY.encode()[:64] not in out
    assert out.endswith(b"- plain\n")
    assert redact_added(None, before) == redact_added(b"", before) and token.encode() not in redact_added(None, before)
