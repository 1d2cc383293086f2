"""Immutable content-addressed private bundles (sha256).

A bundle is stored once under ``<rel>/<sha[:2]>/<sha>`` by exclusive durable
publication, and every read re-hashes the bytes: a bundle whose content no
longer matches its name is refused with ``E_BUNDLE_HASH_MISMATCH``, never
returned. Bundles are 0600 inside 0700 directories.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.vocab import OpStatus
from cairn.state import program as P
from cairn.state.fsdir import PinnedDir

_SHA_RE = re.compile(r"^[0-9a-f]{64}$")


def check_sha(sha: str) -> str:
    if not _SHA_RE.match(sha):
        raise CairnError(ErrorCode.RECORD_INVALID_FIELD, f"not a sha256: {sha[:80]!r}")
    return sha


class BundleStore:
    """Bundles under ``<rel>/<sha[:2]>/<sha>``, stored as their bytes.

    Subclasses change only the encoding (:meth:`encode`, :meth:`decode`,
    :attr:`read_limit`, :attr:`stored_as_named`): paths, publication,
    reads, iteration and removal are shared.
    """

    #: a stored file is refused past this many bytes
    read_limit = 64 << 20
    #: the stored bytes hash to the name (a removal can then check them)
    stored_as_named = True
    #: what messages call one
    kind = "bundle"

    def __init__(self, base: PinnedDir, rel: str) -> None:
        self.base = base
        self.rel = rel

    # -- encoding (what a subclass overrides) -------------------------------
    def encode(self, data: bytes) -> bytes:
        """The bytes stored for ``data``."""
        return data

    def decode(self, stored: bytes, sha: str) -> bytes:
        """The bytes named ``sha`` from what is stored, verified; ``E_BUNDLE_HASH_MISMATCH`` otherwise."""
        if P.sha256(stored) != sha:
            raise CairnError(ErrorCode.BUNDLE_HASH_MISMATCH, f"{self.kind} {sha[:16]} does not match its hash")
        return stored


    # -- shared scaffolding -------------------------------------------------
    def path(self, sha: str) -> str:
        check_sha(sha)
        return f"{self.rel}/{sha[:2]}/{sha}"

    def put_ops(self, data: bytes) -> tuple[str, list[P.Op]]:
        """Operations that publish ``data`` (for use inside a guarded program).

        The link is optional: an existing bundle of the same name is fine
        because its bytes are verified on every read.
        """
        sha = P.sha256(data)
        return sha, [P.EnsureDir(f"{self.rel}/{sha[:2]}"), P.Link(self.path(sha), self.encode(data), optional=True)]

    def repair_ops(self, data: bytes) -> tuple[str, list[P.Op]]:
        """Operations replacing a torn file with ``data`` (durable replace; the name proves the bytes)."""
        sha = P.sha256(data)
        return sha, [P.EnsureDir(f"{self.rel}/{sha[:2]}"), P.Write(self.path(sha), self.encode(data))]

    def put(self, data: bytes) -> str:
        sha, ops = self.put_ops(data)
        res = P.run(self.base, ops)
        bad = [r for r in res.results if r.status is OpStatus.FAILED]
        if bad:
            raise CairnError(bad[0].code or ErrorCode.IO_FAILED, bad[0].message)
        if res[1].status is OpStatus.CONFLICT:
            # present already: prove it is intact, repair it from our bytes if not
            try:
                self.get(sha)
            except CairnError as exc:
                if exc.code is not ErrorCode.BUNDLE_HASH_MISMATCH:
                    raise
                P.run(self.base, self.repair_ops(data)[1][1:])
        return sha

    def get(self, sha: str) -> bytes:
        res = P.run(self.base, [P.Read(self.path(sha), limit=self.read_limit)])
        r = res[0]
        if r.status is OpStatus.ABSENT:
            raise CairnError(ErrorCode.BUNDLE_MISSING, f"{self.kind} {sha[:16]} is missing")
        if r.status is not OpStatus.OK:
            raise CairnError(r.code or ErrorCode.IO_FAILED, r.message)
        return self.decode(bytes(r.value), sha)

    def exists(self, sha: str) -> bool:
        res = P.run(self.base, [P.Verify(self.path(sha), absent=True)])
        return res[0].status is OpStatus.CONFLICT

    def remove_op(self, sha: str, *, optional: bool = True) -> P.Op:
        """Remove ``sha``; when the stored bytes hash to the name, only if they still do."""
        return P.Remove(self.path(sha), sha256=sha if self.stored_as_named else None, optional=optional)

    def iter_shas(self) -> Iterator[str]:
        res = P.run(self.base, [P.ListDir(self.rel)])
        for prefix in res[0].value or []:
            sub = P.run(self.base, [P.ListDir(f"{self.rel}/{prefix}")])
            for name in sub[0].value or []:
                if _SHA_RE.match(name):
                    yield name
