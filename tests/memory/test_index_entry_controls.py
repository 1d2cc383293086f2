"""No control character reaches an index line or a front matter value from text cairn did not write.

A hand-written topic's name and description, a hand-written index entry's
title and hook may hold an ESC, a BEL or a bidirectional override (YAML's
``"\\e"`` gives a raw ESC back); the index is what every agent loads and a
terminal prints. Whatever renders an entry (:func:`format_entry`, the orphan
housekeeping) keeps the words and drops the controls, ANSI sequences whole
(``protocol/text.py``); a front matter value with one is refused, as
:func:`render_topic` refuses it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.memory import ProposalKind
from cairn.worker.memory import engine, model

DAY = 1767571200.0  # 2026-01-05 00:00 UTC
MEM = ".agents/memory"
INDEX_REL = f"{MEM}/MEMORY.md"
#: any control character but tab, as a memory file would hold it
RAW = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
#: hand-written front matter: YAML's double-quoted escapes give raw controls back
EVIL = (b'---\nname: "evil \\e]0;PWNED\\a name"\ndescription: "desc \\e[31mRED\\e[0m \\u202eok"\n'
        b"type: project\n---\n\n- body\n")
ONLY_CONTROLS = b'---\nname: "\\e[31m\\a\\e[0m"\ndescription: "\\e[1mbold\\e[0m"\ntype: project\n---\n\n- x\n'


def _orphan_lines(tmp_path: Path, topics: dict[str, bytes]) -> dict[str, str]:
    root = tmp_path / "m"
    root.mkdir()
    (root / "MEMORY.md").write_bytes(b"# Memory\n\n")
    for name, data in topics.items():
        (root / name).write_bytes(data)
    snap = model.read_root(root)
    assert all(snap.topics[n].topic is not None for n in topics)  # parsed: a hand-written topic cairn indexes
    drafts = engine.review([], snap, root_rel=MEM, index_rel=INDEX_REL, instruction_files={}, rejected=set(),
                           now=DAY + 3600, review_id="r1")
    out = {}
    for d in drafts:
        assert d.kind is ProposalKind.UPDATE
        [(file, before, after)] = d.index_edits
        assert before is None and after is not None
        out[file] = after
    return out


def test_an_orphan_topics_controls_never_reach_its_restored_entry(tmp_path: Path) -> None:
    lines = _orphan_lines(tmp_path, {"evil.md": EVIL})
    assert lines == {"evil.md": "- [evil name](evil.md) - desc RED ok"}  # the OSC string went with its payload
    assert not RAW.search(lines["evil.md"])


def test_an_orphan_whose_name_is_only_controls_is_entered_by_its_file_name(tmp_path: Path) -> None:
    lines = _orphan_lines(tmp_path, {"blank.md": ONLY_CONTROLS})
    assert lines == {"blank.md": "- [blank.md](blank.md) - bold"}  # a review never fails on an empty title


def test_format_entry_drops_controls_from_title_and_hook() -> None:
    line = model.format_entry("Use \x1b[1;31mpnpm\x1b[0m\x07", "pnpm.md",
                              "copy\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07 this\u202e", "2026-01-05")
    assert line == "- [Use pnpm](pnpm.md) - copy this (confirmed 2026-01-05)"
    # an entry re-rendered from a hand-written line (a supersession, an edited proposal) comes out clean
    entry = model.parse_index("- [a \x1b[31mb\x1b[0m](x.md) - h\x9b2Jook\n".encode()).entries[0]
    assert model.format_entry(entry.title, entry.file, entry.hook) == "- [a b](x.md) - hook"
    with pytest.raises(CairnError) as exc:
        model.format_entry("\x1b[31m\x07", "x.md", "hook")
    assert exc.value.code == ErrorCode.INDEX_ENTRY_INVALID


def test_set_front_matter_refuses_a_value_with_a_control_character() -> None:
    data = model.render_topic("Name", "Description", "project", "\n- x\n")
    for bad in ("evil \x1b]0;PWNED\x07", "bell\x07", "line\u2028sep"):
        with pytest.raises(CairnError) as exc:
            model.set_front_matter(data, "name", bad)  # YAML would write "\e" and read a raw ESC back
        assert exc.value.code == ErrorCode.TOPIC_FRONT_MATTER
    assert model.parse_topic(model.set_front_matter(data, "name", "tab\tkept")).name == "tab\tkept"
