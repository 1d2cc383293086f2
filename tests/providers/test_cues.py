"""The broader cues find durable items real users state without "always", "never" or "I prefer"."""

from __future__ import annotations

import pytest
from cairn.protocol.digest import DigestInput
from cairn.protocol.vocab import NoteType
from cairn.worker.providers.extractive import classify, digest

from tests.providers.sessions import turn

USER, FEEDBACK, PROJECT, REFERENCE = NoteType.USER, NoteType.FEEDBACK, NoteType.PROJECT, NoteType.REFERENCE


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        # directives without a marker word
        ("We need tests that hit the database, not mocks.", PROJECT),
        ("Run it yourself rather than pasting me commands.", FEEDBACK),
        ("In the tests, do not mock the database ever.", FEEDBACK),
        # what the program returns or shows specifies the feature, however firmly said
        ("In the health endpoint, do NOT return stack traces ever.", None),
        ("Don't show me the whole file.", FEEDBACK),
        ("We shouldn't hard-code region names.", PROJECT),
        ("Use uv pip", FEEDBACK),
        ("Periodically run the lint script to see what broke.", FEEDBACK),
        # what one thing of the product should do or be specifies the work, and so, far more often than not, do
        # "every X should", "follow X and …" (ADR 0024)
        ("Every migration should be reversible.", None),
        ("follow camelCase and add SKU and offers.", None),
        ("Each source should be accessible as engine `tavily`.", None),
        ("Whenever I click on like, the login pop-up should appear", None),
        ("We should have a landing table for all the entries.", None),
        ("For each model, plot the total number of errors.", None),
        # a person in the subject, "always/never", "once in one place": rules, not the work
        ("Validation should be done once in one place.", FEEDBACK),
        ("Tests should always be green.", FEEDBACK),
        ("Results should be sorted so that they're always listed the same way.", None),
        ("I will commit manually", FEEDBACK),
        ("Give me the token count at the end of each response.", FEEDBACK),
        # project facts inside a request or given as context
        ("For context, this is firmware for an STM32 sensor board.", PROJECT),
        ("We will be using dependency extras so each engine installs alone.", PROJECT),
        ("My routes should be in routes.py", PROJECT),
        ("The test database is in the project root and is called shop.db", PROJECT),
        ("get the connection string from env MONGODB_CONNECTION_STRING", None),  # a request, "get …"
        ("Scope is intentionally small: three hardcoded properties and one wallet.", PROJECT),
        ("Program location: ~/shop/anchor/", PROJECT),
        # a preference said as a feeling is feedback on the edit at hand far more often than a standing one
        # (ADR 0024): none is kept
        ("This is too much machinery for what should be a plain lookup table.", None),
        ("I shouldn't have to pass the API key into the config, it's very weird architecture.", None),
        ("The gradient is a little too much and I don't need the hover effects.", None),
        ("Keep it to the minimum, with as few external dependencies as possible.", None),
        ("When I use --json mode I don't want the progress spinner.", None),
        ("Keep in mind I often run several sessions at once in the same folder.", USER),
        # still dropped: tasks, questions, one-offs, logs, vague or empty statements
        ("Make sure the tests pass.", None),
        # "make sure / ensure all …" is the acceptance test of the work at hand far more often than a rule
        ("Make sure each handler gets its own module.", None),
        ("Ensure that all backend tests run against the fixture database.", None),
        # a recurring moment: a rule when it orders the assistant, a feature when it describes the software
        ("After each file, stop and wait for my review before moving on.", FEEDBACK),
        ("Whenever you change the schema, regenerate the types.", FEEDBACK),
        ("After each tick, the price moves up or down at random.", None),
        ("Whenever I rename a file, I want the index to update itself.", None),
        # progress, the moment, and a request said as "can we"
        ("Note that I edited the config manually to change the default port.", None),
        ("Each time the server starts it takes the next port, so we're now up to 3006.", None),
        ("I don't want to complicate it, can we just have two files at most.", None),
        ("How can I use #702082 instead of the red?", None),
        ("how can i use #702082 instead of rgba(255, 57, 57, 10)", None),
        ("Running on http://127.0.0.1:8080", None),
        ("this will be a new project!", None),
        ("the goal is simple", None),
        ("i'm using 1.4.36", None),
        ("It's bad design.", None),
        ("But we shouldn't remove it, just use it as stub", None),
        ("let's use Graphik font instead", None),
        ("Let's use Redis for this one.", None),
        ("the full report is in /srv/app/static/sessions/5b46/output/viewer.html", None),
        ("For now, make sure every test uses the stub.", None),
        ("we're using an http transfer now.", None),
        ("please suggest another rule for something you might add at the end of each response", None),
    ],
)
def test_broader_sentence_rules(sentence: str, expected: NoteType | None) -> None:
    found = classify(sentence)
    assert (found[0] if found else None) == expected


def test_a_deprecation_line_of_pasted_output_is_a_log_line() -> None:
    inp = DigestInput(
        session_id="s", title=None, turns=(turn("a", "DEPRECATION: --no-python-version-warning is deprecated.\n"),)
    )
    assert digest(inp).notes == ()


def test_short_unpunctuated_lines_are_separate_thoughts() -> None:
    inp = DigestInput(
        session_id="s",
        title=None,
        turns=(turn("a", "hi!\nthis will be a new project\nwe deploy with fly\nthe goal is simple\n"),),
    )
    (note,) = digest(inp).notes
    assert (note.type, note.body) == (PROJECT, "We deploy with fly")


def test_a_wrapped_long_line_still_continues_on_the_next() -> None:
    inp = DigestInput(
        session_id="s",
        title=None,
        turns=(
            turn(
                "a",
                "We deploy every service with the canary release script from the ops folder, and the\n"
                "staging cluster gets the same build an hour earlier.",
            ),
        ),
    )
    (note,) = digest(inp).notes
    assert note.body.endswith("and the staging cluster gets the same build an hour earlier.")


def test_a_plan_handed_to_an_editor_model_is_not_the_users_word() -> None:
    handoff = (
        "Here are the minimal, precise changes to add a test suite. Do not modify existing backend code; "
        "only add the files listed. Every test should use the fixture database."
    )
    inp = DigestInput(session_id="s", title=None, turns=(turn("a", handoff),))
    assert digest(inp).notes == ()


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        # who the user is: role, familiarity, origin, setup
        ("I'm a data engineer, not a web developer.", USER),
        ("I'm new to Rust and its borrow checker.", USER),
        ("I'm Brazilian, and the users of this shop are too.", USER),
        ("I know the billing domain very well.", USER),
        ("My editor is Helix.", USER),
        ("Since I'm learning, explain the trade-offs as you go.", USER),
        ("I have done some work with Kubernetes and Helm.", USER),
        # what the project is, by what it was or is not
        ("We migrated from a Flask app to FastAPI last month.", PROJECT),
        ("This is not a demo.", PROJECT),
        # where the project's own documents are
        ("The architecture is described in docs/ARCHITECTURE.md.", REFERENCE),
        ("See CONTRIBUTING.md for the branch naming.", REFERENCE),
        ("The API reference is at https://api.example.org/reference", REFERENCE),
        ("Here is a guide for deploying Django on Fly: https://fly.example.io/docs/django", REFERENCE),
        # of the moment, whatever the form: pasted below, shown above, a numbered step, a repeat
        ("Make sure every test in the following list passes.", None),
        ("Every file below should be formatted with black.", None),
        ("Step 2: make sure each handler gets its own module.", None),
        ("I'm fine", None),
        ("I'm done, and the build is green.", None),
    ],
)
def test_rules_by_kind_of_statement(sentence: str, expected: NoteType | None) -> None:
    found = classify(sentence)
    assert (found[0] if found else None) == expected


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        # still dropped: where a problem is, bug reports, requests hidden in a statement
        ("The problem is in app.js", None),
        ("it is in the src folder I think", None),
        ("this is my app.js file", None),
        ("Put the new helper in the utils folder", None),
        ("Whenever I click the button nothing happens", None),
        ("the button is always disabled, why", None),
        ("the config is in config.yaml, can you read it and tell me what's wrong", None),
        ("it was removed in the last commit, put it back", None),
        ("Run `npm test` to see the failing test", None),
        ("I want to use a modal here instead of the dropdown", None),
        ("we're using the wrong endpoint for the upload", None),
        ("I want to build a feature that lets users export their data", None),
        ("Follow the steps in the README to set it up", None),
        ("should we keep the old endpoint?", None),
        ("no worries, take your time", None),
        # a "don't" that fences the edit of the moment is no rule; one about a kind of thing is
        ("Don't change anything else.", None),
        ("Don't make any changes, just explain", None),
        ("don't run the server, I already have it running", None),
        ("Don't use emojis in commit messages", FEEDBACK),
        ("Do not change Supabase or other cards.", None),
        ("Don't edit anything, I want to look at the logs first", None),
        ("Do NOT remove console.log lines - they are for debugging.", None),
        ("Never modify the migrations.", FEEDBACK),
        ("dont do web search think how to run it", None),
        ("After each step show the diff and wait for my y/n", None),
        ("Before every commit, run the linter.", FEEDBACK),
        ("I want to use Tailwind for styling", PROJECT),
        ("I want to use the same color as the header", None),
        ("Create a new folder: dist/dags/", None),
        ("Every handler should include:", None),
    ],
)
def test_reports_fences_and_requests_are_dropped(sentence: str, expected: NoteType | None) -> None:
    found = classify(sentence)
    assert (found[0] if found else None) == expected
