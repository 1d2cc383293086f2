"""The worker layer: every durable job, run in a short-lived subprocess (``python -m cairn.worker KIND``).

A worker reads one JSON request on stdin, runs one bounded job and writes
one JSON response (:mod:`.entry`, :mod:`.envelope`); the server never
touches workspace state itself. Sub-packages: :mod:`.importers` (transcript
files → sessions), :mod:`.journal` (evidence, digests, public journal),
:mod:`.providers` (digest inference), :mod:`.memory` (reviews, proposals,
checked edits of curated memory); beside them the settings merge
(:mod:`.config`), secret redaction (:mod:`.redact`), CPU priority
(:mod:`.priority`) and reading a tool's session store without following a
link (:mod:`.storefile`). May import :mod:`protocol` and :mod:`state`, never the
server. Guarantees: all durable work happens under fenced claims through
:mod:`state.program`, so a worker may die at any instant and its job is
recovered, never lost or repeated; failures leave as a fixed ``E_...`` code
in the response, never a traceback. The one exception is usage accounting
(:mod:`.usage`): append-only, content-free records per provider request that
need no claim because no two processes ever write the same one.
:mod:`.testing` holds the runner's test jobs (named only by string,
dispatched only with ``CAIRN_TEST_JOBS=1``); production code never imports it.
"""
