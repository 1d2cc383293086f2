"""aider chat history: sessions per header, prompts, tool output, fenced replies, aider's own answers."""

from __future__ import annotations

import hashlib
import json

from cairn.worker.ingest.importers import aider, load

from tests.support import REPO
from tests.support.transcripts import assert_absent, grow

CORPUS = REPO / "tests" / "corpus"

FIXTURE = "aider/.aider.chat.history.md"


def _whole(sessions):  # noqa: ANN001, ANN202 - the sessions as a sealed file gives them (the last turn a tail)
    return [s.sealed() for s in sessions]


def test_sessions_turns_and_texts(fixture_copy):
    sessions = _whole(load(fixture_copy(FIXTURE)))
    assert [len(s.turns) for s in sessions] == [2, 2]  # the last prompt, with no reply yet, is kept when sealed
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


def test_tool_output_and_commands_absent_and_an_unanswered_prompt_kept(fixture_copy):
    sessions = load(fixture_copy(FIXTURE))
    assert_absent(_whole(sessions), ("Tokens:", "Applied edit", "Aider v0.82.1", "/add", "/run", "Added 12 lines"))
    # the file's last prompt has no reply (yet): the tail, with an empty reply, admitted when the file is sealed
    tail = sessions[-1].tail
    assert tail is not None and (tail.user, tail.assistant) == ("fix the failing test", "")


def test_ids_stable_and_growth_adds_exactly_the_answer(fixture_copy):
    before, after = grow(fixture_copy(FIXTURE),
                         "\nThe failing test compared naive and aware datetimes; I made both aware.\n\n"
                         "> Applied edit to tests/test_cli.py  \n")
    assert after[0] == before[0]
    assert after[1].session_id == before[1].session_id
    assert after[1].turns == before[1].turns  # the answered prompt is the file's last turn: a tail until sealed
    assert before[1].tail.assistant == "" and after[1].tail.assistant  # the tail grew its answer (not yet admitted)
    assert after[1].tail.turn_id != before[1].tail.turn_id and after[1].tail.parent_turn_id == before[1].tail.parent_turn_id
    whole = after[1].sealed()
    assert len(whole.turns) == 2
    assert whole.turns[1].user == "fix the failing test"
    assert whole.turns[1].assistant == "The failing test compared naive and aware datetimes; I made both aware."


def test_identical_sessions_get_distinct_ids():
    one = "# aider chat started at 2025-01-01 10:00:00\n\n#### hi\n\nhello\n"
    sessions = _whole(aider.parse(one + "\n" + one, source_name=".aider.chat.history.md"))
    assert len({s.session_id for s in sessions}) == 2
    assert len({t.turn_id for s in sessions for t in s.turns}) == 2


# ---- aider's own answers to its yes/no questions (fixture sources: tests/fixtures/transcripts/aider/SOURCES.md)

GROUP_ANSWER = "#### Add file to the chat? (Y)es/(N)o/(A)ll/(S)kip all/(D)on't ask again [Yes]: all  \n"


def test_questions_answered_for_a_group_do_not_end_the_turn(fixture_copy):
    """Real bytes: after a reply naming files, aider logs its own "all" answers as ``#### `` lines."""
    (session,) = _whole(load(fixture_copy("aider/mozgoslav-add-all.md")))
    assert [t.user for t in session.turns] == ["Мы работали над задачей"]
    reply = session.turns[0].assistant
    # the reply before the questions and the one aider wrote once the files were added
    assert "Пожалуйста, уточните задачу или добавьте нужные файлы в чат" in reply
    assert reply.endswith("Жду вашего запроса!")
    assert "Add file to the chat?" not in reply


def test_questions_between_prompt_and_reply_keep_the_prompt():
    """aider asks about files a prompt names before it answers: the turn is the prompt and its reply."""
    text = (
        "# aider chat started at 2026-05-02 13:55:39\n\n"
        "#### Improve the plan in docs/plan.md and src/render.py  \n"
        "> docs/plan.md  \n"
        "> Add file to the chat? (Y)es/(N)o/(A)ll/(S)kip all/(D)on't ask again [Yes]: a  \n"
        "> src/render.py  \n\n"
        + GROUP_ANSWER
        + "> Add file to the chat? (Y)es/(N)o/(A)ll/(S)kip all/(D)on't ask again [Yes]: a  \n\n"
        "The plan is sound; step 2 can go.\n\n"
        "> Tokens: 30k sent, 2.4k received.  \n"
        "> src/tests.py  \n\n"
        "#### Run shell command? (Y)es/(N)o/(S)kip all/(D)on't ask again [Yes]: skip  \n"
        "> Run shell command? (Y)es/(N)o/(S)kip all/(D)on't ask again [Yes]: s  \n\n"
        "#### thanks  \n\n"
        "You're welcome.\n"
    )
    (session,) = _whole(aider.parse(text, source_name=".aider.chat.history.md"))
    assert [(t.user, t.assistant) for t in session.turns] == [
        ("Improve the plan in docs/plan.md and src/render.py", "The plan is sound; step 2 can go."),
        ("thanks", "You're welcome."),
    ]


def test_a_prompt_line_shaped_like_a_question_is_kept():
    """Only a ``#### `` line that opens a block is aider's answer; inside a prompt the user's words are kept."""
    text = "# aider chat started at 2026-05-02 13:55:39\n\n#### why did it ask me this?  \n" + GROUP_ANSWER + "\nIt found file names in your message.\n"
    (session,) = _whole(aider.parse(text, source_name=".aider.chat.history.md"))
    assert [t.user for t in session.turns] == [
        "why did it ask me this?\nAdd file to the chat? (Y)es/(N)o/(A)ll/(S)kip all/(D)on't ask again [Yes]: all"
    ]


def _present_corpus_files():
    """(id, path) of every aider corpus file present: committed, or restored by tests/corpus/fetch.py."""
    manifest = json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8"))
    for entry in (e for e in manifest["files"] if e["format"] == "aider"):
        path = CORPUS / ("files" if entry["committed"] and not entry.get("withheld") else "cache") / entry["file"]
        if path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == entry["sha256"]:
            yield entry["id"], path


def test_no_corpus_file_has_a_turn_made_of_aiders_own_answers():
    """Every aider corpus file present (the committed one at least); where the dev file whose prompt was
    followed by questions is restored, its prompt is the turn's."""
    seen = 0
    for fid, path in _present_corpus_files():
        seen += 1
        users = [t.user for s in _whole(load(path, "aider")) for t in s.turns]
        assert not [u for u in users if u.startswith(("Add file to the chat?", "Add URL to the chat?"))], fid
        if fid == "aider-luvatrix":
            assert users[1].startswith("Help me improve this plan for improving ios rendering performance:")
    assert seen >= 1


HANDOFF = (
    "# aider chat started at 2025-03-11 21:23:54\n\n"
    "> Main model: gpt-4o with architect edit format  \n"
    "> Editor model: openai/gpt-4o with editor-diff edit format  \n\n"
    "#### add a health check endpoint  \n\n"
    "Add a `/health` route that returns 200.\n\n"
    "1. In `app.py`, register the route.\n\n"
    "> Tokens: 2.0k sent, 496 received.  \n"
    "> Edit the files? (Y)es/(N)o [Yes]: y  \n\n"
    "#### Add a `/health` route that returns 200.  \n"
    "####   \n"
    "#### 1. In `app.py`, register the route.  \n\n"
    "app.py\n```python\n<<<<<<< SEARCH\n=======\n@app.get('/health')\n>>>>>>> REPLACE\n```\n\n"
    "> Applied edit to app.py  \n\n"
    "#### thanks, and always add a test with each route  \n\n"
    "Noted.\n"
)


def test_the_architects_hand_off_to_the_editor_is_no_prompt():
    """In architect mode aider logs the architect's reply again as a prompt to the editor model: model text."""
    (session,) = _whole(aider.parse(HANDOFF, source_name=".aider.chat.history.md"))
    assert [t.user for t in session.turns] == ["add a health check endpoint",
                                               "thanks, and always add a test with each route"]
    first = session.turns[0].assistant
    assert first.startswith("Add a `/health` route") and "@app.get('/health')" in first  # the editor's reply joins


def test_a_prompt_that_only_quotes_part_of_the_reply_is_the_users():
    text = HANDOFF.replace("####   \n#### 1. In `app.py`, register the route.  \n", "#### but use flask  \n")
    (session,) = _whole(aider.parse(text, source_name=".aider.chat.history.md"))
    assert [t.user for t in session.turns][1] == "Add a `/health` route that returns 200.\nbut use flask"


def test_no_corpus_file_has_a_prompt_repeating_the_reply_before_it():
    """Every aider corpus file present (the committed one at least)."""
    seen = 0
    for fid, path in _present_corpus_files():
        seen += 1
        for s in _whole(load(path, "aider")):
            for before, after in zip(s.turns, s.turns[1:], strict=False):
                assert after.user.split() != before.assistant.split()[: len(after.user.split())], fid
    assert seen >= 1


# ---- replies cut short, the assistant's own blockquotes, thinking, refusals, times
# (fixture sources: tests/fixtures/transcripts/aider/SOURCES.md)


def test_a_prompt_after_a_reply_cut_inside_a_code_fence_is_the_users(fixture_copy):
    """Real bytes: Ctrl-C stopped a reply inside a code fence; the user's next prompts are theirs, not the reply's."""
    (session,) = _whole(load(fixture_copy("aider/aider-interrupted-fence.md"), "aider"))  # a slice without its header
    assert [t.user for t in session.turns] == [
        "don't use `IgnorantTemporaryDirectory` use GitTemporaryDirectory",
        "make `test_subtree_only` use GitTemporaryDirectory",
    ]
    cut, answered = session.turns
    assert cut.assistant.endswith("with IgnorantTemporaryDirectory() as temp_dir:\n=======")  # the reply as far as it went
    assert "test_subtree_only" not in cut.assistant and "/clear" not in cut.assistant
    assert answered.assistant.startswith("Certainly! I'll modify the `test_subtree_only` test")


def test_refusals_are_the_users_word_and_turns_carry_the_start_time(fixture_copy, utc_minus_5):
    """Real bytes: the user declined to add a file the reply named, and to share a command's output."""
    (session,) = _whole(load(fixture_copy("aider/afi-core-refusals.md")))
    first, second = session.turns
    assert first.user.startswith("Please show me the current Git diff for:\n- schemas/universal_signal_schema.ts")
    assert first.user.endswith("whether we need to restore or ignore it.\n\n"
                               "> Add file to the chat? schemas/universal_signal_schema.mjs\nNo")
    assert second.user.endswith("update scoring/tests accordingly\"\n\n> Add command output to the chat?\nNo")
    # accepted questions add nothing; the command aider showed over two lines is not the reply's
    assert "Run shell commands?" not in second.user
    assert second.assistant.endswith("This will stage the changes and create a commit with the specified message.")
    # "# aider chat started at 2025-07-22 17:49:27", local time of the machine that reads it
    assert [t.completed_at for t in session.turns] == ["2025-07-22T22:49:27Z"] * 2


def test_thinking_is_not_the_reply(fixture_copy):
    """Real bytes: aider logs the model's reasoning inside the reply, between ``<thinking-content-…>`` tags."""
    (session,) = _whole(load(fixture_copy("aider/mozgoslav-add-all.md")))
    reply = session.turns[0].assistant
    assert "thinking process" not in reply and "thinking-content" not in reply
    assert reply.startswith("Исходя из предоставленных файлов-типов")
    text = "# aider chat started at 2025-03-01 09:00:00\n\n#### hi  \n\n<think>\nThe user greets me.\n</think>\n\nHello!\n"
    assert [t.assistant for t in _whole(aider.parse(text, source_name=FIXTURE))[0].turns] == ["Hello!"]


QUOTING = (
    "# aider chat started at 2025-05-20 14:03:11\n\n"
    "#### what does the style guide say about commits?  \n\n"
    "It asks for one change per commit:\n\n"
    "> Keep each commit to one logical change.\n"
    ">\n"
    "> Write the subject in the imperative.\n\n"
    "So split the refactor from the fix.\n\n"
    "> Tokens: 3.1k sent, 120 received. Cost: $0.01 message, $0.01 session.  \n"
)


def test_the_assistants_blockquote_is_kept_and_aiders_output_is_not():
    """aider ends every line it writes with two spaces; the reply is written as the model wrote it."""
    (session,) = _whole(aider.parse(QUOTING, source_name=FIXTURE))
    assert session.turns[0].assistant == (
        "It asks for one change per commit:\n\n> Keep each commit to one logical change.\n>\n"
        "> Write the subject in the imperative.\n\nSo split the refactor from the fix."
    )


def test_in_a_trimmed_history_every_quoted_line_is_aiders():
    """An editor trimmed the trailing spaces: aider's output can no longer be told apart, so none is kept."""
    trimmed = "\n".join(line.rstrip() for line in QUOTING.split("\n"))
    (session,) = _whole(aider.parse(trimmed, source_name=FIXTURE))
    assert session.turns[0].assistant == "It asks for one change per commit:\n\n\nSo split the refactor from the fix."


def test_a_history_read_line_by_line_as_aider_writes_it_captures_each_turn_once(tmp_path):
    """Read at any moment (``cairn watch``, a hook, an import while aider runs), a turn that went on after its
    reply (a refusal answered, a reply after the files it named were added) was captured, then captured again
    under another id once it grew: the user's prompt twice. The file's last turn is now a tail until sealed."""
    import math

    from cairn.protocol.digest import ModelPolicy
    from cairn.worker.journal import imports as I
    from cairn.worker.journal.store import Journal

    from tests.journal.helpers import J, ready_evidence

    def users(ws) -> list[str]:  # noqa: ANN001
        return sorted(e.user for cap in sorted((ws / J / "captures").iterdir()) for _, e in ready_evidence(ws, cap))

    policy = ModelPolicy(provider="extractive")
    for name in ("afi-core-refusals.md", "mozgoslav-add-all.md"):
        lines = (REPO / "tests" / "fixtures" / "transcripts" / "aider" / name).read_text().splitlines(keepends=True)
        once, grown = tmp_path / f"once-{name}", tmp_path / f"grown-{name}"
        once.mkdir()
        grown.mkdir()
        src = tmp_path / name
        src.write_text("".join(lines))
        with Journal(str(once)) as j:
            I.import_paths(j, [str(src)], "aider", policy, sealed_before=math.inf)
        src.write_text("")
        step = max(1, len(lines) // 60)  # about sixty reads as the file grows, every line of the smaller one
        with Journal(str(grown)) as j:
            for n in range(step, len(lines) + step, step):
                src.write_text("".join(lines[:n]))
                I.import_paths(j, [str(src)], "aider", policy)
            I.import_paths(j, [str(src)], "aider", policy, sealed_before=math.inf)
        assert users(grown) == users(once), name
        assert len(set(users(once))) == len(users(once))
