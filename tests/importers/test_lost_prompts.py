"""Every user word of a real session survives import: prompts aider logged in blank-separated pieces, a command
typed before the reply, prompts with no reply, and the last prompt of a finished session (Codex, cctrace,
Claude Code /export) ending on a pending tool call or with no reply text. Real corpus files (tests/corpus,
manifest.json records their source and licence); skipped where the cache is not fetched."""

from __future__ import annotations

import pytest
from cairn.worker.ingest.importers import load

from tests.support import REPO

CORPUS = REPO / "tests" / "corpus"


def _file(name: str):  # noqa: ANN202
    for folder in ("files", "cache"):
        if (CORPUS / folder / name).is_file():
            return CORPUS / folder / name
    pytest.skip(f"{name} not fetched (python tests/corpus/fetch.py)")


def _sealed(name: str, fmt: str) -> list:
    return [t for s in load(_file(name), fmt) for t in s.sealed().turns]


def _norm(text: str) -> str:
    return " ".join(text.split())


def test_aider_prompt_in_blank_separated_pieces_is_one_prompt():
    turns = _sealed("aider-brejlator.md", "aider")
    (turn,) = [t for t in turns if "jak zprovoznit" in t.user]
    assert "redirect_uri" in turn.user and turn.user.rstrip().endswith("Request ID: 98503908-7d5f-4e0c-9fb8-95d7acf32346-1724180701")
    assert turn.assistant.startswith("Pro zprovoznění přihlašování")


def test_aider_command_before_the_reply_does_not_replace_the_prompt():
    turns = _sealed("audit-aider-aider-tests-fixture.aider.chat.history.md", "aider")
    (turn,) = [t for t in turns if t.user.startswith("make `abs_read_only_fnames` an optional param")]
    assert turn.user == "make `abs_read_only_fnames` an optional param"
    assert turn.assistant.startswith("Certainly! I'll make the `abs_read_only_fnames` parameter optional")


@pytest.mark.parametrize(("name", "prompt"), [
    ("aider-monochromatic.md", "What can you say about this package?"),
    ("aider-mozgoslav.md", "Ты зациклился. Удалось понять причину бага?"),
])
def test_aider_prompt_without_reply_is_a_turn(name, prompt):
    assert any(_norm(prompt) in _norm(t.user) for t in _sealed(name, "aider"))


@pytest.mark.parametrize(("name", "fmt", "prompt"), [
    ("codex-x402-skills.jsonl", "codex", "help me apply for the agentic engineering grant by Superteam"),
    ("codex-gildore-grant.jsonl", "codex", "Implement the plan."),
    ("codex-edgerunner.jsonl", "codex", "help me apply for the agentic engineering grant by Superteam"),
    ("cctrace-conversation-full.md", "cctrace", "i dont see the folder copied to the working directory"),
    ("export-chicken-guacamole.md", "claude-code-export", "Can we export this conversation"),
])
def test_last_prompt_of_a_finished_session_is_kept(name, fmt, prompt):
    (session,) = load(_file(name), fmt)
    assert session.tail is not None and session.tail.user.startswith(prompt)
    assert session.sealed().turns[-1] == session.tail


@pytest.mark.parametrize(("name", "cut"), [("aider-luvatrix.md", 485), ("aider-doc-processor.md", 3753)])
def test_aider_file_cut_inside_the_architects_hand_off_captures_no_turn_it_later_merges(name, cut, tmp_path):
    """In architect mode aider logs the architect's reply again as a ``####`` prompt (the hand-off to the
    editor model) and the editor's reply follows; a cold import makes them one turn. Read while aider writes
    the hand-off (the file ends inside it), the turn before is not over: it was captured there, and again,
    merged, under another id (its words twice)."""
    whole = _file(name).read_bytes()
    cold = {t.turn_id for s in load(_file(name), "aider") for t in s.sealed().turns}
    part = tmp_path / name
    part.write_bytes(b"".join(whole.splitlines(keepends=True)[:cut]))
    complete = [t for s in load(part, "aider") for t in s.turns]
    assert complete and {t.turn_id for t in complete} <= cold
