"""A model digest in several windows: each answered window is kept under the capture's claim.

Real ``cairn`` processes against a real chat-completions server on
127.0.0.1 (:mod:`tests.providers.endpoint`), real files. The flaky server
refuses the first sending of every distinct request, as a provider under
load does (HTTP 503 or 429); the model notes each stated preference.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from cairn.protocol import codec
from cairn.protocol.digest import Note, WindowReply
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.vocab import NoteType
from cairn.worker.journal import digest as D
from cairn.worker.journal.store import Journal
from cairn.worker.providers import usage_report

from tests.journal.helpers import J, cairn, cairn_json
from tests.providers.endpoint import Endpoint
from tests.providers.endpoint import endpoint as endpoint  # the loopback server fixture
from tests.providers.sessions import long_transcript
from tests.providers.test_context_windows import notes_per_window
from tests.support import PYTHON, REPO, child_env

CONTEXT = 8192
TURNS = 40


def _configure(home: Path, ep: Endpoint, *extra: str) -> None:
    (home / "cairn").mkdir(exist_ok=True)
    (home / "cairn/config.toml").write_text("\n".join([
        'provider = "openai"', 'model = "m"', f'endpoint = "{ep.base_url}"', f"context_tokens = {CONTEXT}",
        'mode = "manual"', *extra, ""]))


def _window(body: bytes) -> tuple[int, int]:
    k, n = json.loads(json.loads(body)["messages"][1]["content"])["window"].split(" of ")
    return int(k), int(n)


def _capture(ws: Path) -> Path:
    (cap,) = sorted((ws / J / "captures").iterdir())
    return cap


def _preferences(ws: Path) -> list[str]:
    (digest,) = cairn_json(ws, "journal")
    return sorted(n["title"] for n in digest["notes"] if n["type"] == "user")


EVERY_PREFERENCE = sorted(f"Prefers option-{k}" for k in range(TURNS))


@pytest.mark.parametrize("status", [503, 429])
def test_a_flaky_provider_costs_one_refusal_per_window_and_never_exhausts_the_capture(
        endpoint: Endpoint, workspace: Path, user_config_home: Path, tmp_path: Path, status: int) -> None:
    endpoint.respond = notes_per_window
    endpoint.refuse_once = status
    endpoint.count_usage = True
    _configure(user_config_home, endpoint)
    src = long_transcript(tmp_path / ".aider.chat.history.md", TURNS)
    passes = [json.loads(cairn(workspace, "run", str(src), "--json", check=False).stdout)["process"]]
    while cairn_json(workspace, "journal") == [] and len(passes) < 6:
        passes.append(json.loads(cairn(workspace, "process", "--json", check=False).stdout))
    bodies = [r.body for r in endpoint.requests]
    windows = {_window(b) for b in bodies}
    n = next(iter(windows))[1]
    assert n >= 4 and windows == {(k, n) for k in range(1, n + 1)}
    # the first window alone (refused, then answered), then all the others at once (refused, then answered)
    assert len(passes) == 3 and passes[-1]["published"] == 1 and all(p["exhausted"] == [] for p in passes)
    # the second pass kept the first window: it failed (the others were refused) but used no attempt
    assert [(f["attempt"], f.get("kept")) for p in passes for f in p["failures"]] == [(1, None), (1, 1)]
    # every distinct request was sent twice: once refused, once answered; an answered one never again
    assert len(bodies) == 2 * len(set(bodies)) == 2 * n
    assert _preferences(workspace) == EVERY_PREFERENCE
    cap = _capture(workspace)
    assert [p.name for p in cap.glob("fail-*")] == ["fail-1"]  # only the pass that answered nothing counted
    assert not list(cap.glob("w-*"))  # kept replies leave with the pins once the digest is published
    # usage counts each distinct input once: refused requests spent no token
    (row,) = usage_report.report(str(workspace))["rows"]
    assert row["requests"] == 2 * n and row["failed"] == n
    assert row["tokensIn"] == sum(len(b) // 4 for b in set(bodies))


def test_windows_after_the_first_go_out_together_up_to_the_bound(
        endpoint: Endpoint, workspace: Path, user_config_home: Path, tmp_path: Path) -> None:
    inflight: list[int] = [0]
    most: list[int] = [0]
    four = threading.Barrier(4, timeout=30)  # released only when four requests are in flight at once
    lock = threading.Lock()

    def respond(request: dict[str, Any]) -> str:
        if "window" not in request["messages"][1]["content"]:
            return notes_per_window(request)  # the review that follows
        k, n = _window(json.dumps(request).encode())
        with lock:
            inflight[0] += 1
            most[0] = max(most[0], inflight[0])
        try:
            if 1 < k <= 5:
                four.wait()
            return notes_per_window(request)
        finally:
            with lock:
                inflight[0] -= 1

    endpoint.respond = respond
    _configure(user_config_home, endpoint)
    out = cairn_json(workspace, "run", str(long_transcript(tmp_path / ".aider.chat.history.md", TURNS)))
    assert out["process"]["published"] == 1 and len(endpoint.requests) >= 6
    assert most[0] == 4  # the default bound: four windows at once, never more
    assert _preferences(workspace) == EVERY_PREFERENCE


def test_a_worker_killed_after_some_windows_resumes_without_sending_them_again(
        endpoint: Endpoint, workspace: Path, user_config_home: Path, tmp_path: Path) -> None:
    worker: dict[str, subprocess.Popen[bytes]] = {}

    def respond(request: dict[str, Any]) -> str:
        if len(endpoint.requests) == 3 and "first" in worker:  # windows 1 and 2 are answered and kept by now
            os.kill(worker["first"].pid, signal.SIGKILL)
        return notes_per_window(request)

    endpoint.respond = respond
    _configure(user_config_home, endpoint, "window_concurrency = 1")  # one window at a time: a known crash point
    cairn(workspace, "import", str(long_transcript(tmp_path / ".aider.chat.history.md", TURNS)))
    cairn(workspace, "seal")
    worker["first"] = subprocess.Popen([PYTHON, "-m", "cairn.server", "process", "-w", str(workspace)], cwd=REPO,
                                       env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert worker["first"].wait(120) == -signal.SIGKILL
    first = [r.body for r in endpoint.requests]
    assert [_window(b)[0] for b in first] == [1, 2, 3]
    assert len(list(_capture(workspace).glob("w-*"))) == 2
    # later (past the dead worker's deadline) another process takes the capture over
    out = json.loads(cairn(workspace, "process", "--json", env={"CAIRN_TEST_CLOCK_OFFSET": "100000"}).stdout)
    assert out["published"] == 1
    again = [r.body for r in endpoint.requests[3:]]
    n = _window(first[0])[1]
    assert sorted(_window(b)[0] for b in again) == list(range(3, n + 1))  # windows 1 and 2 were not sent again
    assert _preferences(workspace) == EVERY_PREFERENCE
    assert not list(_capture(workspace).glob("fail-*"))  # the killed attempt kept windows: not a failed attempt


def test_an_invalid_note_is_dropped_and_counted_without_its_text(
        endpoint: Endpoint, workspace: Path, user_config_home: Path, tmp_path: Path) -> None:
    def respond(request: dict[str, Any]) -> str:
        if "window" not in request["messages"][1]["content"]:
            return notes_per_window(request)  # the review that follows
        ids = [t["turn_id"] for t in json.loads(request["messages"][1]["content"])["turns"]]
        return json.dumps({"notes": [
            {"type": "user", "title": "Prefers option-0", "body": "The user prefers option-0.", "turn_ids": ids[:1]},
            {"type": "task", "title": "Secret plan xyzzy", "body": "Do the xyzzy thing.", "turn_ids": ids[:1]},
            {"type": "user", "title": "Invented", "body": "Cites what is not there.", "turn_ids": ["made-up"]},
        ]})

    endpoint.respond = respond
    _configure(user_config_home, endpoint)
    r = cairn(workspace, "run", str(long_transcript(tmp_path / ".aider.chat.history.md", 2)), "--json")
    out = json.loads(r.stdout)
    assert out["process"]["published"] == 1 and out["process"]["notes_dropped"] == 2
    assert _preferences(workspace) == ["Prefers option-0"]
    assert "xyzzy" not in r.stderr and "Invented" not in r.stderr


def test_a_late_writer_cannot_keep_a_window_or_replace_a_kept_one(workspace: Path, user_config_home: Path,
                                                                 tmp_path: Path) -> None:
    cairn(workspace, "import", str(long_transcript(tmp_path / ".aider.chat.history.md", 2)))
    cairn(workspace, "seal")

    def reply(key: str, title: str) -> WindowReply:
        note = Note(type=NoteType.USER, title=title, body=f"{title}.", turn_ids=("t",))
        return WindowReply(key=key, notes=(note,))

    with Journal(str(workspace)) as j:
        (st,) = D.capture_states(j)
        old = j.claims.elect(f"digest/{st.cid}", purpose="digest", ttl=60, authority=j.authority)
        D.KeptWindows(j, st.cid, old).keep(reply("a" * 40, "First"))
    with Journal(str(workspace), clock_offset=1000) as later:
        new = later.claims.elect(f"digest/{st.cid}", purpose="digest", ttl=60, authority=later.authority)
        memo = D.KeptWindows(later, st.cid, new)
        assert memo.kept_by(old.generation) == 1 and memo.kept("a" * 40) is not None
        memo.keep(reply("a" * 40, "Second"))  # a window kept once is never replaced
        assert memo.added == 0
    with Journal(str(workspace)) as j:
        with pytest.raises(CairnError) as lost:  # the taken-over owner cannot keep anything any more
            D.KeptWindows(j, st.cid, old).keep(reply("b" * 40, "Late"))
        assert lost.value.code in (ErrorCode.CLAIM_LOST, ErrorCode.CLAIM_EXPIRED)
    cap = _capture(workspace)
    assert sorted(p.name for p in cap.glob("w-*")) == ["w-" + "a" * 40]
    kept = codec.decode((cap / ("w-" + "a" * 40)).read_bytes(), WindowReply)
    assert [n.title for n in kept.notes] == ["First"] and kept.generation == old.generation
