"""Unified diffs: exact text, and ``git apply`` turns the before bytes into the after bytes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cairn.worker.memory import model
from cairn.worker.memory.diff import unified_diff

PATH = ".agents/memory/package-manager.md"


def git_apply(tmp_path: Path, path: str, before: bytes | None, patch: str) -> bytes | None:
    """Apply ``patch`` with git to a tree holding ``before`` at ``path``; the resulting bytes or None."""
    tree = tmp_path / "tree"
    tree.mkdir()
    target = tree / path
    if before is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(before)
    (tmp_path / "change.patch").write_text(patch, encoding="utf-8", newline="")
    subprocess.run(
        ["git", "apply", "--whitespace=nowarn", str(tmp_path / "change.patch")],
        cwd=tree,
        check=True,
        capture_output=True,
    )
    return target.read_bytes() if target.exists() else None


def test_update_diff_text() -> None:
    before = b"---\nname: A\ndescription: d\ntype: user\n---\n\n- one\n"
    after = before + b"- two\n"
    assert unified_diff(PATH, before, after) == (
        f"--- a/{PATH}\n+++ b/{PATH}\n@@ -5,3 +5,4 @@\n ---\n \n - one\n+- two\n"
    )


def test_create_and_delete_use_dev_null() -> None:
    assert unified_diff(PATH, None, b"a\nb\n") == f"--- /dev/null\n+++ b/{PATH}\n@@ -0,0 +1,2 @@\n+a\n+b\n"
    assert unified_diff(PATH, b"a\n", None) == f"--- a/{PATH}\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n"


def test_missing_final_newline_is_marked_like_git() -> None:
    text = unified_diff("MEMORY.md", b"- [A](a.md)", b"- [A](a.md)\n- [B](b.md)")
    assert text == (
        "--- a/MEMORY.md\n+++ b/MEMORY.md\n@@ -1 +1,2 @@\n"
        "-- [A](a.md)\n\\ No newline at end of file\n"
        "+- [A](a.md)\n+- [B](b.md)\n\\ No newline at end of file\n"
    )


def test_identical_content_has_no_diff() -> None:
    assert unified_diff(PATH, b"same\n", b"same\n") == ""
    assert unified_diff(PATH, None, None) == ""


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (b"a\nb\nc\n", b"a\nb\nc\nd\n"),
        (b"a\nb", b"a\nb\nc"),  # no final newline on either side
        (b"a\nb", b"a\nb\n"),  # only the final newline added
        (b"x\r\ny\r\n", b"x\r\ny\r\nz\r\n"),  # CRLF kept
        (None, b"new\nfile\n"),
        (b"old\nfile\n", None),
        ("ünïcödé\n".encode(), "ünïcödé\nmore — text\n".encode()),
    ],
)
def test_git_apply_reproduces_the_after_bytes(
    tmp_path: Path, before: bytes | None, after: bytes | None
) -> None:
    patch = unified_diff(PATH, before, after)
    assert git_apply(tmp_path, PATH, before, patch) == after


def test_index_edit_diff_applies_exactly(tmp_path: Path) -> None:
    index = b"# Memory\r\n\r\n- [A](a.md) - first\r\nprose\r\n- [B](b.md) - second"
    after = model.apply_index_edits(
        index, [("a.md", "- [A](a.md) - first", None), ("c.md", None, "- [C](c.md) - third")]
    )
    patch = unified_diff(".agents/memory/MEMORY.md", index, after)
    assert git_apply(tmp_path, ".agents/memory/MEMORY.md", index, patch) == after
