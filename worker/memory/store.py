"""Where memory consolidation keeps its records, and which files it may touch.

Private, per workspace, under ``.cairn/state/memory/``::

    claims/                 review/general, proposal/<id>
    bundles/aa/<sha>        before/after bytes, review results, intents, private decisions
    proposals/<id>          Proposal records (immutable)
    decisions/<id>/<seq>    PrivateDecision records: the authority for a proposal's state
    intents/<write>         WriteIntent records (complete before any mutation)
    auto/<review>           AutoApply records: an auto-mode review's applications still to keep

Target coordination, per target base (the workspace for its own memory root
and instruction files; the root itself for a memory root outside it), under
``<base>/.cairn/state/memory-write/``: ``claims/`` (scope ``target``) and
``markers/<write>`` (hash-only WriteMarker). Two workspaces sharing a root
therefore share its ownership.

Public records: ``.cairn/journal/reviews/<id>.json`` and
``.cairn/journal/decisions/<id>-<seq>.json`` (ids, states and hashes only).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import attrs
from cairn.protocol.claims import Authority
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.memory import FileEdit
from cairn.protocol.settings import Settings
from cairn.state import layout
from cairn.state import program as P
from cairn.state.bundles import BundleStore
from cairn.state.claims import ClaimStore
from cairn.state.fsdir import PinnedDir, split_rel
from cairn.worker.journal.store import Journal

M = ".cairn/state/memory"
PROPOSALS = f"{M}/proposals"
DECISIONS = layout.MEMORY_DECISIONS
INTENTS = f"{M}/intents"
REMEMBERED = f"{M}/remember"  # remember requests (worker.memory.remember), read by the focused review
REVIEWS_PUBLIC = ".cairn/journal/reviews"
DECISIONS_PUBLIC = layout.PUBLIC_DECISIONS
DEFAULT_ROOT = layout.MEMORY_ROOT
WRITE = ".cairn/state/memory-write"
MARKERS = f"{WRITE}/markers"
#: the instruction files of coding agents that ``cairn agents wire`` may edit or create (worker.memory.agents),
#: whatever ``instructionFiles`` says: each one a fixed workspace-relative path
AGENT_FILES = ("CLAUDE.md", "GEMINI.md", "QWEN.md", "AGENTS.md", "AGENTS.override.md",
               ".github/copilot-instructions.md", ".cursor/rules/cairn-memory.mdc")
#: the agents' workspace settings files ``cairn agents hooks`` proposes hooks in, and aider's config, whose
#: ``read:`` ``cairn agents wire`` adds ``AGENTS.md`` to
HOOK_FILES = (".claude/settings.local.json", ".claude/settings.json", ".gemini/settings.json", ".aider.conf.yml")


def user_hook_files() -> tuple[str, ...]:
    """The agents' user settings files ``cairn agents hooks --user`` proposes hooks in (absolute paths):
    Claude Code's ``settings.json`` (``$CLAUDE_CONFIG_DIR`` or ``~/.claude``), Gemini CLI's
    ``.gemini/settings.json`` (under ``$GEMINI_CLI_HOME`` or ``~``), Codex's ``config.toml``
    (``$CODEX_HOME`` or ``~/.codex``), in that order."""
    home = os.path.expanduser("~")
    claude = os.environ.get("CLAUDE_CONFIG_DIR", "").strip()
    gemini = os.environ.get("GEMINI_CLI_HOME", "").strip()
    codex = os.environ.get("CODEX_HOME", "").strip()
    return (os.path.abspath(os.path.join(os.path.expanduser(claude) if claude else os.path.join(home, ".claude"),
                                         "settings.json")),
            os.path.abspath(os.path.join(os.path.expanduser(gemini) if gemini else home, ".gemini", "settings.json")),
            os.path.abspath(os.path.join(os.path.expanduser(codex) if codex else os.path.join(home, ".codex"),
                                         "config.toml")))


@attrs.frozen
class Target:
    """A resolved target base and the base-relative paths of a proposal's files."""

    base: str  # absolute directory
    local: bool  # the base is the workspace itself


def notes_dirs(dirs: Iterable[str]) -> tuple[list[str], list[str]]:
    """(usable workspace-relative folders, one problem line per refused entry)."""
    good, problems = [], []
    for d in dirs:
        try:
            if d.startswith("/"):
                raise CairnError(ErrorCode.CONFIG_INVALID, "an absolute notes folder")
            good.append("/".join(split_rel(d)))
        except CairnError:
            problems.append(f"{ErrorCode.CONFIG_INVALID}: notes folder {d[:80]!r} is not a plain relative path")
    return good, problems


class MemoryStore(Journal):
    """The workspace's journal plus its memory-consolidation stores."""

    def __init__(self, workspace: str, settings: Settings | None = None, **kw: Any) -> None:
        super().__init__(workspace, **kw)
        self.settings = settings or Settings()
        self.mclaims = ClaimStore(self.root, f"{M}/claims", clock_offset=self.claims.clock_offset)
        self.mbundles = BundleStore(self.root, f"{M}/bundles")
        self.mauthority = Authority(workspace=workspace, target=M, client="cairn")

    def close(self) -> None:
        self.mclaims.close()
        super().close()

    # -- allowed targets --------------------------------------------------
    def roots(self) -> list[str]:
        """Memory roots: the workspace's own, then configured ones (absolute or workspace-relative)."""
        out = [DEFAULT_ROOT]
        for r in self.settings.memoryRoots:
            out.append(r if os.path.isabs(r) else os.path.normpath(r))
        return out

    def check_target(self, path: str) -> tuple[Target, str]:
        """Resolve a proposal path to (target base, base-relative path) or refuse it.

        Only files directly inside a configured memory root or notes folder,
        a configured instruction file, or one of the agents' instruction files
        (:data:`AGENT_FILES`, for ``cairn agents wire``), may be touched. Traversal, absolute paths outside a
        root and odd names are refused with ``E_TARGET_OUTSIDE_ROOTS``;
        symlinked or non-directory parents fail closed when opened.
        """
        if os.path.isabs(path):
            if os.path.normpath(path) in user_hook_files():  # ``cairn agents hooks --user``
                return Target(os.path.dirname(os.path.normpath(path)), False), os.path.basename(path)
            for r in self.roots():
                if os.path.isabs(r) and os.path.dirname(path) == os.path.normpath(r):
                    name = os.path.basename(path)
                    split_rel(name)
                    return Target(os.path.normpath(r), False), name
            raise CairnError(ErrorCode.TARGET_OUTSIDE_ROOTS, f"{path[:120]} is not inside a configured memory root")
        try:
            parts = split_rel(path)
        except CairnError:
            raise CairnError(ErrorCode.TARGET_OUTSIDE_ROOTS, f"{path[:120]} is not a plain relative path") from None
        rel = "/".join(parts)
        if layout.reserved(rel):  # git's and cairn's own files, whatever the settings say
            raise CairnError(ErrorCode.TARGET_OUTSIDE_ROOTS, f"{path[:120]} is in a folder memory never touches")
        if rel in self.settings.instructionFiles or rel in AGENT_FILES or rel in HOOK_FILES:
            return Target(self.workspace, True), rel
        if "/".join(parts[:-1]) in self.settings.notesDirs and parts[-1].endswith(".md"):
            return Target(self.workspace, True), rel  # a working note (removed by a disposition)
        for r in self.roots():
            if not os.path.isabs(r) and "/".join(parts[:-1]) == r and parts[-1].endswith(".md"):
                return Target(self.workspace, True), rel
        raise CairnError(ErrorCode.TARGET_OUTSIDE_ROOTS,
                         f"{path[:120]} is neither in a configured memory root nor a configured instruction file")

    def target_stores(self, target: Target) -> tuple[PinnedDir, ClaimStore]:
        base = self.root if target.local else PinnedDir.open_root(target.base, create=True)
        return base, ClaimStore(base, f"{WRITE}/claims", clock_offset=self.claims.clock_offset)

    def edit_ops(self, path: str, before: bytes | None, after: bytes | None) -> tuple[FileEdit, list[P.Op]]:
        """A file's edit by content hash, and the ops that put both states into the private bundles."""
        ops: list[P.Op] = []
        bh = ah = None
        if before is not None:
            bh, put = self.mbundles.put_ops(before)
            ops += put
        if after is not None:
            ah, put = self.mbundles.put_ops(after)
            ops += put
        return FileEdit(path=path, before=bh, after=ah, before_bundle=bh, after_bundle=ah), ops

    def target_dirs(self) -> tuple[list[str], list[str]]:
        """Directories the memory writer replaces files in: (workspace-relative, absolute roots).

        Working-note folders are among them: a disposition removes a note and
        its undo writes it back (through a temp, like any memory file).
        """
        rel = {DEFAULT_ROOT, *(f.rsplit("/", 1)[0] if "/" in f else ""
                               for f in (*self.settings.instructionFiles, *AGENT_FILES, *HOOK_FILES))}
        rel.update(notes_dirs(self.settings.notesDirs)[0])
        absolute = []
        for r in self.roots():
            if os.path.isabs(r):
                absolute.append(r)
            else:
                rel.add(r)
        return sorted(rel), absolute

    def collect_target_temps(self) -> int:
        """Remove temps that dead writers left beside memory and instruction files (never recursive).

        A temp whose writer is alive (by its pid, see :meth:`PinnedDir.collect_temps`)
        is never touched: it is not visible under any final name, and its writer
        renames or removes it itself.
        """
        rel, absolute = self.target_dirs()
        n = 0
        for base, dirs in [(self.root, rel), *((None, [a]) for a in absolute)]:
            for d in dirs:
                try:
                    pd = base.descend(d) if base is not None else PinnedDir.open_root(d)
                except CairnError:
                    continue  # absent (or not a plain directory): nothing of ours can be there
                try:
                    n += pd.collect_temps()
                finally:
                    pd.close()
        return n

    def public_ops(self, rel: str, data: bytes) -> list[P.Op]:
        d = rel.rsplit("/", 1)[0]
        return [P.EnsureDir(d), P.Link(rel, data, mode=0o644, optional=True)]
