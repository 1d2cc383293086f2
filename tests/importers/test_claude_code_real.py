"""Claude Code JSONL as recent versions write it: what reaches the user's side of a turn.

Every message the user typed is the user side of exactly one turn, and
nothing else is: not the IDE's context blocks, not background-task notices,
and a message typed while the assistant worked (a ``queued_command``
attachment) is not lost. Fixtures and their sources: tests/fixtures/transcripts/
claude-code/SOURCES.md. The last test reads the committed real sessions and the dev-split corpus
files of the format when they are restored (tests/corpus/fetch.py).
"""

from __future__ import annotations

import hashlib
import json

import pytest
from cairn.worker.ingest.importers import _claude, claude_code, load

from tests.support import REPO

CORPUS = REPO / "tests" / "corpus"


def test_ide_context_block_is_not_the_users_words(fixture_copy):
    (session,) = load(fixture_copy("claude-code/speakfree-ide-context.jsonl"))
    assert [(t.turn_id, t.user) for t in session.turns] == [("aea3ed5a-0e88-492f-a09c-d76d9bdabfce", "Restart openwhisper")]
    assert session.turns[0].assistant.endswith("Whisper server restarted successfully — running as PID 84168.")


def test_task_notices_are_not_turns_and_a_queued_message_is(fixture_copy):
    (session,) = load(fixture_copy("claude-code/queued-and-notices.jsonl"))
    ids = [f"00000000-0000-4000-8000-{n:012d}" for n in (1, 7, 10, 14)]
    assert [(t.turn_id, t.user) for t in session.turns] == [
        (ids[0], "Fetch the merged pull requests of the last 90 days into data/prs.json."),
        (ids[1], ""),  # the notice is no prompt: the reply to it, after the turn ended, is a continuation
        (ids[2], "Contributors with fewer than 3 pull requests are one-off contributors; keep that threshold in one constant."),
        (ids[3], "From now on use British spelling in the dashboard labels."),
    ]
    assert [t.parent_turn_id for t in session.turns] == [None, *ids[:3]]
    # the reply to a notice after the turn ended is a turn of its own (the first may be captured already)
    assert session.turns[0].assistant.endswith("I will report when it ends.")
    assert session.turns[1].assistant == "Page 2 is in: 100 of 619 fetched so far."
    assert session.turns[3].assistant == "Done: the threshold is one constant, and the labels will use British spelling."


@pytest.mark.parametrize("attachment", [
    {"type": "queued_command", "prompt": "check the logs", "commandMode": "bash"},
    {"type": "queued_command", "prompt": "check the logs", "commandMode": "prompt", "origin": {"kind": "peer"}},
    {"type": "queued_command", "prompt": "<task-notification>\n<status>completed</status>\n</task-notification>"},
    {"type": "queued_command", "prompt": 42},
    {"type": "hook_additional_context", "content": ["check the logs"]},
])
def test_other_attachments_are_not_prompts(attachment):
    recs = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "message": {"role": "user", "content": "Start."}},
        {"type": "attachment", "uuid": "q1", "parentUuid": "u1", "attachment": attachment},
        {"type": "assistant", "uuid": "a1", "parentUuid": "q1",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "Started."}], "stop_reason": "end_turn"}},
    ]
    (session,) = claude_code.parse("".join(json.dumps(r) + "\n" for r in recs), source_name="s.jsonl")
    assert [(t.turn_id, t.user, t.assistant) for t in session.turns] == [("u1", "Start.", "Started.")]


def test_queued_message_as_blocks_with_an_image():
    recs = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "message": {"role": "user", "content": "Start."}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1",
         "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Bash", "input": {}}],
                     "stop_reason": "tool_use"}},
        {"type": "attachment", "uuid": "q1", "parentUuid": "a1", "attachment": {
            "type": "queued_command", "commandMode": "prompt", "origin": {"kind": "human"},
            "prompt": [{"type": "text", "text": "and this one"}, {"type": "image", "source": {"type": "base64", "data": ""}}]}},
        {"type": "assistant", "uuid": "a2", "parentUuid": "q1",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "Both done."}], "stop_reason": "end_turn"}},
    ]
    (session,) = claude_code.parse("".join(json.dumps(r) + "\n" for r in recs), source_name="s.jsonl")
    assert [(t.turn_id, t.user, t.assistant) for t in session.turns] == [("u1", "Start.", ""), ("q1", "and this one", "Both done.")]


def _real_files() -> list:
    """Real Claude Code sessions at hand: the committed ones always, the other dev corpus files once restored."""
    manifest = json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8"))
    out = [REPO / "tests" / "fixtures" / "transcripts" / "claude-code" / "speakfree-ide-context.jsonl"]
    for e in manifest["files"]:
        if e["format"] != "claude-code" or e["split"] != "dev":
            continue
        path = next((p for p in (CORPUS / "files" / e["file"], CORPUS / "cache" / e["file"]) if p.is_file()), None)
        if path is not None and hashlib.sha256(path.read_bytes()).hexdigest() == e["sha256"]:
            out.append(path)
    return out


def _no_prompt(rec: dict) -> bool:
    """A user record that carries no words of the user's (a notice, a compaction summary, meta, boilerplate)."""
    if rec.get("isMeta") or rec.get("isCompactSummary") or rec.get("origin") not in (None, {"kind": "human"}):
        return True
    content = rec["message"]["content"]
    return not _claude.clean_prompt("\n\n".join(_claude.block_texts(content)))


def test_real_sessions_user_sides_are_the_users_messages():
    """Each turn's user side is one user record's words (or a slash command), never injected context.

    Runs on the committed real sessions (always present) and on every restored dev corpus file."""
    files = _real_files()
    assert len(files) >= 2, files  # the cut-down real fixture and the committed dev session at least
    for path in files:
        recs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        by_uuid = {r["uuid"]: r for r in recs if isinstance(r.get("uuid"), str)}
        turns = load(path, "claude-code")[0].turns
        assert turns, path.name
        for turn in turns:
            rec = by_uuid[turn.turn_id]
            if not turn.user:  # a continuation: the assistant went on after its turn, woken by no prompt
                assert rec["type"] == "assistant" or _no_prompt(rec), (path.name, turn.turn_id)
                continue
            if rec["type"] == "attachment":  # a prompt typed while the assistant worked
                queued = rec["attachment"]
                assert queued["type"] == "queued_command" and queued.get("commandMode", "prompt") == "prompt", (
                    path.name, turn.turn_id)
                assert queued.get("origin") in (None, {"kind": "human"}), (path.name, turn.turn_id)
            else:
                assert rec["type"] == "user" and not rec.get("isMeta"), (path.name, turn.turn_id)
                assert rec.get("origin") in (None, {"kind": "human"}), (path.name, turn.turn_id)
            for tag in ("<task-notification>", "<ide_", "<system-reminder>", "<local-command", "Caveat:"):
                assert tag not in turn.user, (path.name, turn.turn_id, tag)


# ---- the user's words inside tool results: a rejected call's reason, answers to the assistant's questions
# (wording: Claude Code's REJECT_MESSAGE_WITH_REASON_PREFIX and AskUserQuestion result, as real sessions show it)

_REJECT = ("The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file "
           "edit, the new_string was NOT written to the file). ")


def _tool_loop(result: dict, *, after: str = "Switching to pnpm.") -> list[dict]:
    """A prompt, a tool call, the user record carrying ``result``, and the assistant's answer to it."""
    return [
        {"type": "user", "uuid": "u1", "parentUuid": None, "message": {"role": "user", "content": "Install the deps."}},
        {"type": "assistant", "uuid": "a1", "parentUuid": "u1",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "Running npm install."},
                                                      {"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}],
                     "stop_reason": "tool_use"}},
        {"type": "user", "uuid": "r1", "parentUuid": "a1", **result},
        {"type": "assistant", "uuid": "a2", "parentUuid": "r1",
         "message": {"role": "assistant", "content": [{"type": "text", "text": after}], "stop_reason": "end_turn"}},
    ]


def _parse(recs: list[dict]) -> list[tuple[str, str, str]]:
    (session,) = claude_code.parse("".join(json.dumps(r) + "\n" for r in recs), source_name="s.jsonl")
    return [(t.turn_id, t.user, t.assistant) for t in session.turns]


@pytest.mark.parametrize("text", [
    _REJECT + "To tell you how to proceed, the user said:\nwe use pnpm in this repo, never npm",
    # newer versions: a shorter first sentence and a closing note
    "The user doesn't want to proceed with this tool use. The tool use was rejected.\n"
    "To tell you how to proceed, the user said:\nwe use pnpm in this repo, never npm\nNote: The user's next message will follow.",
])
def test_a_rejected_calls_reason_is_the_users_prompt(text):
    result = {"message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": [{"type": "text", "text": text}]}]}}
    assert _parse(_tool_loop(result)) == [
        ("u1", "Install the deps.", "Running npm install."),
        ("r1", "we use pnpm in this repo, never npm", "Switching to pnpm."),
    ]


def test_a_rejection_without_a_reason_and_other_results_are_no_prompts():
    for text in (_REJECT + "STOP what you are doing and wait for the user to tell you how to proceed.",
                 _REJECT + "To tell you how to proceed, the user said:\n   ",
                 "added 214 packages in 3s"):
        result = {"message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": text}]}}
        assert _parse(_tool_loop(result, after="Installed.")) == [
            ("u1", "Install the deps.", "Running npm install.\n\nInstalled.")], text


def test_answers_to_the_assistants_questions_are_the_users_prompt():
    q1 = "Which package manager does this project use?"
    q2 = "Which checks must pass before a commit?"
    result = {
        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content":
                    f'User has answered your questions: "{q1}"="pnpm", "{q2}"="Types, Lint". '
                    "You can now continue with the user's answers in mind."}]},
        "toolUseResult": {"questions": [{"question": q1, "header": "Manager", "multiSelect": False,
                                         "options": [{"label": "npm"}, {"label": "pnpm"}]},
                                        {"question": q2, "header": "Checks", "multiSelect": True,
                                         "options": [{"label": "Types"}, {"label": "Lint"}]}],
                          "answers": {q1: "pnpm", q2: ["Types", "Lint"]}},
    }
    expected = f"> {q1}\npnpm\n\n> {q2}\nTypes, Lint"
    assert _parse(_tool_loop(result, after="Using pnpm.")) == [
        ("u1", "Install the deps.", "Running npm install."), ("r1", expected, "Using pnpm.")]
    # without the structured record (other exports keep only the text), the text is read
    del result["toolUseResult"]
    assert _parse(_tool_loop(result, after="Using pnpm.")) == [
        ("u1", "Install the deps.", "Running npm install."), ("r1", f"> {q1}\npnpm\n\n> {q2}\nTypes, Lint", "Using pnpm.")]


def test_the_engine_never_takes_the_assistants_question_for_the_users_word():
    """The question is a quoted line above the answer: context for a model, skipped by the embedded engine."""
    from cairn.protocol.digest import DigestInput
    from cairn.worker.providers import extractive

    question = "Always squash commits before merging, as the team guide says"
    result = {"message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content":
              f'User has answered your questions: "{question}"="No". You can now continue with the user\'s answers in mind.'}]},
              "toolUseResult": {"questions": [{"question": question}], "answers": {question: "No"}}}
    (session,) = claude_code.parse("".join(json.dumps(r) + "\n" for r in _tool_loop(result)), source_name="s.jsonl")
    assert session.turns[-1].user == f"> {question}\nNo"
    notes = extractive.digest(DigestInput(session_id="s", title=None, turns=tuple(session.turns))).notes
    assert not any("squash" in n.body for n in notes), notes
    # the same words as the user's own line would be published: the quote is what keeps them out
    unquoted = session.turns[-1].__class__(turn_id="x", parent_turn_id=None, user=question, assistant="")
    assert extractive.digest(DigestInput(session_id="s", title=None, turns=(unquoted,))).notes


# ---- a real session with a plan approved with a fresh context (tests/fixtures/transcripts/claude-code/SOURCES.md)

PLAN_SESSION = "claude-code/entire-plan-clear-context.jsonl"


def _typed_by_the_user(path) -> list[str]:
    """The user's words, read straight from the records: typed prompts, and the reason typed when rejecting
    a tool call; not Claude Code's interruption markers or its plan-approval message."""
    words = []
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if rec.get("type") != "user":
            continue
        content = rec["message"]["content"]
        if isinstance(content, str):
            if not content.startswith(("[Request interrupted", "Implement the following plan:")):
                words.append(content.strip())
            continue
        for block in content:
            text = block.get("content") if block.get("type") == "tool_result" else None
            if isinstance(text, str) and "the user said:\n" in text:
                words.append(text.split("the user said:\n", 1)[1].strip())
    return words


def test_a_real_plan_approval_keeps_every_prompt_and_the_last_one(fixture_copy):
    """Claude Code 2.1.x: the plan is approved with "clear context" (a fresh SessionStart root in the same
    file), every assistant record has stop_reason null, and the last prompt is closed only by the Stop hook."""
    path = fixture_copy(PLAN_SESSION)
    (session,) = load(path)
    typed = _typed_by_the_user(path)
    assert len(typed) == 5 and typed[-1].startswith("fix this: cannot use err")
    users = [t.user for t in session.turns]
    assert [u for u in users if not u.startswith("> Plan:")] == typed  # before: the first three were lost
    assert users[3] == "> Plan: Fix Error Handling in main.go\nApproved"
    assert len(session.turns) == 6
    assert session.turns[3].assistant.startswith("# Plan: Fix Error Handling in main.go")
    for t in session.turns:
        assert "read the full transcript at" not in t.user + t.assistant
        assert "Implement the following plan" not in t.user and "[Request interrupted" not in t.user
    last = session.turns[-1]  # before: lost, with its whole reply (no stop_reason, only the Stop hook)
    assert last.user == typed[-1] and last.assistant and last.completed_at == "2026-01-29T02:05:02.543Z"
    assert [t.parent_turn_id for t in session.turns] == [None, *(t.turn_id for t in session.turns[:-1])]
