"""Reading a memory root: one read-only observation of its index and topic files.

:func:`read_root` never follows a symlink and never reads what is not a
regular ``*.md`` file directly in the root; what it will not read is listed
with its code in :attr:`MemorySnapshot.refused`. The snapshot is the scope
of a review and the before-state of its proposals.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

import attrs
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.vocab import NoteType
from cairn.state.fsdir import PinnedDir
from cairn.worker.memory.model.index import INDEX_NAME, Index, parse_index
from cairn.worker.memory.model.topics import Topic, parse_topic

#: a topic (or index) file larger than this is refused by :func:`read_root`
FILE_MAX_BYTES = 512 * 1024


@attrs.frozen(kw_only=True)
class TopicFile:
    file: str
    data: bytes
    topic: Topic | None  # None: the front matter is missing or invalid
    error: ErrorCode | None  # why ``topic`` is None

    # conveniences for listings; an unparsed topic shows its file name, no type, no description
    @property
    def name(self) -> str:
        return self.topic.name if self.topic else self.file

    @property
    def type(self) -> NoteType | None:
        return self.topic.type if self.topic else None

    @property
    def description(self) -> str:
        return self.topic.description if self.topic else ""


@attrs.frozen(kw_only=True)
class MemorySnapshot:
    """A read-only observation of one memory root (the review's scope)."""

    root: str
    exists: bool
    index: bytes | None  # MEMORY.md bytes; None when absent or refused
    topics: Mapping[str, TopicFile]  # by file name, sorted
    refused: Mapping[str, ErrorCode]  # *.md names not read: symlinks, non-regular, too large, bad names

    def parsed_index(self) -> Index:
        """The parsed index (an absent index is empty); a refused index raises its code."""
        if INDEX_NAME in self.refused:
            raise CairnError(self.refused[INDEX_NAME], "the memory index cannot be read", root=self.root)
        return parse_index(self.index or b"")


def empty_snapshot(root: str = "") -> MemorySnapshot:
    """The snapshot of a root that does not exist (yet)."""
    return MemorySnapshot(root=root, exists=False, index=None, topics={}, refused={})


def _read_entry(root: PinnedDir, entry: os.DirEntry[str]) -> bytes | ErrorCode:
    try:
        if entry.is_symlink():
            return ErrorCode.PATH_SYMLINK
        st = entry.stat(follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):
            return ErrorCode.PATH_NOT_REGULAR
        data = root.read(entry.name, limit=FILE_MAX_BYTES)
    except CairnError as exc:
        return exc.code
    except OSError:
        return ErrorCode.IO_FAILED
    return ErrorCode.NOT_FOUND if data is None else data


def _open_root(root_dir: Path, workspace: str | None = None) -> PinnedDir | None:
    """The root, opened without following a symlink as its last component (as any component below
    ``workspace`` when it is inside it); None when it is missing."""
    rel = os.path.relpath(root_dir, workspace) if workspace is not None else ".."
    try:
        if rel != ".." and not rel.startswith("../"):
            with PinnedDir.open_root(workspace or ".") as ws:
                return ws.descend(rel)
        with PinnedDir.open_root(root_dir.parent) as parent:
            return parent.child(root_dir.name)
    except CairnError as exc:
        if exc.code == ErrorCode.NOT_FOUND:
            return None
        raise


def read_root(root_dir: Path, *, workspace: str | None = None) -> MemorySnapshot:
    """Observe a memory root: the index bytes and every topic file, read without following symlinks.

    The root directory itself is opened without following a symlink as its
    last component (``E_PATH_SYMLINK``; a non-directory is
    ``E_PATH_NOT_DIRECTORY``); a missing root is an empty snapshot with
    ``exists=False``. Only regular ``*.md`` files directly in the root are
    read; dot-files, other files and directories (nested ``.cairn/``) are
    ignored. A symlinked, non-regular (a FIFO, a device, a directory named
    ``*.md``: ``E_PATH_NOT_REGULAR``), oversized or oddly named ``*.md`` is
    listed in ``refused`` with its code, never read, so its name stays taken.

    With ``workspace``, a root inside it is opened from the workspace one
    component at a time, none a symlink: a cloned repository's ``.agents``
    linked to another project's memory is ``E_PATH_SYMLINK``, as its writes
    are, never read into a review.
    """
    root_dir = Path(root_dir)
    root = _open_root(root_dir, workspace)
    if root is None:
        return empty_snapshot(str(root_dir))
    with root:
        index: bytes | None = None
        topics: dict[str, TopicFile] = {}
        refused: dict[str, ErrorCode] = {}
        with os.scandir(root.fd) as it:
            entries = sorted(
                (e for e in it if e.name.endswith(".md") and not e.name.startswith(".")), key=lambda e: e.name
            )
        for entry in entries:
            got = _read_entry(root, entry)
            if isinstance(got, ErrorCode):
                if got != ErrorCode.NOT_FOUND:  # vanished between listing and reading
                    refused[entry.name] = got
                continue
            if entry.name == INDEX_NAME:
                index = got
                continue
            try:
                topics[entry.name] = TopicFile(file=entry.name, data=got, topic=parse_topic(got), error=None)
            except CairnError as exc:
                topics[entry.name] = TopicFile(file=entry.name, data=got, topic=None, error=exc.code)
    return MemorySnapshot(root=str(root_dir), exists=True, index=index, topics=topics, refused=refused)
