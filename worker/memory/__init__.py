"""Memory consolidation: journal digests become proposed edits of curated memory, decided by the user.

Read by layer. Pure parts: :mod:`.model` reads and edits memory roots
byte-exactly (``MEMORY.md`` entries, topic files, instruction files);
:mod:`.similarity`, :mod:`.fingerprints` and :mod:`.drafts` are the
vocabulary of a review (when two texts are alike, the identity a rejection
is remembered by, how each kind of proposal is built); :mod:`.engine`
(embedded, offline, one function per rule) and :mod:`.remote` (an
OpenAI-compatible model chooses, :mod:`.drafts` builds) turn digests into
drafts, and :mod:`.housekeeping` adds the index repairs either way;
:mod:`.diff` renders a change. Stateful parts: :mod:`.store` (records and
the files a proposal may touch), :mod:`.agents` (which coding agents read
the memory; the proposals that wire them), :mod:`.review` (claimed, bounded general
reviews, published), :mod:`.apply` (checked accept, reject, undo,
recovery), :mod:`.views` (read-only rows) and :mod:`.jobs` (the worker job
entry points). May import :mod:`protocol`, :mod:`state`,
:mod:`worker.journal` (public digests), :mod:`worker.providers.http` and
:mod:`worker.redaction.redact`; pure modules import no stateful one. Guarantees: a
review only proposes; every write to memory is an accepted proposal (by
the user, or by ``mode = "auto"`` through the same path) applied under
claims after its before-state is proven afresh, and can be undone; the same
scope always gives the same proposals, and a rejected one is never proposed
again. Index repairs: docs/adr/0006-index-housekeeping.md.
"""
