"""The language server's behaviour, one module per concern, none of them aware of pygls.

:class:`server.lsp.service.CairnService` keeps the lifecycle, the start gate
and the workspaces, and hands every cairn method to one feature here:
:mod:`.turns` (editor notifications, sessions, idle sealing),
:mod:`.status` (snapshots and the read-only requests), :mod:`.commands`
(the ``workspace/executeCommand`` table and foreground decisions) and
:mod:`.documents` (diagnostics and code actions on memory documents).
:mod:`.context` holds what they share: the editor connection as a
:class:`~.context.Client` protocol and the per-workspace state. Parameters
arrive already structured as :mod:`protocol.lsp` records; a refusal is a
:class:`protocol.errors.CairnError` with a fixed code.
"""
