"""``LinkAll``: several durable publications whose fsyncs are waited on together (docs/adr/0010)."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from cairn.protocol.vocab import OpStatus
from cairn.state import crash
from cairn.state import program as P
from cairn.state.fsdir import PinnedDir


@pytest.fixture
def root(tmp_path: Path) -> Iterator[PinnedDir]:
    with PinnedDir.open_root(tmp_path) as d:
        yield d
    crash.reset_for_tests()


def _temps(tmp_path: Path) -> list[str]:
    return [str(p) for p in tmp_path.rglob(".tmp-*")]


def test_every_file_is_linked_in_its_directory_and_an_existing_name_is_reported(root: PinnedDir,
                                                                                tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "two").write_bytes(b"older")
    items = (("a/one", b"1"), ("b/two", b"2"), ("b/three", b"3"))
    res = P.run(root, [P.EnsureDir("a"), P.LinkAll(items, optional=True), P.Read("a/one")])
    assert res[1].status is OpStatus.CONFLICT and res[1].value == (True, False, True)
    assert res[2].status is OpStatus.OK  # optional: a name that existed does not stop the program
    assert (tmp_path / "b" / "two").read_bytes() == b"older"  # never replaced
    assert (tmp_path / "b" / "three").read_bytes() == b"3" and oct((tmp_path / "a" / "one").stat().st_mode)[-3:] == "600"
    assert _temps(tmp_path) == []


def test_each_file_is_fsynced_before_its_name_appears_and_each_directory_after(root: PinnedDir, tmp_path: Path) -> None:
    log = tmp_path / "points.log"
    crash.reset_for_tests(log_path=str(log))
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    P.run(root, [P.LinkAll((("x/f", b"1"), ("y/g", b"2"), ("x/h", b"3")))]).raise_failed()
    labels = [line.split(" ", 1)[1] for line in log.read_text().splitlines()]
    assert labels[:5] == ["write-temp"] * 3 + ["fsync-temp"] * 2
    last_fsync = max(i for i, lab in enumerate(labels) if lab == "fsync-temp")
    first_link = min(i for i, lab in enumerate(labels) if lab.startswith("link "))
    assert last_fsync < first_link
    assert labels.count("fsync-dir") == 2 and labels[-2:] == ["fsync-dir", "fsync-dir"]  # x and y, once each


def test_a_rerun_that_finds_every_name_still_fsyncs_their_directories(root: PinnedDir, tmp_path: Path) -> None:
    """Killed after the links, before the directory fsync: the rerun finds the names and must make them durable."""
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    items = (("x/f", b"1"), ("y/g", b"2"))
    P.run(root, [P.LinkAll(items)]).raise_failed()
    log = tmp_path / "points.log"
    crash.reset_for_tests(log_path=str(log))
    res = P.run(root, [P.LinkAll(items, optional=True)])
    assert res[0].value == (False, False)
    labels = [line.split(" ", 1)[1] for line in log.read_text().splitlines()]
    assert labels.count("fsync-dir") == 2


def test_a_failed_fsync_links_nothing_and_leaves_no_temp(root: PinnedDir, tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    crash.reset_for_tests(fault_at=4, fault_errno=errno.ENOSPC)  # 3 temps written, then the first fsync fails
    res = P.run(root, [P.LinkAll((("x/f", b"1"), ("x/g", b"2"), ("x/h", b"3")))])
    assert res[0].status is OpStatus.FAILED and res[0].code is not None and res[0].code.value == "E_NO_SPACE"
    assert sorted(os.listdir(tmp_path / "x")) == []
