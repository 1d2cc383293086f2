"""Settings: embedded defaults, the user's config, the workspace's ``.cairn/config.toml``, the editor's.

Layers, lowest first: defaults < user config
(``$XDG_CONFIG_HOME/cairn/config.toml``, :mod:`worker.settings.trust`) < workspace
file < editor options. A project's own file refines the user's general
choices (as an editor's project settings do), and what the user sets in the
editor for this session wins over both. The editor's settings count as the
user's.

Workspace trust: the workspace file arrives with a cloned repository, so
it may not choose where data and keys go. Its :data:`OFF_MACHINE` keys
(``provider``, ``endpoint``, ``api_key_env`` and ``command``, the argv
the ``command`` provider runs) are taken only when the user trusted
that workspace (``cairn trust``); otherwise they are ignored with one
``E_WORKSPACE_UNTRUSTED`` warning and the layers below (the embedded engine
by default) decide. Two more are the user's to choose, though they send
nothing anywhere: ``model`` (it runs on the user's own endpoint and key, so
it sets what the user pays) and every ``memory_roots`` entry that is not a
plain relative folder inside the workspace (an absolute path, ``~`` or
``..``: reviews write there, and in ``auto`` mode unreviewed). From an
untrusted file those are ignored with the same warning, and so is
``mode = "auto"`` (reviews would then write the repository's own files
without asking, on the word of the repository itself): the user's mode
applies. Every key an untrusted file is refused is named in one
``E_WORKSPACE_UNTRUSTED`` warning. Its other keys (another mode,
instruction files, roots inside the workspace, the notes folders, the price
table…) always apply: they stay on this machine and touch only the
repository's own files.

Instruction files, in every layer, are files agents read, never files a
program runs (:func:`instruction_file_refused`): a relative path inside the
workspace (no ``..``, ``~`` or absolute path), to a markdown file (``.md``,
``.mdc``, ``.markdown``) or to an agent's own rules file
(:data:`INSTRUCTION_NAMES`), outside ``.git/``, ``.cairn/`` and
``.github/workflows/``. Any other entry (``.envrc``, ``~/.bashrc``, a
``Makefile``) makes the option ``E_CONFIG_INVALID``: the layer below applies.

Each layer is structured field by field: a bad option (unknown name, wrong
type, value outside its vocabulary) is reported with ``E_CONFIG_INVALID`` and
replaced by the value of the layer below, never guessed and never fatal. A
config file is read as a control file (regular, no symlink, at most 64 KiB,
never blocking); one that is not is ``E_CONFIG_INVALID`` and skipped.
TOML keys are snake_case (``idle_minutes``); editor options use the LSP
spelling (``idleMinutes``).
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Callable
from typing import Any

import attrs
from cairn.protocol.errors import CairnError, ErrorCode
from cairn.protocol.settings import Settings
from cairn.state import layout
from cairn.state.fsdir import PinnedDir
from cairn.worker.settings import trust

_FIELDS = {f.name: f for f in attrs.fields(Settings)}
#: workspace-file keys that send data off the machine or run a program: taken only from a trusted workspace.
#: ``watch_paths`` joins them: a cloned repository must not pull the sessions of other folders into its journal.
OFF_MACHINE = ("provider", "endpoint", "api_key_env", "command", "watch_paths")
#: further workspace-file keys only a trusted workspace may set: the model (what the user's key pays for)
#: and memory roots outside the workspace (where reviews write)
USERS_CHOICE = ("model",)
#: instruction files are markdown (what agents read), never a file a program runs (a shell's rc, ``.envrc``,
#: a Makefile, a script, ``CMakeLists.txt``)
INSTRUCTION_SUFFIXES = (".md", ".mdc", ".markdown")
#: agents' own instruction files without a markdown suffix (Cursor, Windsurf, Cline, Roo Code, Goose)
INSTRUCTION_NAMES = frozenset({".cursorrules", ".windsurfrules", ".clinerules", ".roorules", ".goosehints"})
#: folders whose markdown a program runs: GitHub's agentic workflows are markdown files compiled into Actions
INSTRUCTION_NEVER = (".github/workflows/",)
WORKSPACE_FILE = ".cairn/config.toml"
USER_FILE = f"{trust.USER_CONFIG} (user)"
_REPORTED: set[str] = set()


def _camel(name: str) -> str:
    return re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)


def _prices(value: Any) -> tuple[tuple[str, float, float], ...]:
    """The price table: ``{model: {input = x, output = y}}`` (TOML, editor) or its rows (a worker request)."""
    def price(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise ValueError("prices must be non-negative numbers")
        return float(v)

    if isinstance(value, dict):
        rows = []
        for model, p in value.items():
            if not isinstance(p, dict) or set(p) - {"input", "output"}:
                raise TypeError("expected {model = {input = <per 1M tokens>, output = <per 1M tokens>}}")
            rows.append((str(model), price(p.get("input", 0)), price(p.get("output", 0))))
    elif isinstance(value, (list, tuple)) and all(isinstance(r, (list, tuple)) and len(r) == 3
                                                  and isinstance(r[0], str) for r in value):
        rows = [(r[0], price(r[1]), price(r[2])) for r in value]
    else:
        raise TypeError("expected {model = {input = <per 1M tokens>, output = <per 1M tokens>}}")
    return tuple(sorted(rows))


def instruction_file_refused(entry: str) -> str | None:
    """Why ``entry`` cannot be an instruction file, or None when it can: a relative path inside the
    workspace to a markdown file or an agent's own rules file, never one a program runs."""
    parts = entry.split("/")
    if (not entry or os.path.isabs(entry) or entry.startswith("~") or "\\" in entry or "\x00" in entry
            or any(p == ".." for p in parts)):
        return "is not a relative path inside the workspace"
    norm = os.path.normpath(entry)
    if norm == "." or entry.endswith("/"):
        return "is a folder, not a file"
    if any(f"/{norm}".startswith(f"/{f}") for f in INSTRUCTION_NEVER):
        return "is in a folder whose files a program runs"
    base = os.path.basename(norm)
    markdown = any(base.lower().endswith(x) and len(base) > len(x) for x in INSTRUCTION_SUFFIXES)
    if not markdown and base not in INSTRUCTION_NAMES:
        return ("is no instruction file (markdown: .md, .mdc, .markdown, or an agent's rules file: "
                f"{', '.join(sorted(INSTRUCTION_NAMES))}; never a file a program runs)")
    return None


def _shape(name: str, value: Any) -> Any:
    """``value`` in the field's type (a list becomes a tuple, an int a float), or ``TypeError``/``ValueError``.

    Vocabularies and ranges are the record's own validators (:mod:`protocol.settings`).
    """
    if name == "prices":
        return _prices(value)
    default = getattr(Settings(), name)
    if default is None:
        default = 0  # an optional number (``contextTokens``; unset, the provider's default applies)
    if isinstance(default, tuple):
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise TypeError("expected a list of strings")
        if name in ("memoryRoots", "instructionFiles", "notesDirs"):
            bad = [v for v in value if not os.path.isabs(v) and layout.reserved(v)]
            if bad:  # a review would append to .git/config (git runs programs it names) or cairn's own files
                raise ValueError(f"names {bad[0][:80]!r}, inside {' or '.join(layout.RESERVED)}, which memory never touches")
        if name == "instructionFiles":
            why = [(v, w) for v in value if (w := instruction_file_refused(v))]
            if why:  # a review appends rules to it, in auto mode unasked: never to a file a program runs
                raise ValueError(f"names {why[0][0][:80]!r}, which {why[0][1]}")
        return tuple(value)
    if isinstance(default, bool) or isinstance(default, str):
        if type(value) is not type(default):
            raise TypeError(f"expected {type(default).__name__}")
    elif isinstance(default, (int, float)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError("expected a number")
        if isinstance(default, int) and isinstance(value, float) and not value.is_integer():
            raise TypeError("expected a whole number")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("must be a finite number")
        value = type(default)(value)
    return value


def _warning(code: ErrorCode, message: str) -> CairnError:
    return CairnError(code, message)


def merge(base: Settings, options: dict[str, Any] | None, *, source: str,
          snake: bool = False) -> tuple[Settings, list[CairnError]]:
    """Apply ``options`` over ``base``; return the result and one ``E_CONFIG_INVALID`` per bad option."""
    warnings: list[CairnError] = []
    settings = base
    for key, value in (options or {}).items():
        name = _camel(key) if snake else key
        if name not in _FIELDS:
            warnings.append(_warning(ErrorCode.CONFIG_INVALID, f"{source}: unknown option {key!r} ignored"))
            continue
        if value is None and _FIELDS[name].default is None:
            continue  # an optional option left unset (null) here: the layer below decides
        try:
            settings = attrs.evolve(settings, **{name: _shape(name, value)})
        except (TypeError, ValueError) as exc:
            warnings.append(_warning(ErrorCode.CONFIG_INVALID, f"{source}: option {key!r} {exc}; default kept"))
    return settings, warnings


def _toml(raw: bytes | None, label: str) -> tuple[dict[str, Any], list[CairnError]]:
    if raw is None:
        return {}, []
    try:
        return tomllib.loads(raw.decode("utf-8")), []
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as exc:
        # RecursionError: arrays nested thousands deep fit in 64 KiB and exhaust the parser's stack
        return {}, [_warning(ErrorCode.CONFIG_INVALID, f"{label} unreadable ({type(exc).__name__}); defaults kept")]


def _workspace_file(workspace: str) -> bytes | None:
    """``.cairn/config.toml`` read without following a symlink (neither ``.cairn`` nor the file)."""
    try:
        ws_fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None  # no workspace, no file (the workspace itself is checked by its users)
    try:
        try:
            fd = os.open(".cairn", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=ws_fd)
        except FileNotFoundError:
            return None
        except OSError:
            raise CairnError(ErrorCode.CONFIG_INVALID,
                             f"{WORKSPACE_FILE}: .cairn is a symlink or not a directory; not followed") from None
    finally:
        os.close(ws_fd)
    with PinnedDir(fd, os.path.join(workspace, ".cairn")) as d:
        return trust.read_control_file(d, "config.toml", label=WORKSPACE_FILE)


def _read(reader: Callable[[], bytes | None], label: str) -> tuple[dict[str, Any], list[CairnError]]:
    try:
        raw = reader()
    except CairnError as exc:
        return {}, [_warning(exc.code, f"{exc.message}; defaults kept")]
    return _toml(raw, label)


def _comparable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def outside_workspace(root: str) -> bool:
    """Whether a memory root names a folder outside the workspace (absolute, ``~`` or ``..``)."""
    return (os.path.isabs(root) or root.startswith("~") or "\\" in root
            or any(part == ".." for part in root.split("/")))


def _refused(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``data`` without what only the user or a trusted workspace may set, and the keys refused."""
    kept = {k: v for k, v in data.items() if k not in OFF_MACHINE + USERS_CHOICE}
    refused = [k for k in OFF_MACHINE + USERS_CHOICE if k in data]
    if data.get("mode") == "auto":  # reviews would write without asking, on the repository's own word
        refused.append("mode")
        del kept["mode"]
    roots = data.get("memory_roots")
    if isinstance(roots, list) and any(isinstance(r, str) and outside_workspace(r) for r in roots):
        inside = [r for r in roots if not (isinstance(r, str) and outside_workspace(r))]
        refused.append("memory_roots")
        if inside:
            kept["memory_roots"] = inside
        else:
            del kept["memory_roots"]
    return kept, refused


def _untrusted(workspace: str, data: dict[str, Any], above: set[str],
               below: Settings) -> tuple[dict[str, Any], list[CairnError]]:
    """``data`` without the off-machine and user's-choice keys unless ``workspace`` is trusted (with the warning).

    ``above``: keys the editor sets anyway; ``below``: what the user's layers give without the file.
    """
    kept, present = _refused(data)
    if not present:
        return data, []
    try:
        if trust.is_trusted(workspace):
            return data, []
        warnings: list[CairnError] = []
    except CairnError as exc:
        warnings = [_warning(exc.code, f"{exc.message}; no workspace is trusted")]
    # only keys that would have mattered: set to something else than the user's value and not set by the editor
    ignored = [k for k in present if _camel(k) not in above and _comparable(data[k]) != getattr(below, _camel(k))]
    if ignored:
        named = ", ".join('mode = "auto"' if k == "mode" else k for k in ignored)
        mode = f'; your mode "{below.mode}" is used' if "mode" in ignored else ""
        warnings.append(_warning(ErrorCode.WORKSPACE_UNTRUSTED, f"{WORKSPACE_FILE} of {os.path.abspath(workspace)} sets "
                        f"{named}, which only you choose (where data and keys go, which sessions are read, the model your key "
                        "pays for, memory roots outside the workspace, writes without asking), but the workspace is not "
                        "trusted; ignored (the embedded engine is used unless your own settings name a provider"
                        f"{mode}; `cairn trust` allows them)"))
    return kept, warnings


def load(workspace: str, editor_options: dict[str, Any] | None = None) -> tuple[Settings, list[CairnError]]:
    """Resolved settings for a workspace, with warnings for everything refused."""
    user, warnings = _read(trust.user_config_bytes, USER_FILE)
    settings, w = merge(Settings(), user, source=USER_FILE, snake=True)
    warnings += w
    data, w = _read(lambda: _workspace_file(workspace), WORKSPACE_FILE)
    warnings += w
    data, w = _untrusted(workspace, data, set(editor_options or {}), settings)
    warnings += w
    for options, source, snake in ((data, WORKSPACE_FILE, True), (editor_options, "editor settings", False)):
        settings, w = merge(settings, options, source=source, snake=snake)
        warnings += w
    settings = _rooted(workspace, settings)
    if settings.provider == "command" and not settings.command:
        warnings.append(_warning(ErrorCode.CONFIG_INVALID, 'provider "command" needs the program to run: '
                                 'command = ["program", "arg", ...]; digests and reviews through it fail until it is set'))
    return settings, warnings


def _rooted(workspace: str, settings: Settings) -> Settings:
    """``memoryRoots`` as every reader takes them: a folder inside the workspace relative to it, any other
    absolute (``~`` expanded, ``..`` resolved against the workspace). A relative root with ``..`` was kept as
    written, and each reader took it for a folder inside the workspace: `cairn verify` refused its ``..``
    (``E_PATH_INVALID_NAME``) and the backlog drain its target (``E_PATH_OUTSIDE_ROOT``)."""
    roots = []
    for r in settings.memoryRoots:
        if not os.path.isabs(r) and outside_workspace(r) and "\\" not in r:
            full = os.path.normpath(os.path.join(os.path.abspath(workspace), os.path.expanduser(r)))
            inside = os.path.relpath(full, os.path.abspath(workspace))
            r = full if inside == ".." or inside.startswith(".." + os.sep) else inside
        roots.append(r)
    return attrs.evolve(settings, memoryRoots=tuple(roots)) if tuple(roots) != settings.memoryRoots else settings


def from_request(config: dict[str, Any] | None) -> Settings:
    """A worker's settings: those the user's process resolved and sent in the request."""
    return merge(Settings(), config, source="request")[0]


def line(warning: CairnError) -> str:
    """A warning as one line: ``E_CODE: message``."""
    return f"{warning.code}: {warning.message}"


def unreported(warnings: list[CairnError]) -> list[str]:
    """The warnings this process has not reported yet, as lines (each is said once per process)."""
    fresh = [w for w in dict.fromkeys(line(w) for w in warnings) if w not in _REPORTED]
    _REPORTED.update(fresh)
    return fresh


def to_dict(settings: Settings) -> dict[str, Any]:
    return {k: [list(x) if isinstance(x, tuple) else x for x in v] if isinstance(v, tuple) else v
            for k, v in attrs.asdict(settings).items()}
