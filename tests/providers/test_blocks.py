"""Structural cues: a lead-in over a list, and labelled stack lines, are project facts; lists of work are not."""

from __future__ import annotations

from cairn.protocol.digest import DigestInput
from cairn.protocol.vocab import NoteType
from cairn.worker.providers.blocks import blocks
from cairn.worker.providers.extractive import digest

from tests.providers.sessions import turn


def test_a_lead_in_over_a_list_is_one_fact() -> None:
    text = "Our setup:\nDocker on a VPS\nnginx in front\n\nTech stack:\n- Terraform\n- Vite.js\n\nUse it to plan the work"
    assert blocks(text) == ["Our setup: Docker on a VPS; nginx in front", "Tech stack: Terraform; Vite.js"]


def test_a_specification_of_what_is_built_is_no_fact() -> None:
    """The requirements, the scope and the MVP of the work asked for (quoted from the corpus: claude-code-kalshi-
    scanner 0.0, the audit pool's movie-search session, specstory-video-share-scope 0.0) specify the work: on dev and
    the audit pools their notes kept 3 task requests and were wrong 3 times in 6 (bench/README.md)."""
    text = (
        "REQUIREMENTS:\n- Connect to Kalshi's live API (production, not demo)\n- Pull all currently active markets\n\n"
        "Requirements:\n- **Debounce:** **400ms** after last input change before calling search API; typing does not "
        "spam TMDB.\n\n"
        "The MVP is:\n- Amazon Cloud based\n- Web form to upload video from desktop or mobile.\n"
    )
    assert blocks(text) == []


def test_css_custom_properties_are_code_not_a_list() -> None:
    # claude-code-bhavana 0.0: a palette pasted under "Design system:" is the stylesheet of the work asked for
    text = "Design system:\n--bg-primary: #0F1923\n--bg-card: #162230\n--accent: #1D9E75\n"
    assert blocks(text) == []


def test_labelled_stack_lines_are_facts() -> None:
    text = "Some context first.\n**Framework:** Next.js 14\nDatabase: Postgres\nMood: tired\n"
    assert blocks(text) == ["Framework: Next.js 14", "Database: Postgres"]


def test_a_colon_without_a_space_is_no_label() -> None:
    # a log's location pasted on its own line ("node:events:502" over a Node stack trace), a URL, a drive
    assert blocks("node:events:502\nhosting:https://example.org\nos:C:\\Windows\n") == []


def test_lists_of_work_code_and_logs_are_not_facts() -> None:
    text = (
        "Requirements:\n- add a login page\n- fix the header\n- create the footer\n\n"
        "Tasks:\n- Terraform\n\n"
        "```\nStack:\n- not read inside a fence\n```\n"
        "Database: connection failed with error 42\n"
        "> Tech stack:\n> - quoted, not the user's\n"
    )
    assert blocks(text) == []


def test_the_engine_publishes_blocks_as_project_notes() -> None:
    inp = DigestInput(session_id="s", title=None, turns=(turn("a", "Tech stack:\nDjango\nHTMX\n"),))
    (note,) = digest(inp).notes
    assert (note.type, note.body, note.title) == (NoteType.PROJECT, "Tech stack: Django; HTMX", "Tech stack: Django")


def test_a_context_lead_in_is_the_task_s_background_not_a_fact() -> None:
    """Found on both audit pools (bench/README.md, "Digest quality"): a decision record's "Context:" and a prompt's
    "Context:" state the situation of the work asked for ("For hackathon demo, need fast subtitle search …", "We
    need to improve the initial state of the page …"), not what the project is. "Project context:" still is."""
    text = (
        "Context:\n- For hackathon demo, need fast subtitle search without database complexity.\n\n"
        "Background:\n- We need to improve the initial state of the page and the behavior when adding new fields.\n\n"
        "Project context:\n- A static site for a bakery\n"
    )
    assert blocks(text) == ["Project context: A static site for a bakery"]
