"""Canary: a credential of every kind goes in through ``cairn run``; none comes out anywhere.

A transcript whose user turns state durable preferences, each holding one
synthetic credential (:mod:`tests.security.samples`), is run with
``cairn run`` under the OpenAI-compatible provider for digests and reviews,
against a loopback server that plays a *leaky* model: its digest notes and
its review proposals quote every credential verbatim (as a model that saw
them elsewhere would; a credential recognisable only by its context, such as
an AWS secret key in prose or a URL's password, is quoted with its
context). A credential known only by its context is also echoed bare:
the assistant's reply repeats it ("Done: I exported … for this shell") and
a later turn of the same session asks to reuse it, which the leaky model
quotes verbatim in a note. Every proposal is shown and accepted. Then the
journal, every ``cairn show``, every command's output and stderr, the
memory files, AGENTS.md and every request body the server received are
searched: no credential (nor a 16-character piece of one) may appear.
The same run under the embedded extractive engine and local review covers
the path where notes are cut from the user's own words.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from cairn.worker.redaction.redact import redact_text

from tests.journal.helpers import cairn
from tests.security.samples import SAMPLES, Sample

AGENTS = "# Agents\n\nBe brief.\n"


def _self_named(s: Sample) -> bool:
    """Whether the credential is recognisable without the words around it."""
    return redact_text(_one_line(s.secret)) != _one_line(s.secret)


def _echo(s: Sample) -> str:
    """A later turn repeating the bare value of a credential known only by its context."""
    return f"From now on always reuse {s.secret} for the smoke tests."


def _done(s: Sample) -> str:
    """The assistant's reply repeating the bare value."""
    return f"Done: I exported {s.secret} for this shell."


KEY_ENV = "CAIRN_CANARY_KEY"
PROVIDER_KEY = "sk-canary-" + "Ab1" * 10  # sent in the Authorization header only


def _one_line(s: str) -> str:
    return " ".join(s.split())


ECHOED = tuple(s for s in SAMPLES if not _self_named(s))  # known only by their context: each echoed bare


def transcript(path: Path) -> Path:
    """An aider chat: one user turn per sample, each answered briefly; then one turn per echoed sample.

    A sample known only by its context is answered with its bare value
    (:func:`_done`) and asked for again, bare, in a later turn (:func:`_echo`).
    """
    lines = ["# aider chat started at 2026-11-30 10:00:00", ""]
    for s in SAMPLES:
        lines += [f"#### {line}" if line else "####" for line in s.sentence.split("\n")]
        lines += ["", _done(s) if s in ECHOED else "Understood, I will do that from now on.", ""]
    for s in ECHOED:
        lines += [f"#### {_echo(s)}", "", "Understood.", ""]
    path.write_text("\n".join(lines) + "\n")
    return path


def _chunks(items: list[Any], n: int) -> Iterator[list[Any]]:
    for k in range(0, len(items), n):
        yield items[k:k + n]


class LeakyModel:
    """A chat-completions server that quotes every canary in its answers and records every request."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = False
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def answer(self, body: bytes) -> dict[str, Any]:
        scope = json.loads(json.loads(body)["messages"][1]["content"])
        if "turns" in scope:
            content = {"notes": self._notes(scope["turns"])}
        else:
            content = {"proposals": self._proposals(scope["digests"])}
        choice = {"index": 0, "message": {"role": "assistant", "content": json.dumps(content)}, "finish_reason": "stop"}
        return {"id": "chatcmpl-canary", "object": "chat.completion", "choices": [choice]}

    @staticmethod
    def _notes(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
        notes = []
        assert len(turns) == len(SAMPLES) + len(ECHOED)  # one capture: turn i states sample i, then the echoes
        for i, (t, s) in enumerate(zip(turns, SAMPLES, strict=False)):
            # a credential that names itself is quoted bare; one known only by its context, with it
            title = f"Rule {i}: {_one_line(s.secret) if _self_named(s) else _one_line(s.sentence)}"
            notes.append({"type": "feedback", "title": title if len(title) <= 120 else f"Rule {i}",
                          "body": s.sentence[:2000], "turn_ids": [t["turn_id"]]})
        for j, (t, s) in enumerate(zip(turns[len(SAMPLES):], ECHOED, strict=True)):
            # the echo quoted bare, as a model that saw the value elsewhere in the session would
            title = f"Echo {j}: {_echo(s)}"
            notes.append({"type": "feedback", "title": title if len(title) <= 120 else f"Echo {j}",
                          "body": _echo(s), "turn_ids": [t["turn_id"]]})
        return notes

    @staticmethod
    def _proposals(digests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        ids = [d["id"] for d in digests]
        bullets = [_one_line(s.sentence)[:500] for s in SAMPLES]
        out: list[dict[str, Any]] = []
        short = [s.secret for s in SAMPLES if len(s.secret) <= 60 and _self_named(s)]
        for k, chunk in enumerate(_chunks(bullets, 20)):
            out.append({"action": "create", "type": "feedback", "title": f"Canary rules {k} {short[k]}"[:120],
                        "description": f"Credentials to use {short[-1 - k]}"[:200], "bullets": chunk,
                        "evidence": ids})
        out.append({"action": "instruction", "file": "AGENTS.md", "bullets": bullets[:20], "evidence": ids})
        return out

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                model.bodies.append(body)
                reply = json.dumps(model.answer(body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        return Handler


@pytest.fixture
def leaky() -> Iterator[LeakyModel]:
    model = LeakyModel()
    model.thread.start()
    try:
        yield model
    finally:
        model.server.shutdown()
        model.server.server_close()
        model.thread.join(10)


def _needles(s: Sample) -> list[str]:
    """The secret itself and every 16-character piece of it (a clipped secret is still a leak)."""
    flat = s.secret.replace("\n", " ")
    core = [line for line in s.secret.split("\n") if "-----" not in line]
    pieces = [p[k:k + 16] for p in core for k in range(0, max(1, len(p) - 16), 8)]
    return [flat, *core, *pieces]


def _leaks(haystacks: dict[str, str]) -> list[tuple[str, str, str]]:
    found = []
    for s in SAMPLES:
        for needle in _needles(s):
            for where, text in haystacks.items():
                if needle in text:
                    found.append((s.kind, where, needle))
    return found


def _run_everything(ws: Path, env: dict[str, str]) -> dict[str, str]:
    seen: dict[str, str] = {}

    def run(*argv: str) -> str:
        r = cairn(ws, *argv, env=env)
        seen[f"$ cairn {' '.join(argv)} (stdout)"] = r.stdout
        seen[f"$ cairn {' '.join(argv)} (stderr)"] = r.stderr
        return r.stdout

    run("run", str(transcript(ws.parent / ".aider.chat.history.md")), "--json")
    rows = json.loads(run("proposals", "--json"))
    assert rows, "the review proposed nothing: the canary would prove nothing"
    for row in rows:
        run("show", row["id"])
        run("show", row["id"], "--json")
    run("accept", *[row["id"] for row in rows])
    assert all(r["state"] == "applied" for r in json.loads(run("proposals", "--json")))
    run("journal", "--json")
    run("memory", "--json")
    for p in [*(ws / ".cairn/journal").rglob("*"), *(ws / ".agents").rglob("*"), ws / "AGENTS.md"]:
        if p.is_file():
            seen[str(p.relative_to(ws))] = p.read_text(errors="replace")
    return seen


def test_no_canary_leaves_through_the_openai_provider(workspace: Path, leaky: LeakyModel) -> None:
    (workspace / "AGENTS.md").write_text(AGENTS)
    (workspace / ".cairn").mkdir()
    (workspace / ".cairn/config.toml").write_text(
        f'provider = "openai"\nmodel = "canary"\nendpoint = "{leaky.url}"\napi_key_env = "{KEY_ENV}"\n'
        "context_tokens = 32768\n")  # one digest request: the leaky model reads turn i as sample i
    cairn(workspace, "trust")  # a workspace file may name an endpoint only when the user trusts the workspace
    seen = _run_everything(workspace, {KEY_ENV: PROVIDER_KEY})

    assert len(leaky.bodies) >= 2  # at least one digest and one review request
    seen.update({f"request {k}": b.decode() for k, b in enumerate(leaky.bodies)})
    leaks = _leaks(seen)
    assert not leaks, sorted({(kind, where) for kind, where, _ in leaks})
    memory = "".join(v for k, v in seen.items() if k.startswith((".agents", "AGENTS.md")))
    journal = "".join(v for k, v in seen.items() if k.startswith(".cairn/journal"))
    requests = "".join(v for k, v in seen.items() if k.startswith("request"))
    for s in SAMPLES:  # each kind was recognised as itself on the way to memory and to the model
        assert f"[REDACTED:{s.kind}]" in memory, s.kind
        assert f"[REDACTED:{s.kind}]" in requests, s.kind
    assert "[REDACTED:" in journal
    for s in ECHOED:  # a bare repeat is hidden as the kind its labelled statement was recognised as
        assert f"Done: I exported [REDACTED:{s.kind}] for this shell." in requests, s.kind
        assert f"reuse [REDACTED:{s.kind}] for the smoke tests" in requests, s.kind
        assert f"reuse [REDACTED:{s.kind}] for the smoke tests" in journal, s.kind


def test_no_canary_leaves_through_the_embedded_engine(workspace: Path) -> None:
    (workspace / "AGENTS.md").write_text(AGENTS)
    seen = _run_everything(workspace, {})
    assert _leaks(seen) == []
    journal = "".join(v for k, v in seen.items() if k.startswith(".cairn/journal"))
    assert "[REDACTED:" in journal
    for s in ECHOED:  # the later turn is a note of its own, its bare value hidden
        assert f"reuse [REDACTED:{s.kind}] for the smoke tests" in journal, s.kind
