"""A session file read while its agent still writes it: a turn given is never given again under another id.

An import or the watcher may read a file at any moment of its writing, and captures the completed turns it
finds, by id. A turn whose reply can still grow is the session's tail (``Session.tail``), captured once a
next prompt closes it or the file is sealed; if the importer called it complete instead, the longer reply
read later gave the same prompt a second id, and the capture kept both. Replayed state by state (each
state one the file really passes through as its agent writes it), every turn any state gives must be a turn
of the finished file, sealed, with the same id, and the finished file must give every prompt once:

- SpecStory exports (saved section by section as the agent works), on real public exports;
- Cursor agent transcripts, where Cursor ends the file with a ``turn_ended`` marker while idle and replaces
  it with what comes next (a prompt, or its notice that a subagent finished and more of the same turn);
- Cline and Roo Code task histories (the JSON array rewritten message by message), where a reply that ends
  on text is answered by the extension's own notice ("[ERROR] You did not use a tool…") and goes on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from cairn.protocol.transcript import Session
from cairn.worker.ingest.importers import load

from tests.support import REPO
from tests.support.transcripts import FIXTURES

CORPUS = REPO / "tests" / "corpus" / "files"
CACHE = REPO / "tests" / "corpus" / "cache"

SPECSTORY = sorted(CORPUS.glob("specstory-*.md"))[:12]
CURSOR = sorted([*(FIXTURES / "cursor-transcript").rglob("*.jsonl"), *CACHE.glob("cursor-wellspring-*.jsonl")])
CLINE = sorted([*(FIXTURES / "cline").rglob("api_conversation_history.json"),
                *(FIXTURES / "cline").rglob("*.messages.json"),
                *(FIXTURES / "roo-code").rglob("api_conversation_history.json")])


def _given(path: Path, fmt: str) -> dict[str, str]:
    """The completed turns a read gives now: id -> prompt."""
    return {t.turn_id: t.user for s in load(path, fmt) for t in s.turns}


def _finished(path: Path, fmt: str) -> list[Session]:
    return [s.sealed() for s in load(path, fmt)]


def _replay(states: Iterator[bytes], final: bytes, at: Path, fmt: str) -> None:
    seen: dict[str, str] = {}
    for state in states:
        at.write_bytes(state)
        seen.update(_given(at, fmt))
    at.write_bytes(final)
    finished = _finished(at, fmt)
    ids = {t.turn_id: t.user for s in finished for t in s.turns}
    assert ids, "the file has turns"
    extra = {tid: user[:60] for tid, user in seen.items() if tid not in ids}
    assert not extra, f"given while the file was written, under an id the finished file does not keep: {extra}"
    prompts = [t.user for s in finished for t in s.turns]
    assert len(prompts) == len(set(zip(prompts, ids, strict=True)))


def test_the_real_files_are_here() -> None:
    assert len(SPECSTORY) >= 5 and CURSOR and len(CLINE) >= 3


@pytest.mark.parametrize("path", SPECSTORY, ids=lambda p: p.name)
def test_a_specstory_export_saved_section_by_section(path: Path, tmp_path: Path) -> None:
    data = path.read_bytes()
    cuts = [m.end() for m in re.finditer(rb"\n---[ \t]*\n", data)]
    _replay((data[:c] for c in cuts), data, tmp_path / path.name, "specstory")


def _lines(data: bytes) -> list[bytes]:
    return [line.rstrip(b"\r\n") + b"\n" for line in data.splitlines() if line.strip()]


@pytest.mark.parametrize("path", CURSOR, ids=lambda p: p.name)
def test_a_cursor_transcript_idle_after_each_record(path: Path, tmp_path: Path) -> None:
    """Each state: the records so far, ended by the marker Cursor writes while the agent is idle."""
    records = [line for line in _lines(path.read_bytes()) if b'"turn_ended"' not in line]
    marker = json.dumps({"type": "turn_ended", "status": "success"}).encode() + b"\n"
    states = (b"".join(records[:n]) + marker for n in range(1, len(records) + 1))
    _replay(states, b"".join(records) + marker, tmp_path / path.name, "auto")


@pytest.mark.parametrize("path", CLINE, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_a_cline_history_rewritten_message_by_message(path: Path, tmp_path: Path) -> None:
    doc = json.loads(path.read_text())
    messages = doc["messages"] if isinstance(doc, dict) else doc

    def state(n: int) -> bytes:
        part = messages[:n]
        return json.dumps({**doc, "messages": part} if isinstance(doc, dict) else part).encode()

    fmt = "roo-code" if "roo-code" in str(path) else "cline"
    _replay((state(n) for n in range(1, len(messages) + 1)), path.read_bytes(), tmp_path / path.name, fmt)


def test_a_reply_on_text_that_the_extension_answers_with_its_notice_is_one_turn(tmp_path: Path) -> None:
    """What a tester saw in Cline: a reply on text, then the extension's notice and the rest of the turn."""
    path = tmp_path / "api_conversation_history.json"
    asked = [{"role": "user", "content": [{"type": "text", "text": "<task>\nNow add a migration.\n</task>"}]},
             {"role": "assistant", "content": [{"type": "text", "text": "I will add the migration file."}]}]
    path.write_text(json.dumps(asked))
    (before,) = load(path, "cline")
    assert not before.turns and before.tail is not None
    grown = [*asked, {"role": "user", "content": [{"type": "text", "text": "[ERROR] You did not use a tool in your "
                                                   "previous response! Please retry with a tool use."}]},
             {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "attempt_completion",
                                                "input": {"result": "Added migrations/0002_add_index.sql."}}]}]
    path.write_text(json.dumps(grown))
    (after,) = load(path, "cline")
    assert [t.user for t in after.turns] == ["Now add a migration."] and after.tail is None
    assert after.turns[0].assistant.endswith("Added migrations/0002_add_index.sql.")
