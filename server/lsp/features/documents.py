"""Memory documents open in the editor: diagnostics, code actions, live buffers.

On ``didOpen``/``didSave`` of a memory document (see :mod:`server.lsp.memory_docs`
for which files count) and after every decision or review, the pending
proposals touching it are published as Information diagnostics;
``textDocument/codeAction`` offers Accept, Reject and Show diff for them.
On a coding agent's instruction file (``CLAUDE.md``, ``GEMINI.md``,
``QWEN.md``, ``AGENTS.md``, ``.github/copilot-instructions.md``,
``.cursor/rules/*.mdc``: :func:`server.lsp.memory_docs.agent_file`), each
agent in use that does not read the memory and whose wiring that file
decides gets an Information diagnostic and a quick fix, ``Wire <agent> to
read cairn memory`` (``cairn.wireAgents``: the ``agents-wire`` proposal,
decided like any other). Which agents those are is
``worker.jobs.agents.report`` without a scan (a few ``stat`` calls, in a thread).
:meth:`Documents.check_live_buffers` keeps the rule that live buffers win: a
decision is never written under an open document with unsaved changes
(``E_PROPOSAL_STALE``): an accept (of a pending proposal, or of an undone one
applied again) or an undo is checked against every open document, whatever
its diagnostics say, with the files the decision writes as its proposal and
decisions record them (:func:`written_by`). LSP carries no "modified" flag, so the server keeps
each document's text as of its last ``didOpen`` (when it matched the file)
or ``didSave``: a buffer still holding that text is unmodified, even when
the file changed on disk since (the CLI or another editor wrote it); such a
buffer never blocks an accept, and the editors reload it afterwards.
On any open file the last ``cairn verify`` read as an instruction file
(``instructionFiles``, ``AGENTS.md``, ``CLAUDE.md`` …), each line it found
stale gets a Warning diagnostic (``stale-line``) with the reason, while the
line still says what was checked (``worker.memory.marks.stale_lines``, read
in a thread on open, save and after every verification). Those files are the
user's: nothing is proposed for them, the warning is all.
"""

from __future__ import annotations

import asyncio
import os
import stat
from typing import TYPE_CHECKING, Any

from cairn.protocol.errors import CairnError, ErrorCode
from cairn.server.lsp import memory_docs
from cairn.server.lsp.features.context import LOG_WARNING
from cairn.server.lsp.features.status import signature

if TYPE_CHECKING:
    from cairn.server.lsp.service import CairnService


#: a memory document larger than this is not read here (the index holds 200 lines; topics are notes)
READ_LIMIT = 4 << 20


def _read_text(path: str) -> str | None:
    """The file's text, or None when it is not a readable regular UTF-8 file of bounded size.

    Opened without blocking and checked to be regular after opening, so a FIFO
    or device put where a memory file belongs never holds a server thread.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > READ_LIMIT:
            return None
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(READ_LIMIT + 1).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)


def _disk_text(path: str) -> str | None:
    """:func:`_read_text`, and "" for no file at all (an unsaved new buffer: a decision would create it)."""
    text = _read_text(path)
    return "" if text is None and not os.path.lexists(path) else text


def written_by(ws: str, ids: tuple[str, ...], settings: Any, paths: list[str]) -> list[str]:
    """Those of ``paths`` (absolute) that a decision on the proposals ``ids`` of ``ws`` may write.

    A proposal's files and memory indexes, resolved as the apply step resolves them
    (``MemoryStore.check_target``), and the files its decisions wrote (an undo writes them back, an accept
    of an undone proposal writes them again). Compared by path and once links are resolved. A proposal that
    cannot be read adds nothing: its decision is refused by the worker anyway.
    """
    from cairn.worker.memory.apply import decisions, load_intent, load_proposal  # server start: status.py
    from cairn.worker.memory.store import MemoryStore

    files: set[str] = set()
    with MemoryStore(ws, settings) as ms:
        for pid in ids:
            try:
                p = load_proposal(ms, pid)
                targets = [ms.check_target(path) for path in [*(f.path for f in p.files), *(e.index for e in p.index)]]
                for target, rel in targets:
                    files.add(os.path.join(target.base, rel))
                base = targets[0][0].base if targets else ws
                for decision in decisions(ms, pid):
                    if decision.write:
                        files.update(os.path.join(base, f.path) for f in load_intent(ms, decision.write).files)
            except (CairnError, OSError, ValueError):
                continue
    wanted = {os.path.normpath(f) for f in files} | {os.path.realpath(f) for f in files}
    return [path for path in paths if os.path.normpath(path) in wanted or os.path.realpath(path) in wanted]


class Documents:
    def __init__(self, service: CairnService) -> None:
        self.service = service
        self.open: dict[str, tuple[str, list[dict[str, Any]]]] = {}  # uri -> (workspace, proposals)
        #: uri -> the text as last opened from or saved to disk; None: modified since it was opened
        self.saved: dict[str, str | None] = {}
        #: uri of an open instruction file -> agents in use it would wire that do not read the memory
        self.unwired: dict[str, list[str]] = {}
        #: uri -> the proposals' and decisions' folders as they looked when its diagnostics were published
        self.published_at: dict[str, Any] = {}
        #: uri of an open instruction file the last verification read -> its stale lines (``marks.stale_lines``)
        self.stale: dict[str, list[dict[str, Any]]] = {}

    def opening(self, uri: str) -> None:
        """``didOpen`` arrived: the document counts as open at once, as modified until :meth:`did_open` has
        compared it with its file (a decision that comes meanwhile compares it itself)."""
        self.saved[uri] = None

    async def did_open(self, uri: str) -> None:
        text = self.service.client.document_text(uri)
        path = memory_docs.uri_to_path(uri)
        on_disk = await asyncio.to_thread(_read_text, path) if path is not None else None
        self.saved[uri] = text if text is not None and text == on_disk else None
        await self._changed(uri)

    async def did_save(self, uri: str) -> None:
        self.saved[uri] = self.service.client.document_text(uri)
        await self._changed(uri)

    def did_close(self, uri: str) -> None:
        self.saved.pop(uri, None)
        self.unwired.pop(uri, None)
        self.stale.pop(uri, None)
        self.published_at.pop(uri, None)
        if self.open.pop(uri, None) is not None:
            self.service.client.publish_diagnostics(uri, [])

    async def republish(self, ws: str | None = None) -> None:
        """Proposals changed: refresh diagnostics of every open memory document (of ``ws``).

        One pass over a workspace's proposals (in a thread) serves all its open documents.
        """
        by_ws: dict[str, dict[str, str]] = {}  # workspace -> uri -> path
        for uri, (doc_ws, _) in list(self.open.items()):
            found = self._memory_document(uri) if ws is None or doc_ws == ws else None
            if found is not None:
                by_ws.setdefault(found[0], {})[uri] = found[1]
        for doc_ws, docs in by_ws.items():
            pending = await self._pending_for_files(doc_ws, list(docs.values()))
            for uri, path in docs.items():
                if uri in self.open:  # not closed while the proposals were read
                    self._publish(uri, doc_ws, pending.get(path, []))
        for uri, (doc_ws, _) in list(self.open.items()):  # instruction files: wired since?
            agent_doc = self._agent_document(uri) if ws is None or doc_ws == ws else None
            if agent_doc is not None:
                self.unwired[uri] = await self._unwired_for(*agent_doc)
                if uri in self.open:
                    self._publish(uri, doc_ws, self.open[uri][1])
        await self._restale(list(self.saved), ws)

    async def _restale(self, uris: list[str], ws: str | None = None) -> None:
        """Stale lines afresh for the open documents ``uris`` (of ``ws``): one read of each workspace's
        record; a document whose warnings changed is published again."""
        from cairn.worker.memory.marks import stale_lines  # server start: features/status.py docstring

        by_ws: dict[str, dict[str, str]] = {}
        for uri in uris:
            found = self._in_workspace(uri)
            if found is not None and (ws is None or found[0] == ws):
                by_ws.setdefault(found[0], {})[uri] = found[1]
        for doc_ws, docs in by_ws.items():
            record = await asyncio.to_thread(stale_lines, doc_ws)
            for uri, rel in docs.items():
                rows = record.get(rel, [])
                if uri not in self.saved or not (rows or uri in self.stale):
                    continue  # closed meanwhile, or nothing to show or to clear
                if rows:
                    self.stale[uri] = rows
                else:
                    self.stale.pop(uri, None)
                self._publish(uri, doc_ws, self.open[uri][1] if uri in self.open else [])

    async def code_actions(self, uri: str, start_line: int, end_line: int) -> list[dict[str, Any]]:
        actions = await self._proposal_actions(uri, start_line, end_line)
        agent_doc = self._agent_document(uri)
        if agent_doc is not None:  # asked afresh: the CLI may have wired the agent since the file opened
            actions += memory_docs.wire_actions(agent_doc[0], await self._unwired_for(*agent_doc))
        return actions

    async def _proposal_actions(self, uri: str, start_line: int, end_line: int) -> list[dict[str, Any]]:
        found = self._memory_document(uri)
        if found is None:
            return []
        ws, path = found
        cached = self.open.get(uri)
        if cached and (self.service.status.changed_since(ws) or self.published_at.get(uri) != signature(ws)[1:3]):
            # the CLI or another editor added or decided proposals: fresh diagnostics and actions
            await self.service.status.refresh_now(ws)
            await self.republish(ws)
            cached = self.open.get(uri)
        proposals = cached[1] if cached else await self._pending_for(ws, path)
        return memory_docs.code_actions(ws, memory_docs.overlapping(proposals, start_line, end_line))

    async def check_live_buffers(self, ws: str, ids: tuple[str, ...], verb: str = "accept") -> None:
        """Live buffers win: never write under an open document with unsaved changes.

        Every open document counts (not only those showing a pending proposal: an undone proposal accepted
        again, or an undo, writes files no diagnostic names), when the decision on ``ids`` writes its file.
        """
        client = self.service.client
        modified: dict[str, str] = {}  # path -> the buffer's text
        for uri in list(self.saved):
            text = client.document_text(uri)
            path = memory_docs.uri_to_path(uri)
            if text is None or path is None or text == self.saved.get(uri):
                continue  # unmodified (perhaps older than its file): nothing of the user's to lose
            modified[path] = text
        if not modified:
            return  # the common case: nothing to read
        state = self.service.workspaces.get(ws)
        settings = state.settings if state is not None else None
        for path in await asyncio.to_thread(written_by, ws, ids, settings, list(modified)):
            on_disk = await asyncio.to_thread(_disk_text, path)
            # an empty buffer of a file not made yet holds nothing of the user's (an editor may send it as "\n")
            empty = on_disk == "" and not modified[path].strip("\r\n")
            if on_disk is not None and modified[path] != on_disk and not empty:
                raise CairnError(ErrorCode.PROPOSAL_STALE,
                                 f"{os.path.basename(path)} has unsaved changes; save it, then {verb} again")

    async def _changed(self, uri: str) -> None:
        found = self._memory_document(uri)
        agent_doc = self._agent_document(uri)
        if agent_doc is not None:
            self.unwired[uri] = await self._unwired_for(*agent_doc)
        if found is not None:
            self._publish(uri, found[0], await self._pending_for(*found))
        elif agent_doc is not None:
            self._publish(uri, agent_doc[0], [])
        await self._restale([uri])

    def _publish(self, uri: str, ws: str, proposals: list[dict[str, Any]]) -> None:
        self.open[uri] = (ws, proposals)
        # a code action compares with it: a snapshot refreshed meanwhile (the republish it started may
        # still be on its way) must not leave this document's actions as they were
        self.published_at[uri] = signature(ws)[1:3]
        text = self.service.client.document_text(uri)
        lines = len(text.splitlines()) if text else 0
        self.service.client.publish_diagnostics(uri, memory_docs.diagnostics(proposals, lines)
                                                + memory_docs.unwired_diagnostics(self.unwired.get(uri, []))
                                                + self._stale_diagnostics(uri, text))

    def _stale_diagnostics(self, uri: str, text: str | None) -> list[dict[str, Any]]:
        rows = self.stale.get(uri)
        if not rows:
            return []
        from cairn.worker.memory.marks import line_key  # loaded with stale_lines already

        return memory_docs.stale_line_diagnostics(text, rows, line_key)

    def _in_workspace(self, uri: str) -> tuple[str, str] | None:
        """(workspace, workspace-relative path) of a file under one of the served workspaces (the innermost)."""
        path = memory_docs.uri_to_path(uri)
        if path is None:
            return None
        for ws in sorted(self.service.order, key=len, reverse=True):
            root = os.path.normpath(ws)
            if path.startswith(root.rstrip(os.sep) + os.sep):
                return ws, os.path.relpath(path, root).replace(os.sep, "/")
        return None

    def _agent_document(self, uri: str) -> tuple[str, str] | None:
        """(workspace, workspace-relative name) of an agent's instruction file, else None."""
        path = memory_docs.uri_to_path(uri)
        if path is None:
            return None
        for ws in sorted(self.service.order, key=len, reverse=True):
            rel = memory_docs.agent_file(path, ws)
            if rel is not None:
                return ws, rel
        return None

    async def _unwired_for(self, ws: str, rel: str) -> list[str]:
        """Agents in use, not reading the memory, whose wiring ``rel`` decides; none when unreadable
        or when the workspace's state is not this user's (nothing can be proposed there)."""
        from cairn.worker.jobs.agents import report  # server start: features/status.py docstring

        state = self.service.workspaces.get(ws)
        if state is None or state.foreign is not None:
            return []

        def rows() -> list[dict[str, Any]]:
            return report(ws, os.path.expanduser("~"), os.environ, scan=False, hooks=False)

        try:
            return memory_docs.unwired_here(rel, await asyncio.to_thread(rows))
        except (CairnError, OSError) as exc:
            code = exc.code if isinstance(exc, CairnError) else type(exc).__name__
            self.service.client.log(LOG_WARNING, f"cairn: agents unreadable ({code})")
            return []

    def _memory_document(self, uri: str) -> tuple[str, str] | None:
        path = memory_docs.uri_to_path(uri)
        if path is None:
            return None
        svc = self.service
        for ws in sorted(svc.order, key=len, reverse=True):
            if memory_docs.is_memory_document(path, ws, svc.workspaces[ws].settings):
                return ws, path
        return None

    async def _pending_for(self, ws: str, path: str) -> list[dict[str, Any]]:
        return (await self._pending_for_files(ws, [path])).get(path, [])

    async def _pending_for_files(self, ws: str, paths: list[str]) -> dict[str, list[dict[str, Any]]]:
        """Pending proposals per path, read in a thread in one pass; none when they are unreadable."""
        from cairn.worker.memory.views import pending_for_files  # server start: features/status.py docstring

        try:
            return dict(await asyncio.to_thread(pending_for_files, ws, paths, self.service.workspaces[ws].settings))
        except CairnError as exc:
            self.service.client.log(LOG_WARNING, f"cairn: pending proposals unreadable ({exc.code})")
            return {}
