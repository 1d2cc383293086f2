"""The extractive engine keeps exactly the reusable knowledge the user stated, and nothing else."""

from __future__ import annotations

import json

import attrs
import pytest
from cairn.protocol.digest import DigestInput, DigestOutput
from cairn.protocol.transcript import Turn
from cairn.protocol.vocab import NoteType
from cairn.worker.providers.extractive import classify, digest

from tests.providers.sessions import MIXED, turn

USER, FEEDBACK, PROJECT, REFERENCE = NoteType.USER, NoteType.FEEDBACK, NoteType.PROJECT, NoteType.REFERENCE


def session(*turns: Turn) -> DigestInput:
    return DigestInput(session_id="s", title=None, turns=tuple(turns))


def serialized(out: DigestOutput) -> bytes:
    return json.dumps(attrs.asdict(out), sort_keys=True, ensure_ascii=False).encode()


def test_mixed_session_yields_exactly_the_reusable_notes() -> None:
    notes = digest(MIXED).notes
    assert [(n.type, n.turn_ids, n.title) for n in notes] == [
        (USER, ("t1",), "I prefer small focused commits over one big commit"),
        (FEEDBACK, ("t3",), "Use httpx instead of requests"),
        (FEEDBACK, ("t3", "t7"), "Never summarize what you did at the end of a reply"),
        (FEEDBACK, ("t6",), "Stop asking for confirmation before running the tests"),
        (FEEDBACK, ("t6",), "I'd rather you didn't add comments that restate the code"),
        (
            FEEDBACK,
            ("t8",),
            "Always authenticate the smoke tests with token=[REDACTED:github_token] from the vault",
        ),
        (PROJECT, ("t4",), "This project uses trio, not asyncio"),
        (PROJECT, ("t4",), "Our CI runs ruff and pytest on every push"),
        (PROJECT, ("t4",), "The billing service lives in services/billing"),
        (PROJECT, ("t6",), "We always squash-merge pull requests"),
        (
            REFERENCE,
            ("t4",),
            "The tracker is https://linear.app/acme/team/ENG and dashboards are at https://grafana.acme.dev/d/uploads",
        ),
    ]
    # The rule repeated in t7 is merged into t3's note, which keeps the reason the user gave.
    summarize = notes[2]
    assert summarize.body == (
        "From now on, never summarize what you did at the end of a reply. Because I read the diff anyway."
    )
    # Nothing from the traceback turn (t2) or the status/decision/deadline turn (t5) survives.
    cited = {t for n in notes for t in n.turn_ids}
    assert "t2" not in cited and "t5" not in cited


def test_the_secret_in_a_kept_sentence_is_redacted() -> None:
    out = serialized(digest(MIXED))
    assert b"ghp_abcdefghijklmnopqrstuvwxyz0123456789" not in out
    assert b"[REDACTED:github_token]" in out


def test_same_input_gives_byte_identical_output() -> None:
    first = serialized(digest(MIXED))
    again = serialized(digest(DigestInput(session_id="session-1", title="Upload retries", turns=MIXED.turns)))
    assert first == again


def test_session_with_only_tasks_logs_code_and_decisions_is_all_none() -> None:
    inp = session(
        turn("a", "Please fix the flaky upload test. Can you add logging to the retry loop?"),
        turn(
            "b",
            "```python\n# always use tabs\ndef never_do_this():\n    pass\n```\n"
            "~~~\nfrom now on never deploy\n~~~\n"
            "    we always deploy with this indented snippet\n",
        ),
        turn(
            "c",
            "2024-05-01T10:00:00Z INFO we always deploy with ansible\n"
            "[12:00:01] ERROR: never retry on 500\n"
            "Traceback (most recent call last):\n"
            "RuntimeError: always fails\n"
            "$ always run this command\n"
            "> From now on never use print.\n",
        ),
        turn(
            "d",
            "I've finished the refactor and now all tests pass. Let's go with the second approach. "
            "We decided to postpone the release. The deadline is Friday. I'm blocked on the API key. "
            "For now, don't touch the cache. Don't do that. Never mind. Don't forget to bump the version.",
        ),
        turn("e", "What does this project use for logging? Should we always pin versions?"),
    )
    assert digest(inp).notes == ()


def test_assistant_text_is_never_evidence() -> None:
    inp = session(
        turn(
            "a",
            "Thanks, that works.",
            assistant="From now on I will never use print. This project uses trio. The tracker is https://t.example/x.",
        )
    )
    assert digest(inp).notes == ()


def test_empty_session_is_all_none() -> None:
    assert digest(session()).notes == ()


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("From now on, never summarize at the end.", FEEDBACK),
        ("FYI this repo's CI runs on Forgejo Actions.", PROJECT),
        ("Heads-up: staging is read-only on Fridays, so never schedule migrations on a Friday.", FEEDBACK),
        ("The build failed, so always retry it.", None),
        ("Going forward, always write the test first.", FEEDBACK),
        ("Please don't add docstrings to private helpers.", FEEDBACK),
        ("Please never force-push to main.", FEEDBACK),
        ("Don't use print for logging.", FEEDBACK),
        ("Stop apologizing.", FEEDBACK),
        ("You should never mock the database in integration tests.", FEEDBACK),
        ("Remember to always run ruff before committing.", FEEDBACK),
        ("Note that we never rebase shared branches.", PROJECT),
        ("I\u2019d rather keep functions under fifty lines.", USER),
        ("No, use pathlib instead of os.path.", FEEDBACK),
        ("Use uv, not pip.", FEEDBACK),
        ("I'd rather you asked before deleting files.", FEEDBACK),
        ("I prefer short answers.", FEEDBACK),
        ("I prefer tabs over spaces.", USER),
        ("I'd rather not use ORMs.", USER),
        ("I hate it when imports are unsorted.", USER),
        ("We never commit generated files.", PROJECT),
        ("We deploy with Fly.io from the main branch.", PROJECT),
        ("This repo uses Poetry for dependencies.", PROJECT),
        ("The codebase is written in Python 3.11.", PROJECT),
        ("Our staging cluster runs on k3s.", PROJECT),
        ("The payment service lives in services/pay.", PROJECT),
        ("The convention here is one module per job.", PROJECT),
        ("The runbook is at https://wiki.example.com/runbooks/deploy.", REFERENCE),
        ("Dashboards: https://grafana.example.com/d/abc", REFERENCE),
        ("Our issue tracker lives at https://github.com/acme/app/issues.", REFERENCE),
        # dropped
        ("Please fix the login bug.", None),
        ("Can you add a retry?", None),
        ("Could you always use tabs?", None),
        ("I've pushed the branch.", None),
        ("Now the tests pass.", None),
        ("This project is currently broken.", None),
        ("Our CI is red again.", None),
        ("Let's use Redis for this one.", None),
        ("For now, never run the migrations.", None),
        ("Don't merge yet.", None),
        ("Don't touch it.", None),
        ("Stop the server.", None),
        ("Check the dashboard at https://grafana.example.com/d/abc.", None),
        ("Here is the PR: https://github.com/acme/app/pull/12.", None),
        ("No, that's wrong.", None),
        ("We need to ship this by Friday.", None),
        # how to go about the work at hand, not a rule that outlives it
        ("Do not skip any file.", None),
        ("Do not use any placeholder comments.", None),
        ("Do not write code.", None),
        ("Do not generate the entire codebase in one shot.", None),
        ("Don't use a global lock here.", None),
        ("Use a better name for the button instead of Run Import.", None),
        # what the software does is a feature, not an instruction
        ("Always falls back to the local image.", None),
        ("Never crashes on a missing file.", None),
        # the moment
        ("Now that the rules are in docs/rules.md, we should check the whole codebase.", None),
        ("Now I need you to plan the frontend.", None),
        # still rules: imperative, a named tool
        ("Never trust a tenant id from the request body.", FEEDBACK),
        ("Always pass the session through the context.", FEEDBACK),
        ("Don't use Prisma.", FEEDBACK),
        ("Use pnpm instead of npm.", FEEDBACK),
    ],
)
def test_sentence_rules(sentence: str, expected: NoteType | None) -> None:
    found = classify(sentence)
    assert (found[0] if found else None) == expected


def test_identical_notes_across_turns_merge_their_turn_ids_in_transcript_order() -> None:
    inp = session(
        turn("a", "Never   use   mocks of the file system."),
        turn("b", "Tests are green."),
        turn("c", "never use mocks of the file system"),
    )
    notes = digest(inp).notes
    assert len(notes) == 1
    assert notes[0].turn_ids == ("a", "c")
    assert notes[0].body == "Never use mocks of the file system."


def test_reference_keeps_its_url() -> None:
    inp = session(turn("a", "FYI the status page is https://status.example.com/app?region=eu."))
    (note,) = digest(inp).notes
    assert note.type is REFERENCE
    assert "https://status.example.com/app?region=eu" in note.body


def test_url_password_in_a_kept_sentence_keeps_user_and_host() -> None:
    inp = session(turn("a", "Our staging database is postgres://app:hunter2hunter2@db.internal:5432/app."))
    (note,) = digest(inp).notes
    assert note.body == "Our staging database is postgres://app:[REDACTED:password]@db.internal:5432/app."


def test_titles_and_bodies_respect_their_bounds() -> None:
    rule = "Always " + " ".join(f"word{i}" for i in range(60))
    reason = "Because " + "very " * 600 + "important."
    inp = session(turn("a", f"{rule}. {reason}"))
    (note,) = digest(inp).notes
    assert len(note.title) <= 120 and note.title.endswith("…")
    assert len(note.body) <= 2000 and note.body.endswith("…")
    assert "\n" not in note.title


def test_sentence_of_pasted_size_is_not_a_note() -> None:
    inp = session(turn("a", "Always " + "x " * 800))
    assert digest(inp).notes == ()
