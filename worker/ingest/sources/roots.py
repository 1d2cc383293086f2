"""Where each tool keeps its sessions, honouring its relocation variable and ``XDG_*``.

Pure: every function takes the home directory and the environment, so tests
run on a synthetic home. Paths are candidates; discovery keeps those that
exist. A store is either a ``tree`` (files under a directory, listed to a
fixed depth, each kept by a name rule) or a ``db`` (one SQLite file).

| format | where (first existing wins per line) |
| --- | --- |
| claude-code | ``$CLAUDE_CONFIG_DIR/projects``; ``~/.claude/projects``; ``$XDG_CONFIG_HOME/claude/projects`` |
| codex | ``$CODEX_HOME/{sessions,archived_sessions}`` (default ``~/.codex``) |
| gemini-cli | ``$GEMINI_CLI_HOME/.gemini/tmp`` (default ``~/.gemini/tmp``): ``<project>/chats/session-*`` |
| qwen-code | ``~/.qwen/{projects,tmp}/<project>/chats/*`` |
| opencode | ``$OPENCODE_DB``; ``$XDG_DATA_HOME/opencode/opencode*.db`` (default ``~/.local/share``) |
| cline, roo-code | ``<editor config>/User/globalStorage/<extension>/tasks/<id>/api_conversation_history.json`` (else the task's ``ui_messages.json``) for VS Code, Insiders, VSCodium, Cursor, Windsurf; Cline also ``$CLINE_DIR/data/{sessions,tasks}`` (default ``~/.cline``) |
| copilot-cli | ``$COPILOT_HOME``, ``$XDG_CONFIG_HOME/.copilot``, ``~/.copilot``: ``session-state/*.jsonl``, ``session-state/<id>/events.jsonl`` |
| cursor | ``<editor config>/Cursor/User/globalStorage/state.vscdb`` and ``workspaceStorage/*/state.vscdb`` |
| cursor-transcript | ``~/.cursor/projects/<project>/agent-transcripts/<id>.jsonl`` and ``…/<id>/<id>.jsonl`` |
| goose | ``$GOOSE_PATH_ROOT/data/sessions``; ``$XDG_DATA_HOME/goose/sessions``: ``sessions.db``, ``*.jsonl`` |
| continue | ``$CONTINUE_GLOBAL_DIR/sessions`` (default ``~/.continue/sessions``) |
| aider, specstory | in known projects: ``.aider.chat.history.md``, ``.specstory/history/*.md`` |

Editor config is ``$XDG_CONFIG_HOME`` (default ``~/.config``), ``~/Library/Application Support``
and ``$APPDATA``, whichever exist.

Each format's record (``FORMAT`` of its importer module) says whether it is found here: its
``stores`` is ``"home"`` for the stores of :func:`specs`, ``"project"`` for those of
:func:`project_specs`, ``None`` for files never discovered (exports, editor buffers). The stores
stay in this one table rather than in the format modules: they share the relocation and editor
folder rules above, and a format module reads a file without knowing where machines keep it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

import attrs

EDITORS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")
#: the VS Code extension folder of each task-history format (its path hint; the importer modules are
#: not imported for discovery: ``tests/importers/test_formats_registry.py`` checks these agree)
EXTENSIONS = {"cline": "saoudrizwan.claude-dev", "roo-code": "rooveterinaryinc.roo-cline"}
#: the chat history file aider keeps in a project (``aider.FILE_NAME``)
AIDER_FILE = ".aider.chat.history.md"


@attrs.frozen(kw_only=True)
class Spec:
    format: str
    path: str
    kind: str = "tree"  # "tree" or "db"
    depth: int = 0
    keep: Callable[[str, str], bool] = lambda parent, name: True


def _env(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return os.path.expanduser(value) if value else None


def _xdg(home: str, env: Mapping[str, str], name: str, default: str) -> str:
    return _env(env, name) or os.path.join(home, default)


def editor_configs(home: str, env: Mapping[str, str]) -> list[str]:
    bases = [_xdg(home, env, "XDG_CONFIG_HOME", ".config"), os.path.join(home, "Library", "Application Support")]
    appdata = _env(env, "APPDATA")
    if appdata:
        bases.append(appdata)
    return bases


def _jsonl(parent: str, name: str) -> bool:
    return name.endswith(".jsonl")


def _claude(parent: str, name: str) -> bool:
    return name.endswith(".jsonl") and not name.startswith("agent-")  # agent-*: sub-agent sidechains


def _codex(parent: str, name: str) -> bool:
    return name.startswith("rollout-") and name.endswith(".jsonl")


def _gemini(parent: str, name: str) -> bool:
    return os.path.basename(parent) == "chats" and name.startswith("session-") and name.endswith((".json", ".jsonl"))


def _qwen(parent: str, name: str) -> bool:
    return os.path.basename(parent) == "chats" and name.endswith((".json", ".jsonl"))


def _task(parent: str, name: str) -> bool:
    if name == "ui_messages.json":  # what the extension showed: read when the history itself is not there
        return not os.path.lexists(os.path.join(parent, "api_conversation_history.json"))
    return name == "api_conversation_history.json" or name.endswith(".messages.json")


def _cursor_transcript(parent: str, name: str) -> bool:
    if not name.endswith(".jsonl"):
        return False
    if os.path.basename(parent) == "agent-transcripts":
        return True
    return os.path.basename(os.path.dirname(parent)) == "agent-transcripts" and name == os.path.basename(parent) + ".jsonl"


def _copilot(parent: str, name: str) -> bool:
    if os.path.basename(parent) == "session-state":
        return name.endswith(".jsonl")
    return name == "events.jsonl"


def _continue(parent: str, name: str) -> bool:
    return name.endswith(".json") and name != "sessions.json"


def specs(home: str, env: Mapping[str, str]) -> list[Spec]:
    """Every candidate store for ``home`` and ``env`` (existence is checked by the scanner)."""
    out: list[Spec] = []
    claude = _env(env, "CLAUDE_CONFIG_DIR")
    for base in ([claude] if claude else []) + [os.path.join(home, ".claude"),
                                                 os.path.join(_xdg(home, env, "XDG_CONFIG_HOME", ".config"), "claude")]:
        out.append(Spec(format="claude-code", path=os.path.join(base, "projects"), depth=1, keep=_claude))
    codex = _env(env, "CODEX_HOME") or os.path.join(home, ".codex")
    for sub in ("sessions", "archived_sessions"):
        out.append(Spec(format="codex", path=os.path.join(codex, sub), depth=3, keep=_codex))
    gemini_home = _env(env, "GEMINI_CLI_HOME") or home
    out.append(Spec(format="gemini-cli", path=os.path.join(gemini_home, ".gemini", "tmp"), depth=2, keep=_gemini))
    for sub in ("projects", "tmp"):
        out.append(Spec(format="qwen-code", path=os.path.join(home, ".qwen", sub), depth=2, keep=_qwen))
    db = _env(env, "OPENCODE_DB")
    if db:
        out.append(Spec(format="opencode", path=db, kind="db"))
    out.append(Spec(format="opencode", path=os.path.join(_xdg(home, env, "XDG_DATA_HOME", ".local/share"), "opencode"),
                    kind="db-dir", keep=lambda parent, name: name.startswith("opencode") and name.endswith(".db")))
    for config in editor_configs(home, env):
        for editor in EDITORS:
            storage = os.path.join(config, editor, "User", "globalStorage")
            for fmt, ext in EXTENSIONS.items():
                out.append(Spec(format=fmt, path=os.path.join(storage, ext, "tasks"), depth=1, keep=_task))
        cursor = os.path.join(config, "Cursor", "User")
        out.append(Spec(format="cursor", path=os.path.join(cursor, "globalStorage", "state.vscdb"), kind="db"))
        out.append(Spec(format="cursor", path=os.path.join(cursor, "workspaceStorage"), kind="cursor-workspaces"))
    out.append(Spec(format="cursor-transcript", path=os.path.join(home, ".cursor", "projects"), depth=3,
                    keep=_cursor_transcript))
    cline = _env(env, "CLINE_DIR") or os.path.join(home, ".cline")
    for sub in ("sessions", "tasks"):
        out.append(Spec(format="cline", path=os.path.join(cline, "data", sub), depth=1, keep=_task))
    copilot = [_env(env, "COPILOT_HOME"), os.path.join(_xdg(home, env, "XDG_CONFIG_HOME", ".config"), ".copilot"),
               os.path.join(home, ".copilot")]
    for base in [c for c in copilot if c]:
        out.append(Spec(format="copilot-cli", path=os.path.join(base, "session-state"), depth=1, keep=_copilot))
    goose_root = _env(env, "GOOSE_PATH_ROOT")
    goose = [os.path.join(goose_root, "data", "sessions")] if goose_root else []
    goose.append(os.path.join(_xdg(home, env, "XDG_DATA_HOME", ".local/share"), "goose", "sessions"))
    for base in goose:
        out.append(Spec(format="goose", path=os.path.join(base, "sessions.db"), kind="db"))
        out.append(Spec(format="goose", path=base, depth=0, keep=_jsonl))
    cont = _env(env, "CONTINUE_GLOBAL_DIR") or os.path.join(home, ".continue")
    out.append(Spec(format="continue", path=os.path.join(cont, "sessions"), depth=0, keep=_continue))
    return out


def project_specs(project: str) -> list[Spec]:
    """Stores kept inside a project: aider's history and SpecStory's folder."""
    return [
        Spec(format="aider", path=os.path.join(project, AIDER_FILE), kind="file"),
        Spec(format="specstory", path=os.path.join(project, ".specstory", "history"), depth=0,
             keep=lambda parent, name: name.endswith(".md")),
    ]
