"""The Model Context Protocol endpoint for coding agents (the optional ``mcp`` extra).

:mod:`.server` registers the tools (``remember``, ``journal_search``,
``memory_list``) and resources (the memory index and topics) on the
official SDK; each tool runs the same job as the CLI, in this process
(:mod:`server.scheduler.inprocess`). Only :mod:`server.cli.mcp` imports it,
and only when ``cairn mcp`` runs.
"""
