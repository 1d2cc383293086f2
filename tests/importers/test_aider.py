"""aider chat history: sessions per header, prompts, tool output, fenced replies."""

from __future__ import annotations

from cairn.worker.importers import aider, load

from tests.support.transcripts import assert_absent, grow

FIXTURE = "aider/.aider.chat.history.md"


def test_sessions_turns_and_texts(fixture_copy):
    sessions = load(fixture_copy(FIXTURE))
    assert [len(s.turns) for s in sessions] == [2, 1]
    assert all(s.source_format == "aider" for s in sessions)
    assert sessions[0].session_id != sessions[1].session_id
    first, second = sessions[0].turns
    assert first.user == "I prefer f-strings over % formatting in this codebase.\nPlease convert the logging calls in cli.py."
    assert first.assistant.startswith("I'll convert the `%` formatting in the logging calls to f-strings.\n\nsrc/cairn_demo/cli.py\n```python")
    assert first.assistant.endswith(">>>>>>> REPLACE\n```")
    # "> " lines inside a fenced block belong to the reply
    assert second.assistant == (
        "It prefixes every line with `> `, like a Markdown quote:\n\n```text\n> first line\n> second line\n```\n\n"
        "So the output stays readable when pasted into an issue."
    )
    assert second.parent_turn_id == first.turn_id
    assert sessions[1].turns[0].user == "Never commit directly to main; always create a feature branch first."
    assert sessions[1].turns[0].parent_turn_id is None


def test_tool_output_and_unanswered_prompts_absent(fixture_copy):
    assert_absent(load(fixture_copy(FIXTURE)),
                  ("Tokens:", "Applied edit", "Aider v0.82.1", "/add", "/run", "Added 12 lines", "fix the failing test"))


def test_ids_stable_and_growth_adds_exactly_the_answer(fixture_copy):
    before, after = grow(fixture_copy(FIXTURE),
                         "\nThe failing test compared naive and aware datetimes; I made both aware.\n\n"
                         "> Applied edit to tests/test_cli.py  \n")
    assert after[0] == before[0]
    assert after[1].session_id == before[1].session_id
    assert after[1].turns[:1] == before[1].turns
    assert len(after[1].turns) == 2
    assert after[1].turns[1].user == "fix the failing test"
    assert after[1].turns[1].assistant == "The failing test compared naive and aware datetimes; I made both aware."


def test_identical_sessions_get_distinct_ids():
    one = "# aider chat started at 2025-01-01 10:00:00\n\n#### hi\n\nhello\n"
    sessions = aider.parse(one + "\n" + one, source_name=".aider.chat.history.md")
    assert len({s.session_id for s in sessions}) == 2
    assert len({t.turn_id for s in sessions for t in s.turns}) == 2
