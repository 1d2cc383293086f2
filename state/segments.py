"""Immutable content-addressed segments: compressed private blobs named by their content.

A segment is stored once under ``<rel>/<sha[:2]>/<sha>`` by exclusive
durable publication, where ``sha`` is the sha256 of its *uncompressed*
bytes. On disk a segment is a 4-byte magic naming its encoding followed by
the payload (``CSz1``: zlib, ``CSr1``: stored as is, when compressing does
not pay). Every read decompresses and re-hashes: a torn, truncated or
altered segment is refused with ``E_BUNDLE_HASH_MISMATCH``, never returned.

Naming by the uncompressed content keeps the name independent of the
compressor: a torn segment can be rebuilt from its source and replaced in
place (:meth:`SegmentStore.repair_ops`), whatever library version wrote it
first. Segments are 0600 inside 0700 directories, like bundles.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.vocab import OpStatus
from cairn.state import program as P
from cairn.state.bundles import check_sha
from cairn.state.fsdir import PinnedDir

ZLIB = b"CSz1"
RAW = b"CSr1"
#: zlib level 6: on real transcripts it compresses as well as zstandard level 3 (3.2x) at
#: 60+ MB/s, far above any import's rate, with no dependency (bench/README.md, "Compression")
LEVEL = 6
#: a segment read is refused past this many stored bytes (a batch is bounded far below it)
READ_LIMIT = 64 << 20
#: and past this many decompressed bytes
RAW_LIMIT = 256 << 20


def encode(raw: bytes) -> bytes:
    """Stored bytes of ``raw``: compressed when that saves at least an eighth."""
    packed = zlib.compress(raw, LEVEL)
    if len(packed) <= len(raw) - len(raw) // 8:
        return ZLIB + packed
    return RAW + raw


def decode(stored: bytes, sha: str) -> bytes:
    """The raw bytes of a stored segment, verified against ``sha``."""
    magic, body = stored[:4], stored[4:]
    try:
        if magic == ZLIB:
            d = zlib.decompressobj()
            raw = d.decompress(body, RAW_LIMIT)
            if d.unconsumed_tail or not d.eof:
                raise zlib.error("truncated or oversized stream")
        elif magic == RAW:
            raw = body
        else:
            raise zlib.error("unknown segment encoding")
    except zlib.error:
        raise CairnError(ErrorCode.BUNDLE_HASH_MISMATCH, f"segment {sha[:16]} is torn or not a segment") from None
    if P.sha256(raw) != sha:
        raise CairnError(ErrorCode.BUNDLE_HASH_MISMATCH, f"segment {sha[:16]} does not match its hash")
    return raw


class SegmentStore:
    def __init__(self, base: PinnedDir, rel: str) -> None:
        self.base = base
        self.rel = rel

    def path(self, sha: str) -> str:
        check_sha(sha)
        return f"{self.rel}/{sha[:2]}/{sha}"

    def put_ops(self, raw: bytes) -> tuple[str, list[P.Op]]:
        """Operations publishing ``raw`` (exclusive; an existing segment of the name is kept)."""
        sha = P.sha256(raw)
        return sha, [P.EnsureDir(f"{self.rel}/{sha[:2]}"), P.Link(self.path(sha), encode(raw), optional=True)]

    def repair_ops(self, raw: bytes) -> tuple[str, list[P.Op]]:
        """Operations replacing a torn segment with ``raw`` (durable replace; the name proves the bytes)."""
        sha = P.sha256(raw)
        return sha, [P.EnsureDir(f"{self.rel}/{sha[:2]}"), P.Write(self.path(sha), encode(raw))]

    def get(self, sha: str) -> bytes:
        res = P.run(self.base, [P.Read(self.path(sha), limit=READ_LIMIT)])
        r = res[0]
        if r.status is OpStatus.ABSENT:
            raise CairnError(ErrorCode.BUNDLE_MISSING, f"segment {sha[:16]} is missing")
        if r.status is not OpStatus.OK:
            raise CairnError(r.code or ErrorCode.IO_FAILED, r.message)
        return decode(bytes(r.value), sha)

    def remove_op(self, sha: str) -> P.Op:
        return P.Remove(self.path(sha), optional=True)

    def iter_shas(self) -> Iterator[str]:
        res = P.run(self.base, [P.ListDir(self.rel, optional=True)])
        for prefix in res[0].value or []:
            sub = P.run(self.base, [P.ListDir(f"{self.rel}/{prefix}")])
            for name in sub[0].value or []:
                if len(name) == 64:
                    yield name
