"""The formats of terminal and editor agents: turns, ids, completion, and what is left out."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.worker.ingest.importers import detect, load

from tests.support.transcripts import FIXTURES, all_text

from .formats import build_db

NOISE = ("NOISE",)

# format -> (fixture, session id, title, [(first words of each prompt, first words of each answer)])
EXPECTED = {
    "gemini-cli": ("gemini-cli/session-2026-03-02T10-15-5f1c2d3e.jsonl", "5f1c2d3e-0a1b-4c2d-8e3f-4a5b6c7d8e9f", None,
                   [("Our API tests", "Understood: I pointed"), ("Use pnpm, not npm, for every install command in this", "Noted:")]),
    "gemini-cli-json": ("gemini-cli/session-2025-09-14T08-02-a1b2c3d4.json", "a1b2c3d4-1111-4222-8333-444455556666", None,
                        [("Logs go to stderr", "Done: the logger")]),
    "qwen-code": ("qwen-code/3c9d7e21-5b4a-4f10-9c2e-7a8b9c0d1e2f.jsonl", "3c9d7e21-5b4a-4f10-9c2e-7a8b9c0d1e2f",
                  "Prices in cents", [("Money amounts", "I changed the price"), ("Release notes", "Got it;")]),
    "copilot-cli": ("copilot-cli/session-state/7d2e4f60-1a2b-4c3d-9e8f-0a1b2c3d4e5f/events.jsonl",
                    "7d2e4f60-1a2b-4c3d-9e8f-0a1b2c3d4e5f", None,
                    [("Invoices are immutable", "I made Invoice.update"), ("Amounts are Decimal", "Noted; I set")]),
    "continue": ("continue/0e4a1c9b-77d2-4b5e-a0f1-2b3c4d5e6f70.json", "0e4a1c9b-77d2-4b5e-a0f1-2b3c4d5e6f70",
                 "Feature flags", [("Feature flags are read", "I removed the env-var"), ("Tests use the in-memory", "Done:")]),
    "cline": ("cline/tasks/1767225600000/api_conversation_history.json", None, None,
              [("Dates are stored as UTC", "I changed Task.dueAt"), ("Also the API must reject", "The API now rejects")]),
    "cline-v1": ("cline/sessions/success.messages.json", "fixture-success-01", None,
                 [("Inspect the README", "The README describes")]),
    "roo-code": ("roo-code/tasks/0b8c6f2e-3d4a-4b5c-8d6e-7f8091a2b3c4/api_conversation_history.json", None, None,
                 [("Feature branches are named", "Let me check the hook."), ("Tickets are Jira keys", "Understood:")]),
    "goose": ("goose/20250611_143022.jsonl", "goose:20250611_143022", "Airflow DAG conventions",
              [("DAG ids are snake_case", "I renamed the DAG"), ("Retries are 3", "Done: default_args")]),
}
#: fixtures whose last turn ends on the assistant's text, which the extension may answer with a notice of its own
#: and go on: the session's tail, a turn once the file is sealed
SEALED = {"cline-v1"}

DB_EXPECTED = {
    "opencode": ("opencode/opencode.sql", "ses_01a2b3c4d5e6ABCDEFGHIJKLMN", "Gateway timeouts",
                 [("Upstream timeouts", "I set the read timeout"), ("Health checks", "Noted: the load balancer")]),
    "goose-db": ("goose/sessions.sql", "goose:20251108_1", "Terraform layout",
                 [("Each environment is its own", "I replaced the terraform")]),
    "cursor": ("cursor/state.sql", "cursor:5b0e1c2d-3f4a-4b5c-9d6e-7f8a9b0c1d2e", "Error handling",
               [("Errors cross the API", "I added a problem+json"), ("Validation errors", "Done: the validator")]),
    "cursor-tabs": ("cursor/workspace.sql", "cursor:tab-41f2", "Date handling", [("All timestamps", "Understood;")]),
}


def _check(sessions, sid, title, turns, *, sealed=False):
    assert len(sessions) == 1
    (s,) = sessions
    if sealed:  # the file is over: its tail is a turn
        s = s.sealed()
    if sid is not None:
        assert s.session_id == sid
    assert s.title == title
    assert [(t.user.startswith(u), t.assistant.startswith(a)) for t, (u, a) in zip(s.turns, turns, strict=False)] == [(True, True)] * len(turns)
    assert len(s.turns) == len(turns)  # the unfinished last turn is left out
    assert [t.parent_turn_id for t in s.turns] == [None] + [t.turn_id for t in s.turns[:-1]]
    for marker in NOISE:
        assert marker not in all_text(sessions)


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_text_formats(case, fixture_copy):
    rel, sid, title, turns = EXPECTED[case]
    path = fixture_copy(rel)
    sessions = load(path)
    _check(sessions, sid, title, turns, sealed=case in SEALED)
    assert load(path) == sessions  # stable ids


@pytest.mark.parametrize("case", sorted(DB_EXPECTED))
def test_database_formats(case, tmp_path):
    rel, sid, title, turns = DB_EXPECTED[case]
    sessions = load(build_db(rel, tmp_path / "store.db"))
    _check(sessions, sid, title, turns)  # sub-agent sessions and generating chats are left out


def test_source_ids_are_turn_ids(fixture_copy, tmp_path):
    (g,) = load(fixture_copy(EXPECTED["gemini-cli"][0]))
    assert [t.turn_id for t in g.turns] == ["u-0002", "u-0005"]  # the rewound prompt u-0004 is gone
    (c,) = load(fixture_copy(EXPECTED["copilot-cli"][0]))
    assert [t.turn_id for t in c.turns] == ["e-0003", "e-0010"]
    (o,) = load(build_db("opencode/opencode.sql", tmp_path / "o.db"))
    assert [t.turn_id for t in o.turns] == ["msg_01", "msg_04"]
    assert o.turns[0].completed_at == "2025-10-09T08:53:29.000Z"


def test_grown_file_keeps_old_turns(tmp_path):
    src = (FIXTURES / EXPECTED["copilot-cli"][0]).read_text().splitlines(keepends=True)
    path = tmp_path / "events.jsonl"
    path.write_text("".join(src[:10]) + src[10][:40])  # cut inside a line: a write in progress
    (before,) = load(path)
    path.write_text("".join(src))
    (after,) = load(path)
    assert after.turns[: len(before.turns)] == before.turns and len(after.turns) == 2 > len(before.turns)


def test_gemini_tokens_mark_a_finished_answer(tmp_path):
    lines: list[dict[str, object]] = [
        {"sessionId": "s", "projectHash": "h", "startTime": "t"},
        {"id": "u", "type": "user", "content": "Keep the API stable."},
        {"id": "g", "type": "gemini", "content": "Streaming so fa"},
    ]
    path = tmp_path / "session-x.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert load(path) == []
    lines.append({"id": "g", "type": "gemini", "content": "Streaming so far, done.", "tokens": {"total": 3}})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    (s,) = load(path)
    assert s.turns[0].assistant == "Streaming so far, done."


def test_whole_file_cut_short_is_malformed(tmp_path):
    for rel in (EXPECTED["continue"][0], EXPECTED["cline"][0], EXPECTED["gemini-cli-json"][0]):
        data = (FIXTURES / rel).read_bytes()
        path = tmp_path / "cut.json"
        path.write_bytes(data[: len(data) // 2])
        with pytest.raises(CairnError) as err:
            load(path, "continue" if "continue" in rel else "cline" if "cline" in rel else "gemini-cli")
        assert err.value.code == ErrorCode.IMPORT_MALFORMED, rel


def test_path_tells_cline_from_roo_and_gemini_from_qwen(tmp_path):
    roo = tmp_path / "globalStorage" / "rooveterinaryinc.roo-cline" / "tasks" / "1" / "api_conversation_history.json"
    roo.parent.mkdir(parents=True)
    shutil.copyfile(FIXTURES / EXPECTED["cline"][0], roo)  # Cline-shaped content in Roo Code's folder
    assert {s.source_format for s in load(roo)} == {"roo-code"}
    qwen = tmp_path / ".qwen" / "tmp" / "abc" / "chats" / "session-1.json"
    qwen.parent.mkdir(parents=True)
    shutil.copyfile(FIXTURES / EXPECTED["gemini-cli-json"][0], qwen)
    assert {s.source_format for s in load(qwen)} == {"qwen-code"}


def test_gemini_subagent_chat_is_a_sidechain(tmp_path):
    doc = json.loads((FIXTURES / EXPECTED["gemini-cli-json"][0]).read_text())
    doc["kind"] = "subagent"
    path = tmp_path / "session-sub.json"
    path.write_text(json.dumps(doc))
    assert load(path) == []


def test_goose_session_moved_into_the_database_keeps_its_ids(tmp_path):
    """Goose moves JSONL sessions into sessions.db under the same id: the turns must not be captured twice."""
    import sqlite3

    (from_file,) = load(FIXTURES / "goose" / "20250611_143022.jsonl")
    db = build_db("goose/sessions.sql", tmp_path / "sessions.db")
    con = sqlite3.connect(db)
    con.execute("INSERT INTO sessions (id, name, working_dir) VALUES ('20250611_143022', 'Airflow DAG conventions', '/x')")
    for line in (FIXTURES / "goose" / "20250611_143022.jsonl").read_text().splitlines()[1:]:
        m = json.loads(line)
        con.execute("INSERT INTO messages (session_id, role, content_json, created_timestamp, metadata_json) "
                    "VALUES (?, ?, ?, ?, ?)", ("20250611_143022", m["role"], json.dumps(m["content"]), m["created"],
                                               json.dumps(m["metadata"])))
    con.commit()
    con.close()
    (from_db,) = [s for s in load(db) if s.session_id == from_file.session_id]
    assert from_db.turns == from_file.turns


def test_qwen_chat_opening_on_a_bare_system_record(tmp_path):
    lines = (FIXTURES / EXPECTED["qwen-code"][0]).read_text().splitlines(keepends=True)
    first = json.loads(lines[0])
    del first["systemPayload"]  # a record shaped like Claude Code's (uuid, parentUuid, sessionId, type)
    path = tmp_path / "chat.txt"
    path.write_text(json.dumps(first) + "\n" + "".join(lines[1:]))
    assert detect(path, path.read_bytes()) == "qwen-code"
    (claude,) = load(FIXTURES / "claude-code" / "session.jsonl")
    assert claude.source_format == "claude-code"


@pytest.mark.parametrize("case", sorted(DB_EXPECTED))
def test_a_closed_wal_database_is_read_with_nothing_written_beside_it(case, tmp_path):
    """The tool is closed: its database is in WAL mode with no log beside it. Reading it leaves its folder
    as it was (before, SQLite made ``-wal`` and ``-shm`` files there to read; as root it also changed their
    owner on every open, so every quiet import read the database again)."""
    rel, sid, title, turns = DB_EXPECTED[case]
    store = tmp_path / "store"
    store.mkdir()
    db = build_db(rel, store / "store.db")
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)
    con.close()  # the last connection folds the log in and removes it
    before = sorted(p.name for p in store.iterdir())
    assert before == ["store.db"]
    _check(load(db), sid, title, turns)
    assert sorted(p.name for p in store.iterdir()) == before
