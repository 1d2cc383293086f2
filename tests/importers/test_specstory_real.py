"""Real SpecStory exports: every prompt's words are captured once, however the file was read while it grew.

The files are public exports people committed to their own repositories (tests/corpus/manifest.json records
each one's repository, commit, path and licence; tests/corpus/files holds the MIT/Apache ones, the corpus
cache the others when restored with tests/corpus/fetch.py, absent from a fresh clone: skipped then).

Every export at hand is imported at prefix cuts at line boundaries (unsealed, as ``cairn watch`` reads a file
SpecStory is still writing) and then whole, sealed, and at cuts before each prompt with each import sealed (the
user stopped, came back later): the turns captured must be a cold import's, each once. The cuts are sampled,
or every line with ``CAIRN_SWEEP=full`` (tests/sweep.py), which also takes every cached SpecStory export.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from cairn.protocol.transcript import Turn
from cairn.worker.ingest.importers import specstory

from tests.support import REPO

CORPUS = REPO / "tests" / "corpus"
COMMITTED = sorted((CORPUS / "files").glob("specstory-*.md"))
#: cached exports that lost a prompt before (a fence left open, a last prompt answered by tool calls only, an
#: image-only prompt): absent from a fresh clone, skipped then
CACHED = ["specstory-politipo-pandera.md", "specstory-cozy-admin-tables.md",
          "audit-specstory-streamlit-2026-04-15-08-57-49z-watchlist-ui-implementation.md",
          "audit-specstory-cox-mod-adventure-2026-07-13-18-45-19z-users-steven-claude-projects.md",
          "a2-specstory-mockdata-1.md", "a2-specstory-policy-5.md", "specstory-devto-mermaid.md"]
SAMPLED_CUTS = 24
SAMPLED_SEALS = 12

_HEADER = re.compile(r"^_\*\*(User|Assistant|Agent)\b([^\n]*)\*\*_[ \t]*$", re.M)
_BLOCK = re.compile(r"<(details|tool-use|think)\b.*?</\1>", re.S)


def _full() -> bool:
    return os.environ.get("CAIRN_SWEEP") == "full"


def _files() -> list[Path]:
    cached = sorted((CORPUS / "cache").glob("*specstory*.md")) if _full() else [CORPUS / "cache" / n for n in CACHED]
    return [*COMMITTED, *cached]


def _turns(text: str, *, sealed: bool) -> list[Turn]:
    sessions = specstory.parse(text, source_name="x.md")
    return [t for s in sessions for t in (s.sealed() if sealed else s).turns]


def _norm(text: str) -> str:
    return " ".join(text.split())


def _prompt_lines(text: str) -> list[tuple[int, str]]:
    """The lines of every user message, read independently of the importer: a user header's text up to the
    next header line of any role, less tool, thought and context blocks and Claude Code's notes on local
    commands (never the user's words)."""
    headers = list(_HEADER.finditer(text))
    out = []
    for i, h in enumerate(headers):
        if h.group(1) != "User" or "sidechain" in h.group(2):
            continue
        body = text[h.end(): headers[i + 1].start() if i + 1 < len(headers) else len(text)]
        if body.strip().startswith(("<local-command-", "Caveat: The messages below were generated")):
            continue
        line = text.count("\n", 0, h.start()) + 1
        out += [(line, s) for s in (ln.strip() for ln in _BLOCK.sub("", body).splitlines()) if s and s != "---"]
    return out


def _check(path: Path) -> None:
    text = path.read_text(encoding="utf-8", errors="replace").replace("\r\n", "\n")
    cold = _turns(text, sealed=True)
    ids = [t.turn_id for t in cold]
    assert len(set(ids)) == len(ids), f"{path.name}: a cold import gives a turn id twice"
    users = "\n".join(_norm(t.user) for t in cold)
    lost = [(n, s[:70]) for n, s in _prompt_lines(text) if _norm(s) not in users]
    assert not lost, f"{path.name}: prompt words no turn holds (header line, text): {lost[:5]}"

    expected = {t.turn_id: t for t in cold}
    lines = text.splitlines(keepends=True)
    cuts = range(1, len(lines)) if _full() or len(lines) <= SAMPLED_CUTS else \
        sorted({len(lines) * k // SAMPLED_CUTS for k in range(1, SAMPLED_CUTS)})
    prompts = [text.count("\n", 0, h.start()) for h in _HEADER.finditer(text) if h.group(1) == "User"]
    seals = prompts if _full() else prompts[:: max(1, len(prompts) // SAMPLED_SEALS)]
    for sealed, at in ((False, cuts), (True, seals)):
        got: dict[str, Turn] = {}
        for state in [*("".join(lines[:c]) for c in at if c), text]:
            for t in _turns(state, sealed=sealed or state is text):
                got.setdefault(t.turn_id, t)
        short = [(t.user[:60], len(t.assistant)) for tid, t in expected.items() if got.get(tid) != t]
        assert not short, f"{path.name} (sealed at each cut: {sealed}): turns captured short or never: {short[:5]}"
        extra = [(got[tid].user[:60], len(got[tid].assistant)) for tid in set(got) - set(expected)]
        assert not extra, f"{path.name} (sealed at each cut: {sealed}): turns a cold import leaves out: {extra[:5]}"


@pytest.mark.parametrize("path", _files(), ids=lambda p: p.name)
def test_every_prompt_is_captured_once_however_the_export_was_read(path: Path) -> None:
    if not path.is_file():
        pytest.skip(f"{path.name} is not restored (tests/corpus/fetch.py)")
    _check(path)


# -- the shapes, one by one, on the committed exports --------------------------------------------------------

def _load(name: str) -> list[Turn]:
    return _turns((CORPUS / "files" / name).read_text(encoding="utf-8"), sealed=True)


def _turn_of(turns: list[Turn], words: str) -> Turn:
    (turn,) = [t for t in turns if words in t.user]
    return turn


def test_a_message_left_inside_an_open_fence_hides_no_later_header() -> None:
    """roo-cline-profiles: a reply ends on an unclosed fence (line 446), and every later fence's parity was off,
    hiding 151 headers, 7 of them prompts (line 4682 among them); twat-search-unifying hid its prompt at 4389."""
    turns = _load("specstory-roo-cline-profiles.md")
    assert len(turns) == 16
    plan = _turn_of(turns, "please recheck the initial implementation plan you formulated")
    assert plan.user.startswith("please recheck") and "_**Assistant**_" not in plan.user
    assert _turn_of(turns, "yes please").user == "yes please"
    engine = _turn_of(_load("specstory-twat-search-unifying.md"), "Task: Implement NEW ENGINE: `critique`")
    assert engine.user.startswith("Task: Implement NEW ENGINE: `critique`")


def test_a_separator_and_header_inside_an_open_fence_end_it() -> None:
    text = ("_**User**_\n\nfix this:\n\n```\nTraceback (most recent call last):\n\n---\n\n"
            "_**Assistant**_\n\n```\n\nDone.\n\n---\n\n_**User**_\n\nthanks, we always pin numpy\n\n---\n\n"
            "_**Assistant**_\n\nNoted.\n")
    assert [(t.user, t.assistant) for t in _turns(text, sealed=True)] == [
        ("fix this:\n\n```\nTraceback (most recent call last):", "```\n\nDone."),
        ("thanks, we always pin numpy", "Noted.")]
    closed = "_**User**_\n\nsee:\n\n```md\n---\n\n_**User**_\n\nquoted\n```\n\n---\n\n_**Assistant**_\n\nOk.\n"
    (turn,) = _turns(closed, sealed=True)  # no blank line before the ---: not SpecStory's separator
    assert turn.user == "see:\n\n```md\n---\n\n_**User**_\n\nquoted\n```"


def test_the_last_prompt_of_a_finished_session_is_kept_without_a_reply_text() -> None:
    """twat-mp-hatch ends on a prompt whose reply is tool calls only: sealed, it is the last turn."""
    last = _load("specstory-twat-mp-hatch.md")[-1]
    assert (last.user, last.assistant) == ("Fold the content of @LOG.md into @CHANGELOG.md and remove @LOG.md", "")
    (s,) = specstory.parse((CORPUS / "files" / "specstory-twat-mp-hatch.md").read_text(encoding="utf-8"),
                           source_name="x.md")
    assert s.tail is not None and s.tail.user == last.user  # until sealed, the tail: not captured
    assert last.turn_id not in {t.turn_id for t in s.turns}


def test_an_image_only_prompt_starts_a_turn_of_its_own() -> None:
    """xbrl-models line 5197: an empty user message (an image pasted alone). Its reply was added to the turn
    before, whose id then changed as the file grew: a sealed import captured that turn twice."""
    turns = _load("specstory-xbrl-models.md")
    (image,) = [t for t in turns if t.assistant.startswith('Yes, exactly! The error "RuntimeError: The session is')]
    before = turns[turns.index(image) - 1]
    assert image.user == "" and before.user == "what is this error"
    assert "RuntimeError: The session is unavailable" not in before.assistant
    assert before.assistant.startswith("Ah, I see the issue. In the `reshape_data` method of `table.py`")


def test_html_comments_in_the_users_words_are_kept() -> None:
    text = ("<!-- Generated by SpecStory -->\n\n_**User**_\n\nimplement my TO-DO:\n\n```md\n"
            "<!-- TO-DO NOW:\n   1. Write a VSCode task\n-->\n```\n\n---\n\n_**Assistant**_\n\nDone.\n")
    (turn,) = _turns(text, sealed=True)
    assert "<!-- TO-DO NOW:\n   1. Write a VSCode task\n-->" in turn.user
