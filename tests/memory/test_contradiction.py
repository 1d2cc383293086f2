"""Two proposals made while neither was applied never leave a memory that disagrees with itself.

"Use npm to install dependencies" and "Use pnpm, not npm, to install dependencies", both remembered before
either was accepted, were two pending creates; accepting both gave two topics that disagree. Now the one
accepted second is stale (``E_PROPOSAL_STALE``, nothing written), and its note is reviewed once more:
into a replacement when it is the newer statement, into nothing when memory already moved away from it.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path

import pytest
from cairn.worker.memory.contradiction import conflict, may_supersede
from cairn.worker.memory.supersede import supersedes

from tests.journal.helpers import cairn, cairn_json

NPM = "Use npm to install dependencies"
PNPM = "Use pnpm, not npm, to install dependencies"


def _topic(*lines: str, heading: str = "") -> bytes:
    body = "\n".join(f"- {ln} (noted 2026-12-01)" for ln in lines)
    return f"---\nname: n\ndescription: d\ntype: project\n---\n\n{heading}{body}\n".encode()


# -- the rule, pure --------------------------------------------------------------------------------------


def test_a_new_statement_that_changes_another_topic_is_a_conflict_either_way() -> None:
    why = conflict([(None, _topic(PNPM))], {"use-npm.md": _topic("Run the tests with make check", NPM)})
    assert why.startswith("it changes what use-npm.md says (line 8) without replacing it")  # the file's line
    why = conflict([(None, _topic(NPM))], {"use-pnpm.md": _topic(PNPM)})
    assert why == "use-pnpm.md (line 7) now says otherwise on the same subject"
    # the reason names a file and a line, never what memory says (reasons reach listings and logs)
    assert "npm" not in why.replace("use-pnpm.md", "")


@pytest.mark.parametrize(("new", "held"), [
    (PNPM, "Run the tests with make check"),  # another subject
    ("The pnpm store is in ~/.pnpm-store", NPM),  # a second fact about a tool is no change of choice
    ("Don't use npm", PNPM),  # the same advice
    (NPM, NPM),  # the same statement: the review drops it, it is no contradiction
])
def test_statements_that_do_not_disagree_are_no_conflict(new: str, held: str) -> None:
    assert conflict([(None, _topic(new))], {"t.md": _topic(held)}) == ""


def test_only_lines_the_proposal_adds_are_checked() -> None:
    before = _topic(NPM)
    after = _topic(NPM, "Release notes go in CHANGES.md")  # an update appending to a topic already in conflict
    assert conflict([(before, after)], {"t.md": _topic(PNPM)}) == ""
    assert conflict([(before, None)], {"t.md": _topic(PNPM)}) == ""  # a deletion adds nothing
    headed = _topic(heading="## npm\n\n")  # a heading is no statement
    assert conflict([(None, headed)], {"t.md": _topic(PNPM)}) == ""


def test_the_cheap_filter_never_hides_a_supersession() -> None:
    """``_related`` is a necessary condition of ``supersedes`` either way (it only spares work)."""
    shapes = [NPM, PNPM, "npm is our package manager", "From now on use pnpm", "We moved from jest to vitest",
              "Run the tests with jest", "The API server listens on port 8000",
              "The API server now listens on port 9000", "Prefer single quotes", "Prefer double quotes",
              "Use 4 spaces", "Use 2 spaces", "yarn is no longer used", "Install with yarn",
              "ruff format instead of black", "Format Python with black", "Deploy with fly, not heroku",
              "We deploy with heroku", "Answer in French", "Answer in English"]
    rng = random.Random(7)
    pairs = [(a, b) for a in shapes for b in shapes] + [(rng.choice(shapes), rng.choice(shapes)) for _ in range(50)]
    found = 0
    for a, b in pairs:
        if supersedes(a, b):
            found += 1
            assert may_supersede(a, b) and may_supersede(b, a), (a, b)
    assert found >= 8  # the shapes do exercise the rule


# -- end to end: remembered, reviewed, accepted in either order ------------------------------------------


def _pending(ws: Path) -> dict[str, dict]:
    return {p["id"]: p for p in cairn_json(ws, "proposals")}


def _both_remembered(ws: Path) -> tuple[str, str]:
    cairn(ws, "remember", NPM)
    cairn(ws, "remember", PNPM)
    cairn(ws, "seal")
    cairn(ws, "process")
    cairn(ws, "review")  # a general review of both digests: their proposals are pending, none is made again
    rows = _pending(ws)
    [npm] = [i for i, p in rows.items() if p["target"].endswith("use-npm-to-install-dependencies.md")]
    [pnpm] = [i for i, p in rows.items() if p["target"].endswith("use-pnpm-not-npm-to-install-dependencies.md")]
    assert rows[npm]["state"] == rows[pnpm]["state"] == "pending" and len(rows) == 2
    return npm, pnpm


def _statements(ws: Path) -> list[str]:
    mem = ws / ".agents" / "memory"
    return sorted(ln for p in mem.glob("*.md") if p.name != "MEMORY.md"
                  for ln in p.read_text().splitlines() if ln.startswith("- "))


def test_accepting_the_older_first_makes_the_newer_a_replacement(workspace: Path) -> None:
    npm, pnpm = _both_remembered(workspace)
    cairn(workspace, "accept", npm)
    assert _pending(workspace)[pnpm]["state"] == "stale"
    r = cairn(workspace, "accept", pnpm, check=False)
    assert r.returncode == 2 and r.stderr.startswith("cairn: E_PROPOSAL_STALE: ") and "Traceback" not in r.stderr
    assert "nothing was written" in r.stderr
    assert [s.split(" (noted")[0] for s in _statements(workspace)] == [f"- {NPM}"]
    # its note is reviewed once more, against memory as it is now: a replacement of the old line
    cairn(workspace, "review")
    [new] = [p for p in _pending(workspace).values() if p["state"] == "pending"]
    assert new["kind"] == "update" and new["target"].endswith("use-npm-to-install-dependencies.md")
    cairn(workspace, "accept", new["id"])
    assert [s.split(" (noted")[0] for s in _statements(workspace)] == [f"- {PNPM}"]
    assert cairn(workspace, "review").stdout.strip() == "nothing to review"  # once: no review loop


def test_accepting_the_newer_first_leaves_the_older_out(workspace: Path) -> None:
    npm, pnpm = _both_remembered(workspace)
    cairn(workspace, "accept", pnpm)
    assert _pending(workspace)[npm]["state"] == "stale"
    assert cairn(workspace, "accept", npm, check=False).returncode == 2
    cairn(workspace, "review")  # reviewed again: memory already moved away from it, nothing is proposed
    assert [p["id"] for p in _pending(workspace).values() if p["state"] == "pending"] == []
    assert [s.split(" (noted")[0] for s in _statements(workspace)] == [f"- {PNPM}"]
    assert cairn(workspace, "review").stdout.strip() == "nothing to review"



def test_lines_a_merge_carries_over_are_not_new_and_non_topics_hold_no_statements() -> None:
    # a merge folds x.md (npm) into y.md and deletes x.md; z.md already disagreed with x.md: not this merge's doing
    y_before, x_before = _topic("Install dependencies first"), _topic(NPM)
    y_after = _topic("Install dependencies first", NPM)
    assert conflict([(y_before, y_after), (x_before, None)], {"z.md": _topic(PNPM)}) == ""
    # a README in the root (no front matter) is no topic; a topic holding code is never rewritten by a review
    readme = f"# Notes\n\n- {NPM}\n".encode()
    fenced = _topic(NPM, heading="```\nnpm install\n```\n\n")
    assert conflict([(None, _topic(PNPM))], {"README.md": readme, "code.md": fenced}) == ""


def _write_topic(ws: Path, name: str, title: str, body: str) -> None:
    mem = ws / ".agents" / "memory"
    mem.mkdir(parents=True, exist_ok=True)
    (mem / name).write_text(f"---\nname: {title}\ndescription: {title}\ntype: project\n---\n\n{body}")
    index = mem / "MEMORY.md"
    head = index.read_text() if index.exists() else "# Memory\n\n"
    index.write_text(head + f"- [{title}]({name}) - {title}\n")


def test_a_replacement_is_not_held_back_by_a_second_topic_saying_the_old_thing(workspace: Path) -> None:
    _write_topic(workspace, "setup.md", "Setup", f"- {NPM} (noted 2026-11-01)\n")
    _write_topic(workspace, "ci.md", "CI", "- CI: use npm to install dependencies (noted 2026-11-01)\n")
    cairn(workspace, "remember", PNPM)
    [p] = _pending(workspace).values()
    assert p["state"] == "pending" and p["kind"] == "update", p
    cairn(workspace, "accept", p["id"])  # the change lands in one topic; the other still says npm, as before
    assert any(s.startswith(f"- {PNPM}") for s in _statements(workspace))


def test_the_newer_of_two_plain_statements_is_still_proposed(workspace: Path) -> None:
    # either statement supersedes the other (a swapped word): the note is the newer one, never dropped,
    # even where the topic holds code and so is not rewritten in place
    _write_topic(workspace, "style.md", "Style",
                 "```\nx = 'a'\n```\n\n- Prefer single quotes in Python (noted 2026-11-01)\n")
    out = cairn_json(workspace, "remember", "Prefer double quotes in Python")
    assert out["proposals"], out
    shown = cairn(workspace, "show", out["proposals"][0]["id"]).stdout
    assert "+- Prefer double quotes in Python" in shown


def test_the_refusal_says_how_to_get_the_replacement_and_that_way_gives_it(workspace: Path) -> None:
    """"review again" led nowhere: `cairn review` said "nothing to review" until the remembered texts' digests
    were published. The refusal names the commands, and they propose the newer statement as a replacement."""
    npm, pnpm = _both_remembered(workspace)
    cairn(workspace, "accept", npm)
    r = cairn(workspace, "accept", pnpm, check=False)
    assert r.returncode == 2 and "`cairn process && cairn review` proposes it as a replacement" in r.stderr
    assert r.stderr.index("(to keep both: accept --keep-both)") < r.stderr.index("cairn process")
    cairn(workspace, "process")
    cairn(workspace, "review")
    fresh = [p for p in cairn_json(workspace, "proposals") if p["state"] == "pending" and p["id"] != pnpm]
    assert [p["kind"] for p in fresh] == ["update"], fresh
    cairn(workspace, "accept", fresh[0]["id"])
    assert [s.split(" (noted")[0] for s in _statements(workspace)] == [f"- {PNPM}"]


def test_the_person_may_keep_both(workspace: Path) -> None:
    npm, pnpm = _both_remembered(workspace)
    cairn(workspace, "accept", npm)
    r = cairn(workspace, "accept", pnpm, check=False)
    assert r.returncode == 2 and "(to keep both: accept --keep-both)" in r.stderr
    assert cairn(workspace, "accept", "--keep-both", pnpm).stdout.strip() == f"{pnpm}: applied"
    assert [s.split(" (noted")[0] for s in _statements(workspace)] == [f"- {NPM}", f"- {PNPM}"]


def test_a_topic_never_disagrees_with_itself() -> None:
    two_new = _topic("Always use npm to install dependencies in this repo", PNPM)
    assert conflict([(None, two_new)], {}).startswith("two statements it writes into one topic disagree")
    appended = _topic(NPM, PNPM)  # a change appended beside the line it changes instead of replacing it
    assert conflict([(_topic(NPM), appended)], {}).startswith("two statements it writes into one topic disagree")
    assert conflict([(_topic(NPM), _topic(PNPM))], {}) == ""  # the replacement itself


CHAT = """
# aider chat started at 2025-06-01 10:00:00

#### Always use npm to install dependencies in this repo.

OK, I will use npm.

#### Actually, use pnpm, not npm, to install dependencies.

Understood, pnpm from now on.
"""


def test_of_two_statements_of_one_session_the_later_holds(workspace: Path) -> None:
    (workspace / "chat.md").write_text(CHAT)
    cairn(workspace, "import", "--ended", str(workspace / "chat.md"))
    cairn(workspace, "seal")
    cairn(workspace, "process")
    notes = [n["body"] for e in cairn_json(workspace, "journal") for n in e["notes"]]
    assert len(notes) == 2  # both are in the journal: what was said
    cairn(workspace, "review")
    [p] = _pending(workspace).values()
    shown = cairn(workspace, "show", p["id"]).stdout
    assert "+- Use pnpm, not npm, to install dependencies" in shown and "use npm to install" not in shown.lower()


def test_a_note_that_changes_a_working_agreement_replaces_it(workspace: Path) -> None:
    # agents read the instruction file and the memory: a change must not land beside the old agreement
    (workspace / "AGENTS.md").write_text("# Agents\n\n## Working agreements\n\n- Always use npm to install dependencies\n")
    [p] = cairn_json(workspace, "remember", PNPM)["proposals"]
    assert p["kind"] == "instruction" and p["title"].startswith("Replace 1 working agreement in AGENTS.md")
    cairn(workspace, "accept", p["id"])
    assert (workspace / "AGENTS.md").read_text().endswith(f"## Working agreements\n\n- {PNPM}\n")
    assert not (workspace / ".agents" / "memory").exists()  # no topic beside it
    # the old statement said again later is not proposed: the agreement already moved away from it
    out = cairn_json(workspace, "remember", NPM)
    assert out["proposals"] == []


def test_topics_that_cannot_be_read_are_left_out_never_followed(workspace: Path, tmp_path: Path) -> None:
    import os

    out = cairn_json(workspace, "remember", NPM)
    [p] = out["proposals"]
    mem = workspace / ".agents" / "memory"
    mem.mkdir(parents=True, exist_ok=True)
    outside = tmp_path / "outside.md"
    outside.write_bytes(_topic(PNPM))  # would contradict it, if the link were followed
    (mem / "linked.md").symlink_to(outside)
    os.mkfifo(mem / "pipe.md")  # never opened: no read blocks
    (mem / "huge.md").write_bytes(_topic(PNPM) + b"x" * (600 * 1024))  # past a topic's size: not read
    assert cairn(workspace, "accept", p["id"]).stdout.strip() == f"{p['id']}: applied"


# -- the engine's side: rules 1a, 3a and 4b, on drafts ---------------------------------------------------


def _drafts(tmp_path: Path, notes_by_session: list[list[tuple[str, str]]], *, topics: dict[str, bytes] | None = None,
            instructions: Mapping[str, bytes | None] | None = None) -> list:
    from tests.memory.test_engine import digest, make_root, note, run

    digests = [digest(i + 1, *(note(kind, body[:20], body) for kind, body in notes))
               for i, notes in enumerate(notes_by_session)]
    tmp_path.mkdir(parents=True, exist_ok=True)
    return run(digests, make_root(tmp_path, None, topics or {}), instructions=dict(instructions or {}))


def _after(d) -> str:
    return "".join((a or b"").decode() for _, (_, a) in sorted(d.files.items()))


def test_the_note_said_last_holds_whichever_supersedes_which(tmp_path: Path) -> None:
    # "use pnpm, not npm", then "always use npm": the later holds; and a note said again counts from then
    [d] = _drafts(tmp_path / "a", [[("feedback", PNPM)], [("feedback", "Always use npm to install dependencies")]])
    assert "Always use npm" in _after(d) and "pnpm" not in _after(d)
    [d] = _drafts(tmp_path / "b", [[("project", NPM)], [("project", "Use pnpm to install dependencies")],
                                    [("project", NPM)]])
    assert NPM in _after(d) and "pnpm" not in _after(d)


def test_a_later_statement_outlives_one_memory_already_holds(tmp_path: Path) -> None:
    topic = _topic("Use pnpm to install dependencies")
    drafts = _drafts(tmp_path, [[("project", NPM)], [("project", "Use pnpm to install dependencies")]],
                     topics={"package-manager.md": topic})
    assert not any("Use npm" in _after(d) for d in drafts)  # never a replacement of pnpm by the older npm


def test_an_agreement_overrules_an_instruction_note_too(tmp_path: Path) -> None:
    agents = {"AGENTS.md": f"# Agents\n\n## Working agreements\n\n- {PNPM}\n".encode()}
    assert _drafts(tmp_path, [[("feedback", "Always use npm to install dependencies")]], instructions=agents) == []


def test_the_agreement_most_like_the_note_is_replaced_in_every_file_and_copy(tmp_path: Path) -> None:
    agents = b"# Agents\n\n## Working agreements\n\n- Run `npm run lint` before pushing\n" \
             b"- Always use npm to install dependencies\n- Always use npm to install dependencies\n"
    claude = b"# Claude\n\n```md\n- Always use npm to install dependencies\n```\n\n- Always use npm to install dependencies\n"
    drafts = _drafts(tmp_path, [[("project", PNPM)]], instructions={"AGENTS.md": agents, "CLAUDE.md": claude})
    by_file = {next(iter(d.files)): _after(d) for d in drafts}
    assert set(by_file) == {"AGENTS.md", "CLAUDE.md"}
    assert by_file["AGENTS.md"].count(PNPM) == 2 and "`npm run lint`" in by_file["AGENTS.md"]
    # the example in a code fence is no agreement: left as it is
    assert by_file["CLAUDE.md"] == claude.decode().replace("```\n\n- Always use npm to install dependencies",
                                                            f"```\n\n- {PNPM}")


def test_a_stray_carriage_return_never_stops_a_review(tmp_path: Path) -> None:
    for i, data in enumerate([b"- Always use npm to install\rdependencies\n", b"# A\r- Always use npm to install\r"]):
        drafts = _drafts(tmp_path / str(i), [[("project", PNPM)]], instructions={"AGENTS.md": data})
        assert [d.kind for d in drafts] == ["create"]  # the line is left alone, the note still proposed


def test_a_topic_whose_front_matter_does_not_parse_holds_no_statement_a_proposal_is_held_to() -> None:
    # the review cannot read it (E_TOPIC_FRONT_MATTER), so it could never replace its line: a proposal made
    # beside it was stale at once, and every later review only added another stale one
    pnpm, npm = "Use pnpm, not npm, to install dependencies", "Use npm to install dependencies"
    good = _topic(npm)
    broken = good.replace(b"type: project\n", b"type: project\n  bad: indent: here\n")
    assert conflict([(None, _topic(pnpm))], {"npm.md": good}).startswith("it changes what npm.md says")
    assert conflict([(None, _topic(pnpm))], {"npm.md": broken}) == ""
