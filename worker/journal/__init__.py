"""The journal pipeline: capture, seal, digest, publication, expiry, recovery and cleanup.

Completed turns are frozen as private evidence under ``.cairn/state/``
(:mod:`.capture`), sealed captures become digests through a provider
(:mod:`.digest`), accepted digests are published to the public journal
under ``.cairn/journal/`` (:mod:`.store`), fully reviewed ones expire
(:mod:`.expiry`) and settled work is pruned (:mod:`.cleanup`); :mod:`.views`
only reads. May import :mod:`protocol`, :mod:`state`, :mod:`worker.ingest.importers`,
:mod:`worker.providers` and, lazily, the memory store and review records it
needs for coverage (:mod:`worker.memory`). Guarantees: every step runs under
a fenced claim and is recovered from its outcome, never inferred twice;
public records carry ids, codes, states and counts, never evidence.
"""
