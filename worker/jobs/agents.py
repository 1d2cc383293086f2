"""``cairn agents``: the coding agents a workspace is used with, whether each reads the memory, the wiring.

An agent is *in use* here when discovery (``cairn discover``) finds
sessions of it recorded in this workspace (or below it), when the
workspace holds one of its files (``CLAUDE.md``, ``AGENTS.md`` for Codex,
``GEMINI.md``, ``QWEN.md``, ``.github/copilot-instructions.md``,
``.cursor/rules/``, ``.clinerules``, aider's ``.aider.conf.yml`` or the
histories it keeps in the project), or when Claude Code or Gemini CLI
keep a session folder for this very workspace. A program on ``PATH`` is not
a use of this workspace: an ``aider`` installed for other projects must not
get a config created in every one. Whether it is *wired* (reads
``.agents/memory/MEMORY.md``) and which files would wire it are
:mod:`worker.memory.agents`' rules; what the user's own settings decide
(Gemini CLI's context file names, the ``read:`` of ``~/.aider.conf.yml``,
read only when aider is in use) is gathered here (:meth:`Settings.user`).
``hooks`` says whether the agent's settings run ``cairn hook``: Claude
Code's ``.claude/settings.json`` and ``settings.local.json`` (the
workspace's and the user's), Gemini CLI's and
Qwen Code's ``settings.json`` (the workspace's and the user's), Codex's
``config.toml`` (``notify`` in the user's only, which is where Codex reads
it; or a ``hooks`` table); the other agents have no hook cairn knows of
(``false``).

Jobs: ``agents`` (the rows ``cairn agents --json`` prints) and
``agents-wire`` (the proposals of ``cairn agents wire``), ``agents-hooks``
(the settings proposal of ``cairn agents hooks``: :mod:`worker.memory.agent_hooks`); the status
counts take :func:`unwired` (no scan: files and session folders only).
Settings files are read-only here, bounded (1 MiB), never blocking on a
FIFO, and may be links (dotfiles often are); one that cannot be read or
parsed counts as no hook and is listed in the row's ``problems`` (so is a
``~/.aider.conf.yml`` aider would refuse: it never stops the listing, the
status counts nor the wiring of the other agents).

An instruction file that is a link is followed only to an instruction file
(:class:`worker.memory.agents.Files`): ``agents`` and ``agents-wire`` pass
the configured ``instructionFiles`` for that; the status counts, which get
no settings, only :data:`worker.memory.store.AGENT_FILES`.

Imports inside functions: discovery (:mod:`worker.ingest.sources`, with the
importers it names) and the selection of this workspace's sessions
(:mod:`worker.jobs.importing`) load only when ``agents`` or ``agents-wire``
scans, the TOML parser only to read Codex's settings and the settings
layer only for those two jobs, so the status counts, which import this module,
start without them. Measured with ``python -X importtime`` and a timer
around the imports: 55 to 85 ms more for the ``status`` job with discovery
at the top, about 20 ms with the settings layer and TOML.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from typing import Any

from cairn.protocol import boundedjson
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.results import AgentsWireArgs, AgentsWireResult, WireProposal, WireRefusal, read
from cairn.protocol.worker import WorkerRequest
from cairn.state.fsdir import PinnedDir
from cairn.worker.memory import agent_aider as aider_conf
from cairn.worker.memory import agent_hooks as H
from cairn.worker.memory import agents as A
from cairn.worker.memory.store import MemoryStore

MAX_SETTINGS = 1 << 20


def _env_dir(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return os.path.expanduser(value) if value else None


def _read(path: str) -> bytes | None:
    """A settings file's bytes (a link is followed: dotfiles often are one); None when absent."""
    folder, name = os.path.split(path)
    try:
        d = PinnedDir.open_root(folder)
    except CairnError as exc:
        if exc.code in (ErrorCode.NOT_FOUND, ErrorCode.PATH_NOT_DIRECTORY):
            return None
        raise
    with d:
        return d.read(name, limit=MAX_SETTINGS, follow=True)


#: settings files their agents read as JSON with comments (Gemini CLI's strip-json-comments; Qwen Code is its fork)
_JSONC = re.compile(r"/\.(?:gemini|qwen)/settings\.json$")


def _parse(path: str) -> Any:
    """A settings file parsed (JSON, or TOML for ``.toml``); None when absent. Raises a fixed code."""
    import tomllib  # Codex's settings only, never for the status counts: module docstring

    data = _read(path)
    if data is None:
        return None
    try:
        text = data.decode("utf-8")
        if path.endswith(".toml"):
            return tomllib.loads(text)
        if _JSONC.search(path.replace("\\", "/")):  # Gemini CLI and Qwen Code allow comments in their settings
            text = boundedjson.strip_comments(text)
        return boundedjson.loads(text)
    except (UnicodeDecodeError, ValueError, tomllib.TOMLDecodeError):
        raise CairnError(ErrorCode.CONFIG_INVALID, f"{path}: not valid {'TOML' if path.endswith('.toml') else 'JSON'}") \
            from None


def _strings(obj: Any) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


def _calls_cairn(agent: str, data: Any, notify: bool = True) -> bool:
    """Whether settings ``data`` run ``cairn hook``; ``notify``: Codex's ``notify`` counts in this file."""
    if not isinstance(data, dict):
        return False
    found = any(H.HOOK.search(s) for s in _strings(data.get("hooks")))
    return found or (agent == "codex" and notify and H.notify_runs_cairn(data.get("notify")))


def settings_files(agent: str, workspace: str, home: str, env: Mapping[str, str]) -> list[str]:
    """The settings files whose hooks (or ``notify``) ``agent`` runs, the workspace's first."""
    ws = os.path.abspath(workspace)
    if agent == "claude-code":
        user = _env_dir(env, "CLAUDE_CONFIG_DIR") or os.path.join(home, ".claude")
        return [os.path.join(base, name) for base in (os.path.join(ws, ".claude"), user)
                for name in ("settings.json", "settings.local.json")]
    if agent == "gemini-cli":
        return [os.path.join(ws, ".gemini", "settings.json"),
                os.path.join(_env_dir(env, "GEMINI_CLI_HOME") or home, ".gemini", "settings.json")]
    if agent == "qwen-code":
        return [os.path.join(ws, ".qwen", "settings.json"), os.path.join(home, ".qwen", "settings.json")]
    if agent == "codex":
        return [os.path.join(ws, ".codex", "config.toml"),
                os.path.join(_env_dir(env, "CODEX_HOME") or os.path.join(home, ".codex"), "config.toml")]
    return []


def user_files(agent: str, home: str) -> list[str]:
    """The user's files, besides the hook settings, that decide ``agent``'s wiring (their problems go in its row)."""
    return [os.path.join(home, aider_conf.CONF)] if agent == "aider" else []


class Settings:
    """The agents' settings files, parsed once each; problems kept per agent."""

    def __init__(self, workspace: str, home: str, env: Mapping[str, str]) -> None:
        self.workspace, self.home, self.env = workspace, home, env
        self._parsed: dict[str, Any] = {}
        self.problems: dict[str, A.Problem] = {}

    def parsed(self, path: str) -> Any:
        if path not in self._parsed:
            try:
                self._parsed[path] = _parse(path)
            except CairnError as exc:
                self._parsed[path] = None
                self.problems[path] = A.Problem(path, str(exc.code), exc.message)
        return self._parsed[path]

    def hooks(self, agent: str) -> bool:
        # Codex ignores `notify` in a project's .codex/config.toml (docs/agents.md, *Hooks*): the user's counts
        files = settings_files(agent, self.workspace, self.home, self.env)
        return any(_calls_cairn(agent, self.parsed(p), notify=not (agent == "codex" and i == 0))
                   for i, p in enumerate(files))

    def user(self, aider: bool = True) -> A.User:
        """What the user's own settings decide about the workspace's agents (Gemini CLI's context names, the
        ``read:`` of aider's ``~/.aider.conf.yml``; ``aider``: read that file, aider being in use)."""
        read: list[str] | None = None
        path = os.path.join(self.home, aider_conf.CONF)
        try:
            data = _read(path) if aider else None
            read = aider_conf.entries(data, path) if data is not None else None
        except CairnError as exc:  # aider refuses to start with it: listed in the row's problems
            self.problems[path] = A.Problem(path, str(exc.code), exc.message)
        return A.User(gemini_names=tuple(self.gemini_names()), home=self.home,
                      aider_file=path if read else None, aider_read=tuple(read) if read else None)

    def gemini_names(self) -> list[str]:
        """Gemini CLI's context file names (``context.fileName``, the workspace's settings first), else ``GEMINI.md``."""
        for path in settings_files("gemini-cli", self.workspace, self.home, self.env):
            data = self.parsed(path)
            ctx = data.get("context") if isinstance(data, dict) else None
            names = ctx.get("fileName") if isinstance(ctx, dict) else None
            names = [names] if isinstance(names, str) else names
            if isinstance(names, list):
                good = [n for n in names if isinstance(n, str) and n and "/" not in n and len(n) <= 100]
                if good:
                    return good
        return ["GEMINI.md"]


def session_counts(workspace: str, home: str, env: Mapping[str, str]) -> dict[str, int]:
    """Sessions of each agent that discovery finds recorded in this workspace (or below it)."""
    from cairn.worker.ingest.sources import discover  # cold start of the status counts: module docstring
    from cairn.worker.jobs.importing import mine  # cold start of the status counts: module docstring

    ws = os.path.abspath(workspace)
    real = os.path.realpath(ws)
    counts: dict[str, int] = {}
    for store in discover(home, env, workspace=ws):
        agent = A.FORMAT_AGENT.get(store.format)
        if agent is None:
            continue
        n = sum(1 for s in store.sessions if mine(s, ws, real))
        if n:
            counts[agent] = counts.get(agent, 0) + n
    return counts


def report(workspace: str, home: str, env: Mapping[str, str], *, scan: bool = True,
           hooks: bool = True, instruction_files: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """One row per agent in use: ``agent``, ``sessions``, ``files``, ``wired``, ``via``, ``hooks``, ``target``,
    ``problems`` (see the module docstring). ``scan``: run discovery (else files and session folders only);
    ``instruction_files``: the configured ones, which a linked instruction file may lead to."""
    ws = os.path.abspath(workspace)
    counts = session_counts(ws, home, env) if scan else {}
    cfg = Settings(ws, home, env)
    quick = A.quick_sessions(ws, home, env)
    rows = []
    with A.Files(ws, instruction_files) as files:
        marks = A.in_use_by_files(files)
        user = cfg.user(aider="aider" in marks or bool(counts.get("aider")))
        for agent in A.AGENTS:
            if not (counts.get(agent) or agent in marks or agent in quick):
                continue
            via = A.wired(agent, files, user)
            on = cfg.hooks(agent) if hooks else False
            todo = [] if via is not None else A.targets(agent, files, user)
            paths = A.related(agent, files, user)
            problems = [files.problems[p] for p in paths if p in files.problems]
            problems += [cfg.problems[p] for p in settings_files(agent, ws, home, env) + user_files(agent, home)
                         if p in cfg.problems]
            rows.append({"agent": agent, "sessions": counts.get(agent, 0), "files": marks.get(agent, []),
                         "wired": via is not None, "via": None if via is None else via.to_json(), "hooks": on,
                         "target": todo[0] if todo else None, "targets": todo,
                         "problems": [p.to_json() for p in problems]})
    return rows


def unwired(workspace: str, home: str | None = None, env: Mapping[str, str] | None = None) -> int:
    """Agents in use that do not read the memory, without a scan (the status counts)."""
    env = os.environ if env is None else env
    return sum(1 for r in report(workspace, home or os.path.expanduser("~"), env, scan=False, hooks=False)
               if not r["wired"])


def _home_env() -> tuple[str, Mapping[str, str]]:
    return os.path.expanduser("~"), os.environ


def _instruction_files(req: WorkerRequest) -> tuple[str, ...]:
    from cairn.worker.settings import config  # not for the status counts: module docstring

    return tuple(config.from_request(req.config).instructionFiles)


def job_agents(req: WorkerRequest) -> dict[str, Any]:
    home, env = _home_env()
    return {"agents": report(req.workspace, home, env, instruction_files=_instruction_files(req))}


def _names(args: Mapping[str, Any]) -> list[str]:
    names = args.get("agents") or []
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise CairnError(ErrorCode.USAGE, "agents: a list of agent names is expected")
    unknown = [n for n in names if n not in A.AGENTS]
    if unknown:
        raise CairnError(ErrorCode.USAGE, f"unknown agent {unknown[0][:40]!r}; known: {', '.join(A.AGENTS)}")
    return list(dict.fromkeys(names))


def job_wire(req: WorkerRequest) -> AgentsWireResult:
    """Propose the edits that make the agents asked for (default: every agent in use) read the memory."""
    args = read(AgentsWireArgs, req.args, job="agents-wire")
    names = _names({"agents": list(args.agents)})
    home, env = _home_env()
    ws = os.path.abspath(req.workspace)
    given = _instruction_files(req)
    rows = {r["agent"]: r for r in report(ws, home, env, hooks=False, instruction_files=given)}
    absent = [n for n in names if n not in rows]
    if absent:
        raise CairnError(ErrorCode.AGENT_NOT_IN_USE, f"{absent[0]} is not used in this workspace (no session of it "
                         "here, none of its files); nothing was proposed")
    wanted = names or list(rows)
    todo = [n for n in wanted if not rows[n]["wired"]]
    already = tuple(n for n in wanted if rows[n]["wired"])
    with A.Files(ws, given) as files:
        user = Settings(ws, home, env).user(aider="aider" in rows)  # ~/.aider.conf.yml only when aider is in use
        groups = A.plan(todo, files, user)
        entries = A.aider_new_entries(files, user)
        index = files.exists(A.INDEX)
    proposals: list[WireProposal] = []
    refused: list[WireRefusal] = []
    if groups:  # else nothing to propose: no store is opened (nor created)
        from cairn.worker.settings import config  # only a wiring needs the settings: module docstring

        with MemoryStore(ws, config.from_request(req.config)) as ms:
            for path, agents in groups.items():
                try:
                    p, new = A.propose(ms, path, agents, entries)
                except CairnError as exc:
                    refused.append(WireRefusal(target=path, agents=tuple(agents), code=str(exc.code),
                                               message=exc.message))
                    continue
                proposals.append(WireProposal(id=p.id, target=path, agents=tuple(agents),
                                              mechanism=A.mechanism_of(path), title=p.title, new=new))
    return AgentsWireResult(proposals=tuple(proposals), wired=already, refused=tuple(refused), index=A.INDEX,
                            indexExists=index)


def job_hooks(req: WorkerRequest) -> dict[str, Any]:
    """Propose the edit that installs the session hooks of the agent asked for (``agent``, ``file``)."""
    from cairn.worker.settings import config  # only a proposal needs the settings: module docstring

    agent, file, user = req.args.get("agent"), req.args.get("file"), req.args.get("user", False)
    if not isinstance(agent, str) or not (file is None or isinstance(file, str)) or not isinstance(user, bool):
        raise CairnError(ErrorCode.USAGE, "agents hooks: an agent name (and a settings file) is expected")
    path = H.settings_file(agent, file, user)
    with MemoryStore(os.path.abspath(req.workspace), config.from_request(req.config)) as ms:
        p, new = H.propose(ms, agent, path)
    return {"agent": agent, "target": path, "command": H.command(agent),
            "proposal": None if p is None else {"id": p.id, "title": p.title, "new": new}}
