"""Proposal fingerprints: the identity a rejection is remembered by.

A fingerprint is a sha256 over NUL-separated parts. Two kinds exist:

* a content proposal's (:func:`fingerprint`): its kind, its target path and
  the normalised texts it adds, sorted, so the same change gets the same
  identity whichever digests carried it and on whatever day (evidence dates
  are not part of it);
* an index repair's (:func:`repair_fingerprint`, rules 7 and 8 of
  :mod:`worker.memory.housekeeping`): its rule, its index and the file name
  only, so a rejected repair stays rejected when the entry's or the topic's
  wording changes.

Both the embedded engine and the remote review fingerprint through this
module, so a remote proposal is rejected exactly like an embedded one.
Pure; imports only the protocol and :mod:`worker.memory.similarity`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from cairn.protocol.memory import ProposalKind
from cairn.worker.memory.similarity import normalise


def _sha256(parts: Iterable[str]) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def fingerprint(kind: ProposalKind, target: str, parts: Iterable[str]) -> str:
    """The identity of a content proposal: kind, target and its added texts (normalised, sorted)."""
    return _sha256([str(kind), target, *sorted(normalise(p) for p in parts)])


def repair_fingerprint(rule: str, index_rel: str, file: str) -> str:
    """The identity of one index repair: its rule, its index and the file name, nothing else."""
    return _sha256(("index-maintenance", rule, index_rel, file))
