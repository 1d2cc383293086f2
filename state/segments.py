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

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.state import program as P
from cairn.state.bundles import BundleStore

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


class SegmentStore(BundleStore):
    """:class:`BundleStore` whose files are encoded segments (paths, publication, iteration shared)."""

    read_limit = READ_LIMIT
    stored_as_named = False  # stored compressed: a removal cannot check the bytes against the name
    kind = "segment"

    def encode(self, data: bytes) -> bytes:
        return encode(data)

    def decode(self, stored: bytes, sha: str) -> bytes:
        return decode(stored, sha)
