"""Which coding agents read the memory, and the proposals that make them read it (``cairn agents``).

Each agent reads its own instruction files (docs/agents.md records each
rule and the documentation page it comes from). An agent is *wired* when a
file it reads brings it to the memory index ``.agents/memory/MEMORY.md``:

* ``import``: an ``@path`` line that resolves to the index, in a file the
  agent expands imports of (Claude Code's ``CLAUDE.md``, Gemini CLI's
  ``GEMINI.md``, Qwen Code's ``QWEN.md``), directly or through files it
  imports (five hops at most). As both tools document it, an ``@`` is an
  import only at the start of the text or after whitespace and never inside
  a code span or block (backtick pairs, ``~~~`` fences and lines indented by
  four spaces are taken as code here: a doubtful import never counts);
  relative paths resolve against the importing file's folder;
* ``pointer``: the text the agent reads names ``.agents/memory/MEMORY.md``
  (an ``AGENTS.md`` section, a Copilot instructions file, an always-applied
  Cursor rule): agents without imports (Codex, opencode) read it when told to.

aider reads no instruction file of its own: it reads the files its
``.aider.conf.yml`` lists under ``read:`` (the workspace's, else the user's:
:mod:`.agent_aider`), as text, so an ``AGENTS.md`` listed there that points
to the index wires it (``via.through``), and an entry naming the index (or
its folder) is as good as an import. Its wiring may take two files: the
``read:`` entry and the pointer in ``AGENTS.md`` (:func:`targets`).

A wiring a person wrote by hand counts the same as one cairn proposed.

The rules a user accepts go to ``AGENTS.md`` (:data:`RULES`, the default
``instructionFiles``). Every agent but Claude Code and Gemini CLI reads it
of its own; those two (:data:`RULES_BY_IMPORT`) read only their file and its
imports, so while the workspace has an ``AGENTS.md`` of its own (not a link)
they are wired only when their file is it, links to it or imports it
(:func:`misses_rules`). Their wiring imports ``@AGENTS.md`` with the index
when the file is there or will be (a configured instruction file:
:func:`import_needs`), and only what is missing in a file that already has
one of the two.

An instruction file that is a symlink to another instruction file of the
workspace (``CLAUDE.md -> AGENTS.md``, common) is read where it leads, as
the agent reads it (``via.link``), one hop: a link that leaves the
workspace, climbs through a folder it does not come from, leads to another
link, or leads to a file that is no instruction file (:data:`AGENT_FILES`
or the configured ``instructionFiles``: never ``.claude/settings.json``,
aider's config or the memory index, which a wiring would corrupt), and
aider's config when it is a link, are refused (``E_PATH_SYMLINK``). A link
is never written through nor replaced: the wiring edits the file it leads
to.
Its ``@`` imports count only where they resolve the same from the link's
folder and from its target's (a doubtful import never counts).

:func:`plan` picks, for each agent not wired, the file that wires it (two
for aider; an existing file first; a file is created only for an agent in
use), one proposal per file whatever the number of agents it serves;
:func:`propose` stores it as an ``instruction`` proposal with its exact before-state, so it
is shown, accepted, rejected and undone like every other memory edit
(:mod:`.apply`). The id is a function of the file, its before and after
hashes: wiring again before a decision gives the same pending proposal.

Imports inside functions: the memory model's line layer and the
fingerprints (their package loads yaml) only where a proposal is built
(:func:`_append`, :func:`propose`), so the
status counts, which read the wiring of every agent through here, start
without it (but in a workspace with an aider config, whose ``read:`` is
parsed with yaml: :mod:`.agent_aider`); measured with ``python -X
importtime``: yaml alone is about 15 ms of the ``status`` job.

Instruction files are read without following a link (but for the one hop
above) and without blocking: any other symlink (``E_PATH_SYMLINK``), a FIFO
or folder (``E_PATH_NOT_REGULAR``), a file over :data:`MAX_FILE`
(``E_RECORD_TOO_LARGE``) or not UTF-8 (``E_MEMORY_NOT_TEXT``) is reported
with its code and never proposed for; so is an aider config the edit cannot
place safely (``E_CONFIG_INVALID``). The redaction gate every memory edit
passes (:func:`propose`) must leave the edit as it is: the edit never
rewrites what the user wrote, and a redaction there (a token-like name on
the line aider's ``read:`` entry joins) would change a file an agent reads,
so the proposal is refused instead (aider's config: ``E_CONFIG_INVALID``,
add the entry by hand).
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import stat
import time
from collections.abc import Iterable, Mapping
from typing import Any

import attrs
from cairn.protocol import codec
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.memory import Proposal, ProposalKind
from cairn.state import layout
from cairn.state import program as P
from cairn.state.fsdir import PinnedDir
from cairn.worker.memory import agent_aider as aider
from cairn.worker.memory.apply import decisions
from cairn.worker.memory.store import AGENT_FILES, HOOK_FILES, PROPOSALS, MemoryStore
from cairn.worker.redaction.redact import redact_added

#: the memory index every agent is brought to
INDEX = f"{layout.MEMORY_ROOT}/MEMORY.md"
#: largest instruction file read (bytes); Codex itself reads 32 KiB of them by default
MAX_FILE = 1 << 20
#: most ``@`` hops followed from a file (Claude Code and Gemini CLI stop at 5)
MAX_HOPS = 5
#: most entries of a rules folder looked at
MAX_RULES = 200
#: the proposal's ``review`` field: no review made it
REVIEW = "agents-wire"

AGENTS = ("claude-code", "codex", "gemini-cli", "copilot", "cursor", "cline", "opencode", "qwen-code", "aider")
#: session formats (``cairn discover``) -> the agent that writes them
FORMAT_AGENT = {"claude-code": "claude-code", "codex": "codex", "gemini-cli": "gemini-cli", "qwen-code": "qwen-code",
                "opencode": "opencode", "cline": "cline", "copilot-cli": "copilot", "cursor": "cursor",
                "cursor-transcript": "cursor", "aider": "aider"}
#: a file (or folder) in the workspace that says the agent is used here
MARKS = {"CLAUDE.md": "claude-code", ".claude/CLAUDE.md": "claude-code", "AGENTS.md": "codex",
         "GEMINI.md": "gemini-cli", "QWEN.md": "qwen-code", ".github/copilot-instructions.md": "copilot",
         ".cursor/rules": "cursor", ".clinerules": "cline"}
#: files whose ``@`` lines their agents expand
IMPORTING = ("CLAUDE.md", "GEMINI.md", "QWEN.md")
CURSOR_RULES = ".cursor/rules"
CURSOR_FILE = f"{CURSOR_RULES}/cairn-memory.mdc"
COPILOT_FILE = ".github/copilot-instructions.md"

_POINTER = [
    "Curated project memory, kept by cairn, is in `.agents/memory/`. At the start of a task read",
    "`.agents/memory/MEMORY.md`: it is the index, one line per topic file (`- [Title](file.md)`, maybe",
    "followed by ` - hook` and by `(confirmed YYYY-MM-DD)`, the day the topic was last confirmed).",
    "Each topic file has YAML front matter (`name`, `description`, `type`: user, feedback, project or",
    "reference) and its notes as bullets; open the topic files whose line is relevant to the task.",
    "To add to the memory, use cairn (`cairn remember TEXT`, or the `remember` tool of `cairn mcp`).",
]
#: appended to an instruction file an agent reads as text
POINTER_BLOCK = ["## Project memory", "", *_POINTER]
#: the instruction file the rules a user accepts go to (``instructionFiles``' default), which Codex, opencode,
#: Cline, Copilot, Cursor and Qwen Code read of their own, Claude Code and Gemini CLI only through an import
RULES = "AGENTS.md"
#: agents that read their own file only and follow its ``@`` imports: they see :data:`RULES` only when imported
RULES_BY_IMPORT = ("claude-code", "gemini-cli")
#: appended to a file whose agent expands ``@`` imports (no backtick: a stray one above cannot swallow the import)
IMPORT_BLOCK = [
    "## Project memory",
    "",
    "Curated project memory, kept by cairn, is in .agents/memory/: its index, imported below, has one line",
    "per topic file; open a topic file when its line is relevant to the task.",
    "",
    f"@{INDEX}",
]
#: the same, when the agent must also import the project's rules (:data:`RULES`)
IMPORT_RULES_BLOCK = [
    "## Project memory",
    "",
    "Curated project memory, kept by cairn, is in .agents/memory/: its index, imported below, has one line",
    "per topic file; open a topic file when its line is relevant to the task. The project's rules are in",
    f"{RULES}, imported below too.",
    "",
    f"@{RULES}",
    f"@{INDEX}",
]
#: appended to a file that imports the index already but not the rules
RULES_BLOCK = [
    "## Project rules",
    "",
    f"The project's rules are in {RULES}, imported below (the rules accepted with cairn are added there).",
    "",
    f"@{RULES}",
]
#: the Cursor rule cairn creates: always applied, the same pointer as AGENTS.md
CURSOR_RULE = ["---", "description: Project memory kept by cairn (.agents/memory)", "alwaysApply: true", "---", "",
               *_POINTER]


@attrs.frozen
class Via:
    """How an agent reaches the index: from ``file`` (through ``through``, the files it imports or, for aider,
    lists under ``read:``) by ``mechanism``; ``link``: the file ``file`` is a symlink to, read in its place."""

    file: str
    mechanism: str  # import | pointer
    through: tuple[str, ...] = ()
    link: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "mechanism": self.mechanism, "through": list(self.through), "link": self.link}


@attrs.frozen
class User:
    """What the user's own settings, outside the workspace, decide about its agents (read by the jobs layer).

    ``gemini_names``: Gemini CLI's context file names; ``home``: for aider's
    ``~`` entries; ``aider_file`` and ``aider_read``: the user's
    ``.aider.conf.yml`` and the ``read`` entries it sets (None: none), which
    aider takes when the workspace's config sets none.
    """

    gemini_names: tuple[str, ...] = ("GEMINI.md",)
    home: str = ""
    aider_file: str | None = None
    aider_read: tuple[str, ...] | None = None


#: no user settings: each agent's defaults
NO_USER = User()


@attrs.frozen
class Problem:
    """A file that could not be read (a link, a FIFO, too large, not text): its fixed code."""

    file: str
    code: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"file": self.file, "code": self.code, "message": self.message}


class Files:
    """The workspace's instruction files, read once each, never blocking, never through a link but one hop
    inside the workspace (module docstring).

    :meth:`text` gives the text, or None when the file is absent or refused;
    a refused file is remembered in :attr:`problems` with its code, a link
    followed in :attr:`links` (link -> the workspace file it leads to).
    ``instruction_files``: the configured ``instructionFiles``, which a link
    may lead to besides :data:`AGENT_FILES`.
    """

    def __init__(self, workspace: str, instruction_files: Iterable[str] = ()) -> None:
        self.workspace = os.path.abspath(workspace)
        self.destinations = (set(AGENT_FILES) | {posixpath.normpath(f) for f in instruction_files}) - set(HOOK_FILES)
        self._texts: dict[str, str | None] = {}
        self._dirs: dict[str, list[str] | None] = {}
        self.problems: dict[str, Problem] = {}
        self.links: dict[str, str] = {}
        self.memo: dict[str, Any] = {}  # what is derived from the files once (aider's `read:` entries)
        self._root = PinnedDir.open_root(self.workspace)

    def close(self) -> None:
        self._root.close()

    def __enter__(self) -> Files:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _refuse(self, rel: str, exc: CairnError) -> None:
        self.problems.setdefault(rel, Problem(rel, str(exc.code), exc.message if rel in exc.message else f"{rel}: {exc.message}"))

    def raw(self, rel: str, *, hop: bool = True) -> bytes | None:
        """The bytes of ``rel`` (bounded by :data:`MAX_FILE`); None when absent. Raises the refusal.

        ``hop``: a symlink to another file of the workspace is read where it
        leads (recorded in :attr:`links`); without it, or for any other link, ``E_PATH_SYMLINK``.
        """
        folder, name = posixpath.split(rel)
        try:
            d = self._root.descend(folder) if folder else None
        except CairnError as exc:
            if exc.code is ErrorCode.NOT_FOUND:
                return None
            raise
        base = d or self._root
        try:
            st = base.stat(name) if hop else None
            if st is not None and stat.S_ISLNK(st.st_mode):
                return self._through(rel, base, name)
            return base.read(name, limit=MAX_FILE)
        finally:
            if d is not None:
                d.close()

    def _through(self, rel: str, base: PinnedDir, name: str) -> bytes | None:
        """The bytes of the file the link ``rel`` leads to, when it is a file of the workspace (one hop)."""
        try:
            dest = os.readlink(name, dir_fd=base.fd)
        except FileNotFoundError:  # gone since the stat
            return None
        except OSError as exc:
            raise CairnError(ErrorCode.IO_FAILED, f"{rel}: cannot read the link ({exc.strerror})") from None
        to = link_target(self.workspace, rel, dest)
        if to is None:
            raise CairnError(ErrorCode.PATH_SYMLINK, f"{rel} is a symlink to {dest[:200]!r}, which is not a file of "
                             "the workspace reached without another link; refusing to follow")
        if rel in HOOK_FILES:  # aider's config: a wiring would edit what it leads to as a config
            raise CairnError(ErrorCode.PATH_SYMLINK, f"{rel} is a symlink to {to}; a config is read and edited "
                             "only as a file of its own, never through a link")
        if to not in self.destinations:  # a wiring would edit it as an instruction file
            raise CairnError(ErrorCode.PATH_SYMLINK, f"{rel} is a symlink to {to}, which is not an instruction file "
                             "cairn may edit; refusing to follow")
        try:
            data = self.raw(to, hop=False)
        except CairnError as exc:  # a link on the way, a FIFO, too large: the link stays refused, never edited
            raise CairnError(exc.code, f"{rel} is a symlink to {to}: {exc.message}") from None
        self.links[rel] = to  # also when ``to`` is absent: a wiring creates it there, never in the link's place
        return data

    def real(self, rel: str) -> str:
        """The file an edit of ``rel`` must change: where ``rel`` leads when it is a link followed, else ``rel``."""
        self.text(rel)
        return self.links.get(rel, rel)

    def text(self, rel: str) -> str | None:
        if rel not in self._texts:
            value: str | None = None
            try:
                data = self.raw(rel)
                if data is not None:
                    try:
                        value = data.decode("utf-8")
                    except UnicodeDecodeError:
                        raise CairnError(ErrorCode.MEMORY_NOT_TEXT, "not UTF-8 text") from None
            except CairnError as exc:
                self._refuse(rel, exc)
            self._texts[rel] = value
        return self._texts[rel]

    def exists(self, rel: str) -> bool:
        """Whether ``rel`` is there in any form (a refused file counts: it is the agent's, just unreadable)."""
        return self.text(rel) is not None or rel in self.problems

    def present(self, rel: str) -> bool:
        """Whether anything is at the top-level name ``rel``: one ``stat``, nothing read (a history file may be
        large)."""
        try:
            return self._root.stat(rel) is not None
        except CairnError:
            return False

    def listing(self, rel: str) -> list[str] | None:
        """Names in folder ``rel`` (at most :data:`MAX_RULES`, sorted); None when absent, not a folder or refused."""
        if rel not in self._dirs:
            names: list[str] | None = None
            try:
                with self._root.descend(rel) as d:
                    names = sorted(d.listdir())[:MAX_RULES]
            except CairnError as exc:
                if exc.code not in (ErrorCode.NOT_FOUND, ErrorCode.PATH_NOT_DIRECTORY):
                    self._refuse(rel, exc)
            self._dirs[rel] = names
        return self._dirs[rel]

    def is_dir(self, rel: str) -> bool:
        return self.listing(rel) is not None


def link_target(workspace: str, rel: str, dest: str) -> str | None:
    """The workspace file the link ``rel`` (its text ``dest``) leads to; None when it leaves the workspace.

    Read as text, never resolved by the system: ``..`` only at the start (it
    climbs the link's own folders, which were opened without following a
    link), an absolute path only under the workspace. The file found is then
    opened from the workspace without following a link on its way.
    """
    if not dest or "\0" in dest:
        return None
    if dest.startswith("/"):
        parts = dest.split("/")
        if ".." in parts:
            return None
        path = posixpath.normpath(dest)
        for ws in dict.fromkeys((os.path.normpath(workspace), os.path.realpath(workspace))):
            if path.startswith(ws.rstrip("/") + "/"):
                return posixpath.relpath(path, ws)
        return None
    parts = [p for p in dest.split("/") if p not in ("", ".")]
    ups = 0
    while ups < len(parts) and parts[ups] == "..":
        ups += 1
    if ".." in parts[ups:] or ups == len(parts):
        return None
    to = posixpath.normpath(posixpath.join(posixpath.dirname(rel), *parts))
    return None if to in (".", rel) or to == ".." or to.startswith("../") else to


# -- reading an agent's files -----------------------------------------------------------

_TICKS = re.compile(r"(`+)[\s\S]*?\1")
_TILDE_FENCE = re.compile(r"^ {0,3}~~~")
_AT = re.compile(r"(?:(?<=\s)|^)@(\S+)")


def _code_regions(text: str) -> list[tuple[int, int]]:
    """Spans taken as code: backtick pairs (as Gemini CLI finds them: fences too), ``~~~`` fences, indented lines."""
    regions = [(m.start(), m.end()) for m in _TICKS.finditer(text)]
    pos, start = 0, None
    for line in text.splitlines(keepends=True):
        if _TILDE_FENCE.match(line):
            if start is None:
                start = pos
            else:
                regions.append((start, pos + len(line)))
                start = None
        elif line.startswith(("    ", "\t")):
            regions.append((pos, pos + len(line)))
        pos += len(line)
    if start is not None:
        regions.append((start, len(text)))
    return regions


def import_paths(text: str) -> list[str]:
    """The ``@path`` imports of ``text``, in order, leaving out any in code."""
    regions = _code_regions(text)
    out = []
    for m in _AT.finditer(text):
        path = m.group(1)
        if path[0] not in "./~" and not path[0].isalnum():
            continue
        if any(s <= m.start() < e for s, e in regions):
            continue
        out.append(path)
    return out


def resolve(workspace: str, importer: str, path: str) -> str | None:
    """The workspace-relative file an import in ``importer`` names; None when it leaves the workspace."""
    if path.startswith("~"):
        return None
    if path.startswith("/"):
        for base in {os.path.normpath(workspace), os.path.realpath(workspace)}:
            if path.startswith(base.rstrip("/") + "/"):
                return posixpath.normpath(path[len(base.rstrip("/")) + 1:])
        return None
    rel = posixpath.normpath(posixpath.join(posixpath.dirname(importer), path))
    return None if rel == ".." or rel.startswith("../") else rel


def _resolve_in(files: Files, rel: str, path: str) -> str | None:
    """An import of ``rel`` resolved; for a link followed, only when its folder and its target's agree."""
    found = {resolve(files.workspace, base, path) for base in (rel, files.links.get(rel, rel))}
    return found.pop() if len(found) == 1 else None


def _reach(files: Files, rel: str, imports: bool, hops: int, seen: frozenset[str]) -> Via | None:
    text = files.text(rel)
    if text is None:
        return None
    link = files.links.get(rel)
    found = [_resolve_in(files, rel, p) for p in import_paths(text)] if imports else []
    if INDEX in found:
        return Via(rel, "import", link=link)
    nested: Via | None = None
    if hops < MAX_HOPS:
        for sub in found:
            if sub is None or sub in seen:
                continue
            via = _reach(files, sub, True, hops + 1, seen | {sub})
            if via is not None and (via.mechanism == "import" or nested is None):
                nested = Via(rel, via.mechanism, (sub, *via.through), link)
                if via.mechanism == "import":
                    break
    if nested is not None and nested.mechanism == "import":
        return nested
    if INDEX in text.encode("utf-8", "surrogatepass")[:POINTER_WINDOW].decode("utf-8", "ignore"):
        return Via(rel, "pointer", link=link)  # where the agent reads it: past the window it is never seen
    return nested


def aider_reads(files: Files, user: User = NO_USER) -> tuple[str | None, list[str]]:
    """(the config whose ``read:`` aider takes, the workspace files it lists): the workspace's
    ``.aider.conf.yml`` when it sets ``read``, else the user's (aider's order: :mod:`.agent_aider`).

    A workspace config aider cannot parse is listed in :attr:`Files.problems`
    (``E_CONFIG_INVALID``) and nothing is read: aider refuses to start with it.
    """
    if "aider" not in files.memo:
        conf: str | None = None
        entries: list[str] | None = None
        text = files.text(aider.CONF)
        if text is not None:
            try:
                entries = aider.entries(text, aider.CONF)
                conf = aider.CONF if entries else None
            except CairnError as exc:
                files._refuse(aider.CONF, exc)
                files.memo["aider"] = (None, [])
                return files.memo["aider"]
        if conf is None and user.aider_read:
            conf, entries = user.aider_file, list(user.aider_read)
        bases = (files.workspace, os.path.realpath(files.workspace))
        paths = [aider.entry_path(bases, e, user.home) for e in entries or []]
        files.memo["aider"] = (conf, list(dict.fromkeys(p for p in paths if p is not None)))
    conf, paths = files.memo["aider"]
    return conf, list(paths)


def _aider_wired(files: Files, user: User) -> Via | None:
    conf, paths = aider_reads(files, user)
    if conf is None:
        return None
    if any(p == INDEX or (p != "." and INDEX.startswith(p + "/")) for p in paths):
        return Via(conf, "import")  # the index itself (or its folder) is read: as good as an import
    for rel in paths:
        if files.is_dir(rel):  # aider reads a folder's files whole; only a file listed by name is looked at
            continue
        via = _reach(files, rel, False, 0, frozenset({rel}))
        if via is not None:
            return Via(conf, via.mechanism, (rel, *via.through))
    return None


def _always_applied(text: str) -> bool:
    """Whether a Cursor rule's front matter says ``alwaysApply: true`` (a boolean, not the string)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return False
    for line in lines[1:]:
        if line.strip() == "---":
            return False
        if re.fullmatch(r"alwaysApply:\s*(true|True|TRUE)\s*(#.*)?", line.strip()):
            return True
    return False


def reads(agent: str, files: Files, user: User = NO_USER) -> list[tuple[str, bool]]:
    """The workspace files ``agent`` reads, in its order, each with whether it expands ``@`` imports there."""
    if agent == "claude-code":
        return [("CLAUDE.md", True), (".claude/CLAUDE.md", True), ("CLAUDE.local.md", True)]
    if agent == "gemini-cli":
        return [(n, True) for n in user.gemini_names]
    if agent == "qwen-code":
        return [("QWEN.md", True), ("AGENTS.md", True)]
    if agent == "codex":  # one file per folder: the override when it is there and not empty
        override = files.text("AGENTS.override.md")
        return [("AGENTS.override.md" if override and override.strip() else "AGENTS.md", False)]
    if agent == "opencode":  # CLAUDE.md only in a folder without AGENTS.md
        return [("AGENTS.md" if files.exists("AGENTS.md") else "CLAUDE.md", False)]
    if agent == "cline":
        rules = files.listing(".clinerules")
        own = ([f".clinerules/{n}" for n in rules if n.endswith(".md")] if rules is not None else [".clinerules"])
        return [(r, False) for r in own] + [("AGENTS.md", False)]
    if agent == "copilot":
        return [(COPILOT_FILE, False), ("AGENTS.md", False)]
    if agent == "cursor":
        names = files.listing(CURSOR_RULES) or []
        rules = [f"{CURSOR_RULES}/{n}" for n in names if n.endswith(".mdc")]
        return [(r, False) for r in rules if _always_applied(files.text(r) or "")] + [("AGENTS.md", False)]
    if agent == "aider":  # the files its `read:` lists, as text
        return [(rel, False) for rel in aider_reads(files, user)[1]]
    raise CairnError(ErrorCode.USAGE, f"unknown agent {agent[:40]!r}")


def wired(agent: str, files: Files, user: User = NO_USER) -> Via | None:
    """How ``agent`` reaches the index, by its documented rule; None when it does not, or when it does not
    see the rules of :data:`RULES` there (:func:`misses_rules`)."""
    via = reaches_index(agent, files, user)
    return None if via is None or misses_rules(agent, files, user) else via


def rules_present(files: Files) -> bool:
    """Whether :data:`RULES` is there as a file of its own cairn writes rules into (a link is not: a review
    never writes through one)."""
    return files.text(RULES) is not None and RULES not in files.links


def _imports_file(files: Files, rel: str, want: str, hops: int, seen: frozenset[str]) -> bool:
    """Whether ``rel`` (or a file it is a link to) is ``want``, or imports it, directly or through the files
    it imports (:data:`MAX_HOPS`)."""
    if rel == want or files.real(rel) == want:
        return True
    text = files.text(rel)
    if text is None or hops >= MAX_HOPS:
        return False
    for sub in (_resolve_in(files, rel, p) for p in import_paths(text)):
        if sub is not None and (sub == want or (sub not in seen and
                                                _imports_file(files, sub, want, hops + 1, seen | {sub}))):
            return True
    return False


def sees_rules(agent: str, files: Files, user: User = NO_USER) -> bool:
    """Whether ``agent`` reads :data:`RULES`: one of its files is it (or a link to it) or imports it."""
    return any(_imports_file(files, rel, RULES, 0, frozenset({rel})) if imports else rel == RULES
               for rel, imports in reads(agent, files, user))


def misses_rules(agent: str, files: Files, user: User = NO_USER) -> bool:
    """Whether ``agent`` reads only its own file and its imports (:data:`RULES_BY_IMPORT`) and misses the rules
    of a :data:`RULES` that is there: the accepted rules never reach it."""
    return agent in RULES_BY_IMPORT and rules_present(files) and not sees_rules(agent, files, user)


def reaches_index(agent: str, files: Files, user: User = NO_USER) -> Via | None:
    """How ``agent`` reaches the index, by its documented rule (the rules file aside); None when it does not."""
    if agent == "aider":
        return _aider_wired(files, user)
    best: Via | None = None
    for rel, imports in reads(agent, files, user):
        via = _reach(files, rel, imports, 0, frozenset({rel}))
        if via is not None and via.mechanism == "import" and not via.through:
            return via
        if via is not None and (best is None or (best.mechanism == "pointer" and via.mechanism == "import")):
            best = via
    return best


def in_use_by_files(files: Files) -> dict[str, list[str]]:
    """Agents the workspace's own files name (``CLAUDE.md``, ``.cursor/rules/``…) -> those files.

    A file that is there but refused (a link, a FIFO) still names its agent.
    """
    out: dict[str, list[str]] = {}
    for rel, agent in MARKS.items():
        if rel in (CURSOR_RULES, ".clinerules"):  # folders (``.clinerules`` may also be one file)
            there = files.is_dir(rel) or rel in files.problems or (rel == ".clinerules" and files.exists(rel))
        else:
            there = files.exists(rel)
        if there:
            out.setdefault(agent, []).append(rel)
    for rel in aider.MARKS:  # its config, or the histories it keeps: present, not read (they may be large)
        if files.present(rel):
            out.setdefault("aider", []).append(rel)
    return out


def related(agent: str, files: Files, user: User = NO_USER) -> list[str]:
    """Every workspace path whose state decides ``agent``'s wiring (its files, its targets, their folders, the
    links followed among them)."""
    # aider's `read:` may list any file (a large spec, a folder): only its config and AGENTS.md are its own
    own = [rel for rel, _ in reads(agent, files, user)] if agent != "aider" else []
    paths = own + targets(agent, files, user)
    extra = {"codex": ["AGENTS.override.md"], "cursor": [CURSOR_RULES], "cline": [".clinerules"],
             "copilot": [".github"], "aider": [aider.CONF, "AGENTS.md"]}
    paths += extra.get(agent, [])
    paths += [files.links[p] for p in paths if p in files.links]
    return list(dict.fromkeys(paths))


def claude_folder(directory: str) -> str:
    """Claude Code's project folder name for ``directory`` (the rule of ``ingest.sources.probe.claude_folder``)."""
    return re.sub(r"[^A-Za-z0-9]", "-", directory)


def quick_sessions(workspace: str, home: str, env: Mapping[str, str]) -> set[str]:
    """Agents with a session folder of this very workspace, found without a scan (a few ``stat`` calls).

    Claude Code keeps a folder per project (``projects/<folder>``), Gemini CLI
    one per project hash or slug (``tmp/<sha256>``, ``projects.json``); the
    other stores are found by discovery (``cairn agents``).
    """
    out: set[str] = set()
    ws = os.path.abspath(workspace)
    claude = [env.get("CLAUDE_CONFIG_DIR", "").strip(), os.path.join(home, ".claude"),
              os.path.join(env.get("XDG_CONFIG_HOME", "").strip() or os.path.join(home, ".config"), "claude")]
    for base in filter(None, claude):
        if any(os.path.isdir(os.path.join(os.path.expanduser(base), "projects", claude_folder(w)))
               for w in {ws, os.path.realpath(ws)}):
            out.add("claude-code")
    gemini = os.path.join(env.get("GEMINI_CLI_HOME", "").strip() or home, ".gemini", "tmp")
    if any(os.path.isdir(os.path.join(gemini, hashlib.sha256(w.encode()).hexdigest()))
           for w in {ws, os.path.realpath(ws)}):
        out.add("gemini-cli")
    return out


# -- the edits ---------------------------------------------------------------------------

def targets(agent: str, files: Files, user: User = NO_USER) -> list[str]:
    """The files whose edits wire ``agent``: one for every agent but aider, which may need two (a ``read:``
    entry for ``AGENTS.md`` in its config, the pointer in ``AGENTS.md``). A link is never the file edited:
    the file it leads to is (:meth:`Files.real`)."""
    if agent != "aider":
        return [files.real(_target(agent, files, user))]
    out = []
    if aider.ENTRY not in aider_reads(files, user)[1]:
        out.append(files.real(aider.CONF))
    if _reach(files, aider.ENTRY, False, 0, frozenset({aider.ENTRY})) is None:
        out.append(files.real(aider.ENTRY))
    return out or [files.real(aider.CONF)]


def target(agent: str, files: Files, user: User = NO_USER) -> str:
    """The first file :func:`targets` edits."""
    return targets(agent, files, user)[0]


def aider_new_entries(files: Files, user: User = NO_USER) -> list[str]:
    """What the wiring adds to the workspace's ``read:``: ``AGENTS.md``, after the user's own entries when
    those are what aider reads now (a workspace ``read:`` replaces them whole: :mod:`.agent_aider`)."""
    conf, _ = aider_reads(files, user)
    if conf is not None and conf != aider.CONF and user.aider_read:
        return [*user.aider_read, aider.ENTRY]
    return [aider.ENTRY]


def _target(agent: str, files: Files, user: User) -> str:
    """The one instruction file that wires ``agent`` (not aider): the one it already reads when there is a
    choice."""
    if agent == "claude-code":
        return "CLAUDE.md"
    if agent == "gemini-cli":
        names = [n for n in user.gemini_names if n in AGENT_FILES]
        return "GEMINI.md" if "GEMINI.md" in names or not names else names[0]
    if agent == "qwen-code":
        return "QWEN.md"
    if agent == "codex":
        return reads("codex", files)[0][0]
    if agent == "opencode":  # a new AGENTS.md would hide CLAUDE.md from it: wire the file it reads now
        return "CLAUDE.md" if not files.exists("AGENTS.md") and files.exists("CLAUDE.md") else "AGENTS.md"
    if agent == "cline":
        return "AGENTS.md"
    if agent == "copilot":
        return COPILOT_FILE
    if agent == "cursor":
        return CURSOR_FILE
    raise CairnError(ErrorCode.USAGE, f"unknown agent {agent[:40]!r}")


def mechanism_of(path: str) -> str:
    """How the edit of ``path`` wires: ``import`` (an ``@`` line), ``read`` (aider's ``read:`` entry), ``pointer``."""
    return "import" if path in IMPORTING else "read" if path == aider.CONF else "pointer"


def _append(data: bytes, block: list[str]) -> bytes:
    """``data`` with ``block`` appended after a blank line; its line endings followed, every byte kept."""
    # the memory model's package loads yaml: only a wiring needs it (module docstring)
    from cairn.worker.memory.model.lines import is_blank, join_lines, newline_of, split_lines

    nl = newline_of(data)
    lines = split_lines(data)
    final = not lines or bool(lines[-1][1])
    out = list(lines)
    if out and not is_blank(out[-1][0]):
        out.append((b"", b""))
    out.extend((line.encode("utf-8"), b"") for line in block)
    return join_lines(out, final, nl)


#: what of a pointer file an agent is sure to read: Codex reads AGENTS.md up to ``project_doc_max_bytes``, 32 KiB
#: by default, and drops the rest
POINTER_WINDOW = 32 * 1024


def _insert_near_top(data: bytes, block: list[str]) -> bytes:
    """``data`` with ``block`` after its title line (a ``# `` heading first in the file) or first, a blank line
    either side; its line endings followed, every byte kept."""
    from cairn.worker.memory.model.lines import is_blank, join_lines, newline_of, split_lines

    nl = newline_of(data)
    lines = split_lines(data)
    final = not lines or bool(lines[-1][1])
    at = 1 if lines and lines[0][0].startswith(b"# ") else 0
    head = [*lines[:at], *([(b"", b"")] if at else [])]
    rest = lines[at:]
    while rest and is_blank(rest[0][0]):
        rest = rest[1:]
    out = [*head, *((line.encode("utf-8"), b"") for line in block), *([(b"", b"")] if rest else []), *rest]
    return join_lines(out, final, nl)


def wire_bytes(path: str, before: bytes | None, read: Iterable[str] = (aider.ENTRY,), *,
               index: bool = True, rules: bool = False) -> bytes:
    """The bytes of ``path`` once it wires its agents (``before``: its bytes now, None when absent; ``read``:
    what aider's ``read:`` gets, for its config; for a file that imports: ``index``, import the index,
    ``rules``, import :data:`RULES` too, :func:`import_needs`).

    Raises ``E_MEMORY_NOT_TEXT`` for a file that is not UTF-8, ``E_USAGE``
    for a Cursor rule of cairn's name that someone made not always-applied,
    and ``E_CONFIG_INVALID`` for an aider config the edit cannot place safely.
    """
    if path == aider.CONF:
        return aider.add_entries(before, list(read), path)
    if before is not None:
        try:
            text = before.decode("utf-8")
        except UnicodeDecodeError:
            raise CairnError(ErrorCode.MEMORY_NOT_TEXT, f"{path}: not UTF-8 text") from None
    if path == CURSOR_FILE:
        if before is None:
            return "".join(line + "\n" for line in CURSOR_RULE).encode("utf-8")
        if not _always_applied(text):
            raise CairnError(ErrorCode.USAGE, f"{path} exists and is not an always-applied rule: edit it (or remove "
                             "it) and wire cursor again; nothing was proposed for it")
        return _append(before, _POINTER)
    if mechanism_of(path) == "import":
        block = (IMPORT_RULES_BLOCK if rules else IMPORT_BLOCK) if index or not rules else RULES_BLOCK
        return _append(before or b"", block)
    after = _append(before or b"", POINTER_BLOCK)
    # a pointer past what the agent reads of the file (a long AGENTS.md) is never read: it goes near the top
    return after if len(after) <= POINTER_WINDOW else _insert_near_top(before or b"", POINTER_BLOCK)


def _sha(data: str) -> str:
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def read_before(ms: MemoryStore, path: str) -> bytes | None:
    """``path``'s bytes exactly as accept will compare them (no link, no FIFO, at most :data:`MAX_FILE`)."""
    target, rel = ms.check_target(path)
    if not target.local:  # a user settings file (``agents hooks --user``): read where accept will read it
        try:
            base = PinnedDir.open_root(target.base)
        except CairnError as exc:
            if exc.code in (ErrorCode.NOT_FOUND, ErrorCode.PATH_NOT_DIRECTORY):
                return None
            raise
        with base:
            r = P.run(base, [P.Read(rel, limit=MAX_FILE, optional=True)]).results[0]
    else:
        r = ms.run([P.Read(path, limit=MAX_FILE, optional=True)])[0]
    if r.status.value == "failed":
        raise CairnError(r.code or ErrorCode.IO_FAILED, r.message if path in r.message else f"{path}: {r.message}")
    return r.value if r.status.value == "ok" else None


def import_needs(ms: MemoryStore, path: str, agents: list[str]) -> tuple[bool, bool]:
    """What the wiring of ``path``, a file its agents expand ``@`` imports of, must import: (the index, the
    rules of :data:`RULES`).

    The index when one of ``agents`` does not reach it yet. The rules when
    one of them reads only its own files and their imports
    (:data:`RULES_BY_IMPORT`) and does not see :data:`RULES`, and the
    workspace has that file or will have it: a proposal waiting for a
    decision creates it (the wiring of Codex, proposed first in the same
    ``wire``: :func:`plan` sorts by file). A :data:`RULES` that is a link is
    never imported (no rule is written through a link); rules are written
    only into one that exists (the review's rule 3).
    """
    with Files(ms.workspace, ms.settings.instructionFiles) as files:
        # Gemini CLI's context names come from the user's settings: the file being wired is one of them
        user = User(gemini_names=(path,)) if path in AGENT_FILES else NO_USER
        index = any(reaches_index(a, files, user) is None for a in agents)
        missing = [a for a in agents if a in RULES_BY_IMPORT and not sees_rules(a, files, user)]
        rules = bool(missing) and (rules_present(files) or (not files.exists(RULES) and _rules_proposed(ms)))
    return index or not rules, rules


def _rules_proposed(ms: MemoryStore) -> bool:
    """Whether a proposal waiting for a decision writes :data:`RULES`."""
    from cairn.worker.memory.apply import proposal_ids

    for pid in proposal_ids(ms):
        p = ms.read_record(f"{PROPOSALS}/{pid}", Proposal)
        if p is not None and any(f.path == RULES and f.after is not None for f in p.files) and not decisions(ms, pid):
            return True
    return False


def propose(ms: MemoryStore, path: str, agents: list[str],
            read: Iterable[str] = (aider.ENTRY,)) -> tuple[Proposal, bool]:
    """The proposal that makes ``agents`` read the index through ``path``; (proposal, newly made?).

    ``read``: the entries aider's config gets (:func:`aider_new_entries`).
    Wiring again while it waits gives the same proposal; after it was
    rejected or undone, a new one (the user asked again).
    """
    # fingerprints import the memory model (yaml): only a wiring needs them (module docstring)
    from cairn.worker.memory.fingerprints import fingerprint

    read = list(read)
    before = read_before(ms, path)
    index, rules = import_needs(ms, path, agents) if mechanism_of(path) == "import" else (True, False)
    after = wire_bytes(path, before, read, index=index, rules=rules)
    # the gate a memory file's additions pass; the edit keeps every byte the user wrote, so a redaction would
    # rewrite them (a token-like name on the line aider's entry joins): refused, never written (module docstring)
    if redact_added(before, after) != after:
        how = f"add {', '.join(read)} to its `read:` by hand" if path == aider.CONF else "edit it by hand"
        raise CairnError(ErrorCode.CONFIG_INVALID,  # only aider's entry joins a line of the user's
                         f"{path}: the edit writes, or joins a line holding, text that looks like a secret, and "
                         f"redacting it would change what the file says; {how}")
    edit, ops = ms.edit_ops(path, before, after)
    seed = _sha(f"{REVIEW}\0{path}\0{edit.before}\0{edit.after}")
    for n in range(1, 1000):
        pid = "p" + _sha(f"{seed}\0{n}")[:12]
        known = ms.read_record(f"{PROPOSALS}/{pid}", Proposal)
        if known is None:
            break
        if not decisions(ms, pid):
            return known, False
    else:  # pragma: no cover - a thousand decided wirings of one file state
        raise CairnError(ErrorCode.PROPOSAL_STATE, f"{path}: too many decided wirings of this file state")
    mechanism = mechanism_of(path)
    names = ", ".join(agents)
    what = " and ".join([*([INDEX] if index else []), *([RULES] if rules else [])])
    goal = " and ".join([*(["the memory"] if index else []), *([f"the rules of {RULES}"] if rules else [])])
    summary = f"{names} will read {what} ({mechanism} in {path})"
    if path == aider.CONF:
        summary = (f"{names} will read {', '.join(read)} (`read:` in {path}); {aider.ENTRY} points to {INDEX}"
                   + ("; the user's own `read:` entries are kept, as a workspace `read:` replaces them"
                      if len(read) > 1 else ""))
    p = Proposal(id=pid, review=REVIEW, kind=ProposalKind.INSTRUCTION,
                 title=f"Wire {path} to {goal} for {names}",
                 summary=summary, target=path, files=(edit,),
                 index=(), evidence=(), fingerprint=fingerprint(ProposalKind.INSTRUCTION, path, [REVIEW, mechanism]),
                 created=time.time())
    res = ms.run([*ops, P.EnsureDir(PROPOSALS), P.Link(f"{PROPOSALS}/{pid}", codec.encode(p), optional=True)])
    for r in res.results:
        if r.status.value == "failed":
            raise CairnError(r.code or ErrorCode.IO_FAILED, r.message)
    return p, True


def plan(agents: Iterable[str], files: Files, user: User = NO_USER) -> dict[str, list[str]]:
    """Target file -> the agents it wires, for ``agents`` (none of them wired yet), in a stable order."""
    out: dict[str, list[str]] = {}
    for agent in agents:
        for path in targets(agent, files, user):
            out.setdefault(path, []).append(agent)
    return dict(sorted(out.items()))
