"""cctrace's "Claude Code Session Export" Markdown: messages, times, tool traffic, command text, exports shown in results.

Fixture sources: tests/fixtures/transcripts/cctrace/SOURCES.md (a real export, MIT).
"""

from __future__ import annotations

import pytest
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.worker.ingest.importers import cctrace, detect, load

from tests.support import REPO
from tests.support.transcripts import assert_absent

FIXTURE = "cctrace/conversation_full.md"
WHOLE = REPO / "tests" / "corpus" / "files" / "cctrace-conversation-full.md"  # the whole export, committed (MIT)


def test_turns_times_and_session_id(fixture_copy):
    path = fixture_copy(FIXTURE)
    assert detect(path, path.read_bytes()[:65536]) == "cctrace"
    (s,) = load(path)
    assert (s.session_id, s.source_format) == ("f33cdb42-0a41-40d4-91eb-c89c109af38a", "cctrace")
    first, second = s.turns
    assert first.user.startswith("ULTRATHINK this one.  I am running Claude Code on wsl")
    assert first.assistant.startswith("I'll help you find where Claude Code stores session data")
    assert first.completed_at == "2025-07-02T21:56:17Z"  # "**[2025-07-02 21:56:17]**", written in UTC
    assert "i would prefer for this to be something that can be run on command" in second.user
    assert second.parent_turn_id == first.turn_id


def test_thinking_and_tool_traffic_are_not_text(fixture_copy):
    assert_absent(load(fixture_copy(FIXTURE)), ("Internal Reasoning", "The user is asking about", "Tool Use:",
                                                "Tool Result:", "toolu_", "[Request interrupted"))


def test_the_whole_export():
    """The command's echo stands for the prompt (its text is Claude Code's), and an earlier export of the
    session that a tool result shows is not taken for the session's messages."""
    (s,) = load(WHOLE)
    users = [t.user for t in s.turns]
    assert len(users) == 20
    assert users.count("/export") == 4
    assert not [u for u in users if u.startswith("Export the current Claude Code session")]
    assert sum(u.startswith("ULTRATHINK this one.") for u in users) == 1
    assert all(t.completed_at and t.completed_at.endswith("Z") for t in s.turns)
    assert users[-2] == "please give me a one line commit message"


def test_an_export_without_its_title_is_refused():
    text = (REPO / "tests" / "fixtures" / "transcripts" / FIXTURE).read_text(encoding="utf-8").split("\n", 1)[1]
    with pytest.raises(CairnError) as err:
        cctrace.parse(text, source_name="conversation_full.md")
    assert err.value.code == ErrorCode.IMPORT_MALFORMED and "line 1" in str(err.value)
