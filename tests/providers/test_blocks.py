"""Structural cues: a lead-in over a list, and labelled stack lines, are project facts; lists of work are not."""

from __future__ import annotations

from cairn.protocol.digest import DigestInput
from cairn.protocol.vocab import NoteType
from cairn.worker.providers.blocks import blocks
from cairn.worker.providers.extractive import digest

from tests.providers.sessions import turn


def test_a_lead_in_over_a_list_is_one_fact() -> None:
    text = "The MVP is:\nupload a video\nlist the titles\n\nTech stack:\n- Terraform\n- Vite.js\n\nUse it to plan the work"
    assert blocks(text) == ["The MVP is: upload a video; list the titles", "Tech stack: Terraform; Vite.js"]


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
