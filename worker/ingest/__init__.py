"""Ingest: what coding agents leave on disk, read as sessions of completed turns.

Two parts, both read-only and pure over the files they are given:

- :mod:`.importers` — one module per transcript format (how a Codex rollout,
  a Claude Code session, an aider history… is read), format detection and
  :func:`.importers.load`; each returns :class:`protocol.transcript.Session`
  records and never writes.
- :mod:`.sources` — the session *stores* of this machine: where each tool
  keeps its files (:mod:`.sources.roots`), discovery (:func:`.sources.discover`),
  the per-store walk that never follows a link, and the import of what
  discovery found (:mod:`.sources.importing`), which hands sessions to the
  journal's capture.

Contract (checked by import-linter, see ``pyproject.toml``): ingest imports
:mod:`protocol` only, no other worker domain and no state; running an import
into the journal, or following stores live, is a job that spans both
(:mod:`worker.jobs.importing`, :mod:`worker.jobs.watch`).
"""
