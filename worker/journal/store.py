"""The journal's private and public storage for one workspace.

Layout under ``.cairn/state/journal/``::

    claims/               fenced claims (scopes session/<id>, digest/<capture>)
    segments/aa/<sha>     immutable EvidenceSegment blobs (a batch of turns, compressed)
    evidence/aa/<sha>     per-turn TurnEvidence bundles of earlier captures (read only)
    bundles/aa/<sha>      accepted DigestResult bundles (named by completed outcomes)
    sessions/<sdir>/c-NNNN    one marker per capture of a session (the newest is current)
    captures/<cid>/       b-<seq>-<n> (CaptureBatch), pin-<sha>, seal, fail-<gen>, retry-<k>, retired,
                          purged; w-<key> (WindowReply: a model digest's answered window, until
                          publication); t-<h> (CaptureTurn) of earlier captures
    turns/<h>             TurnIndex of earlier captures (read only)
    coverage/<h>          Coverage: a turn was digested
    sources/<key>-<h>     SourceEntry: what an import last read of a source (worker/journal/sources.py)

Public digests live in ``.cairn/journal/<id>.json``. Every read of a record
is strict (closed schema), every bundle read re-verifies its hash.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Iterable
from typing import Self, TypeVar

from cairn.protocol import codec
from cairn.protocol.claims import Authority
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.vocab import OpStatus
from cairn.state import layout
from cairn.state import program as P
from cairn.state.bundles import BundleStore
from cairn.state.claims import ClaimStore
from cairn.state.fsdir import PinnedDir
from cairn.state.segments import SegmentStore

T = TypeVar("T")

J = layout.JOURNAL_STATE
CAPTURES = f"{J}/captures"
SESSIONS = f"{J}/sessions"
TURNS = f"{J}/turns"
COVERAGE = f"{J}/coverage"
EVIDENCE = f"{J}/evidence"
SEGMENTS = f"{J}/segments"
PUBLIC = layout.PUBLIC_JOURNAL
BATCH = 16  # discovery reads records in groups of this size

_SAFE = re.compile(r"[^A-Za-z0-9_-]+")


def h(text: str, n: int = 32) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:n]


def session_dir(session_id: str) -> str:
    """A directory name for a session id: readable prefix + hash (never a path)."""
    return f"{_SAFE.sub('_', session_id)[:40].strip('_') or 's'}-{h(session_id, 12)}"


def capture_id(session_id: str, k: int) -> str:
    return f"{session_dir(session_id)}-{k:04d}"


class Journal:
    """Pinned handles and stores of one workspace's journal."""

    def __init__(self, workspace: str, *, clock_offset: float | None = None) -> None:
        if clock_offset is None:
            # crash-recovery tests stand in for "time passed" without sleeping
            clock_offset = float(os.environ.get("CAIRN_TEST_CLOCK_OFFSET", "0") or 0)
        self.workspace = workspace
        self.root = PinnedDir.open_root(workspace)
        self.claims = ClaimStore(self.root, layout.JOURNAL_CLAIMS, clock_offset=clock_offset)
        self.evidence = BundleStore(self.root, EVIDENCE)
        self.segments = SegmentStore(self.root, SEGMENTS)
        self.bundles = BundleStore(self.root, layout.JOURNAL_BUNDLES)
        self.authority = Authority(workspace=workspace, target=layout.JOURNAL_STATE, client="cairn")
        self._legacy_turns: bool | None = None

    def close(self) -> None:
        self.claims.close()
        self.root.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- helpers ----------------------------------------------------------
    def run(self, ops: list[P.Op], *, lock: str | None = None) -> P.ProgramResult:
        return P.run(self.root, ops, lock=lock)

    def now(self) -> float:
        r = self.claims.run([P.Clock("", offset=self.claims.clock_offset)])
        return float(r[0].value)

    def source_now(self) -> float:
        """Now on this machine's clock, which stamps the session files an import compares with it (is a file
        quiet?), shifted like the claims' clock in tests. Unlike :meth:`now` (the storage's own clock, read by
        touching ``claims/.clock``) it writes nothing: an import that finds nothing new changes no file."""
        return time.time() + self.claims.clock_offset

    def has_legacy_turns(self) -> bool:
        """Whether ``turns/`` (the turn index of captures made before segments) exists.

        Asked once per journal: nothing creates ``turns/`` any more.
        """
        if self._legacy_turns is None:
            self._legacy_turns = "turns" in self.names(J)
        return self._legacy_turns

    def names(self, rel: str) -> list[str]:
        r = self.run([P.ListDir(rel, optional=True)])
        if r[0].status is OpStatus.FAILED:
            raise CairnError(r[0].code or ErrorCode.IO_FAILED, r[0].message)
        return list(r[0].value or [])

    def read_many(self, paths: Iterable[str]) -> dict[str, bytes | None]:
        """Read files in batched programs of :data:`BATCH`; absent files map to None."""
        out: dict[str, bytes | None] = {}
        paths = list(paths)
        for i in range(0, len(paths), BATCH):
            chunk = paths[i : i + BATCH]
            r = self.run([P.Read(p, optional=True) for p in chunk])
            for p, res in zip(chunk, r.results, strict=True):
                if res.status is OpStatus.FAILED:
                    raise CairnError(res.code or ErrorCode.IO_FAILED, res.message, path=p)
                out[p] = res.value if res.status is OpStatus.OK else None
        return out

    def read_record(self, path: str, cls: type[T]) -> T | None:
        raw = self.read_many([path])[path]
        return None if raw is None else codec.decode(raw, cls, where=path)

    def list_many(self, rels: list[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for i in range(0, len(rels), BATCH):
            chunk = rels[i : i + BATCH]
            r = self.run([P.ListDir(d, optional=True) for d in chunk])
            for d, res in zip(chunk, r.results, strict=True):
                if res.status is OpStatus.FAILED:
                    raise CairnError(res.code or ErrorCode.IO_FAILED, res.message, path=d)
                out[d] = list(res.value or [])
        return out
