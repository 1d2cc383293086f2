"""The jobs: every durable change cairn makes, by domain; run in a short-lived worker, the CLI or MCP.

A job is a function of one request (:data:`.entry.REGISTRY` names them by
kind). A worker subprocess (``python -m cairn.worker KIND``) reads one JSON
request on stdin, runs one bounded job and writes one JSON response
(:mod:`.entry`, :mod:`.envelope`, at low CPU priority: :mod:`.priority`);
the CLI and the MCP endpoint run the same functions in their own process.
"Worker" names that process role; the packages are the domains:
:mod:`.ingest` (transcript formats and session stores → sessions, read
without following a link: :mod:`.ingest.storefile`),
:mod:`.journal` (evidence, seal, digests, public journal), :mod:`.memory`
(reviews, proposals, checked edits of curated memory), :mod:`.providers`
(digest engines and usage records), :mod:`.redaction` (secrets out),
:mod:`.settings` (config layers, trust) and :mod:`.jobs` (jobs that span
the journal and the memory). Their dependencies are checked by
import-linter (docs/ARCHITECTURE.md, docs/adr/0016-domain-packages.md).
May import :mod:`protocol` and :mod:`state`, never the server.
Guarantees: all durable work happens under fenced claims through
:mod:`state.program`, so a worker may die at any instant and its job is
recovered, never lost or repeated; failures leave as a fixed ``E_...`` code
in the response, never a traceback. The one exception to claims is usage
accounting (:mod:`.providers.usage`): append-only, content-free records per
provider request that need no claim because no two processes ever write the
same one. :mod:`.testing` holds the runner's test jobs (named only by
string, dispatched only with ``CAIRN_TEST_JOBS=1``); production code never
imports it.
"""
