"""The session's own time through the journal: a session held in 2025 reads as 2025 wherever a person looks.

``created`` stays the import time; ``session_started`` / ``session_ended`` come
from the turns' source times; ``cairn journal`` headers and the ``(noted …)``
date of a proposal's bullets are the session's, and an entry written before
session times were kept still reads (dated by ``created``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from cairn.protocol import codec
from cairn.protocol.digest import Note
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.journal import PublicDigest, PublicDigestV1, session_span
from cairn.protocol.vocab import NoteType, Trigger
from cairn.server.mcp.server import search_digests

from tests.journal.helpers import cairn, cairn_json
from tests.support import REPO

# a real SpecStory export (MIT, see tests/corpus/manifest.json): a VS Code session held on 2025-11-25,
# prompts dated 12:37Z, 12:49Z and 13:03Z (the last one, unanswered when the export ends, is kept at seal)
ESPHOME = REPO / "tests" / "corpus" / "files" / "specstory-esphome-astro-site.md"
STARTED, ENDED = "2025-11-25T12:37:00.000Z", "2025-11-25T13:03:00.000Z"
STARTED_EPOCH = 1764074220.0  # 2025-11-25T12:37:00Z


def local_minute(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(epoch))


def test_a_2025_session_is_dated_2025_in_the_journal_and_in_the_memory_note(workspace: Path) -> None:
    before = time.time()
    # a finished export: its last prompt (13:03, unanswered) is kept whatever the file's age (a clone's is new)
    cairn(workspace, "import", "--ended", str(ESPHOME))
    cairn(workspace, "seal")
    cairn(workspace, "process")

    (entry,) = cairn_json(workspace, "journal")
    assert (entry["session_started"], entry["session_ended"]) == (STARTED, ENDED)
    assert entry["created"] >= before  # the import time stays ``created``

    header = cairn(workspace, "journal").stdout.splitlines()[0]
    assert header.startswith(f"## {local_minute(STARTED_EPOCH)}  Implementing an ESPHome documentation website")
    assert local_minute(entry["created"]) not in header

    out = json.loads(cairn(workspace, "review", "--json").stdout)
    assert out["proposals"] == 1
    (row,) = cairn_json(workspace, "proposals")
    cairn(workspace, "accept", row["id"])
    topic = (workspace / row["target"]).read_text()
    assert "(noted 2025-11-25)\n" in topic
    assert f"(noted {time.strftime('%Y-%m-%d', time.gmtime(entry['created']))})" not in topic


def _entry(did: str, created: float, title: str, **times: str | None) -> PublicDigest:
    return PublicDigest(id=did, capture=f"c-{did}", session_id=f"s-{did}", title=title, trigger=Trigger.SESSION_END,
                        created=created, provider="extractive", turn_ids=("t1",),
                        notes=(Note(type=NoteType.PROJECT, title=f"{title} fact", body=f"{title} fact.",
                                    turn_ids=("t1",)),), **times)


def test_journal_lists_sessions_in_the_order_they_were_held_and_still_reads_old_entries(workspace: Path) -> None:
    # a finished export: its last prompt (13:03, unanswered) is kept whatever the file's age (a clone's is new)
    cairn(workspace, "import", "--ended", str(ESPHOME))
    cairn(workspace, "seal")
    cairn(workspace, "process")  # the workspace's journal exists, with one entry of a 2025 session
    journal = workspace / ".cairn" / "journal"
    now = time.time()
    # written before session times were kept: a version 1 entry, exactly as it was encoded then
    old = PublicDigestV1(id="a" * 20, capture="c-old", session_id="s-old", title="Old entry",
                         trigger=Trigger.IDLE, created=now - 3600, provider="extractive", turn_ids=("t1",),
                         notes=(Note(type=NoteType.PROJECT, title="Old fact", body="Old fact.", turn_ids=("t1",)),))
    raw = codec.encode(old)
    assert json.loads(raw)["v"] == 1 and b"session_started" not in raw
    (journal / f"{old.id}.json").write_bytes(raw)
    # imported last, held first: a session of 2024
    early = _entry("b" * 20, now, "Early session", session_started="2024-03-01T08:00:00.000Z",
                   session_ended="2024-03-01T09:30:00.000Z")
    (journal / f"{early.id}.json").write_bytes(codec.encode(early))

    listed = cairn_json(workspace, "journal", "--fresh")
    assert [e["title"] for e in listed] == [
        "Early session",
        "Implementing an ESPHome documentation website with Astro (2025-11-25 12:30Z)",
        "Old entry",  # no session time: dated by its ``created``
    ]
    assert listed[2]["session_started"] is None and listed[2]["session_ended"] is None
    headers = [line for line in cairn(workspace, "journal", "--fresh").stdout.splitlines() if line.startswith("## ")]
    # the text is newest first, like the editors' journal views
    assert headers[2].startswith(f"## {local_minute(1709280000.0)}  Early session")
    assert headers[0].startswith(f"## {local_minute(old.created)}  Old entry")


def test_an_old_entry_reads_as_the_newest_version() -> None:
    old = PublicDigestV1(id="d", capture="c", session_id="s", title=None, trigger=Trigger.IDLE, created=7.0,
                         provider="extractive", turn_ids=(), notes=())
    read = codec.decode(codec.encode(old), PublicDigest)
    assert type(read) is PublicDigest
    assert (read.id, read.created, read.session_started, read.session_ended) == ("d", 7.0, None, None)
    assert read.session_time == 7.0 and read.session_day == "1970-01-01"
    assert json.loads(codec.encode(read))["v"] == 2  # written again, it is the newest version
    # the old version is still read strictly: an unknown field is refused, not carried over
    obj = {**json.loads(codec.encode(old)), "session_started": "2025-01-01T00:00:00Z"}
    with pytest.raises(CairnError) as err:
        codec.from_obj(obj, PublicDigest)
    assert err.value.code == ErrorCode.RECORD_UNKNOWN_FIELD
    # and the new one strictly too: a field version 2 added is required in its JSON, never guessed
    new = json.loads(codec.encode(read))
    del new["session_ended"]
    with pytest.raises(CairnError) as err:
        codec.from_obj(new, PublicDigest)
    assert err.value.code == ErrorCode.RECORD_INVALID_FIELD and "session_ended" in err.value.message


def test_session_span_reads_zones_and_leaves_out_what_is_no_time() -> None:
    assert session_span([None, "2025-04-28T11:00:00+02:00", "yesterday", "2025-04-28T08:59:59.5Z",
                         "2025-04-28 10:00"]) == ("2025-04-28T08:59:59.500Z", "2025-04-28T09:00:00.000Z")
    assert session_span([None, "not a time"]) == (None, None)


def test_journal_search_finds_a_session_by_the_day_it_was_held() -> None:
    imported = time.time()
    rows = [{"id": "d-2025", "created": imported, "title": "Astro site", "session_id": "s1", "turn_ids": ["t1"],
             "session_started": STARTED, "session_ended": ENDED,
             "notes": [{"type": "project", "title": "Astro", "body": "The site is built with Astro."}]},
            {"id": "d-none", "created": imported - 60, "title": "Undated", "session_id": "s2", "turn_ids": ["t2"],
             "session_started": None, "session_ended": None,
             "notes": [{"type": "project", "title": "Astro too", "body": "Astro builds the docs."}]}]
    (found,) = search_digests(rows, query="astro", since="2025-11-25", until="2025-11-25")
    assert (found["id"], found["session_started"], found["session_ended"]) == ("d-2025", STARTED, ENDED)
    today = time.strftime("%Y-%m-%d", time.gmtime(imported))
    assert [d["id"] for d in search_digests(rows, query="astro", since=today)] == ["d-none"]  # dated by its import
    assert [d["id"] for d in search_digests(rows, query="astro")] == ["d-none", "d-2025"]  # newest session first
