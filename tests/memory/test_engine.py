"""The embedded review engine: create, update, merge, No action, rejections, instructions, determinism."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from cairn.protocol.digest import Note
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.journal import PublicDigest
from cairn.protocol.memory import ProposalKind
from cairn.protocol.vocab import NoteType, Trigger
from cairn.worker.memory import engine, model

DAY = 1767571200.0  # 2026-01-05 00:00 UTC
ROOT = ".agents/memory"
INDEX = f"{ROOT}/MEMORY.md"


def note(kind: str, title: str, body: str, turns: tuple[str, ...] = ("t1",)) -> Note:
    return Note(type=NoteType(kind), title=title, body=body, turn_ids=turns)


def digest(n: int, *notes: Note, created: float | None = None) -> PublicDigest:
    return PublicDigest(
        id=f"d{n:02d}",
        capture=f"c{n}",
        session_id="s1",
        title=None,
        trigger=Trigger.IDLE,
        created=DAY + n * 60 if created is None else created,
        provider="extractive",
        turn_ids=tuple(t for x in notes for t in x.turn_ids),
        notes=notes,
    )


def written(d: engine.ProposalDraft) -> bytes:
    """What the draft writes to its target file (it must write one)."""
    data = d.files[d.target][1]
    assert data is not None, "the draft removes its target"
    return data


def commit_topic(body: str, kind: str = "feedback") -> bytes:
    """A "Commit messages" topic file of ``kind`` with ``body``."""
    return model.render_topic("Commit messages", "How to write commit messages", kind, body)


IMPERATIVE = "\n- Use imperative commit messages.\n"
IMPERATIVE_ALWAYS = "\n- Use imperative commit messages, always.\n"
IMPERATIVE_NOTE = note("feedback", "Commit messages", "Write commit messages in imperative mood.")


def make_root(tmp_path: Path, index: bytes | None, topics: dict[str, bytes]) -> model.MemorySnapshot:
    root = tmp_path / "memory"
    root.mkdir()
    if index is not None:
        (root / "MEMORY.md").write_bytes(index)
    for name, data in topics.items():
        (root / name).write_bytes(data)
    return model.read_root(root)


def run(
    digests: list[PublicDigest],
    snap: model.MemorySnapshot,
    *,
    instructions: dict[str, bytes | None] | None = None,
    rejected: set[str] | None = None,
) -> list[engine.ProposalDraft]:
    return engine.review(
        digests,
        snap,
        root_rel=ROOT,
        index_rel=INDEX,
        instruction_files=instructions or {},
        rejected=rejected or set(),
        now=DAY + 3600,
        review_id="r1",
    )


PNPM = model.render_topic(
    "Package manager", "Which package manager to use", "feedback", "\n- Use pnpm, never npm.\n"
)
PNPM_INDEX = b"# Memory\n\n- [Package manager](package-manager.md) - use pnpm\n"


def test_create_groups_similar_notes_of_one_type_into_one_topic(tmp_path: Path) -> None:
    snap = make_root(tmp_path, None, {})
    drafts = run(
        [
            digest(1, note("user", "Prefers short answers", "I prefer short answers without preamble.")),
            digest(
                2,
                note("user", "Prefers terse answers", "I prefer short terse answers."),
                note("project", "Tests run with pytest", "Tests live in tests/ and run with pytest."),
            ),
        ],
        snap,
    )
    assert [(d.kind, d.target) for d in drafts] == [
        (ProposalKind.CREATE, f"{ROOT}/prefers-short-answers.md"),
        (ProposalKind.CREATE, f"{ROOT}/tests-run-with-pytest.md"),
    ]
    user = drafts[0]
    ((path, (before, after)),) = user.files.items()
    assert path == f"{ROOT}/prefers-short-answers.md" and before is None
    assert after == (
        b"---\nname: Prefers short answers\ndescription: I prefer short answers without preamble.\ntype: user\n---\n\n"
        b"- I prefer short answers without preamble. (noted 2026-01-05)\n"
        b"- I prefer short terse answers. (noted 2026-01-05)\n"
    )
    assert user.index_path == INDEX
    assert user.index_edits == (
        (
            "prefers-short-answers.md",
            None,
            # ends with the day it was confirmed (the review's here; provenance moves it to the session's)
            "- [Prefers short answers](prefers-short-answers.md) - I prefer short answers without preamble."
            " (confirmed 2026-01-05)",
        ),
    )
    assert user.evidence == ("d01", "d02")
    # the drafts apply: the index gains both entries on top of the missing index
    index = model.apply_index_edits(None, [e for d in drafts for e in d.index_edits])
    assert [e.file for e in model.parse_index(index).entries] == [
        "prefers-short-answers.md",
        "tests-run-with-pytest.md",
    ]
    assert model.parse_topic(after).type == NoteType.USER


def test_update_appends_to_a_similar_topic_of_the_same_type(tmp_path: Path) -> None:
    snap = make_root(tmp_path, PNPM_INDEX, {"package-manager.md": PNPM})
    drafts = run([digest(1, note("feedback", "Use pnpm", "Use pnpm instead of npm in CI too."))], snap)
    (d,) = drafts
    assert d.kind == ProposalKind.UPDATE and d.target == f"{ROOT}/package-manager.md"
    before, after = d.files[f"{ROOT}/package-manager.md"]
    assert before == PNPM
    assert after == PNPM + b"- Use pnpm instead of npm in CI too. (noted 2026-01-05)\n"
    # freshness guard: the topic must keep its captured entry; no index bytes change
    line = "- [Package manager](package-manager.md) - use pnpm"
    assert d.index_edits == (("package-manager.md", line, line),)
    assert model.apply_index_edits(PNPM_INDEX, d.index_edits) == PNPM_INDEX


def test_similar_note_of_another_type_does_not_update(tmp_path: Path) -> None:
    snap = make_root(tmp_path, PNPM_INDEX, {"package-manager.md": PNPM})
    (d,) = run([digest(1, note("reference", "pnpm docs", "Use pnpm instead of npm: https://pnpm.io"))], snap)
    assert d.kind == ProposalKind.CREATE and d.files[d.target][1] is not None
    assert model.parse_topic(written(d)).type == NoteType.REFERENCE


def test_merge_near_duplicate_topics(tmp_path: Path) -> None:
    a = commit_topic(IMPERATIVE)
    b = commit_topic("\n# Details\n- Use imperative commit messages.\n- Keep commit messages short.\n")
    index = (
        b"# Memory\n- [Commit messages](commit-messages.md) - how to write them\n- [Other](other.md) - x\n"
    )
    snap = make_root(tmp_path, index, {"commit-messages.md": a, "commit-style.md": b})
    (d,) = [x for x in run([], snap) if x.kind != ProposalKind.DELETE]  # other.md's dangling entry aside
    assert d.kind == ProposalKind.MERGE
    assert d.target == f"{ROOT}/commit-messages.md"  # the one with an index entry survives
    assert d.files[f"{ROOT}/commit-style.md"] == (b, None)
    assert d.files[f"{ROOT}/commit-messages.md"] == (a, a + b"- Keep commit messages short.\n")
    line = "- [Commit messages](commit-messages.md) - how to write them"
    assert d.index_edits == (("commit-messages.md", line, line), ("commit-style.md", None, None))
    assert d.evidence == ()
    # a topic of another type is never merged
    c = commit_topic(IMPERATIVE, "user")
    (tmp_path / "two").mkdir()
    two = run([], make_root(tmp_path / "two", None, {"a.md": a, "c.md": c}))
    assert [x for x in two if x.kind == ProposalKind.MERGE] == []


def test_merge_removes_the_deleted_topics_index_entry_and_takes_its_notes(tmp_path: Path) -> None:
    a = commit_topic(IMPERATIVE)
    b = commit_topic(IMPERATIVE_ALWAYS)
    index = b"- [Commit messages](b.md) - y\n- [Commit messages](a.md) - x\n"
    snap = make_root(tmp_path, index, {"a.md": a, "b.md": b})
    (d,) = run([digest(1, IMPERATIVE_NOTE)], snap)
    assert d.kind == ProposalKind.MERGE and d.target == f"{ROOT}/b.md"  # both indexed: longer body survives
    assert d.index_edits == (
        ("b.md", "- [Commit messages](b.md) - y", "- [Commit messages](b.md) - y"),
        ("a.md", "- [Commit messages](a.md) - x", None),
    )
    assert model.apply_index_edits(index, d.index_edits) == b"- [Commit messages](b.md) - y\n"
    assert (
        d.files[f"{ROOT}/b.md"][1] == b + b"- Write commit messages in imperative mood. (noted 2026-01-05)\n"
    )
    assert d.evidence == ("d01",)


def test_no_action_when_nothing_new(tmp_path: Path) -> None:
    snap = make_root(tmp_path, PNPM_INDEX, {"package-manager.md": PNPM})
    assert run([], snap) == []
    assert run([digest(1)], snap) == []
    # a note already present verbatim (case, spacing and final period aside) is never proposed
    assert run([digest(1, note("feedback", "pnpm", "use  PNPM, never npm"))], snap) == []


def test_verbatim_duplicate_in_instruction_file_or_within_the_batch(tmp_path: Path) -> None:
    snap = make_root(tmp_path, None, {})
    agents = b"# Agents\n\n- Never force push to main.\n"
    drafts = run(
        [digest(1, note("feedback", "Force push", "Never force push to main."))],
        snap,
        instructions={"AGENTS.md": agents},
    )
    assert drafts == []
    same = note("project", "Docs build", "Docs are built with mkdocs.")
    (d,) = run([digest(1, same), digest(2, same)], snap)
    assert d.kind == ProposalKind.CREATE and d.evidence == ("d01", "d02")
    assert written(d).count(b"mkdocs") == 2  # description + one bullet


def test_rejected_fingerprint_is_not_proposed_again(tmp_path: Path) -> None:
    snap = make_root(tmp_path, PNPM_INDEX, {"package-manager.md": PNPM})
    digests = [digest(1, note("feedback", "Use pnpm", "Use pnpm instead of npm in CI too."))]
    (first,) = run(digests, snap)
    assert run(digests, snap, rejected={first.fingerprint}) == []
    # the same note seen again later (another digest, another date) is still the same proposal
    later = [
        digest(9, note("feedback", "Use pnpm", "use pnpm instead of npm in CI too"), created=DAY + 86400 * 3)
    ]
    (again,) = run(later, snap)
    assert again.fingerprint == first.fingerprint
    assert run(later, snap, rejected={first.fingerprint}) == []
    # an unrelated rejection changes nothing
    assert run(digests, snap, rejected={"0" * 64}) == [first]


def test_rejected_merge_lets_its_notes_update_instead(tmp_path: Path) -> None:
    a = commit_topic(IMPERATIVE)
    b = commit_topic(IMPERATIVE_ALWAYS)
    index = b"- [Commit messages](a.md)\n- [Commit messages](b.md)\n"
    snap = make_root(tmp_path, index, {"a.md": a, "b.md": b})
    digests = [digest(1, IMPERATIVE_NOTE)]
    (merge,) = run(digests, snap)
    assert merge.kind == ProposalKind.MERGE
    (update,) = run(digests, snap, rejected={merge.fingerprint})
    assert update.kind == ProposalKind.UPDATE


def test_feedback_instructions_become_working_agreements(tmp_path: Path) -> None:
    snap = make_root(tmp_path, None, {})
    agents = b"# Agents\r\n\r\nBe nice."
    digests = [
        digest(
            1,
            note("feedback", "Never force push", "Never force push to main."),
            note("feedback", "Don't add comments", "Please don't add comments to obvious code."),
            note("feedback", "Likes tables", "Tables work better than lists for comparisons."),
        )
    ]
    drafts = run(digests, snap, instructions={"CLAUDE.md": None, "AGENTS.md": agents, "OTHER.md": b"x\n"})
    kinds = [(d.kind, d.target) for d in drafts]
    assert kinds == [
        (ProposalKind.CREATE, f"{ROOT}/likes-tables.md"),
        (ProposalKind.INSTRUCTION, "AGENTS.md"),
    ]
    ins = drafts[1]
    assert ins.files == {
        "AGENTS.md": (
            agents,
            # CRLF kept, and the missing final newline stays missing
            b"# Agents\r\n\r\nBe nice.\r\n\r\n## Working agreements\r\n\r\n- Never force push to main.\r\n"
            b"- Please don't add comments to obvious code.",
        )
    }
    assert ins.index_edits == () and ins.evidence == ("d01",)
    # without any instruction file the same notes become a feedback topic
    drafts = run(digests, snap, instructions={"AGENTS.md": None})
    assert {d.kind for d in drafts} == {ProposalKind.CREATE}
    assert all(model.parse_topic(written(d)).type == NoteType.FEEDBACK for d in drafts)


def test_output_is_deterministic_and_independent_of_input_order(tmp_path: Path) -> None:
    snap = make_root(tmp_path, PNPM_INDEX, {"package-manager.md": PNPM})
    digests = [
        digest(3, note("user", "Likes dark mode", "I like dark mode in every tool.")),
        digest(1, note("feedback", "Use pnpm", "Use pnpm instead of npm in CI too.")),
        digest(
            2,
            note("project", "Deploys on Fridays", "Deploys happen on Fridays only."),
            note("feedback", "Never skip hooks", "Never skip pre-commit hooks."),
        ),
    ]
    instr: dict[str, bytes | None] = {"AGENTS.md": b"# Agents\n"}
    first = run(digests, snap, instructions=instr)
    assert run(list(reversed(digests)), snap, instructions=instr) == first
    assert [d.kind for d in first] == [
        ProposalKind.UPDATE,
        ProposalKind.CREATE,
        ProposalKind.CREATE,
        ProposalKind.INSTRUCTION,
    ]
    assert [d.target for d in first if d.kind == ProposalKind.CREATE] == sorted(
        d.target for d in first if d.kind == ProposalKind.CREATE
    )
    assert all(d.review == "r1" and d.created == DAY + 3600 for d in first)


def test_new_file_names_never_collide(tmp_path: Path) -> None:
    one = model.render_topic("Other", "x", "project", "\n- unrelated words here\n")
    two = model.render_topic("Else", "y", "user", "\n- nothing alike\n")
    index = b"- [Other](deploys.md)\n- [Else](Deploys-2.md)\n"
    snap = make_root(tmp_path, index, {"deploys.md": one, "Deploys-2.md": two})
    (d,) = run([digest(1, note("project", "Deploys", "Deploys happen on Fridays only."))], snap)
    assert d.target == f"{ROOT}/deploys-3.md"


def test_full_index_gets_no_create(tmp_path: Path) -> None:
    full = b"".join(model.format_entry(f"T{i}", f"t{i}.md", "h").encode() + b"\n" for i in range(200))
    snap = make_root(tmp_path, full, {})
    drafts = run([digest(1, note("project", "Deploys", "Deploys happen on Fridays only."))], snap)
    assert {d.kind for d in drafts} == {ProposalKind.DELETE}  # only the repairs of its dangling entries


def test_a_full_index_with_no_topic_counts_the_note_left_out(tmp_path: Path) -> None:
    """A hand-written MEMORY.md past its budget and no topic at all: the note has nowhere to go. It is counted
    as left out (``E_INDEX_FULL``), so the user reads why nothing was proposed (before, it vanished silently,
    and ``cairn remember`` said memory already held it)."""
    index = b"# Memory\n" + b"".join(b"- a line written by hand %d\n" % i for i in range(205))
    snap = make_root(tmp_path, index, {})
    left: Counter[str] = Counter()
    drafts = engine.review([digest(1, note("feedback", "Lint", "Always run ruff before committing."))], snap,
                           left_out=left, root_rel=ROOT, index_rel=INDEX, instruction_files={}, rejected=set(),
                           now=DAY + 3600, review_id="r1")
    assert drafts == [] and left == Counter({"E_INDEX_FULL": 1})


def _budgeted(digests: list[PublicDigest], snap: model.MemorySnapshot, lines: int) -> list[engine.ProposalDraft]:
    return engine.review(digests, snap, root_rel=ROOT, index_rel=INDEX, instruction_files={}, rejected=set(),
                         now=DAY + 3600, review_id="r1", budget=model.IndexBudget(lines=lines))


def _bullets(drafts: list[engine.ProposalDraft]) -> str:
    return "".join(written(d).decode() for d in drafts if d.kind in (ProposalKind.CREATE, ProposalKind.UPDATE))


def test_a_full_index_files_a_note_of_a_type_memory_lacks_under_another_topic(tmp_path: Path) -> None:
    """The index takes no entry and memory has no topic of the note's type: the note goes into the closest
    topic all the same, saying why (before, it got no proposal, the digest counted as reviewed: lost)."""
    go = model.render_topic("The API is written in Go", "The API is written in Go", "project", "\n- The API is written in Go\n")
    snap = make_root(tmp_path, b"# Memory\n\n- [The API is written in Go](go.md)\n", {"go.md": go})
    (d,) = _budgeted([digest(1, note("reference", "Tracker", "The tracker is https://tracker.example.org/X"))], snap, 3)
    assert d.kind == ProposalKind.UPDATE and d.target == f"{ROOT}/go.md" and d.title.endswith("(the index is full)")
    assert "tracker.example.org/X" in written(d).decode() and all(old == new for _, old, new in d.index_edits)


def test_a_review_with_room_for_fewer_topics_than_its_notes_drops_none(tmp_path: Path) -> None:
    """Room for two entries, six notes of four types in an empty memory: two topics are created and every
    note is in one of them (before, the four that found no topic of their type got no proposal)."""
    notes = [note("user", "No emojis", "I'd rather not have emojis in commit messages."),
             note("feedback", "Bare except", "Never use bare except: catch the specific exception."),
             note("feedback", "Test suite", "Don't run the full test suite, it takes 20 minutes."),
             note("feedback", "Migrations", "Never schedule migrations on staging on a Friday."),
             note("project", "CI", "This repo's CI runs on Forgejo Actions."),
             note("reference", "Tracker", "The tracker is https://tracker.example.org/CAIRN.")]
    drafts = _budgeted([digest(1, *notes)], model.empty_snapshot(), 4)
    assert [d.kind for d in drafts] == [ProposalKind.CREATE, ProposalKind.CREATE]
    text = _bullets(drafts)
    assert all(n.body in text for n in notes), text
    assert sum(d.title.endswith("(the index is full)") for d in drafts) >= 1
    assert _budgeted([digest(1, *notes)], model.empty_snapshot(), 4) == drafts  # deterministic


def test_unreadable_index_fails_the_review(tmp_path: Path) -> None:
    snap = make_root(tmp_path, b"- [A](a.md) \xff\n", {})
    with pytest.raises(CairnError) as exc:
        run([digest(1, note("project", "Deploys", "Deploys happen on Fridays only."))], snap)
    assert exc.value.code == ErrorCode.MEMORY_NOT_TEXT


def test_at_most_20_digests() -> None:
    with pytest.raises(AssertionError):
        run([digest(i) for i in range(21)], model.empty_snapshot())
    assert run([digest(i) for i in range(20)], model.empty_snapshot()) == []


def test_similarity_and_instruction_rules() -> None:
    assert (
        engine.jaccard(engine.tokens("Use pnpm, never npm."), engine.tokens("Always use pnpm not npm")) == 1.0
    )
    assert engine.tokens("The tests are fast") == frozenset({"test", "fast"})
    assert engine.is_instruction(note("feedback", "x", "Always run the linter."))
    assert engine.is_instruction(note("feedback", "Don\u2019t mock the db", "Mocks hid a bug."))
    assert not engine.is_instruction(note("user", "x", "Never on Sundays."))
    assert not engine.is_instruction(note("feedback", "Tables", "Tables beat lists."))


def test_create_hook_does_not_repeat_the_title(tmp_path: Path) -> None:
    (d,) = run([digest(1, note("project", "Docs use mkdocs", "Docs use mkdocs."))], model.empty_snapshot())
    assert d.index_edits == (("docs-use-mkdocs.md", None, "- [Docs use mkdocs](docs-use-mkdocs.md) (confirmed 2026-01-05)"),)
    assert model.parse_topic(written(d)).description == "Docs use mkdocs"
