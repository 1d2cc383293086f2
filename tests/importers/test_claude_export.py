""""Claude Session Export" Markdown: JSON block bodies, tool results, boilerplate, unfinished tail."""

from __future__ import annotations

from cairn.worker.ingest.importers import claude_export, load

from tests.support.transcripts import assert_absent, grow

FIXTURE = "claude-export/session-export.md"


def test_turns_and_session_id(fixture_copy):
    (s,) = load(fixture_copy(FIXTURE))
    assert (s.session_id, s.source_format) == ("9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a", "claude-export")
    assert [(t.user, t.assistant) for t in s.turns] == [
        ("Please keep docstrings in Google style in this project; the linter config expects it.",
         "Understood: Google-style docstrings (`Args:`, `Returns:`, `Raises:`) from now on."),
        ("Rename `load_cfg` to `load_config` everywhere.",
         "Let me find every use first.\n\nRenamed `load_cfg` to `load_config` in `src/config.py` and its two callers."),
    ]
    assert s.turns[1].parent_turn_id == s.turns[0].turn_id


def test_noise_absent(fixture_copy):
    assert_absent(load(fixture_copy(FIXTURE)), ("THINKING-NOISE", "TOOL-OUTPUT-NOISE", "tool_use", "Caveat", "/cost",
                                                "Total cost", "run the linter", "6/3/2025"))


def test_ids_stable_and_growth_completes_the_last_turn(fixture_copy):
    before, (after,) = grow(fixture_copy(FIXTURE), (
        "---\n\n### User\n> 6/3/2025, 10:19:44 AM\n\n[\n  {\n    \"tool_use_id\": \"toolu_01Lint\",\n"
        "    \"type\": \"tool_result\",\n    \"content\": \"All checks passed!\"\n  }\n]\n\n---\n\n"
        "### Assistant\n> 6/3/2025, 10:19:50 AM\n\nThe linter reports no problems.\n\n---\n"))
    assert after.turns[:2] == before[0].turns
    assert len(after.turns) == 3
    assert (after.turns[2].user, after.turns[2].assistant) == ("Now run the linter on the package.", "The linter reports no problems.")


def test_an_approved_plan_is_the_assistants_and_the_approval_the_users():
    text = (
        "# Claude Session Export\n\n## Session Information\n\n- **Session ID**: `0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9`\n\n"
        "---\n\n## Conversation\n\n### User\n> 4/30/2026, 6:00:00 PM\n\n"
        "Implement the following plan:\n\n# Cache the price feed\n\n1. Keep quotes for 30 s.\n\n\n"
        "If you need specific details from before exiting plan mode (like exact code snippets, error messages, or "
        "content you generated), read the full transcript at: /home/dana/.claude/projects/x/1.jsonl\n\n---\n\n"
        "### Assistant\n> 4/30/2026, 6:02:00 PM\n\nDone: quotes are cached for 30 s.\n\n---\n"
    )
    (session,) = claude_export.parse(text, source_name="export.md")
    (turn,) = session.turns
    assert turn.user == "> Plan: Cache the price feed\nApproved"
    assert turn.assistant == "# Cache the price feed\n\n1. Keep quotes for 30 s.\n\nDone: quotes are cached for 30 s."


def test_turns_keep_the_time_of_their_last_reply(fixture_copy, utc_minus_5):
    """The export writes local times without a zone ("6/3/2025, 10:02:15 AM"): read in the local zone."""
    (s,) = load(fixture_copy(FIXTURE))
    assert [t.completed_at for t in s.turns] == ["2025-06-03T15:02:15Z", "2025-06-03T15:05:20Z"]
