"""opencode's ``/export`` Markdown: every prompt of real exports (with and without details) is a turn's user
side, tool calls, reasoning and compaction summaries never reach a turn, and unfinished turns wait."""

from __future__ import annotations

import pytest
from cairn.worker.ingest.importers import FORMATS, PARSERS, detect, load, opencode_export

from tests.support.transcripts import FIXTURES, assert_absent, grow

PLAIN = "opencode-export/session-ses_2560.md"  # metadata, no tool details, no thinking; compactions
DETAILED = "opencode-export/session-ses_37df-tail.md"  # metadata, tool details, thinking
OLDER = "opencode-export/session-ses_464b-tail.md"  # older exporter: fenced tool blocks, thinking, no metadata
SYNTHETIC = "opencode-export/session-ses_3a9f.md"


def _prompts(text: str) -> list[str]:
    """The non-empty user sections of an export, read independently of the importer: the lines after a
    ``## User`` line that follows a ``---`` line, up to the next ``---`` line before a ``## `` heading."""
    lines = text.split("\n")
    prompts: list[str] = []
    for i, line in enumerate(lines):
        if line == "## User" and i >= 2 and lines[i - 2] == "---":
            j = i + 1
            while j < len(lines) and not (lines[j] == "---" and j + 2 < len(lines) and lines[j + 2].startswith("## ")):
                j += 1
            body = "\n".join(lines[i + 1 : j]).strip()
            if body:
                prompts.append(body)
    return prompts


@pytest.mark.parametrize("rel, count", [(PLAIN, 6), (DETAILED, 2)])
def test_every_prompt_of_a_real_export_is_a_user_side(fixture_copy, rel, count):
    (s,) = load(fixture_copy(rel), "opencode-export")
    prompts = _prompts((FIXTURES / rel).read_text(encoding="utf-8"))
    assert len(prompts) == count
    assert [t.user for t in s.turns] == prompts


def test_an_export_without_details(fixture_copy):
    path = fixture_copy(PLAIN)
    assert detect(path, path.read_bytes()[:65536]) == "opencode-export"
    (s,) = load(path)
    assert (s.session_id, s.title) == ("ses_2560d679bffenPo17rlXzwec17", "Extending SMP language support")
    assert s.turns[0].user == "run the actual evaluvation scenarios"
    assert s.turns[0].assistant.startswith(
        "Let me create a comprehensive evaluation script:\n\nExcellent! Let me update the todo")
    # the prompt answered only after a compaction: its answer is the message after it, not the summary
    assert s.turns[2].user == "proceed"
    assert s.turns[2].assistant.startswith("I'll proceed with running the comprehensive edge case test suite")
    # the assistant messages before the first prompt (the export starts mid-session) belong to no turn;
    # tool calls and compaction summaries never reach a turn
    assert_absent([s], ["The smp_search using fulltext Neo4j index returns 0 results", "**Tool:", "## Discoveries",
                        "## Goal", "Let me run the comprehensive test suite first", "## Assistant", "## User"])
    assert all(t.completed_at is None for t in s.turns)  # local times without a zone


def test_an_export_with_details_and_thinking(fixture_copy):
    (s,) = load(fixture_copy(DETAILED), "opencode-export")
    first, second = s.turns
    assert first.assistant.startswith('Great correction. With your new constraints, I am not insisting on "Rust MCP + DB"')
    # an empty reasoning before the reply covers nothing: the reply is kept whole
    assert second.assistant.startswith("Updated. I rewrote the spec at:\n\n- `daemon/teams_db.spec.txt`")
    assert second.assistant.endswith("If you want, next I can draft `0001_teams_db.sql` and the exact Rust "
                                     "structs/repos to match this spec.")
    assert_absent([s], ["**Explaining Rust MCP and DB rationale**", "**Reworking spec with full rewrite**",
                        "_Thinking", "**Tool:", "**Input:**", "**Output:**", '"filePath"'])


def test_an_older_export_whose_last_turn_is_still_running(fixture_copy):
    path = fixture_copy(OLDER)
    assert load(path, "opencode-export") == []  # the agent's last message is a tool call: not answered yet
    with path.open("a", encoding="utf-8") as f:
        f.write("\n## Assistant\n\n_Thinking:_\n\n构建成功，图标已设置。\n\n图标已更新，应用已重新构建。\n\n---\n\n")
    (s,) = load(path, "opencode-export")
    (turn,) = s.turns
    assert turn.user == "继续"
    # the replies are kept; the tool calls and each reasoning's first paragraph are not (a reasoning's later
    # paragraphs cannot be told from a reply in this export, see docs/formats.md)
    assert "让我继续完成logo图标的设置。先检查构建状态：" in turn.assistant
    assert turn.assistant.endswith("图标已更新，应用已重新构建。")
    assert_absent([s], ["Tool: bash", "ps aux", "**Input:**", "构建进程已经结束了", "构建成功，图标已设置", "用户要求继续"])


def test_the_synthetic_export_and_its_growth(fixture_copy):
    path = fixture_copy(SYNTHETIC)
    before, after = grow(path, "The loop is gone; three tests cover the retries.\n")
    # the second prompt's last message has no duration yet: not complete, even with more text
    assert [t.user for s in after for t in s.turns] == [t.user for s in before for t in s.turns]
    text = (FIXTURES / SYNTHETIC).read_text(encoding="utf-8").replace(
        "## Assistant (Build · claude-sonnet-4-5)\n", "## Assistant (Build · claude-sonnet-4-5 · 1.9s)\n")
    (s,) = opencode_export.parse(text, source_name="session-ses_3a9f.md")
    assert s.turns[:1] == before[0].turns
    assert [(t.user, t.assistant) for t in s.turns[1:]] == [(
        "Never hand-roll retries again: use httpx's transport retries from now on.",
        "Understood: I'll use `httpx.AsyncHTTPTransport(retries=3)` instead of a loop.\n\nReplacing the loop now.")]
    assert_absent([s], ["THINKING-NOISE", "TOOL-OUTPUT-NOISE", "SUMMARY-NOISE", "Edit applied"])


def test_a_prompt_that_got_no_answer_joins_the_next():
    head = "# t\n\n**Session ID:** ses_x\n**Created:** 1/1/2026, 1:00:00 AM\n**Updated:** 1/1/2026, 1:00:00 AM\n\n---\n\n"
    text = (head + "## User\n\nfix the bug\n\n---\n\n## Assistant (Build · m · 0.6s)\n\n---\n\n"
            "## User\n\nin parser.py\n\n---\n\n## Assistant (Build · m · 2.0s)\n\nFixed the off-by-one in parser.py.\n\n---\n\n")
    (s,) = opencode_export.parse(text, source_name="x.md")
    assert [(t.user, t.assistant) for t in s.turns] == [("fix the bug\n\nin parser.py", "Fixed the off-by-one in parser.py.")]


def test_a_reasoning_paragraph_ending_in_a_colon_goes_on():
    head = "# t\n\n**Session ID:** ses_y\n**Created:** 1/1/2026, 1:00:00 AM\n**Updated:** 1/1/2026, 1:00:00 AM\n\n---\n\n"
    text = (head + "## User\n\nrename it\n\n---\n\n## Assistant\n\n_Thinking:_\n\nI need to:\n\n1. find it\n2. rename it\n\n"
            "Renamed `foo` to `bar`.\n\n---\n\n")
    (s,) = opencode_export.parse(text, source_name="x.md")
    assert s.turns[0].assistant == "Renamed `foo` to `bar`."


def test_a_tool_output_holding_fences_stays_the_tools():
    head = "# t\n\n**Session ID:** ses_z\n**Created:** 1/1/2026, 1:00:00 AM\n**Updated:** 1/1/2026, 1:00:00 AM\n\n---\n\n"
    text = (head + "## User\n\nshow the readme\n\n---\n\n## Assistant (Build · m · 1.0s)\n\n**Tool: read**\n\n"
            "**Input:**\n```json\n{}\n```\n\n**Output:**\n```\n# Readme\n```\nTOOL-OUTPUT-NOISE\n```\n\nmore noise\n```\n\n"
            "---\n\n## Assistant (Build · m · 1.2s)\n\nThe readme has one heading.\n\n---\n\n")
    (s,) = opencode_export.parse(text, source_name="x.md")
    assert [(t.user, t.assistant) for t in s.turns] == [("show the readme", "The readme has one heading.")]


def test_detection_needs_the_header_at_the_top(tmp_path):
    path = tmp_path / "notes.md"
    path.write_text("# Notes\n\nSome text.\n\n# t\n\n**Session ID:** ses_1\n**Created:** x\n\n---\n\n## User\n\nhi\n")
    assert opencode_export.sniff(path.read_text()) is False
    assert opencode_export.sniff((FIXTURES / SYNTHETIC).read_text()) is True


def test_registered():
    assert "opencode-export" in FORMATS and PARSERS["opencode-export"] is opencode_export.parse
