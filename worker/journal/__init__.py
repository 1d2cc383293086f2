"""The journal pipeline: capture, seal, digest, publication and recovery.

Completed turns are frozen as private evidence under ``.cairn/state/``
(:mod:`.capture`, :mod:`.imports` for whole files), sealed captures become
digests through a provider (:mod:`.digest`, :mod:`.digest_group`), accepted
digests are published to the public journal under ``.cairn/journal/``
(:mod:`.store`); :mod:`.views` only reads. Expiry of fully reviewed digests
and cleanup read the memory's reviews too, so they are jobs above both
(:mod:`worker.jobs.expiry`, :mod:`worker.jobs.cleanup`). May import
:mod:`protocol`, :mod:`state`, :mod:`worker.ingest`, :mod:`worker.providers`,
:mod:`worker.redaction` and :mod:`worker.settings`, never the memory
(import-linter holds it). Guarantees: every step runs under a fenced claim
and is recovered from its outcome, never inferred twice; public records
carry ids, codes, states and counts, never evidence.
"""
