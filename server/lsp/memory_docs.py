"""Which editor documents are memory documents, and what cairn shows on them.

Pure functions (no LSP library, no I/O): the language server asks them
whether a document is a memory topic file (under ``.agents/memory/`` or a
configured memory root), a ``MEMORY.md`` index or an instruction file, and
turns the pending proposals touching it into Information diagnostics and
code actions, as plain LSP-shaped dicts.

Proposal rows come from ``worker.memory.views.pending_for_file``:
``{id, title, kind, ranges: [{startLine, endLine}]}`` with 0-based,
inclusive line numbers of the current file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any
from urllib.parse import unquote, urlparse

from cairn.protocol.lsp import (
    CMD_ACCEPT,
    CMD_REJECT,
    CMD_SHOW_PROPOSAL,
    CMD_WIRE_AGENTS,
)
from cairn.protocol.settings import Settings
from cairn.protocol.text import printable

MEMORY_DIR = os.path.join(".agents", "memory")
INFORMATION = 3  # DiagnosticSeverity.Information
WARNING = 2  # DiagnosticSeverity.Warning
#: the diagnostic code of a line of an instruction file the last ``cairn verify`` found stale
STALE_LINE_CODE = "stale-line"
#: the instruction files of the coding agents (workspace-relative), as ``cairn agents`` names them
AGENT_FILES = frozenset({"CLAUDE.md", ".claude/CLAUDE.md", "GEMINI.md", "QWEN.md", "AGENTS.md",
                         ".github/copilot-instructions.md"})
CURSOR_RULES = ".cursor/rules"
#: the diagnostic code of an agent in use that does not read the memory
UNWIRED_CODE = "agent-unwired"
AGENT_NAMES = {"claude-code": "Claude Code", "codex": "Codex", "gemini-cli": "Gemini CLI", "copilot": "Copilot",
               "cursor": "Cursor", "cline": "Cline", "opencode": "opencode", "qwen-code": "Qwen Code"}


def uri_to_path(uri: str) -> str | None:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return os.path.normpath(unquote(parsed.path))


def _under(path: str, root: str) -> bool:
    root = os.path.normpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def memory_roots(workspace: str, settings: Settings) -> list[str]:
    roots = [os.path.join(workspace, MEMORY_DIR)]
    for r in settings.memoryRoots:
        r = os.path.expanduser(r)
        roots.append(os.path.normpath(r if os.path.isabs(r) else os.path.join(workspace, r)))
    return roots


def is_memory_document(path: str, workspace: str, settings: Settings) -> bool:
    """A topic file or index under a memory root, or one of the workspace's instruction files."""
    path = os.path.normpath(path)
    if any(_under(path, root) for root in memory_roots(workspace, settings)):
        return path.endswith(".md")
    if not _under(path, workspace):
        return False
    rel = os.path.relpath(path, workspace)
    return rel in {os.path.normpath(f) for f in settings.instructionFiles} or os.path.basename(path) == "MEMORY.md"


def agent_file(path: str, workspace: str) -> str | None:
    """The workspace-relative name of ``path`` when it is a coding agent's instruction file, else None."""
    path = os.path.normpath(path)
    if not _under(path, workspace) or path == os.path.normpath(workspace):
        return None
    rel = os.path.relpath(path, workspace).replace(os.sep, "/")
    if rel in AGENT_FILES:
        return rel
    folder, name = rel.rsplit("/", 1) if "/" in rel else ("", rel)
    return rel if folder == CURSOR_RULES and name.endswith(".mdc") else None


def unwired_here(rel: str, rows: Iterable[dict[str, Any]]) -> list[str]:
    """The agents of ``cairn agents`` rows not wired whose wiring this file decides: it names the agent,
    is a file a wiring would edit (any of ``targets``: aider's config and ``AGENTS.md``), or (Cursor) is one
    of its rules."""
    out = []
    for r in rows:
        if r.get("wired"):
            continue
        files = [str(f) for f in r.get("files") or []]
        targets = [str(t) for t in [r.get("target"), *(r.get("targets") or [])] if t]  # aider: two files
        if rel in targets or rel in files or (rel.startswith(CURSOR_RULES + "/") and CURSOR_RULES in files):
            out.append(str(r.get("agent")))
    return out


def unwired_diagnostics(agents: Sequence[str]) -> list[dict[str, Any]]:
    """One Information diagnostic on the first line per agent in use that does not read the memory."""
    return [{"range": _line_range({"startLine": 0, "endLine": 0}, 0), "severity": INFORMATION, "source": "cairn",
             "code": UNWIRED_CODE,
             "message": f"{AGENT_NAMES.get(a, a)} does not read the cairn memory (.agents/memory/MEMORY.md)"}
            for a in agents]


def stale_line_diagnostics(text: str | None, rows: Sequence[dict[str, Any]],
                           key: Callable[[str], str]) -> list[dict[str, Any]]:
    """One Warning per stale line the last verification found in this instruction file.

    ``rows`` are ``worker.memory.marks.stale_lines`` of the file (``{line, key, why}``, 1-based) and ``key``
    the hash that made each ``key``. A row lands on its line while that line's text is still what was
    checked; else on the one line now holding that text (lines were added above it); else nowhere (the
    user changed it: the next verification judges it again). Lines are split as the verifier splits them.
    """
    if not text or not rows:
        return []
    lines = text.split("\n")
    where: dict[str, list[int]] | None = None
    out = []
    for r in rows:
        n = int(r["line"]) - 1
        if not (0 <= n < len(lines) and key(lines[n]) == r["key"]):
            if where is None:
                where = {}
                for i, ln in enumerate(lines):
                    where.setdefault(key(ln), []).append(i)
            found = where.get(str(r["key"]), [])
            if len(found) != 1:
                continue
            n = found[0]
        why = printable("; ".join(str(w) for w in r.get("why") or []) or "what it names changed")
        out.append({"range": _line_range({"startLine": n, "endLine": n}, len(lines)), "severity": WARNING,
                    "source": "cairn", "code": STALE_LINE_CODE,
                    "message": f"stale: {why} (cairn verify; fix or remove the line)"})
    return out


def wire_actions(workspace: str, agents: Sequence[str]) -> list[dict[str, Any]]:
    """A quick fix per unwired agent: ``cairn.wireAgents``, which proposes the wiring (nothing is written yet)."""
    out = []
    for a in agents:
        label = f"Wire {AGENT_NAMES.get(a, a)} to read cairn memory"
        out.append({"title": label, "kind": "quickfix",
                    "command": {"title": label, "command": CMD_WIRE_AGENTS,
                                "arguments": [{"workspace": workspace, "agents": [a]}]}})
    return out


def _line_range(r: dict[str, Any], line_count: int) -> dict[str, Any]:
    start = max(0, int(r.get("startLine", 0)))
    end = max(start, int(r.get("endLine", start)))
    if line_count:
        start, end = min(start, line_count - 1), min(end, line_count - 1)
    return {"start": {"line": start, "character": 0}, "end": {"line": end + 1, "character": 0}}


def diagnostics(proposals: Iterable[dict[str, Any]], line_count: int = 0) -> list[dict[str, Any]]:
    """One Information diagnostic per range a pending proposal would change."""
    out = []
    for p in proposals:
        ranges = p.get("ranges") or [{"startLine": 0, "endLine": 0}]
        # the editor shows source and code ("cairn", the id) itself: the message is the title, once;
        # further ranges of the same proposal say so instead of repeating it
        title = str(p.get("title") or f"{p.get('kind', 'a')} proposal")
        for i, r in enumerate(ranges):
            out.append({
                "range": _line_range(r, line_count),
                "severity": INFORMATION,
                "source": "cairn",
                "code": str(p.get("id", "")),
                "message": f"proposed: {title}" if i == 0 else f"(continued) {p.get('id', '')}",
            })
    return out


def code_actions(workspace: str, proposals: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Show diff, accept and reject for every pending proposal touching the document.

    Grouped per proposal, each title led by the proposal (``cairn p1 (title):
    Accept``), so a menu of many proposals reads as groups. *Show diff* comes
    first and is the preferred action: an editor that takes the first or the
    preferred action as the default of its menu (eglot does, on an empty
    answer) shows a diff, never accepts.
    """
    out = []
    for p in proposals:
        pid, title = str(p.get("id", "")), str(p.get("title", ""))
        arg = {"workspace": workspace, "ids": [pid], "id": pid}
        for verb, command, kind in (
            ("Show diff", CMD_SHOW_PROPOSAL, "source"),
            ("Accept", CMD_ACCEPT, "quickfix"),
            ("Reject", CMD_REJECT, "quickfix"),
        ):
            label = f"cairn {pid}" + (f" ({title})" if title else "") + f": {verb}"
            action: dict[str, Any] = {"title": label, "kind": kind,
                                      "command": {"title": label, "command": command, "arguments": [arg]}}
            if command == CMD_SHOW_PROPOSAL:
                action["isPreferred"] = True
            out.append(action)
    return out


def overlapping(proposals: Sequence[dict[str, Any]], start_line: int, end_line: int) -> list[dict[str, Any]]:
    """Proposals with a range touching [start_line, end_line]; all of them if none has ranges there.

    Editors ask for code actions at the cursor; a proposal for the file is
    offered anywhere in it, but one touching the cursor's lines comes first.
    """
    near = [p for p in proposals
            if any(int(r.get("startLine", 0)) <= end_line and int(r.get("endLine", 0)) >= start_line
                   for r in p.get("ranges") or [])]
    rest = [p for p in proposals if p not in near]
    return near + rest
