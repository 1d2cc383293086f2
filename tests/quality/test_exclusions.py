"""What the embedded engine never keeps, and what it still keeps, on sentences users really wrote.

Every sentence here is a user's own words from a dev-split file of the
real-transcript corpus (``tests/corpus/``; file id and turn given), so the
rules are held on real phrasing, not on examples written to fit them. The
engine publishes only on strong evidence of durable knowledge: requests for
work, descriptions of a feature being built, plans, progress, questions and
debugging recipes become no note whatever their wording; standing rules,
preferences and facts about where things are still do.
"""

from __future__ import annotations

import pytest
from cairn.protocol.digest import DigestInput
from cairn.protocol.vocab import NoteType
from cairn.worker.providers.extractive import digest

from tests.providers.sessions import turn

NO_NOTE = {
    # requests for work addressed to the assistant
    "task": [
        # specstory-twat-mp-maintenance 0.0
        "Then run `./cleanup.py status` to see results of lints and tests, and update TODO so that we have a "
        "`- [ ] item` list of things that actually are to be done next.",
        # specstory-ypo-prior-chat 0.1
        "Please replace the prior-chat.md file in the _docs folder to update everything you've completed in this "
        "chat so that I can use it for context to a new chat.",
        # aider-career-os 0.1
        "Update scripts/seed_pooja_only.ts to use the table name monitor_orgs instead of TargetCompanies.",
        # specstory-politipo-pandera 0.4
        "please move the tests to a tests folder so they don't enter in the library when users pip install",
        # specstory-video-share-metadata-design 0.0
        "Create a new DynamoDB table specifically for segments",
        # export-daiflo 0.0
        "Please help me create a clean React folder structure for this project.",
        # aider-waterfront 0.3
        "Implement the full admin section step by step",
    ],
    # the scope of the work at hand, said as "don't"
    "scope of the moment": [
        # specstory-fin-health-final-artefacts 0.0
        "Do not add new product features.",
        # specstory-pytato-rotato-format 0.2
        "Do not create them again.",
        # claude-code-jgive 0.0
        "Please don't polish endlessly — a focused, well-reasoned submission beats a sprawling one.",
    ],
    # what the feature being built does
    "feature description": [
        # export-daiflo 0.2
        "Each feature should have it's own unique section.",
    ],
    # plans and goals
    "plan": [
        # specstory-listfix-pr-review 0.20
        "The goal is to make ListFix a one-stop tool to batch convert and fix playlists so they work across "
        "Rekordbox, Serato, Traktor, VirtualDJ on any OS.",
        # specstory-video-share-scope 0.0
        "let's start with phase 1.",
    ],
    # a remark of the conversation said with "we"
    "remark": [
        # codex-raveera 0.0
        "We dont just run events.",
        # claude-code-jgive 0.0
        "We use AI heavily here, and we want to see how you work with it — not whether you avoided it.",
    ],
    # general advice of the moment, not the user's rule
    "advice": [
        # specstory-listfix-pr-review 0.20
        "Generally, using standard Windows CRLF endings in playlist files is safest for broad compatibility.",
    ],
    # progress and status
    "progress": [
        # specstory-polychrome-support-regression 0.24
        "Let's figure that out, then commit them.",
    ],
    # questions
    "question": [
        # aider-jobspeak 0.1
        "can you read all the files in the main directory?",
        # specstory-best-shot-typing 0.0
        "Can you scan all folders and its files of this project?",
    ],
    # a debugging recipe for the problem of the moment
    "debugging recipe": [
        # specstory-ypo-placeholder 0.5
        "Check the render method of `SeedingPage`.",
        # aider-haav-catalog 1.11
        "check first for this env MONGODB_DATABASE_NAME",
    ],
}

NOTE = [
    # (sentence, type) — standing rules, preferences, corrections, where things are
    ("Do NOT use Prisma.", NoteType.FEEDBACK),  # aider-career-os 0.1
    ("Do NOT add heavy libraries.", NoteType.FEEDBACK),  # codex-raveera 0.0
    ("Use `uv pip ...` not `pip ...` .", NoteType.FEEDBACK),  # specstory-twat-mp-maintenance 0.0
    (
        "Do not reinit task-master, we don't want to lose the history of tasks we have worked on",
        NoteType.FEEDBACK,
    ),  # specstory-munsell-future 0.5
    (
        'When I use --json mode I DON\'T WANT the "rich progress spinner"',
        NoteType.USER,
    ),  # specstory-twat-search-unifying
    (
        "I shouldn't have to provide the API_KEY into the EngineConfig, it's very weird architecture.",
        NoteType.USER,
    ),  # specstory-twat-search-brave 0.5
    (
        "Conversion logic is located in @acfr.py and the viewer HTML is @upload.html",
        NoteType.PROJECT,
    ),  # specstory-xbrl-typescript
    (
        "Please make sure that all placeholder data is carefully compartmentalized so that I can very easily and "
        "cleanly clear it out later.",
        NoteType.FEEDBACK,
    ),  # specstory-ypo-placeholder 0.0
    ("I'm building Bhavana — an Indonesian-focused MVP.", NoteType.PROJECT),  # claude-code-bhavana
]


def notes_of(text: str) -> list[tuple[NoteType, str]]:
    inp = DigestInput(session_id="s", title=None, turns=(turn("a", text),))
    return [(n.type, n.body) for n in digest(inp).notes]


@pytest.mark.parametrize(
    "sentence",
    [s for group in NO_NOTE.values() for s in group],
    ids=[f"{kind}-{i}" for kind, group in NO_NOTE.items() for i in range(len(group))],
)
def test_work_plans_progress_and_questions_become_no_memory(sentence: str) -> None:
    assert notes_of(sentence) == []


@pytest.mark.parametrize(("sentence", "kind"), NOTE, ids=[f"rule-{i}" for i in range(len(NOTE))])
def test_standing_rules_preferences_and_facts_are_still_kept(sentence: str, kind: NoteType) -> None:
    notes = notes_of(sentence)
    assert len(notes) == 1, notes
    assert notes[0][0] is kind


def test_a_session_that_only_asks_for_work_proposes_nothing() -> None:
    # the opening requests of a new project (shape of the sessions the issue reported): nothing to remember
    session = (
        "Create a new DynamoDB table specifically for segments\n\n"  # specstory-video-share-metadata-design 0.0
        "Please help me create a clean React folder structure for this project.\n\n"  # export-daiflo 0.0
        "Implement the full admin section step by step\n\n"  # aider-waterfront 0.3
        "Each feature should have it's own unique section."  # export-daiflo 0.2
    )
    assert notes_of(session) == []


def test_a_request_said_from_now_on_is_a_standing_rule() -> None:
    # no dev sentence opens with "from now on"; these are written for the rule: the marker turns a request
    # into a rule that outlives the work at hand, while "generally, …" stays advice of the moment
    assert [k for k, _ in notes_of("From now on, add type hints to every function you write.")] == [
        NoteType.FEEDBACK
    ]
    assert notes_of("Add type hints to every function you write.") == []
