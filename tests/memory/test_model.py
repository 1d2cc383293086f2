"""The memory model: byte-exact index edits, entry-level freshness, topic round trips, root reads."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.vocab import NoteType
from cairn.worker.memory import model
from hypothesis import given
from hypothesis import strategies as st

INDEX = (
    b"# Memory\n"
    b"\n"
    b"Notes kept for agents.\n"
    b"- [Package manager](package-manager.md) - use pnpm\n"
    b"-   [Tests]( tests.md)  broken link is prose\n"
    b"*  [Style \\[strict\\]](style.md)   \xe2\x80\x94   tabs, not spaces\n"
    b"- [Deploy](deploy.md)\n"
    b"\n"
    b"## Later\n"
    b"Free text the user wrote.\n"
)


def _code(exc: pytest.ExceptionInfo[CairnError]) -> ErrorCode:
    return exc.value.code


# -- parse_index ---------------------------------------------------------------


def test_parse_index_reads_entries_with_unusual_spacing_and_keeps_raw_lines() -> None:
    index = model.parse_index(INDEX)
    assert [(e.title, e.file, e.hook, e.line) for e in index.entries] == [
        ("Package manager", "package-manager.md", "use pnpm", 3),
        ("Style [strict]", "style.md", "tabs, not spaces", 5),
        ("Deploy", "deploy.md", "", 6),
    ]
    assert index.entries[1].raw == "*  [Style \\[strict\\]](style.md)   \u2014   tabs, not spaces"
    assert model.entry_line(index, "deploy.md") == "- [Deploy](deploy.md)"
    assert model.entry_line(index, "tests.md") is None
    assert b"".join(c + e for c, e in index.lines) == INDEX


def test_parse_index_keeps_crlf_and_missing_final_newline() -> None:
    data = b"# Memory\r\n\r\n- [A](a.md) - first\r\n- [B](b.md) - second"
    index = model.parse_index(data)
    assert [e.raw for e in index.entries] == ["- [A](a.md) - first", "- [B](b.md) - second"]
    assert index.newline == b"\r\n" and index.final_newline is False


def test_parse_index_refuses_non_utf8_with_a_code() -> None:
    with pytest.raises(CairnError) as exc:
        model.parse_index(b"# Memory\n- [A](a.md) - \xff\n")
    assert _code(exc) == ErrorCode.MEMORY_NOT_TEXT
    assert exc.value.detail["line"] == 2


def test_format_entry_round_trips_through_parse_index() -> None:
    line = model.format_entry("Odd [title] with \\ slash", "odd.md", "  a hook\nover lines - with dash ")
    assert line == "- [Odd \\[title\\] with \\\\ slash](odd.md) - a hook over lines - with dash"
    (entry,) = model.parse_index(line.encode()).entries
    assert (entry.title, entry.file, entry.hook) == (
        "Odd [title] with \\ slash",
        "odd.md",
        "a hook over lines - with dash",
    )
    assert model.format_entry("T", "t.md", "") == "- [T](t.md)"
    for bad in ("../x.md", "a/b.md", "x.txt", "MEMORY.md", ".hidden.md", "sp ace.md"):
        with pytest.raises(CairnError) as exc:
            model.format_entry("T", bad, "h")
        assert _code(exc) == ErrorCode.PATH_INVALID_NAME


# -- apply_index_edits ------------------------------------------------------------


def _changed_lines(before: bytes, after: bytes) -> tuple[list[bytes], list[bytes]]:
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    return [x for x in a if x not in b], [x for x in b if x not in a]


def test_insert_goes_after_last_entry_and_changes_nothing_else() -> None:
    new = model.format_entry("Release", "release.md", "how we tag")
    out = model.apply_index_edits(INDEX, [("release.md", None, new)])
    assert out == INDEX.replace(
        b"- [Deploy](deploy.md)\n", b"- [Deploy](deploy.md)\n- [Release](release.md) - how we tag\n"
    )


def test_replace_and_remove_touch_only_the_affected_lines() -> None:
    out = model.apply_index_edits(
        INDEX,
        [
            (
                "package-manager.md",
                "- [Package manager](package-manager.md) - use pnpm",
                "- [Pkg](package-manager.md) - pnpm only",
            ),
            ("deploy.md", "- [Deploy](deploy.md)", None),
        ],
    )
    removed, added = _changed_lines(INDEX, out)
    assert removed == [b"- [Package manager](package-manager.md) - use pnpm\n", b"- [Deploy](deploy.md)\n"]
    assert added == [b"- [Pkg](package-manager.md) - pnpm only\n"]
    assert out.endswith(b"## Later\nFree text the user wrote.\n")


def test_crlf_and_missing_final_newline_are_kept_on_write() -> None:
    data = b"# Memory\r\n\r\n- [A](a.md) - first"
    out = model.apply_index_edits(data, [("b.md", None, "- [B](b.md) - second")])
    assert out == b"# Memory\r\n\r\n- [A](a.md) - first\r\n- [B](b.md) - second"
    back = model.apply_index_edits(out, [("b.md", "- [B](b.md) - second", None)])
    assert back == data
    replaced = model.apply_index_edits(data, [("a.md", "- [A](a.md) - first", "- [A](a.md) - 1st")])
    assert replaced == b"# Memory\r\n\r\n- [A](a.md) - 1st"


def test_insert_without_entries_goes_at_the_end_and_empty_index_gets_a_heading() -> None:
    prose = b"# My memory\n\nNothing yet.\n"
    assert model.apply_index_edits(prose, [("a.md", None, "- [A](a.md) - x")]) == prose + b"- [A](a.md) - x\n"
    assert (
        model.apply_index_edits(b"", [("a.md", None, "- [A](a.md) - x")]) == b"# Memory\n\n- [A](a.md) - x\n"
    )
    assert (
        model.apply_index_edits(None, [("a.md", None, "- [A](a.md) - x")]) == b"# Memory\n\n- [A](a.md) - x\n"
    )


def test_unrelated_entry_edit_still_applies() -> None:
    """A person edited another entry after the proposal was made: it applies and keeps their edit."""
    edited = INDEX.replace(b"- [Deploy](deploy.md)", b"- [Deploy](deploy.md) - now with a hook")
    edited = edited.replace(b"Free text", b"Edited free text")
    out = model.apply_index_edits(
        edited, [("package-manager.md", "- [Package manager](package-manager.md) - use pnpm", None)]
    )
    assert b"- [Deploy](deploy.md) - now with a hook\n" in out
    assert b"Edited free text" in out
    assert b"package-manager.md" not in out


def test_affected_entry_edit_blocks_with_entry_changed() -> None:
    edited = INDEX.replace(b"- use pnpm", b"- use pnpm (edited)")
    with pytest.raises(CairnError) as exc:
        model.apply_index_edits(
            edited, [("package-manager.md", "- [Package manager](package-manager.md) - use pnpm", None)]
        )
    assert _code(exc) == ErrorCode.INDEX_ENTRY_CHANGED
    assert exc.value.detail == {"file": "package-manager.md", "line": 4}
    # an entry that appeared where absence was expected also blocks
    with pytest.raises(CairnError) as exc:
        model.apply_index_edits(INDEX, [("deploy.md", None, "- [Deploy](deploy.md) - x")])
    assert _code(exc) == ErrorCode.INDEX_ENTRY_CHANGED
    # and an entry removed meanwhile blocks a replacement
    with pytest.raises(CairnError) as exc:
        model.apply_index_edits(
            b"# Memory\n", [("deploy.md", "- [Deploy](deploy.md)", "- [Deploy](deploy.md) - y")]
        )
    assert _code(exc) == ErrorCode.INDEX_ENTRY_CHANGED


def test_guard_edit_changes_no_byte() -> None:
    line = "- [Deploy](deploy.md)"
    assert model.apply_index_edits(INDEX, [("deploy.md", line, line)]) == INDEX


def test_invalid_after_lines_and_duplicate_edits_are_refused() -> None:
    for after in ("not an entry", "- [A](other.md) - wrong file", "- [A](a.md)\n- [B](b.md)"):
        with pytest.raises(CairnError) as exc:
            model.apply_index_edits(INDEX, [("a.md", None, after)])
        assert _code(exc) == ErrorCode.INDEX_ENTRY_INVALID
    with pytest.raises(CairnError) as exc:
        model.apply_index_edits(INDEX, [("a.md", None, "- [A](a.md)"), ("a.md", None, "- [A](a.md) - 2")])
    assert _code(exc) == ErrorCode.INDEX_ENTRY_INVALID


def test_index_bound_of_200_entry_lines() -> None:
    full = b"".join(model.format_entry(f"T{i}", f"t{i}.md", "h").encode() + b"\n" for i in range(200))
    assert len(model.parse_index(full).entries) == 200
    with pytest.raises(CairnError) as exc:
        model.apply_index_edits(full, [("new.md", None, "- [New](new.md) - h")])
    assert _code(exc) == ErrorCode.INDEX_FULL
    # the refusal says what to do next (it said only what was wrong: a create then stayed pending for ever)
    assert "cairn memory retire TOPIC" in str(exc.value) and "or reject it" in str(exc.value)
    # replacing or removing in a full index is still fine
    out = model.apply_index_edits(full, [("t5.md", "- [T5](t5.md) - h", None)])
    assert len(model.parse_index(out).entries) == 199
    assert (
        len(
            model.parse_index(model.apply_index_edits(out, [("new.md", None, "- [New](new.md) - h")])).entries
        )
        == 200
    )
    # an entry that would land below line 200 (agents stop reading there) is refused too
    prose = b"# Memory\n" + b"prose line\n" * 199
    with pytest.raises(CairnError) as exc:
        model.apply_index_edits(prose, [("a.md", None, "- [A](a.md)")])
    assert _code(exc) == ErrorCode.INDEX_FULL
    assert exc.value.detail["line"] == 201


# -- topics ---------------------------------------------------------------------------


def test_render_topic_layout_and_round_trip() -> None:
    data = model.render_topic("Package manager", "Use pnpm", NoteType.FEEDBACK, "\n- Use pnpm.\n")
    assert data == b"---\nname: Package manager\ndescription: Use pnpm\ntype: feedback\n---\n\n- Use pnpm.\n"
    topic = model.parse_topic(data)
    assert (topic.name, topic.description, topic.type, topic.body, topic.raw) == (
        "Package manager",
        "Use pnpm",
        NoteType.FEEDBACK,
        "\n- Use pnpm.\n",
        data,
    )


@pytest.mark.parametrize(
    "value",
    [
        "key: value",
        "'single' and \"double\" quotes",
        "- leading dash",
        "--- three dashes",
        "yes",
        "null",
        "1.0",
        "#hash",
        " leading space",
        "trailing space ",
        "[flow]",
        "{map}",
        "@at",
        "`tick",
        "!tag",
        "&anchor *alias",
        "% percent",
        "| pipe",
        "> fold",
        "tab\tinside",
        "ünïcödé — dash",
        "",
    ],
)
def test_topic_round_trip_tricky_yaml(value: str) -> None:
    name = value or "x"
    data = model.render_topic(name, value, "reference", "body\n")
    topic = model.parse_topic(data)
    assert (topic.name, topic.description, topic.type, topic.body) == (
        name,
        value,
        NoteType.REFERENCE,
        "body\n",
    )
    assert len(data.split(b"\n")) == 7  # every value stayed on its own line


_one_line_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Zl", "Zp", "Cs")), min_size=1, max_size=60
).filter(lambda s: s.strip() != "")


@given(name=_one_line_text, description=_one_line_text | st.just(""), body=st.text(max_size=80))
def test_topic_round_trip_property(name: str, description: str, body: str) -> None:
    topic = model.parse_topic(model.render_topic(name, description, "user", body))
    assert (topic.name, topic.description, topic.body) == (name, description, body)


def test_render_topic_refuses_multiline_values_and_unknown_types() -> None:
    for args in (
        ("a\nb", "d", "user"),
        ("n", "d\u2028e", "user"),
        ("n", "d\x85", "user"),
        ("n", "d", "task"),
        (" ", "d", "user"),
    ):
        with pytest.raises(CairnError) as exc:
            model.render_topic(*args, "")
        assert _code(exc) == ErrorCode.TOPIC_FRONT_MATTER


def test_parse_topic_crlf_keeps_body_bytes() -> None:
    data = b"---\r\nname: A\r\ndescription: 'x: y'\r\ntype: project\r\n---\r\n\r\n- one\r\n"
    topic = model.parse_topic(data)
    assert (topic.name, topic.description, topic.type) == ("A", "x: y", NoteType.PROJECT)
    assert topic.body == "\r\n- one\r\n"


@pytest.mark.parametrize(
    "data",
    [
        b"# no front matter\n",
        b"---\nname: A\ndescription: d\ntype: user\n",  # never closed
        b"---\nname: [unclosed\ndescription: d\ntype: user\n---\n",  # invalid YAML
        b"---\n- a list\n---\n",
        b"---\ndescription: d\ntype: user\n---\n",  # no name
        b"---\nname: 2024\ndescription: d\ntype: user\n---\n",  # not text: never coerced
        b"---\nname: A\ntype: user\n---\n",  # no description
        b"---\nname: A\ndescription: d\ntype: task\n---\n",  # unknown type
        b"---\nname: A\ndescription: d\n---\n",  # no type
    ],
)
def test_parse_topic_reports_invalid_front_matter(data: bytes) -> None:
    with pytest.raises(CairnError) as exc:
        model.parse_topic(data)
    assert _code(exc) == ErrorCode.TOPIC_FRONT_MATTER


def test_append_to_topic_preserves_every_byte() -> None:
    base = model.render_topic("A", "d", "user", "\n- first\n")
    out = model.append_to_topic(base, "- second")
    assert out == base + b"- second\n"
    para = model.append_to_topic(base, "A paragraph.")
    assert para == base + b"\nA paragraph.\n"
    # CRLF, no final newline, prose before: a blank line, the file's endings
    crlf = b"---\r\nname: A\r\ndescription: d\r\ntype: user\r\n---\r\nSome prose"
    out = model.append_to_topic(crlf, "- bullet")
    assert out == crlf + b"\r\n\r\n- bullet\r\n"
    assert model.parse_topic(out).body == "Some prose\r\n\r\n- bullet\r\n"
    # a body ending in a blank line gets no second one
    blank = base + b"\n"
    assert model.append_to_topic(blank, "- x") == blank + b"- x\n"


def test_add_working_agreements_creates_or_extends_the_section() -> None:
    plain = b"# Agents\n\nBe careful.\n"
    assert model.add_working_agreements(plain, ["- Never force push."]) == (
        plain + b"\n## Working agreements\n\n- Never force push.\n"
    )
    existing = b"# Agents\r\n\r\n## Working Agreements\r\n\r\n- Run tests.\r\n\r\n## Other\r\ntext"
    out = model.add_working_agreements(existing, ["- Never force push."])
    assert (
        out
        == b"# Agents\r\n\r\n## Working Agreements\r\n\r\n- Run tests.\r\n- Never force push.\r\n\r\n## Other\r\ntext"
    )
    empty_section = b"## Working agreements\n## Next\n"
    assert (
        model.add_working_agreements(empty_section, ["- a"]) == b"## Working agreements\n\n- a\n\n## Next\n"
    )
    assert model.add_working_agreements(None, ["- a"]) == b"## Working agreements\n\n- a\n"


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("Package manager", "package-manager.md"),
        ("../../etc/passwd", "etc-passwd.md"),
        ("Ünïcödé Café!", "unicode-cafe.md"),
        ("日本語", "topic.md"),
        ("MEMORY", "memory-notes.md"),
        ("", "topic.md"),
    ],
)
def test_topic_filename_is_a_plain_slug(title: str, expected: str) -> None:
    assert model.topic_filename(title) == expected


def test_topic_filename_is_bounded() -> None:
    name = model.topic_filename("a very long title " * 10)
    assert len(name) <= 60 and re.fullmatch(r"[a-z0-9-]+\.md", name) and not name.startswith("-")
    assert not name[:-3].endswith("-")
    assert len(model.topic_filename("x" * 200)) == 60


# -- read_root ---------------------------------------------------------------------------


def test_read_root_observes_index_topics_and_refuses_symlinks(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    root.mkdir()
    (root / "MEMORY.md").write_bytes(b"# Memory\n- [A](a.md) - x\n")
    good = model.render_topic("A", "d", "user", "\n- a\n")
    (root / "a.md").write_bytes(good)
    (root / "broken.md").write_bytes(b"no front matter\n")
    (root / "notes.txt").write_bytes(b"ignored")
    (root / ".hidden.md").write_bytes(b"ignored")
    (root / ".cairn").mkdir()
    (root / ".cairn" / "x.md").write_bytes(good)
    outside = tmp_path / "outside.md"
    outside.write_bytes(good)
    os.symlink(outside, root / "linked.md")
    snap = model.read_root(root)
    assert snap.exists and snap.index == b"# Memory\n- [A](a.md) - x\n"
    assert sorted(snap.topics) == ["a.md", "broken.md"]
    assert snap.topics["a.md"].data == good and snap.topics["a.md"].topic is not None
    assert snap.topics["a.md"].name == "A" and snap.topics["a.md"].type == NoteType.USER
    assert snap.topics["broken.md"].topic is None
    assert snap.topics["broken.md"].error == ErrorCode.TOPIC_FRONT_MATTER
    assert snap.refused == {"linked.md": ErrorCode.PATH_SYMLINK}
    assert [e.file for e in snap.parsed_index().entries] == ["a.md"]


def test_read_root_symlinked_index_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    root.mkdir()
    (tmp_path / "elsewhere.md").write_bytes(b"- [A](a.md)\n")
    os.symlink(tmp_path / "elsewhere.md", root / "MEMORY.md")
    snap = model.read_root(root)
    assert snap.index is None and snap.refused == {"MEMORY.md": ErrorCode.PATH_SYMLINK}
    with pytest.raises(CairnError) as exc:
        snap.parsed_index()
    assert _code(exc) == ErrorCode.PATH_SYMLINK


def test_read_root_missing_and_symlinked_roots(tmp_path: Path) -> None:
    missing = model.read_root(tmp_path / "nope" / "memory")
    assert not missing.exists and missing.index is None and not missing.topics
    assert model.empty_snapshot().parsed_index().entries == ()
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "memory")
    with pytest.raises(CairnError) as exc:
        model.read_root(tmp_path / "memory")
    assert _code(exc) == ErrorCode.PATH_SYMLINK


def test_a_workspace_root_below_a_symlinked_folder_is_refused(tmp_path: Path) -> None:
    """A cloned repository's ``.agents`` linked to another project's memory is not read into a review."""
    other = tmp_path / "other-project/.agents/memory"
    other.mkdir(parents=True)
    (other / "private.md").write_bytes(model.render_topic("Private", "another project's", "project", "body\n"))
    ws = tmp_path / "ws"
    ws.mkdir()
    os.symlink(other.parent, ws / ".agents")
    with pytest.raises(CairnError) as exc:
        model.read_root(ws / ".agents/memory", workspace=str(ws))
    assert _code(exc) == ErrorCode.PATH_SYMLINK
    (ws / ".agents").unlink()
    (ws / ".agents/memory").mkdir(parents=True)
    assert model.read_root(ws / ".agents/memory", workspace=str(ws)).exists
    assert not model.read_root(ws / "notes", workspace=str(ws)).exists  # missing: empty
    assert "private.md" in model.read_root(other, workspace=str(ws)).topics  # outside: the user's own path


def test_read_root_refuses_oversized_and_odd_names(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    root.mkdir()
    (root / "big.md").write_bytes(b"x" * (model.FILE_MAX_BYTES + 1))
    (root / "sp ace.md").write_bytes(model.render_topic("A", "d", "user", ""))
    os.mkfifo(root / "fifo.md")
    (root / "dir.md").mkdir()
    snap = model.read_root(root)
    assert snap.refused == {
        "big.md": ErrorCode.RECORD_TOO_LARGE,
        "dir.md": ErrorCode.PATH_NOT_REGULAR,
        "fifo.md": ErrorCode.PATH_NOT_REGULAR,
        "sp ace.md": ErrorCode.PATH_INVALID_NAME,
    }
    assert not snap.topics


def test_yaml_front_matter_of_rendered_topic_is_plain_yaml() -> None:
    """Other tools read the same front matter: it is an ordinary YAML mapping."""
    data = model.render_topic("a: b", "- c", "project", "")
    fm = data.decode().split("---\n")[1]
    assert yaml.safe_load(fm) == {"name": "a: b", "description": "- c", "type": "project"}


def test_a_long_title_is_not_cut_inside_a_number() -> None:
    # "3.12" was cut to "3": the file name read "...python-3-11-and-3.md"
    name = model.topic_filename("This repo's CI runs on Forgejo Actions (Python 3.11 and 3.12 matrix)")
    assert name == "this-repo-s-ci-runs-on-forgejo-actions-python-3-11-and.md"
    assert len(name) <= model.FILENAME_MAX
