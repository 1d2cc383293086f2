"""gptel chat files: Org and Markdown, current and old bounds layouts, prompt prefixes, bad bounds."""

from __future__ import annotations

import pytest
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.worker.ingest.importers import gptel_md, gptel_org, load

from tests.support.transcripts import all_text


def test_org_turns_with_tool_regions(fixture_copy):
    (s,) = load(fixture_copy("gptel/chat.org"))
    assert (s.source_format, s.title) == ("gptel-org", "Emacs init help")
    assert [t.user for t in s.turns] == [
        "I like my Emacs Lisp with lexical-binding on; always add the cookie to new files.",
        "Why does ~cairn-mode~ fail to load in my init?",
    ]
    assert s.turns[0].assistant == (
        "Noted. New Emacs Lisp files will start with\n\n#+begin_src emacs-lisp\n"
        ";;; foo.el --- Summary -*- lexical-binding: t; -*-\n#+end_src"
    )
    # the tool call between two response regions is noise; both regions form one answer
    assert s.turns[1].assistant == "Let me read your init file.\n\nThe ~require~ has a typo: ~cairn-mod~ should be ~cairn-mode~."
    text = all_text([s])
    for marker in ("TOOL-NOISE", "begin_tool", "read_file", "GPTEL", ":PROPERTIES:", "#+title", "byte-compile", "***"):
        assert marker not in text, marker


def test_org_old_bounds_layout(fixture_copy):
    (s,) = load(fixture_copy("gptel/old-bounds.org"))
    assert [(t.user, t.assistant) for t in s.turns] == [
        ("Use two spaces after a sentence in my Org notes.", "Sure, I'll end sentences with two spaces in your Org notes.")
    ]


def test_markdown_turns(fixture_copy):
    (s,) = load(fixture_copy("gptel/chat.md"))
    assert s.source_format == "gptel-md"
    assert [t.user for t in s.turns] == [
        "In this project we target Emacs 28 as the minimum version; don't use APIs newer than that.",
        "How do I make `cairn-status` show in the mode line?",
    ]
    # character (not byte) positions: the em dash before this text must not shift the regions
    assert s.turns[0].assistant == "Understood — I'll stick to Emacs 28 APIs (no `treesit`, no `use-package` built-in)."
    # a heading inside a response region is the assistant's, not a prompt
    assert s.turns[1].assistant.endswith("### Note\nThis heading is part of the answer.")
    assert "Local Variables" not in all_text([s]) and "gptel" not in all_text([s])


def _md(body: str, bounds: str) -> str:
    return body + f"\n\n<!-- Local Variables: -->\n<!-- gptel--bounds: {bounds} -->\n<!-- End: -->\n"


def test_growth_keeps_ids_and_adds_the_new_turn():
    body1 = "### first question\n\nfirst answer\n\n### "
    body2 = body1 + "second question\n\nsecond answer\n\n### "
    r1 = (len("### first question\n\n") + 1, len("### first question\n\nfirst answer") + 1)
    start2 = body2.index("second answer")
    one = gptel_md.parse(_md(body1, f"((response ({r1[0]} {r1[1]})))"), source_name="c.md")
    two = gptel_md.parse(
        _md(body2, f"((response ({r1[0]} {r1[1]}) ({start2 + 1} {start2 + 1 + len('second answer')})))"), source_name="c.md"
    )
    assert two[0].session_id == one[0].session_id
    assert two[0].turns[:1] == one[0].turns
    assert [(t.user, t.assistant) for t in two[0].turns] == [("first question", "first answer"), ("second question", "second answer")]
    # an unanswered trailing prompt is not a turn
    pending = gptel_md.parse(_md(body1 + "still typing", f"((response ({r1[0]} {r1[1]})))"), source_name="c.md")
    assert pending == one


@pytest.mark.parametrize(
    "bounds",
    ["((response (10 20))", "((response (10 20)))) extra", "((response (10 \"x\")))", "((response (10 99999)))",
     "((response (5 30) (20 40)))", "(wat)"],
)
def test_bad_markdown_bounds_are_malformed(bounds):
    body = "### q\n\n" + "answer text " * 5 + "\n\n### "
    text = _md(body, bounds)
    line = text.split("\n").index(f"<!-- gptel--bounds: {bounds} -->") + 1
    with pytest.raises(CairnError) as err:
        gptel_md.parse(text, source_name="c.md")
    assert (err.value.code, err.value.detail["line"]) == (ErrorCode.IMPORT_MALFORMED, line)


def test_bad_org_bounds_name_their_line(fixture_copy):
    path = fixture_copy("gptel/chat.org")
    path.write_text(path.read_text().replace(":GPTEL_BOUNDS: ((response (424", ":GPTEL_BOUNDS: ((response ((424", 1))
    with pytest.raises(CairnError) as err:
        load(path)
    assert (err.value.code, err.value.detail["line"]) == (ErrorCode.IMPORT_MALFORMED, 5)


def test_org_without_responses_has_no_sessions():
    assert gptel_org.parse(":PROPERTIES:\n:GPTEL_MODEL: x\n:END:\n*** hello\n", source_name="c.org") == []
