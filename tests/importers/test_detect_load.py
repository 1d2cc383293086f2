"""Format detection and file loading: every format by sniffing, fixed error codes for bad input."""

from __future__ import annotations

import os

import pytest
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.worker.ingest import importers
from cairn.worker.ingest.importers import FORMATS, MAX_BYTES, detect, load, load_report

from tests.support import REPO
from tests.support.transcripts import FIXTURES

CASES = [
    ("claude-code/session.jsonl", "claude-code"),
    ("codex/rollout-2025-07-14T16-00-00-0197a3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b.jsonl", "codex"),
    ("aider/.aider.chat.history.md", "aider"),
    ("specstory/.specstory/history/2025-06-10_08-12Z-dark-mode-toggle.md", "specstory"),
    ("claude-export/session-export.md", "claude-export"),
    ("cctrace/conversation_full.md", "cctrace"),
    ("gptel/chat.org", "gptel-org"),
    ("gptel/old-bounds.org", "gptel-org"),
    ("gptel/chat.md", "gptel-md"),
    ("claude-code-export/2025-07-21-retry-upload.txt", "claude-code-export"),
    ("claude-code-export/2025-11-09-docs-v2.txt", "claude-code-export"),
    ("gemini-cli/session-2026-03-02T10-15-5f1c2d3e.jsonl", "gemini-cli"),
    ("gemini-cli/session-2025-09-14T08-02-a1b2c3d4.json", "gemini-cli"),
    ("qwen-code/3c9d7e21-5b4a-4f10-9c2e-7a8b9c0d1e2f.jsonl", "qwen-code"),
    ("copilot-cli/session-state/7d2e4f60-1a2b-4c3d-9e8f-0a1b2c3d4e5f/events.jsonl", "copilot-cli"),
    ("continue/0e4a1c9b-77d2-4b5e-a0f1-2b3c4d5e6f70.json", "continue"),
    ("cline/tasks/1767225600000/api_conversation_history.json", "cline"),
    ("cline/sessions/success.messages.json", "cline"),
    ("roo-code/tasks/0b8c6f2e-3d4a-4b5c-8d6e-7f8091a2b3c4/api_conversation_history.json", "roo-code"),
    ("goose/20250611_143022.jsonl", "goose"),
    ("cline/tasks/1767312000000/ui_messages.json", "cline"),
    ("roo-code/tasks/4d1e2f30-5a6b-4c7d-8e9f-a0b1c2d3e4f5/ui_messages.json", "roo-code"),
    ("cursor-transcript/agent-transcripts/6a1f0c3e-8b2d-4e5f-9a7c-1d2e3f4a5b6c/6a1f0c3e-8b2d-4e5f-9a7c-1d2e3f4a5b6c.jsonl",
     "cursor-transcript"),
    ("cursor-export/cursor_chat-voice-assistant.md", "cursor-export"),
    ("opencode-export/session-ses_3a9f.md", "opencode-export"),
    ("vscode-copilot/chat.json", "vscode-copilot"),
]


DB_FORMATS = {"cursor", "opencode"}  # SQLite stores: detected in test_matrix.py from their SQL fixtures


def test_formats_constant():
    assert FORMATS == (
        "aider", "cctrace", "claude-code", "claude-code-export", "claude-export", "cline", "codex", "continue", "copilot-cli",
        "cursor", "cursor-export", "cursor-transcript", "gemini-cli", "goose", "gptel-md", "gptel-org", "opencode",
        "opencode-export", "qwen-code", "roo-code", "specstory", "vscode-copilot",
    )
    assert {fmt for _, fmt in CASES} | DB_FORMATS == set(FORMATS)


@pytest.mark.parametrize("rel, fmt", CASES)
def test_auto_detection_and_load(rel, fmt, tmp_path):
    data = (FIXTURES / rel).read_bytes()
    # a neutral name: detection must work from content alone
    path = tmp_path / "transcript.txt"
    path.write_bytes(data)
    assert detect(path, data[:4096]) == fmt
    sessions = load(path)
    assert sessions and all(s.source_format == fmt for s in sessions)
    assert load(path, fmt) == sessions


def test_detect_head_only_for_jsonl_cut_mid_line(tmp_path):
    data = (FIXTURES / CASES[1][0]).read_bytes()
    assert detect(tmp_path / "absent.jsonl", data[:80]) == "codex"
    data = (FIXTURES / CASES[0][0]).read_bytes()
    assert detect(tmp_path / "absent.jsonl", data[:200]) == "claude-code"


def test_a_first_record_of_an_unforeseen_shape_is_judged_by_its_other_keys(tmp_path):
    """A ``type`` that is not a string (a list here) is no record type of any format, and no crash."""
    path = tmp_path / "odd.jsonl"
    assert detect(path, b'{"type": ["user"], "sessionId": "s"}\n') == "claude-code"
    assert detect(path, b'{"type": {"a": 1}, "payload": {}}\n{"type": "response_item", "payload": {}}\n') == "codex"


def test_unknown_format(tmp_path):
    path = tmp_path / "notes.md"
    path.write_text("# Shopping list\n\n- eggs\n- milk\n")
    with pytest.raises(CairnError) as err:
        load(path)
    assert err.value.code == ErrorCode.IMPORT_UNKNOWN_FORMAT
    with pytest.raises(CairnError) as err:
        detect(path, path.read_bytes())
    assert err.value.code == ErrorCode.IMPORT_UNKNOWN_FORMAT
    with pytest.raises(CairnError) as err:
        load(path, "chatgpt")
    assert err.value.code == ErrorCode.IMPORT_UNKNOWN_FORMAT


def test_too_large_is_refused_for_formats_read_whole(tmp_path):
    path = tmp_path / ".aider.chat.history.md"
    with path.open("wb") as f:
        f.write(b"# aider chat started at 2025-01-01 10:00:00\n\n#### hi\n\nhello\n")
        f.truncate(MAX_BYTES + 1)  # sparse: costs no disk
    with pytest.raises(CairnError) as err:
        load(path)
    assert err.value.code == ErrorCode.IMPORT_TOO_LARGE
    assert MAX_BYTES == 64 * 1024 * 1024


def test_a_claude_code_session_over_64_mib_imports_and_one_huge_line_is_refused(tmp_path):
    from cairn.worker.ingest.importers import _jsonl

    from tests.support.generated import write_session

    path = write_session(tmp_path / "big.jsonl", 4, 50, tool_bytes=(MAX_BYTES // 40))
    assert path.stat().st_size > MAX_BYTES
    (session,) = load(path)
    assert len(session.turns) == 50 and "collected" not in session.turns[0].assistant  # tool output is not a turn
    with path.open("ab") as f:
        f.write(b'{"type": "user", "pad": "' + b"x" * (_jsonl.MAX_LINE_BYTES + 1) + b'"}\n')
    with pytest.raises(CairnError) as err:
        load(path)
    assert err.value.code == ErrorCode.IMPORT_TOO_LARGE and "line 202" in err.value.message


def test_unreadable(tmp_path):
    with pytest.raises(CairnError) as err:
        load(tmp_path / "missing.jsonl")
    assert err.value.code == ErrorCode.IMPORT_UNREADABLE
    with pytest.raises(CairnError) as err:
        load(tmp_path)
    assert err.value.code == ErrorCode.IMPORT_UNREADABLE


def test_invalid_utf8_names_its_line_and_keeps_the_rest(tmp_path):
    """A broken character costs its line a replacement mark, not the file: every turn is read, the line is named."""
    path = tmp_path / ".aider.chat.history.md"
    path.write_bytes(b"# aider chat started at 2025-01-01 10:00:00\n\n#### hi\n\nbad \xff byte\n\n#### more\n\nok\n")
    report = load_report(path)
    assert [(e.code, e.detail["line"]) for e in report.skipped] == [(ErrorCode.IMPORT_MALFORMED, 5)]
    assert "byte" not in report.skipped[0].message  # the line is named by number, never by content
    (session,) = report.sessions
    assert [(t.user, t.assistant) for t in session.sealed().turns] == [("hi", "bad \ufffd byte"), ("more", "ok")]


def test_tool_output_cut_inside_a_character(tmp_path):
    """A SpecStory export whose agent cut a tool output at a byte count, inside a box-drawing character (seen
    in a public export): the session is read, the user's words whole."""
    path = tmp_path / "2026-07-13_20-06-10Z-review.md"
    cut = ("\u2500" * 40).encode()[:-1]  # the last character's third byte is gone
    path.write_bytes(
        b"# Review (2026-07-13 20:06Z)\n\n_**User**_\n\nreview the installer and keep the logs\n\n---\n\n"
        b"_**Agent (model gpt-5)**_\n\n<details><summary>Tool use</summary>\n\n```\n" + cut
        + b"\n... (truncated)\n```\n</details>\n\nThe installer is fine.\n\n---\n\n"
        b"_**User**_\n\nthanks, now check the updater too\n\n---\n\n_**Agent (model gpt-5)**_\n\nChecked.\n"
    )
    report = load_report(path)
    assert [e.code for e in report.skipped] == [ErrorCode.IMPORT_MALFORMED]
    users = [t.user for s in report.sessions for t in s.sealed().turns]
    assert users == ["review the installer and keep the logs", "thanks, now check the updater too"]


def test_load_is_pure(fixture_copy):
    path = fixture_copy(CASES[0][0])
    before = (path.read_bytes(), os.stat(path).st_mtime_ns, sorted(os.listdir(path.parent)))
    load(path)
    assert (path.read_bytes(), os.stat(path).st_mtime_ns, sorted(os.listdir(path.parent))) == before


def test_shipped_demo_session():
    """The README demo transcript: ten completed turns, the streaming eleventh left out."""
    (s,) = load(REPO / "server" / "examples" / "demo-session.jsonl")
    assert s.source_format == "claude-code"
    assert s.session_id == "3c9e1f52-7a4b-4d18-b6e0-5f2a9c8d1e73"
    assert s.title == "Fix flaky ledger rollover test and agree house rules"
    assert len(s.turns) == 10
    users = [t.user for t in s.turns]
    assert any("never use bare except" in u for u in users)
    assert any("rather not have emojis in commit messages" in u for u in users)
    assert any("pytest -x tests/ledger" in u for u in users)
    assert any("https://tracker.example.org/CAIRN" in u for u in users)
    assert any("Forgejo Actions" in u for u in users)
    text = "\n".join(u + t.assistant for u, t in zip(users, s.turns, strict=True))
    for noise in ("changelog entry", "<system-reminder>", "<command-name>", "Caveat:", "collected 57 items",
                  "List every call site", "EU DST switch", "Two call sites: ledger/close.py:31 and"):
        assert noise not in text, noise
    assert [t.parent_turn_id for t in s.turns[1:]] == [t.turn_id for t in s.turns[:-1]]


@pytest.mark.parametrize("rel", [rel for rel, fmt in CASES if rel.endswith(".md") or rel.endswith(".org")])
def test_crlf_files_read_like_lf_files(rel, tmp_path):
    src = FIXTURES / rel
    path = tmp_path / src.name
    path.write_bytes(src.read_bytes().replace(b"\n", b"\r\n"))
    assert load(path) == load(src)


@pytest.mark.parametrize(
    "path",
    [REPO / "server" / "examples" / "demo-session.jsonl", FIXTURES / CASES[1][0]],
    ids=["claude-code-demo", "codex"],
)
def test_every_prefix_of_a_growing_jsonl_file_gives_a_prefix_of_its_turns(path, tmp_path):
    """Simulates a live transcript read after each write, including a write cut mid-line."""
    data = path.read_text()
    fmt = detect(path, data.encode()[:4096])
    full = load(path)[0].turns
    copy = tmp_path / path.name
    cut = 0
    seen_counts = set()
    while True:
        end = data.find("\n", cut)
        if end < 0:
            break
        for stop in (end + 1, (cut + end) // 2):  # after a whole line, and in the middle of the next one
            copy.write_text(data[:stop])
            sessions = load(copy, fmt)
            turns = sessions[0].turns if sessions else ()
            assert turns == full[: len(turns)]
            seen_counts.add(len(turns))
        cut = end + 1
    assert seen_counts == set(range(len(full) + 1))


def test_a_jsonl_record_with_a_broken_character_is_kept(tmp_path):
    """In a streamed JSONL session a broken character costs its record nothing but the character: the turn is
    read, the line named."""
    src = (FIXTURES / "claude-code" / "session.jsonl").read_bytes().split(b"\n")
    (whole,) = load_report(FIXTURES / "claude-code" / "session.jsonl").sessions
    first_user = whole.turns[0].user.encode()
    at = next(i for i, line in enumerate(src) if first_user[:20] in line and b'"user"' in line)
    word = first_user.split()[0]
    src[at] = src[at].replace(word, word + b"\xe2\x94", 1)
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"\n".join(src))
    report = load_report(path, "claude-code")
    assert [(e.code, e.detail["line"]) for e in report.skipped] == [(ErrorCode.IMPORT_MALFORMED, at + 1)]
    (session,) = report.sessions
    assert len(session.turns) == len(whole.turns)
    assert session.turns[0].user.replace("\ufffd", "", 1) == whole.turns[0].user


def test_a_file_in_another_encoding_reports_a_few_lines_not_all(tmp_path):
    """A log saved in Latin-1 has a broken character on every line with an accent: its turns are read, and the
    report names the first lines and says later ones may be broken too, instead of one line per accent."""
    path = tmp_path / ".aider.chat.history.md"
    turns = b"".join(b"#### caf\xe9 %d\n\nr\xe9ponse %d\n\n" % (i, i) for i in range(30))
    path.write_bytes(b"# aider chat started at 2025-01-01 10:00:00\n\n" + turns)
    report = load_report(path)
    lines = [int(str(e.detail["line"])) for e in report.skipped]
    assert len(lines) == 11 and lines == sorted(lines)
    assert "no later line is reported" in report.skipped[-1].message
    assert sum(len(s.sealed().turns) for s in report.sessions) == 30


@pytest.mark.parametrize("fmt", ["auto", *sorted(f for f in FORMATS if f not in importers.DB_PARSERS or f in importers.PARSERS)])
@pytest.mark.parametrize("content", [b"", b"\n", b"  \n\n"], ids=["empty", "newline", "blank"])
def test_a_session_file_with_nothing_written_yet_is_no_error(tmp_path, fmt, content):
    """A session just created (0 bytes) or cut before its first record: nothing complete yet, whatever
    format it is read as (before: E_IMPORT_MALFORMED "not a complete JSON document", or
    E_IMPORT_WRONG_FORMAT, and `import --all` exited 1)."""
    path = tmp_path / "session.jsonl"
    path.write_bytes(content)
    report = load_report(path, fmt)
    assert (report.sessions, report.skipped) == ([], ())
    if fmt != "auto":
        assert importers.wrong_format(path, fmt) is None
