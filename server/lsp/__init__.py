"""The language server: editors talk to cairn here.

:mod:`.serve` starts it (stdio, or TCP); :mod:`.stdio` frames messages on
stdin/stdout; :mod:`.server` registers one pygls handler per LSP method;
:mod:`.protocol` gives every failure one error shape; :mod:`.service` owns
the lifecycle, the start gate, the workspaces and routing to the feature
modules in :mod:`.features` (commands, code actions, documents, status,
turns, watching), none of which import pygls. :mod:`.memory_docs` says which
documents are memory documents and what is shown on them (pure; the CLI
uses it too). Maintenance work is scheduled by :mod:`server.scheduler`.
"""
