"""Jobs that span domains: each reads or writes both the journal and the memory.

:mod:`.cleanup` (one bounded cleanup batch: claims, temps, retired evidence,
and the expiry of fully reviewed digests), :mod:`.expiry` (which digests
every review has covered), :mod:`.status` (the counts the editor shows) and
:mod:`.agents` (the coding agents a workspace is used with, found by
discovery and by their files, and the proposals that make them read the
memory).
The journal never imports the memory; anything that needs both lives here,
above them (docs/adr/0016-domain-packages.md). The worker's job table is
:data:`worker.entry.REGISTRY`.
"""
