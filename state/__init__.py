"""The state layer: durable, crash-safe storage under a workspace's ``.cairn/`` directory.

Pinned directory handles that never follow a symlink (:mod:`.fsdir`),
batches of file-system operations run as one program (:mod:`.program`),
numbered fenced claims and their single outcome (:mod:`.claims`),
content-addressed private bundles (:mod:`.bundles`), target locks, pruning,
stray-temp collection, invariant checks (:mod:`.doctor`) and where each
record lives (:mod:`.layout`). May import only :mod:`protocol`. Guarantees:
every mutation is atomic at the file level and fenced by its claim, so a
process that dies at any instant leaves state that the next one recovers:
nothing lost, nothing applied twice. What a journal or a memory review
means is the worker's; here there are only paths, claims and bundles.
"""
